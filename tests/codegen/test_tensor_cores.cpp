// Tensor cores (OptOps.TC, codegen/opt/tensor_cores.cpp, renderer/tensor_core.h): which kernels take one, the
// CUDA source they give, and their values. The values run on the default device, so the op suite runs them
// again on the interpreter emulating CUDA (which lowers half/bf16 matmuls to WMMA and emulates the warp's
// mma) and, with `ctest -L cuda`, on a GPU's tensor cores. Inputs are small integers: every product and sum is
// exact, so all devices must agree exactly.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <sstream>

#include "codegen/kernel.h"
#include "codegen/opt/heuristic.h"
#include "codegen/linearize.h"
#include "codegen/lowerer.h"
#include "renderer/c.h"
#include "renderer/cuda.h"
#include "schedule/schedule.h"
#include "tg/context.h"
#include "tg/tg.h"
#include "../common/kernel_source.h"
#include "../common/random_data.h"
#include "../common/reference.h"

using tg::Opt;
using tg::OptOps;
using tg::Tensor;
using tgtest::has;
using tgtest::last_ast;
using tgtest::matmul_ref;
using tgtest::render;
using tgtest::small_ints;
namespace dt = tg::dtypes;

namespace {

// x rounded to bfloat16 (nearest even), as the bf16 output of a matmul is; float16 holds these sums exactly.
// An r x c matrix (row-major values v) as a tensor stored row-major, or stored transposed (column-major: a
// c x r tensor) and viewed back with .T(): the operand layouts of x @ w, x.T() @ w, x @ w.T() ...
Tensor stored(const std::vector<float>& v, int64_t r, int64_t c, bool transposed) {
  if (!transposed) return Tensor(v, {r, c});
  std::vector<float> t(v.size());
  for (int64_t i = 0; i < r; i++)
    for (int64_t j = 0; j < c; j++) t[size_t(j * r + i)] = v[size_t(i * c + j)];
  return Tensor(t, {c, r});
}

double round_bf16(double x) {
  float f = float(x);
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  bits = (bits + 0x7fffu + ((bits >> 16) & 1u)) & 0xffff0000u;
  std::memcpy(&f, &bits, 4);
  return f;
}

}  // namespace

TEST(TensorCores, WhichKernelsTakeOne) {
  tg::CUDARenderer cuda;
  Tensor a = Tensor::empty({64, 32}, {.dtype = dt::float16}), b = Tensor::empty({32, 48}, {.dtype = dt::float16});
  tg::Kernel k(last_ast(a.matmul(b)), cuda);
  k.apply_opt({OptOps::TC, 0, 0});
  ASSERT_TRUE(k.tensor_core().has_value());
  // the lanes: LOCAL g (8) then t (4), innermost; registers M_HI, N_LO (UPCAST), K_HI, K_MID, K_LO (UNROLL)
  EXPECT_EQ(k.local_size(), 32);
  for (tg::TcRole r : {tg::TcRole::LANE_G, tg::TcRole::LANE_T, tg::TcRole::M_HI, tg::TcRole::N_LO, tg::TcRole::K_HI,
                       tg::TcRole::K_MID, tg::TcRole::K_LO})
    EXPECT_GE(k.dim_of(r), 0) << int(r);
  EXPECT_EQ(k.dim_of(tg::TcRole::LANE_T), k.dim_of(tg::TcRole::LANE_G) + 1);
  // more warps go outside the lanes
  k.apply_opt({OptOps::LOCAL, 1, 2});
  EXPECT_EQ(k.dim_of(tg::TcRole::LANE_T), k.dim_of(tg::TcRole::LANE_G) + 1);
  EXPECT_EQ(k.kinds()[size_t(k.dim_of(tg::TcRole::LANE_G) - 1)], tg::AxisKind::LOCAL);
  EXPECT_THROW(k.apply_opt({OptOps::GROUP, 0, 2}), tg::KernelOptError);

  auto refuses = [&](const Tensor& t, const tg::Renderer& r, const char* why) {
    tg::Kernel kk(last_ast(t), r);
    EXPECT_THROW(kk.apply_opt({OptOps::TC, 0, 0}), tg::KernelOptError) << why;
    EXPECT_FALSE(kk.tensor_core().has_value()) << why;
  };
  Tensor f32a = Tensor::empty({64, 32}), f32b = Tensor::empty({32, 48});
  refuses(f32a.matmul(f32b), cuda, "float32 has no tensor core here");
  refuses(a.matmul(b), tg::ClangRenderer(), "the CPU has no tensor cores");
  refuses(Tensor::empty({64, 24}, {.dtype = dt::float16}).matmul(Tensor::empty({24, 48}, {.dtype = dt::float16})), cuda,
          "K = 24 is not a multiple of 16");
  refuses(a.pad({{0, 0}, {0, 16}}).matmul(Tensor::empty({48, 48}, {.dtype = dt::float16})), cuda, "a padded operand");
  refuses((a + a).sum(1), cuda, "not a sum of products");
  tg::Kernel late(last_ast(a.matmul(b)), cuda);
  late.apply_opt({OptOps::UPCAST, 0, 2});
  EXPECT_THROW(late.apply_opt({OptOps::TC, 0, 0}), tg::KernelOptError) << "TC comes first";
  {
    tg::Context off({{"TC", 0}});
    tg::Kernel h(last_ast(a.matmul(b)), cuda);
    hand_coded_optimizations(h);
    EXPECT_FALSE(h.tensor_core().has_value()) << "TC=0 turns them off";
  }
  tg::Kernel h(last_ast(a.matmul(b)), cuda);
  hand_coded_optimizations(h);
  EXPECT_TRUE(h.tensor_core().has_value()) << "the default heuristics pick a tensor core for a half matmul";
}

