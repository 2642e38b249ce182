// The CPU's register-tiled matmul and conv (codegen/opt/cpu_gemm.cpp) and the packed right operand of large
// matmuls (tensor/matmul_pack.cpp): the default heuristics on random shapes, odd sizes that do not divide the
// tiles, 1-sized dims, batches and several thread counts, against a float64 reference (matmul) or the
// interpreter (conv). Products are fused into the sums on the CPU (one rounding each), so the comparison
// has a tolerance scaled by the sum of the terms' magnitudes.
#include <gtest/gtest.h>

#include <algorithm>

#include <cmath>
#include <cstdlib>
#include <random>

#include "codegen/kernel.h"
#include "codegen/opt/heuristic.h"
#include "renderer/cpu_isa.h"
#include "engine/method_cache.h"
#include "runtime/device.h"
#include "schedule/schedule.h"
#include "tg/context.h"
#include "tg/tg.h"
#include "../common/random_data.h"

using tg::Tensor;

using tgtest::random_floats;

namespace {

// x (batch, m, k) @ w (k, n) on the CPU against float64 sums.
void check_matmul(int64_t batch, int64_t m, int64_t k, int64_t n, uint32_t seed) {
  auto xv = random_floats(size_t(batch * m * k), seed), wv = random_floats(size_t(k * n), seed + 1);
  Tensor x(xv, {batch, m, k}, {.device = "CPU"}), w(wv, {k, n}, {.device = "CPU"});
  auto got = x.matmul(w).tolist<float>();
  ASSERT_EQ(got.size(), size_t(batch * m * n));
  for (int64_t b = 0; b < batch; b++)
    for (int64_t i = 0; i < m; i++)
      for (int64_t j = 0; j < n; j++) {
        double want = 0, mag = 0;
        for (int64_t kk = 0; kk < k; kk++) {
          double p = double(xv[size_t((b * m + i) * k + kk)]) * double(wv[size_t(kk * n + j)]);
          want += p;
          mag += std::fabs(p);
        }
        const float g = got[size_t((b * m + i) * n + j)];
        ASSERT_NEAR(g, want, 1e-6 * (mag + 1) * 4)
            << batch << "x" << m << "x" << k << "x" << n << " at " << b << "," << i << "," << j;
      }
}

std::vector<tg::Opt> default_opts(const Tensor& t) {
  tg::Schedule s = tg::create_schedule({t.uop()});
  tg::Kernel k(s.items.back().ast, tg::get_device("CPU").renderer());
  hand_coded_optimizations(k);
  return k.applied_opts();
}

}  // namespace

TEST(CpuGemm, RandomShapesAgainstFloat64) {
  // sizes that divide the tiles, odd ones that do not, primes, and 1-sized dims
  const int64_t sizes[] = {1, 2, 3, 7, 16, 17, 32, 48, 64, 65, 96, 100, 128};
  std::mt19937 g(7);
  for (int threads : {1, 2, 3}) {
    tg::Context ctx({{"THREADS", threads}});
    for (int i = 0; i < 12; i++) {
      auto pick = [&] { return sizes[g() % std::size(sizes)]; };
      int64_t batch = g() % 3 == 0 ? 2 : 1, m = pick(), k = pick(), n = pick();
      check_matmul(batch, m, k, n, uint32_t(100 + i));
    }
    check_matmul(1, 128, 96, 128, 5);  // the full tile on every dim
    check_matmul(1, 1, 128, 128, 6);   // a vector times a matrix
    check_matmul(1, 128, 1, 64, 7);    // an outer product (K = 1)
  }
}

TEST(CpuGemm, TheTileIsChosenForALargeMatmul) {
  Tensor x = Tensor::rand({128, 128}, {.device = "CPU"}), w = Tensor::rand({128, 128}, {.device = "CPU"});
  auto opts = default_opts(x.matmul(w));
  // vectors along N, two of them, 4 rows of A, K unrolled by 2, threads (2 cores or more) over M
  ASSERT_GE(opts.size(), 4u);
  EXPECT_EQ(opts[0].op, tg::OptOps::UPCAST);
  EXPECT_EQ(opts[0].amount, tg::cpu_isa().vector_floats());
  EXPECT_EQ(opts[2].op, tg::OptOps::UPCAST);
  EXPECT_EQ(opts[2].amount, 4);
  EXPECT_EQ(opts[3].op, tg::OptOps::UNROLL);
}

TEST(CpuGemm, PackedRightOperand) {
  // 96 x 256 x 704: past the packing threshold (2^24 products), 704 = 22 panels of 32
  for (int threads : {1, 2}) {
    tg::Context ctx({{"THREADS", threads}});
    check_matmul(1, 96, 256, 704, 11);
    check_matmul(2, 48, 256, 704, 12);  // a batch: x (2, 48, 256)
  }
  Tensor x = Tensor::rand({96, 256}, {.device = "CPU"}), w = Tensor::rand({256, 704}, {.device = "CPU"});
  x.realize();
  w.realize();
  const size_t packed = tg::create_schedule({x.matmul(w).uop()}).items.size();
  size_t plain;
  {
    tg::Context ctx({{"CPU_PACK", 0}});
    plain = tg::create_schedule({x.matmul(w).uop()}).items.size();
  }
  EXPECT_EQ(packed, plain + 1);  // the copy into panels
  // not packed: too small, or N not a multiple of 32, or another dtype
  Tensor small = Tensor::rand({32, 64}, {.device = "CPU"}), odd = Tensor::rand({256, 700}, {.device = "CPU"});
  small.realize();
  odd.realize();
  EXPECT_EQ(tg::create_schedule({small.matmul(w.shrink({{0, 64}, {0, 64}})).uop()}).items.size(), 1u);
  EXPECT_EQ(tg::create_schedule({x.matmul(odd).uop()}).items.size(), 1u);
  check_matmul(1, 96, 256, 700, 13);
  // The panel loop goes outside M (a panel stays in L2 while the rows stream past), also where the tile is narrower
  // than the 32-float panel (8- or 4-float vectors: a loop over the tiles of a panel too). At CPU_ISA=avx2 the
  // 1024^3 matmul ran at 15.9 GFLOPS without it (one thread), 30.5 with.
  const std::vector<tg::Opt> opts = default_opts(x.matmul(w));
  const bool swapped = std::any_of(opts.begin(), opts.end(), [](const tg::Opt& o) { return o.op == tg::OptOps::SWAP; });
  EXPECT_TRUE(swapped) << "at " << tg::cpu_isa().describe();
}

