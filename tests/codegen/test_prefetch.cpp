// codegen/prefetch.h: a CPU kernel that streams a matrix tile by tile prefetches the next tile inside its reduce
// loop; small tiles, kernels without a reduce and renderers without prefetches get none; results do not change.
#include <gtest/gtest.h>

#include <cmath>

#include "../common/random_data.h"
#include "codegen/kernel.h"
#include "codegen/opt/heuristic.h"
#include "codegen/linearize.h"
#include "codegen/lowerer.h"
#include "codegen/verify_program.h"
#include "renderer/c.h"
#include "renderer/cuda.h"
#include "schedule/schedule.h"
#include "tg/tg.h"

namespace tg {
namespace {

// The linearized program of the last kernel of `out`, optimized by the heuristics for `renderer`.
std::vector<UOpPtr> program(const Tensor& out, const Renderer& renderer) {
  Schedule s = create_schedule({out.uop()});
  Kernel k(s.items.back().ast, renderer);
  hand_coded_optimizations(k);
  return linearize_kernel(lower_kernel(k));
}

std::vector<UOpPtr> prefetches(const std::vector<UOpPtr>& uops) {
  std::vector<UOpPtr> out;
  for (const UOpPtr& u : uops)
    if (u->op == Ops::PREFETCH) out.push_back(u);
  return out;
}

// Whether `u` sits inside the loop opened by `range` (between it and its ENDRANGE).
bool inside(const std::vector<UOpPtr>& uops, const UOpPtr& u, const UOp* range) {
  bool open = false;
  for (const UOpPtr& x : uops) {
    if (x.get() == range) open = true;
    if (x->op == Ops::ENDRANGE && x->src[0].get() == range) open = false;
    if (x == u) return open;
  }
  return false;
}

TEST(Prefetch, MatrixVectorProductPrefetchesTheNextRowTile) {
  Tensor w = Tensor::empty({1024, 576}), x = Tensor::empty({576});
  w.realize(), x.realize();
  ClangRenderer c;
  const std::vector<UOpPtr> uops = program(w.matmul(x), c);
  const std::vector<UOpPtr> p = prefetches(uops);
  ASSERT_FALSE(p.empty());
  for (const UOpPtr& u : p) {
    EXPECT_EQ(u->src[0]->op, Ops::DEFINE_GLOBAL);
    const UOp* reduce_loop = nullptr;  // the innermost loop the prefetch depends on is a reduce loop
    for (const UOp* y : toposort(u->src[1]))
      if (y->op == Ops::RANGE && (!reduce_loop || y->get<int64_t>() > reduce_loop->get<int64_t>())) reduce_loop = y;
    ASSERT_NE(reduce_loop, nullptr);
    EXPECT_TRUE(inside(uops, u, reduce_loop));
  }
  ProgramSpec spec;
  spec.name = "r_gemv";
  spec.uops = uops;
  for (const UOpPtr& u : uops)  // the kernel's threads (CORE launch indices), as the engine's launch sets them
    if (u->op == Ops::SPECIAL) spec.global_size[size_t(u->get<SpecialArg>().dim)] = u->get<SpecialArg>().size;
  EXPECT_NO_THROW(verify_program(spec));
  EXPECT_NE(c.render("r_gemv", uops).find("__builtin_prefetch("), std::string::npos);
}

TEST(Prefetch, SmallTilesAndElementwiseKernelsHaveNone) {
  Tensor w = Tensor::empty({64, 16}), x = Tensor::empty({16}), a = Tensor::empty({4096});
  w.realize(), x.realize(), a.realize();
  ClangRenderer c;
  EXPECT_TRUE(prefetches(program(w.matmul(x), c)).empty());  // a row tile of 16 floats: the hardware's job
  EXPECT_TRUE(prefetches(program(a + 1.0f, c)).empty());     // no reduce loop to spread the work over
}

TEST(Prefetch, RenderersWithoutPrefetchesGetNone) {
  Tensor w = Tensor::empty({1024, 576}, {.device = "INTERP"}), x = Tensor::empty({576}, {.device = "INTERP"});
  w.realize(), x.realize();
  CUDARenderer cuda("sm_90");
  EXPECT_TRUE(prefetches(program(w.matmul(x), cuda)).empty());
}

TEST(Prefetch, ResultsMatchTheInterpreter) {
  for (auto [rows, cols] : {std::pair<int64_t, int64_t>{1024, 576}, {300, 1000}, {49, 4096}}) {
    auto wv = tgtest::random_floats(size_t(rows * cols), 7, -1.0f, 1.0f), xv = tgtest::random_floats(size_t(cols), 8);
    auto run = [&](const std::string& dev) {
      return Tensor(wv, {rows, cols}, {.device = dev}).matmul(Tensor(xv, {cols}, {.device = dev})).tolist<float>();
    };
    const std::vector<float> want = run("INTERP"), got = run("CPU");
    ASSERT_EQ(want.size(), got.size());
    for (size_t i = 0; i < want.size(); i++) ASSERT_NEAR(got[i], want[i], 1e-4f * (1.0f + std::fabs(want[i]))) << i;
  }
}

}  // namespace
}  // namespace tg
