// reduce_to_acc (codegen/reduce_to_acc.h): every REDUCE of a lowered kernel becomes ASSIGN(DEFINE_ACC(identity,
// ranges..), update); a float sum's tree of adds is added term by term where asked; a tensor core's summed lanes
// feed the accumulators to the chain's first op as C.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "../common/kernel_source.h"
#include "codegen/kernel.h"
#include "codegen/opt/heuristic.h"
#include "codegen/linearize.h"
#include "codegen/lowerer.h"
#include "codegen/reduce_to_acc.h"
#include "renderer/c.h"
#include "renderer/cuda.h"
#include "tg/context.h"
#include "tg/tg.h"

using tg::Ops;
using tg::Tensor;
using tg::UOp;
namespace dt = tg::dtypes;

namespace {

std::vector<const UOp*> of_op(const tg::UOpPtr& sink, Ops op) {
  std::vector<const UOp*> out;
  for (const UOp* u : tg::toposort(sink))
    if (u->op == op) out.push_back(u);
  return out;
}

tg::UOpPtr lowered(const Tensor& out, const tg::Renderer& r, bool opts = true) {
  tg::Kernel k(tgtest::last_ast(out), r);
  if (opts) hand_coded_optimizations(k);
  return tg::lower_kernel(k);
}

}  // namespace

TEST(ReduceToAcc, SumAndMaxBecomeAccumulators) {
  tg::ClangRenderer c;
  Tensor a = Tensor::empty({8, 16});
  for (bool is_max : {false, true}) {
    const tg::UOpPtr before = lowered(is_max ? a.max(1) : a.sum(1), c, false);
    ASSERT_EQ(of_op(before, Ops::REDUCE).size(), 1u);
    const UOp* reduce = of_op(before, Ops::REDUCE)[0];
    const tg::UOpPtr after = tg::reduce_to_acc(before, false);
    EXPECT_TRUE(of_op(after, Ops::REDUCE).empty());
    std::vector<const UOp*> assigns = of_op(after, Ops::ASSIGN);
    ASSERT_EQ(assigns.size(), 1u);
    const UOp* acc = assigns[0]->src[0].get();
    ASSERT_EQ(acc->op, Ops::DEFINE_ACC);
    // the identity, then the reduce's ranges
    EXPECT_EQ(acc->src[0]->const_value(), is_max ? -INFINITY : 0.0);
    ASSERT_EQ(acc->src.size(), reduce->src.size());
    for (size_t i = 1; i < acc->src.size(); i++) EXPECT_EQ(acc->src[i], reduce->src[i]);
    // update = op(acc, value)
    const UOp* update = assigns[0]->src[1].get();
    EXPECT_EQ(update->op, is_max ? Ops::MAX : Ops::ADD);
    EXPECT_EQ(update->src[0].get(), acc);
    EXPECT_EQ(update->src[1], reduce->src[0]);
  }
}

// A float sum of a tree of adds (an unrolled reduce's terms): added to the accumulator term by term,
// ((acc + x0) + x1) .., where asked; a term that does not run in the loop stays a term.
TEST(ReduceToAcc, SequentialSumsChainTheTerms) {
  const tg::UOpPtr buf = UOp::make(Ops::DEFINE_GLOBAL, dt::float32.pointer(), {}, int64_t(1));
  const tg::UOpPtr r = UOp::make(Ops::RANGE, dt::int32, {UOp::const_int(0), UOp::const_int(16)}, int64_t(0));
  auto load = [&](int i) {
    return UOp::make(Ops::LOAD, dt::float32, {buf, UOp::alu(Ops::ADD, {UOp::alu(Ops::MUL, {r, UOp::const_int(4)}),
                                                                       UOp::const_int(i)})});
  };
  auto add = [](const tg::UOpPtr& x, const tg::UOpPtr& y) { return UOp::alu(Ops::ADD, {x, y}); };
  const tg::UOpPtr tree = add(add(load(0), load(1)), add(load(2), load(3)));
  const tg::UOpPtr reduce = UOp::make(Ops::REDUCE, dt::float32, {tree, r}, int64_t(Ops::ADD));
  const tg::UOpPtr sink = UOp::make(Ops::SINK, tg::dtypes::void_, {reduce});
  for (bool sequential : {false, true}) {
    const tg::UOpPtr after = tg::reduce_to_acc(sink, sequential);
    std::vector<const UOp*> assigns = of_op(after, Ops::ASSIGN);
    ASSERT_EQ(assigns.size(), 1u);
    const UOp* acc = assigns[0]->src[0].get();
    std::vector<const UOp*> terms;  // the second operands from the ASSIGN down to the accumulator
    const UOp* x = assigns[0]->src[1].get();
    while (x->op == Ops::ADD && x != acc) terms.push_back(x->src[1].get()), x = x->src[0].get();
    EXPECT_EQ(x, acc);
    if (!sequential) {
      EXPECT_EQ(terms, std::vector<const UOp*>{tree.get()});
      continue;
    }
    ASSERT_EQ(terms.size(), 4u);
    for (int i = 0; i < 4; i++) EXPECT_EQ(terms[size_t(3 - i)], load(i).get()) << "term " << i;  // left to right
  }
}

// A tensor-core kernel: every lane of the chains is summed, so the chains' first ops take the accumulators as C
// and the updates are the lanes themselves (no adds).
TEST(ReduceToAcc, TensorCoreLanesFeedTheChain) {
  for (int wgmma : {0, 1}) {
    tg::Context ctx({{"WGMMA", wgmma}});
    tg::CUDARenderer cuda("sm_90");
    Tensor a = Tensor::empty({128, 128}, {.dtype = dt::float16}), b = Tensor::empty({128, 128}, {.dtype = dt::float16});
    const tg::UOpPtr after = tg::reduce_to_acc(lowered(a.matmul(b), cuda), true);
    const Ops mma = wgmma ? Ops::WGMMA : Ops::WMMA;
    size_t fed = 0;
    for (const UOp* u : of_op(after, mma))
      fed += std::all_of(u->src.end() - u->dtype.count, u->src.end(), [](const tg::UOpPtr& s) { return s->op == Ops::DEFINE_ACC; });
    EXPECT_GT(fed, 0u) << "wgmma " << wgmma;
    for (const UOp* as : of_op(after, Ops::ASSIGN)) EXPECT_EQ(as->src[1]->op, Ops::GEP) << "wgmma " << wgmma;
  }
}

// The linearized program: accumulators declared before their loops without the ranges, numbered in order.
TEST(ReduceToAcc, LinearizedAccumulatorsDropTheirRanges) {
  tg::ClangRenderer c;
  Tensor a = Tensor::empty({8, 16});
  std::vector<tg::UOpPtr> prog = tg::linearize_kernel(lowered(a.sum(1) + a.max(1), c, false));
  int64_t next = 0;
  for (const tg::UOpPtr& u : prog)
    if (u->op == Ops::DEFINE_ACC) {
      EXPECT_EQ(u->src.size(), 1u);
      EXPECT_EQ(u->get<int64_t>(), next++);
    }
  EXPECT_EQ(next, 2);
}