TEST(TensorCores, CudaSourceUsesMma) {
  tg::CUDARenderer cuda;
  for (tg::DType t : {dt::float16, dt::bfloat16}) {
    Tensor a = Tensor::empty({32, 32}, {.dtype = t}), b = Tensor::empty({32, 16}, {.dtype = t});
    tg::Kernel k(last_ast(a.matmul(b)), cuda);
    hand_coded_optimizations(k);
    std::string src = render(k, cuda);
    const std::string ty = t == dt::float16 ? "f16" : "bf16";
    EXPECT_TRUE(has(src, "mma.sync.aligned.m16n8k16.row.col.f32." + ty + "." + ty + ".f32")) << src;
    // operands go through shared memory (codegen/tc_staging.h) and reach the instruction as LDMATRIX registers
    EXPECT_TRUE(has(src, "cp.async.cg.shared.global") && has(src, "cp.async.wait_group")) << src;
    EXPECT_TRUE(has(src, "ldmatrix.sync.aligned.m8n8.x4.shared.b16") && has(src, "(ldm0[0], ldm0[1], ldm0[2], ldm0[3]"))
        << src;
    {  // without staging, operands stay 16-bit from the global load to the instruction
      tg::Context off({{"TC_STAGES", 0}});
      std::string direct = render(k, cuda);
      EXPECT_FALSE(has(direct, "ldmatrix")) << direct;
      // (A's pairs along K are read as one 4-byte vector, its lanes taken as 16-bit values)
      EXPECT_TRUE(has(direct, t == dt::float16 ? "half gep0 = val0.v[0];" : "__nv_bfloat16 gep0 = val0.v[0];")) << direct;
      EXPECT_FALSE(has(direct, "_rn(val") || has(direct, "_rn(gep")) << direct;
    }
    EXPECT_TRUE(has(src, "__launch_bounds__(32)") || has(src, "__launch_bounds__(64)") ||
                has(src, "__launch_bounds__(128)"))
        << src;
  }
}

