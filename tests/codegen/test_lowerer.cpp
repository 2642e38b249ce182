// Lowering's passes (codegen/lowerer.cpp): reduce_ranges gives each REDUCE_AXIS its loops, expand turns every
// node into its values at each combination of upcast values, and nothing of the AST or the expander's UNROLL
// nodes is left for the linearizer.
#include <gtest/gtest.h>

#include <set>
#include <vector>

#include "../common/kernel_source.h"
#include "codegen/kernel.h"
#include "codegen/opt/heuristic.h"
#include "codegen/lowerer.h"
#include "renderer/c.h"
#include "renderer/cuda.h"
#include "tg/context.h"
#include "tg/error.h"
#include "tg/tg.h"

using tg::Ops;
using tg::Tensor;

namespace {

std::vector<const tg::UOp*> nodes_of(const tg::UOpPtr& sink, Ops op) {
  std::vector<const tg::UOp*> out;
  for (const tg::UOp* u : tg::toposort(sink))
    if (u->op == op) out.push_back(u);
  return out;
}

// No node of the AST's own kinds (views, REDUCE_AXIS) and no UNROLL survives lowering.
void expect_fully_lowered(const tg::UOpPtr& lowered) {
  for (Ops op : {Ops::UNROLL, Ops::REDUCE_AXIS, Ops::VIEW})
    EXPECT_TRUE(nodes_of(lowered, op).empty()) << tg::op_name(op) << " left in the lowered kernel";
}

}  // namespace

TEST(Lowerer, UpcastKernelsLeaveNoUnrollNodes) {
  tg::ClangRenderer c;
  tg::CUDARenderer cuda("sm_90");
  Tensor a = Tensor::empty({64, 48}), b = Tensor::empty({48, 40});
  for (const tg::Renderer* r : std::vector<const tg::Renderer*>{&c, &cuda}) {
    tg::Kernel k(tgtest::last_ast(a.matmul(b)), *r);
    hand_coded_optimizations(k);
    tg::UOpPtr lowered = tg::lower_kernel(k);
    expect_fully_lowered(lowered);
    EXPECT_FALSE(nodes_of(lowered, Ops::STORE).empty());
  }
}

TEST(Lowerer, NestedReduceRunsItsOwnLoops) {
  // sum(exp(x - max(x))): the max is computed inside the sum's kernel, so it needs loops of its own that finish
  // before the sum's loop reads it.
  tg::Context ctx({{"NOOPT", 1}});
  tg::ClangRenderer c;
  Tensor x = Tensor::empty({8, 16});
  tg::Kernel k(tgtest::last_ast((x - x.max(1, true)).exp().sum(1)), c);
  tg::UOpPtr lowered = tg::lower_kernel(k);
  expect_fully_lowered(lowered);
  std::vector<const tg::UOp*> reduces = nodes_of(lowered, Ops::REDUCE);
  ASSERT_EQ(reduces.size(), 2u);
  std::set<const tg::UOp*> loops;
  for (const tg::UOp* r : reduces) {
    ASSERT_EQ(r->src.size(), 2u);
    EXPECT_EQ(r->src[1]->op, Ops::RANGE);
    loops.insert(r->src[1].get());
  }
  EXPECT_EQ(loops.size(), 2u) << "the max and the sum share a loop";
}

TEST(Lowerer, EveryBufferStaysAParameter) {
  // where(c, x, x) simplifies to x: c's buffer is read by nothing, and the kernel still takes it.
  tg::ClangRenderer c;
  Tensor cond = Tensor::empty({16}, {.dtype = tg::dtypes::bool_}), x = Tensor::empty({16});
  tg::Kernel k(tgtest::last_ast(cond.where(x, x) + 1), c);
  EXPECT_EQ(nodes_of(tg::lower_kernel(k), Ops::DEFINE_GLOBAL).size(), 3u);
}

TEST(Lowerer, AnAstOpItCannotLowerIsAnError) {
  tg::ClangRenderer c;
  Tensor a = Tensor::empty({4}), b = Tensor::empty({4});
  tg::UOpPtr ast = tgtest::last_ast(a + b);
  // the sum's value wrapped in a DETACH, which no kernel AST holds
  tg::UOpPtr store = ast->src.at(0);
  tg::UOpPtr bad = tg::UOp::make(Ops::DETACH, store->src[2]->dtype, {store->src[2]});
  tg::UOpPtr bad_ast =
      tg::UOp::make(Ops::SINK, tg::dtypes::void_,
                    {tg::UOp::make(Ops::STORE, tg::dtypes::void_, {store->src[0], store->src[1], bad})});
  try {
    tg::Kernel k(bad_ast, c);
    tg::lower_kernel(k);
    FAIL() << "no error";
  } catch (const tg::Error& e) {
    EXPECT_TRUE(tgtest::has(e.what(), "DETACH")) << e.what();
  }
}