TEST(CpuGemm, ConvAgreesWithInterpreter) {
  // output channels and rows of x upcast, the kernel width unrolled; padding gives gated loads
  // (the last three are past 2^20 products with 16k output channels: weights packed channel-last)
  struct Case {
    int64_t b, cin, hw, cout, k, pad, stride = 1;
  };
  for (const Case& c :
       {Case{2, 8, 16, 16, 3, 1}, Case{1, 3, 13, 8, 3, 1}, Case{3, 5, 11, 7, 3, 0}, Case{2, 4, 24, 12, 5, 2},
        Case{1, 16, 8, 32, 1, 0}, Case{2, 16, 20, 32, 3, 1}, Case{2, 8, 23, 16, 3, 1}, Case{2, 16, 21, 48, 3, 1, 2}}) {
    for (int threads : {1, 2}) {
      tg::Context ctx({{"THREADS", threads}});
      auto xv = random_floats(size_t(c.b * c.cin * c.hw * c.hw), 21),
           wv = random_floats(size_t(c.cout * c.cin * c.k * c.k), 22);
      auto run = [&](const std::string& dev) {
        Tensor x(xv, {c.b, c.cin, c.hw, c.hw}, {.device = dev}), w(wv, {c.cout, c.cin, c.k, c.k}, {.device = dev});
        return x.conv2d(w, std::nullopt, 1, {c.stride}, {1}, {c.pad}).tolist<float>();
      };
      auto cpu = run("CPU"), interp = run("INTERP");
      ASSERT_EQ(cpu.size(), interp.size());
      const float tol = 1e-5f * float(c.cin * c.k * c.k);
      for (size_t i = 0; i < cpu.size(); i++)
        ASSERT_NEAR(cpu[i], interp[i], tol) << c.cin << "x" << c.hw << " at " << i;
    }
  }
}

TEST(CpuGemm, ConvWeightsArePackedPastTheThreshold) {
  Tensor x = Tensor::rand({2, 16, 20, 20}, {.device = "CPU"}), w = Tensor::rand({32, 16, 3, 3}, {.device = "CPU"});
  x.realize();
  w.realize();
  auto kernels = [&](int64_t pad) {
    return tg::create_schedule({x.conv2d(w, std::nullopt, 1, {1}, {1}, {pad}).uop()}).items.size();
  };
  const size_t packed = kernels(0), packed_padded = kernels(1);
  tg::Context ctx({{"CPU_PACK", 0}});
  EXPECT_EQ(packed, kernels(0) + 1);         // the weights' copy
  EXPECT_EQ(packed_padded, kernels(1) + 2);  // and the padded input's (no masked loads in the tile)
}

TEST(CpuGemm, BadTileKnobIsAnError) {
  Tensor x = Tensor::rand({128, 128}, {.device = "CPU"}), w = Tensor::rand({128, 128}, {.device = "CPU"});
  setenv("CPU_GEMM_TILE", "4,0,2", 1);
  try {
    default_opts(x.matmul(w));
    ADD_FAILURE() << "CPU_GEMM_TILE=4,0,2 was taken";
  } catch (const tg::Error& e) {
    EXPECT_NE(std::string(e.what()).find("CPU_GEMM_TILE=4,0,2"), std::string::npos) << e.what();
  }
  // 64 rows x 16 vectors (N = 128 keeps 128 / vector width of them): 64 x 128 values, past what one thread may hold
  // at every vector width
  setenv("CPU_GEMM_TILE", "64,16,2", 1);
  try {
    default_opts(x.matmul(w));
    ADD_FAILURE() << "CPU_GEMM_TILE=64,16,2 was taken";
  } catch (const tg::Error& e) {
    EXPECT_NE(std::string(e.what()).find("CPU_GEMM_TILE=64,16,2"), std::string::npos) << e.what();
  }
  setenv("CPU_GEMM_TILE", "8,1,4", 1);  // a valid tile other than the default applies
  auto opts = default_opts(x.matmul(w));
  unsetenv("CPU_GEMM_TILE");
  ASSERT_GE(opts.size(), 3u);
  EXPECT_EQ(opts[1].amount, 8);
}

TEST(CpuGemm, BadThreadsIsAnError) {
  tg::Context ctx({{"THREADS", -2}});
  try {
    (void)tg::get_device("CPU").renderer().threads();
    ADD_FAILURE() << "THREADS=-2 was taken";
  } catch (const tg::Error& e) {
    EXPECT_NE(std::string(e.what()).find("THREADS=-2"), std::string::npos) << e.what();
  }
}