TEST(TensorCores, MatmulValues) {
  struct Case {
    int64_t batch, m, k, n;
  };
  for (tg::DType t : {dt::float16, dt::bfloat16})
    for (Case c : {Case{1, 16, 16, 8}, Case{1, 32, 48, 24}, Case{1, 64, 32, 128}, Case{1, 48, 16, 40},
                   Case{2, 32, 16, 24}, Case{1, 20, 32, 8}}) {
      std::vector<float> av = small_ints(size_t(c.batch * c.m * c.k), 1), bv = small_ints(size_t(c.batch * c.k * c.n), 2);
      Tensor a = Tensor(av, {c.batch, c.m, c.k}).cast(t), b = Tensor(bv, {c.batch, c.k, c.n}).cast(t);
      std::vector<double> want = matmul_ref(av, bv, c.batch, c.m, c.k, c.n);
      if (t == dt::bfloat16)
        for (double& w : want) w = round_bf16(w);
      std::vector<float> got = a.matmul(b).cast(dt::float32).tolist<float>();
      ASSERT_EQ(got.size(), want.size());
      for (size_t i = 0; i < got.size(); i++)
        ASSERT_EQ(got[i], want[i]) << t.repr() << " " << c.batch << "x" << c.m << "x" << c.k << "x" << c.n << " at " << i;
    }
}

// Operands staged through shared memory in all four layouts (A and B each row- or column-major), so LDMATRIX
// reads row pairs and column pairs (.trans) of each; K of 32 (2 steps of 16, fewer than the stages), 48 and 128.
TEST(TensorCores, StagedOperandsInEveryLayout) {
  tg::Context mma({{"WGMMA", 0}});  // Hopper's default is wgmma (below)
  tg::CUDARenderer cuda;
  struct Case {
    int64_t m, k, n;
  };
  for (bool ta : {false, true})
    for (bool tb : {false, true})
      for (Case c : {Case{64, 32, 128}, Case{128, 48, 64}, Case{64, 128, 32}}) {
        std::string what = std::string(ta ? "A col-major" : "A row-major") + (tb ? ", B col-major " : ", B row-major ") +
                           std::to_string(c.m) + "x" + std::to_string(c.k) + "x" + std::to_string(c.n);
        auto operands = [&](const Tensor& x, const Tensor& w) { return (ta ? x.T() : x).matmul(tb ? w.T() : w); };
        {
          Tensor ex = Tensor::empty(ta ? tg::Shape{c.k, c.m} : tg::Shape{c.m, c.k}, {.dtype = dt::float16});
          Tensor ew = Tensor::empty(tb ? tg::Shape{c.n, c.k} : tg::Shape{c.k, c.n}, {.dtype = dt::float16});
          tg::Kernel k(last_ast(operands(ex, ew)), cuda);
          hand_coded_optimizations(k);
          std::string src = render(k, cuda);
          EXPECT_TRUE(has(src, "cp.async.cg.shared.global")) << what << "\n" << src;
          // A's fragments: column pairs (.trans) when M is contiguous; B's: column pairs when N is
          std::istringstream lines(src);
          int a_loads = 0, b_loads = 0;
          for (std::string l; std::getline(lines, l);) {
            if (!has(l, "ldmatrix.sync.aligned")) continue;
            const bool is_a = has(l, "(tc_a + "), trans = has(l, ".trans");
            (is_a ? a_loads : b_loads)++;
            EXPECT_EQ(trans, is_a ? ta : !tb) << what << "\n" << l;
          }
          EXPECT_GT(a_loads, 0) << what;
          EXPECT_GT(b_loads, 0) << what;
        }
        std::vector<float> av = small_ints(size_t(c.m * c.k), 8), bv = small_ints(size_t(c.k * c.n), 9);
        Tensor x = stored(av, c.m, c.k, ta).half(), w = stored(bv, c.k, c.n, tb).half();
        std::vector<float> got = operands(x, w).cast(dt::float32).tolist<float>();
        std::vector<double> want = matmul_ref(av, bv, 1, c.m, c.k, c.n);
        ASSERT_EQ(got.size(), want.size());
        for (size_t i = 0; i < got.size(); i++) ASSERT_EQ(got[i], want[i]) << what << " at " << i;
      }
}

