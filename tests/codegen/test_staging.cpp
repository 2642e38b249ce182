// Shared-memory staging without tensor cores (codegen/staging.h, codegen/opt/gemm.cpp): a float32 matmul on a
// GPU renderer gets register tiles and its A and B through cp.async stages. The values run on the default
// device, so the op suite checks them on the interpreter emulating CUDA (which stages too) and on a GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <random>

#include "../common/kernel_source.h"
#include "codegen/kernel.h"
#include "codegen/opt/heuristic.h"
#include "renderer/cuda.h"
#include "tg/context.h"
#include "tg/tg.h"

using tg::Tensor;
using tgtest::has;
using tgtest::last_ast;
using tgtest::render;

namespace {

std::vector<float> uniform(size_t n, uint32_t seed) {
  std::vector<float> v(n);
  for (auto& e : v) {
    seed = seed * 1664525u + 1013904223u;
    e = float(seed >> 8) / float(1 << 24) - 0.5f;
  }
  return v;
}

}  // namespace

TEST(Staging, Float32MatmulSourceStagesBothOperands) {
  tg::CUDARenderer cuda;
  Tensor a = Tensor::empty({256, 64}), b = Tensor::empty({64, 128});
  tg::Kernel k(last_ast(a.matmul(b)), cuda);
  hand_coded_optimizations(k);
  std::string src = render(k, cuda);
  EXPECT_TRUE(has(src, "cp.async.cg.shared.global [%0], [%1], 16;")) << src;
  EXPECT_TRUE(has(src, "cp.async.wait_group")) << src;
  EXPECT_TRUE(has(src, "(*((float4*)(tile1+")) << "B's row of 4 in one shared load:\n" << src;
  EXPECT_FALSE(has(src, "= data1[")) << "A comes from shared memory only:\n" << src;
  EXPECT_EQ(k.local_size(), 128);  // 8 x 16 threads (codegen/opt/gemm.cpp)
  {
    tg::Context off({{"STAGES", 0}});
    EXPECT_FALSE(has(render(k, cuda), "cp.async")) << "STAGES=0 reads global memory directly";
  }
}

// Values: staged shapes (K of 24: fewer steps than stages), A or B transposed, an epilogue, and shapes the
// tiles do not divide (not staged) against a float64 reference.
TEST(Staging, Float32MatmulValues) {
  struct Case {
    int64_t m, k, n;
    bool ta, tb;
  };
  for (Case c : {Case{128, 64, 128, false, false}, Case{256, 24, 128, false, false}, Case{128, 40, 256, true, false},
                 Case{128, 32, 128, false, true}, Case{100, 30, 70, false, false}}) {
    std::vector<float> av = uniform(size_t(c.m * c.k), 1), bv = uniform(size_t(c.k * c.n), 2),
                       bias = uniform(size_t(c.n), 3);
    // stored as given, or transposed
    std::vector<float> as(av.size()), bs(bv.size());
    for (int64_t i = 0; i < c.m; i++)
      for (int64_t l = 0; l < c.k; l++) as[size_t(c.ta ? l * c.m + i : i * c.k + l)] = av[size_t(i * c.k + l)];
    for (int64_t l = 0; l < c.k; l++)
      for (int64_t j = 0; j < c.n; j++) bs[size_t(c.tb ? j * c.k + l : l * c.n + j)] = bv[size_t(l * c.n + j)];
    Tensor x = c.ta ? Tensor(as, {c.k, c.m}).T() : Tensor(as, {c.m, c.k});
    Tensor w = c.tb ? Tensor(bs, {c.n, c.k}).T() : Tensor(bs, {c.k, c.n});
    std::vector<float> got = (x.matmul(w) + Tensor(bias, {c.n})).relu().tolist<float>();
    ASSERT_EQ(got.size(), size_t(c.m * c.n));
    for (int64_t i = 0; i < c.m; i++)
      for (int64_t j = 0; j < c.n; j++) {
        double s = bias[size_t(j)];
        for (int64_t l = 0; l < c.k; l++) s += double(av[size_t(i * c.k + l)]) * bv[size_t(l * c.n + j)];
        ASSERT_NEAR(got[size_t(i * c.n + j)], std::max(s, 0.0), 1e-5)
            << c.m << "x" << c.k << "x" << c.n << (c.ta ? " A^T" : "") << (c.tb ? " B^T" : "") << " at " << i << ","
            << j;
      }
  }
}