TEST(TensorCores, EpilogueAndTransposedOperand) {
  // relu(x @ w.T + bias): B read transposed (K contiguous), an elementwise epilogue on the accumulators
  const int64_t m = 32, k = 64, n = 16;
  std::vector<float> xv = small_ints(size_t(m * k), 3), wv = small_ints(size_t(n * k), 4), bias = small_ints(size_t(n), 5);
  Tensor x = Tensor(xv, {m, k}).half(), w = Tensor(wv, {n, k}).half(), bb = Tensor(bias, {n}).half();
  std::vector<float> got = (x.matmul(w.T()) + bb).relu().cast(dt::float32).tolist<float>();
  for (int64_t i = 0; i < m; i++)
    for (int64_t j = 0; j < n; j++) {
      double s = bias[size_t(j)];
      for (int64_t l = 0; l < k; l++) s += double(xv[size_t(i * k + l)]) * wv[size_t(j * k + l)];
      ASSERT_EQ(got[size_t(i * n + j)], std::max(s, 0.0)) << i << "," << j;
    }
}

TEST(TensorCores, ConvolutionWithPaddedInput) {
  // conv2d reads its input through a padded (masked) view under a strided window: the tensor core swizzles
  // only the window's strides. Output width 16 is M, the output channels N, the input channels K.
  const int64_t b = 2, cin = 16, cout = 8, h = 16, w = 16;
  std::vector<float> xv = small_ints(size_t(b * cin * h * w), 6), wv = small_ints(size_t(cout * cin * 9), 7);
  for (float& v : xv) v = std::fmod(v, 3.0f);  // |x| <= 2: every sum of 144 products stays exact in half
  Tensor x = Tensor(xv, {b, cin, h, w}).half(), wt = Tensor(wv, {cout, cin, 3, 3}).half();
  {
    tg::CUDARenderer cuda;
    // (its own tensors: create_schedule marks what it schedules as realized)
    Tensor ex = Tensor::empty({b, cin, h, w}, {.dtype = dt::float16});
    Tensor ew = Tensor::empty({cout, cin, 3, 3}, {.dtype = dt::float16});
    tg::Kernel k(last_ast(ex.conv2d(ew, std::nullopt, 1, {1}, {1}, {1})), cuda);
    hand_coded_optimizations(k);
    EXPECT_TRUE(k.tensor_core().has_value()) << k.name();
  }
  std::vector<float> got = x.conv2d(wt, std::nullopt, 1, {1}, {1}, {1}).cast(dt::float32).tolist<float>();
  for (int64_t n = 0; n < b; n++)
    for (int64_t o = 0; o < cout; o++)
      for (int64_t i = 0; i < h; i++)
        for (int64_t j = 0; j < w; j++) {
          double s = 0;
          for (int64_t c = 0; c < cin; c++)
            for (int64_t di = 0; di < 3; di++)
              for (int64_t dj = 0; dj < 3; dj++) {
                int64_t y = i + di - 1, z = j + dj - 1;
                if (y < 0 || y >= h || z < 0 || z >= w) continue;
                s += double(xv[size_t(((n * cin + c) * h + y) * w + z)]) * wv[size_t(((o * cin + c) * 3 + di) * 3 + dj)];
              }
          ASSERT_EQ(got[size_t(((n * cout + o) * h + i) * w + j)], s) << n << "," << o << "," << i << "," << j;
        }
}

// Hopper's warpgroup tensor cores (WGMMA=1, renderer/tensor_core.h): A and B staged in core matrices and read
// by wgmma from shared memory, K-major or MN-major (the trans flags), one warpgroup op per K step of 16 chained
// through the accumulators; the interpreter emulates it warpgroup by warpgroup. Shapes: one and two
// warpgroups along M, n of 64 and 128, two M tiles per warpgroup and n = 256 through TC_TILE, bfloat16, K steps
// of 64 (the 128-byte swizzle for K-major operands, "1ull" in the descriptor).
TEST(TensorCores, WgmmaInEveryLayout) {
  tg::Context on({{"WGMMA", 1}});
  tg::CUDARenderer cuda;
  struct Case {
    int64_t m, k, n;
    const char* tile;  // TC_TILE, or "" for the default
    tg::DType dtype;
  };
  for (bool ta : {false, true})
    for (bool tb : {false, true})
      for (Case c : {Case{128, 64, 128, "", dt::float16}, Case{64, 32, 64, "", dt::float16},
                     Case{128, 48, 256, "1,32,8,1,1", dt::bfloat16}, Case{256, 64, 128, "2,16,8,1,2", dt::float16},
                     // K steps of 64: K-major operands take the 128-byte swizzle
                     Case{128, 128, 128, "", dt::float16}, Case{64, 192, 64, "", dt::bfloat16}}) {
        std::string what = std::string(ta ? "A col-major" : "A row-major") + (tb ? ", B col-major " : ", B row-major ") +
                           std::to_string(c.m) + "x" + std::to_string(c.k) + "x" + std::to_string(c.n) + " " + c.tile;
        struct TileKnob {  // TC_TILE is read from the environment
          explicit TileKnob(const char* v) { *v ? ::setenv("TC_TILE", v, 1) : ::unsetenv("TC_TILE"); }
          ~TileKnob() { ::unsetenv("TC_TILE"); }
        } knob(c.tile);
        auto operands = [&](const Tensor& x, const Tensor& w) { return (ta ? x.T() : x).matmul(tb ? w.T() : w); };
        {
          Tensor ex = Tensor::empty(ta ? tg::Shape{c.k, c.m} : tg::Shape{c.m, c.k}, {.dtype = c.dtype});
          Tensor ew = Tensor::empty(tb ? tg::Shape{c.n, c.k} : tg::Shape{c.k, c.n}, {.dtype = c.dtype});
          tg::Kernel k(last_ast(operands(ex, ew)), cuda);
          hand_coded_optimizations(k);
          std::string src = render(k, cuda);
          const std::string ty = c.dtype == dt::float16 ? "f16" : "bf16";
          // A is M-major when stored transposed; B is K-major when it is (x @ w.T)
          const std::string flags = std::string(", p, 1, 1, ") + (ta ? "1" : "0") + ", " + (tb ? "0" : "1") + ";";
          EXPECT_TRUE(has(src, "wgmma.mma_async.sync.aligned.m64n" + std::to_string(c.n) + "k16.f32." + ty + "." + ty))
              << what << "\n" << src;
          EXPECT_TRUE(has(src, flags)) << what << "\n" << src;
          // cp.async writes through the generic proxy, which wgmma (async proxy) must be told of; TMA (both operands
          // swizzled, test_tma.cpp) writes through the async proxy itself
          EXPECT_TRUE(has(src, "wgmma.fence.sync.aligned") && has(src, "wgmma.wait_group.sync.aligned 0") &&
                      (has(src, "fence.proxy.async.shared::cta") || has(src, "cp.async.bulk.tensor")))
              << what << "\n" << src;
          EXPECT_FALSE(has(src, "ldmatrix")) << what;
          if (c.k % 128 == 0 && !ta) {
            EXPECT_TRUE(has(src, "1ull)")) << "A is swizzled: " << what << "\n" << src;
          }
        }
        std::vector<float> av = small_ints(size_t(c.m * c.k), 10), bv = small_ints(size_t(c.k * c.n), 11);
        Tensor x = stored(av, c.m, c.k, ta).cast(c.dtype), w = stored(bv, c.k, c.n, tb).cast(c.dtype);
        std::vector<float> got = operands(x, w).cast(dt::float32).tolist<float>();
        std::vector<double> want = matmul_ref(av, bv, 1, c.m, c.k, c.n);
        if (c.dtype == dt::bfloat16)
          for (double& v : want) v = round_bf16(v);
        ASSERT_EQ(got.size(), want.size());
        for (size_t i = 0; i < got.size(); i++) ASSERT_EQ(got[i], want[i]) << what << " at " << i;
      }
}