// Random shapes, some the tiles divide (staged) and some not, float32 and float16, either operand transposed:
// every result against a float64 reference (float16 inputs are small integers, so those sums are exact).
TEST(Staging, RandomShapesAgainstReference) {
  std::mt19937 rng(20261125);
  auto pick = [&](std::initializer_list<int64_t> v) { return *(v.begin() + rng() % v.size()); };
  for (int iter = 0; iter < 10; iter++) {
    const int64_t m = pick({64, 128, 256, 80, 16}), k = pick({16, 32, 48, 96, 40}), n = pick({128, 256, 64, 24});
    const bool half = rng() % 2, ta = rng() % 2, tb = rng() % 2;
    std::vector<float> av(size_t(m * k)), bv(size_t(k * n));
    for (auto& x : av) x = half ? float(int(rng() % 7) - 3) : float(rng() % 2001) / 1000.f - 1.f;
    for (auto& x : bv) x = half ? float(int(rng() % 7) - 3) : float(rng() % 2001) / 1000.f - 1.f;
    std::vector<float> as(av.size()), bs(bv.size());
    for (int64_t i = 0; i < m; i++)
      for (int64_t l = 0; l < k; l++) as[size_t(ta ? l * m + i : i * k + l)] = av[size_t(i * k + l)];
    for (int64_t l = 0; l < k; l++)
      for (int64_t j = 0; j < n; j++) bs[size_t(tb ? j * k + l : l * n + j)] = bv[size_t(l * n + j)];
    tg::DType dt = half ? tg::dtypes::float16 : tg::dtypes::float32;
    Tensor x = ta ? Tensor(as, {k, m}).cast(dt).T() : Tensor(as, {m, k}).cast(dt);
    Tensor w = tb ? Tensor(bs, {n, k}).cast(dt).T() : Tensor(bs, {k, n}).cast(dt);
    std::vector<float> got = x.matmul(w).cast(tg::dtypes::float32).tolist<float>();  // half sums stay below 2048: exact
    ASSERT_EQ(got.size(), size_t(m * n));
    for (int64_t i = 0; i < m; i++)
      for (int64_t j = 0; j < n; j++) {
        double s = 0;
        for (int64_t l = 0; l < k; l++) s += double(av[size_t(i * k + l)]) * bv[size_t(l * n + j)];
        ASSERT_NEAR(got[size_t(i * n + j)], s, half ? 0.0 : 1e-4)
            << (half ? "half " : "float ") << m << "x" << k << "x" << n << (ta ? " A^T" : "") << (tb ? " B^T" : "")
            << " at " << i << "," << j;
      }
  }
}

TEST(Staging, GemmTileKnobTooLargeIsAnError) {
  tg::CUDARenderer cuda;
  Tensor a = Tensor::empty({256, 64}), b = Tensor::empty({64, 256});
  tg::Kernel k(last_ast(a.matmul(b)), cuda);
  ::setenv("GEMM_TILE", "8,16,8,16,16", 1);  // 2048 values a thread
  try {
    hand_coded_optimizations(k);
    ADD_FAILURE() << "an impossible tile was taken";
  } catch (const tg::Error& e) {
    EXPECT_NE(std::string(e.what()).find("GEMM_TILE=8,16,8,16,16"), std::string::npos) << e.what();
    EXPECT_TRUE(k.applied_opts().empty()) << "nothing applied before the error";
  }
  ::unsetenv("GEMM_TILE");
}