TEST(TensorCores, DeferredWgmmasWaitOneStepLater) {
  // A tile that has the multiprocessor alone (128 x 256, 4 stages of 48 KiB) defers its wgmmas: each step's stay in
  // flight until the next step's are issued, the copies run S-2 steps ahead, the accumulators are one array the
  // wgmmas update in place, and the loop's end drains the last group (per-thread copies here; test_tma.cpp has
  // the same pipeline with TMA)
  tg::Context on({{"WGMMA", 1}, {"TMA", 0}});
  tg::CUDARenderer cuda;
  struct TileKnob {  // TC_TILE is read from the environment
    TileKnob() { ::setenv("TC_TILE", "1,32,8,1,4", 1); }
    ~TileKnob() { ::unsetenv("TC_TILE"); }
  } knob;
  const int64_t m = 128, k = 512, n = 256;
  Tensor ex = Tensor::empty({m, k}, {.dtype = dt::float16}), ew = Tensor::empty({k, n}, {.dtype = dt::float16});
  tg::Kernel kern(last_ast(ex.matmul(ew)), cuda);
  hand_coded_optimizations(kern);
  std::string src = render(kern, cuda);
  const size_t deferred = src.find("wgmma.wait_group.sync.aligned 1;"), drain = src.find("wgmma.wait_group.sync.aligned 0;");
  ASSERT_NE(deferred, std::string::npos) << src;
  ASSERT_NE(drain, std::string::npos) << src;
  EXPECT_LT(deferred, drain) << src;
  EXPECT_TRUE(has(src, "cp.async.wait_group 1;")) << "4 stages, copies two steps ahead: " << src;
  EXPECT_TRUE(has(src, "float wgacc0[128];")) << src;
  EXPECT_FALSE(has(src, "float wg0[")) << "no copies of the accumulators: " << src;
  EXPECT_TRUE(has(src, "@p cp.async")) << "gated copies are predicated, not branched around: " << src;
  EXPECT_FALSE(has(src, "if (")) << src;
  {
    tg::Context off({{"WGMMA_DEFER", 0}});
    std::string waits = render(kern, cuda);
    EXPECT_FALSE(has(waits, "wgmma.wait_group.sync.aligned 1;")) << waits;
    EXPECT_TRUE(has(waits, "cp.async.wait_group 0;")) << "2 stages (room for two blocks), one step ahead: " << waits;
  }
  std::vector<float> av = small_ints(size_t(m * k), 12), bv = small_ints(size_t(k * n), 13);
  Tensor x = stored(av, m, k, false).cast(dt::float16), w = stored(bv, k, n, false).cast(dt::float16);
  std::vector<float> got = x.matmul(w).cast(dt::float32).tolist<float>();
  std::vector<double> want = matmul_ref(av, bv, 1, m, k, n);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); i++) ASSERT_EQ(got[i], want[i]) << "at " << i;
}

// A tensor core's output lanes come in pairs of neighbouring columns (2t, 2t + 1): each pair is one vector store
// (half2, float2), with wgmma and with mma.sync.
TEST(TensorCores, OutputPairsAreVectorStores) {
  for (int wgmma : {1, 0}) {
    tg::Context on({{"WGMMA", wgmma}});
    tg::CUDARenderer cuda;
    Tensor ex = Tensor::empty({256, 256}, {.dtype = dt::float16}), ew = Tensor::empty({256, 256}, {.dtype = dt::float16});
    for (bool f32 : {false, true}) {
      Tensor out = f32 ? ex.matmul(ew).cast(dt::float32) : ex.matmul(ew);
      tg::Kernel kern(last_ast(out), cuda);
      hand_coded_optimizations(kern);
      std::string src = render(kern, cuda);
      EXPECT_TRUE(has(src, f32 ? "*((float2*)(data0+" : "*((tg_half2*)(data0+")) << "WGMMA=" << wgmma << "\n" << src;
      EXPECT_FALSE(has(src, "  data0[")) << "no scalar stores, WGMMA=" << wgmma << "\n" << src;
    }
  }
}

TEST(TensorCores, SmallWgmmaTilesWaitEachStep) {
  // 128 x 128 blocks, two an SM with 3 stages: deferring measured slower, so each step waits for its wgmmas
  tg::Context on({{"WGMMA", 1}});
  tg::CUDARenderer cuda;
  Tensor ex = Tensor::empty({256, 256}, {.dtype = dt::float16}), ew = Tensor::empty({256, 256}, {.dtype = dt::float16});
  tg::Kernel kern(last_ast(ex.matmul(ew)), cuda);
  hand_coded_optimizations(kern);
  std::string src = render(kern, cuda);
  EXPECT_TRUE(has(src, "wgmma.wait_group.sync.aligned 0;") && !has(src, "wgmma.wait_group.sync.aligned 1;")) << src;
  EXPECT_TRUE(has(src, "float wgacc0[64];")) << "in place all the same: " << src;
}

TEST(TensorCores, WgmmaArgIsChecked) {
  tg::WgmmaArg arg{128, false, {false, true, 0, 512}, {true, false, 1152, 72}, true, false};
  EXPECT_EQ(tg::WgmmaArg::unpack(arg.pack()), arg);
  EXPECT_THROW(tg::WgmmaArg::unpack({}), tg::Error);
  std::vector<int64_t> bad = arg.pack();
  bad[0] = 12;  // n: a multiple of 8 up to 256
  EXPECT_THROW(tg::WgmmaArg::unpack(bad), tg::Error);
  bad = arg.pack();
  bad[8] = 4;  // core matrices 16-byte aligned
  EXPECT_THROW(tg::WgmmaArg::unpack(bad), tg::Error);
  bad = arg.pack();
  bad[12] = 1;  // a deferred wait needs a wait
  EXPECT_THROW(tg::WgmmaArg::unpack(bad), tg::Error);
  {
    tg::Context off({{"WGMMA", 0}});
    EXPECT_FALSE(tg::CUDARenderer("sm_90").wgmma());
  }
  tg::Context on({{"WGMMA", 1}});
  EXPECT_TRUE(tg::CUDARenderer("sm_90").wgmma());
  EXPECT_FALSE(tg::CUDARenderer("sm_80").wgmma()) << "Ampere has no wgmma";
  EXPECT_FALSE(tg::CUDARenderer("sm_100").wgmma()) << "sm_90a features are not forward-compatible";
}

// TC_SWIZZLE=n: blocks start in groups of n block rows, a column of the group after another (where a row holds at
// least 4n blocks). The grid is the same and every block still computes one tile, so the values are the matmul's
// (here on 4 x 8 blocks of 128 x 64).
TEST(TensorCores, SwizzledBlockOrderKeepsValues) {
  tg::Context swizzle({{"TC_SWIZZLE", 2}});
  struct TileKnob {
    TileKnob() { ::setenv("TC_TILE", "1,8,8,1,2", 1); }
    ~TileKnob() { ::unsetenv("TC_TILE"); }
  } knob;
  const int64_t m = 512, k = 32, n = 512;
  {
    tg::CUDARenderer cuda;
    Tensor ex = Tensor::empty({m, k}, {.dtype = dt::float16}), ew = Tensor::empty({k, n}, {.dtype = dt::float16});
    tg::Kernel kernel(last_ast(ex.matmul(ew)), cuda);
    hand_coded_optimizations(kernel);
    std::string swizzled = render(kernel, cuda);
    tg::Context off({{"TC_SWIZZLE", 0}});
    std::string plain = render(kernel, cuda);
    EXPECT_NE(swizzled, plain);
    EXPECT_TRUE(has(swizzled, "gidx1%2")) << swizzled;
  }
  std::vector<float> av = small_ints(size_t(m * k), 20), bv = small_ints(size_t(k * n), 21);
  Tensor a = Tensor(av, {m, k}).cast(dt::float16), b = Tensor(bv, {k, n}).cast(dt::float16);
  std::vector<float> got = a.matmul(b).cast(dt::float32).tolist<float>();
  std::vector<double> want = matmul_ref(av, bv, 1, m, k, n);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); i++) ASSERT_EQ(got[i], want[i]) << "at " << i;
}
