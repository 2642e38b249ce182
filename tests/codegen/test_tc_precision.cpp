// Tensor cores at other precisions than fp16/bf16 in, fp32 accumulated (renderer/tensor_core.h): fp16
// accumulation where a matmul is asked to sum in float16 (tinygrad's matmul(w, dtype=)), and tf32 for float32
// inputs behind ALLOW_TF32=1. Which kernels take them, the CUDA source they give, and their values: the values
// run on the default device, so the op suite runs them again on the interpreter emulating CUDA (CI) and on a GPU.
#include <gtest/gtest.h>

#include <cmath>

#include "codegen/kernel.h"
#include "codegen/opt/heuristic.h"
#include "renderer/cuda.h"
#include "renderer/tensor_core.h"
#include "runtime/device.h"
#include "tg/context.h"
#include "tg/tg.h"
#include "../common/kernel_source.h"
#include "../common/random_data.h"
#include "../common/reference.h"

using tg::OptOps;
using tg::Tensor;
using tgtest::has;
using tgtest::last_ast;
using tgtest::matmul_ref;
using tgtest::render;
using tgtest::small_ints;
namespace dt = tg::dtypes;

// A float16 sum of float16 products takes the tensor core with a float16 accumulator, mma.sync also on Hopper
// (the WGMMA lowering keeps float32 lanes); the default float32 accumulation keeps its own.
TEST(TcPrecision, HalfAccumulationSource) {
  for (const char* arch : {"sm_80", "sm_90"}) {
    tg::CUDARenderer cuda(arch);
    Tensor a = Tensor::empty({128, 64}, {.dtype = dt::float16}), b = Tensor::empty({64, 128}, {.dtype = dt::float16});
    Tensor c = a.matmul(b, dt::float16);
    EXPECT_EQ(c.dtype(), dt::float16);
    tg::Kernel k(last_ast(c), cuda);
    hand_coded_optimizations(k);
    ASSERT_TRUE(k.tensor_core().has_value()) << arch;
    EXPECT_EQ(k.tensor_core()->tc.acc, dt::float16) << arch;
    const std::string src = render(k, cuda);
    EXPECT_TRUE(has(src, "mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16")) << arch << "\n" << src;
    EXPECT_FALSE(has(src, "wgmma")) << arch << "\n" << src;
    tg::Kernel f32(last_ast(a.matmul(b)), cuda);
    hand_coded_optimizations(f32);
    ASSERT_TRUE(f32.tensor_core().has_value());
    EXPECT_EQ(f32.tensor_core()->tc.acc, dt::float32) << "a plain half matmul accumulates in float32";
  }
  // bfloat16 has no bfloat16 accumulator: the sum is not a tensor core's
  tg::CUDARenderer cuda;
  Tensor a = Tensor::empty({64, 32}, {.dtype = dt::bfloat16}), b = Tensor::empty({32, 64}, {.dtype = dt::bfloat16});
  tg::Kernel k(last_ast(a.matmul(b, dt::bfloat16)), cuda);
  EXPECT_THROW(k.apply_opt({OptOps::TC, 0, 0}), tg::KernelOptError);
}

// Values on small integers (every product and partial sum exact in float16), shapes that need masks and several
// K steps; and a batch.
TEST(TcPrecision, HalfAccumulationValues) {
  struct Case {
    int64_t batch, m, k, n;
  };
  for (Case c : {Case{1, 16, 16, 8}, Case{1, 64, 128, 64}, Case{1, 48, 32, 40}, Case{2, 32, 48, 24}, Case{1, 20, 64, 8}}) {
    const std::string what = std::to_string(c.batch) + "x" + std::to_string(c.m) + "x" + std::to_string(c.k) + "x" +
                             std::to_string(c.n);
    std::vector<float> av = small_ints(size_t(c.batch * c.m * c.k), 3), bv = small_ints(size_t(c.batch * c.k * c.n), 4);
    Tensor a = Tensor(av, {c.batch, c.m, c.k}).half(), b = Tensor(bv, {c.batch, c.k, c.n}).half();
    Tensor out = a.matmul(b, dt::float16);
    ASSERT_EQ(out.dtype(), dt::float16);
    std::vector<float> got = out.cast(dt::float32).tolist<float>();
    ASSERT_EQ(got.size(), size_t(c.batch * c.m * c.n));
    std::vector<double> want = matmul_ref(av, bv, c.batch, c.m, c.k, c.n);
    for (size_t i = 0; i < want.size(); i++) ASSERT_EQ(got[i], want[i]) << what << " at " << i;
  }
}

// sum(dtype=) accumulates in that dtype, as tinygrad: a float16 sum of 2048 and ones stays 2048 (2049 is not a
// float16, the tie rounds to even) where the default float32 accumulator reaches 2052; an int8 sum wraps.
TEST(TcPrecision, SumAccumulatesInTheDtypeAskedFor) {
  Tensor x = Tensor(std::vector<float>{2048, 1, 1, 1, 1}, {5}).half();
  EXPECT_EQ(x.sum().item<float>(), 2052.0f);
  Tensor h = x.sum({0}, false, dt::float16);
  EXPECT_EQ(h.dtype(), dt::float16);
  EXPECT_EQ(h.item<float>(), 2048.0f);
  EXPECT_EQ(x.sum({0}, false, dt::float32).dtype(), dt::float32);
  Tensor i8 = Tensor(std::vector<float>{100, 100}, {2}).cast(dt::int8);
  EXPECT_EQ(i8.sum().item<int>(), 200);
  EXPECT_EQ(i8.sum({0}, false, dt::int8).item<int>(), -56);
  // keepdim and several axes
  Tensor m = Tensor(small_ints(24, 5), {2, 3, 4}).half();
  EXPECT_EQ(m.sum({0, 2}, true, dt::float16).shape(), (tg::Shape{1, 3, 1}));
  EXPECT_THROW(m.sum({3}, false, dt::float16), tg::Error);
}

namespace {

// Whether the default device's heuristics give an m x k x n float32 matmul a tensor core (the interpreter
// emulating CUDA, a GPU), and so whether tf32 rounding applies. (On empty tensors of its shape: scheduling a
// tensor marks it realized, so the one computed must not be scheduled here.)
bool takes_tensor_core(int64_t m, int64_t k, int64_t n) {
  Tensor out = Tensor::empty({m, k}).matmul(Tensor::empty({k, n}));
  const tg::Renderer& r = tg::get_device(out.device()).renderer();
  tg::Kernel kernel(last_ast(out), r);
  hand_coded_optimizations(kernel);
  return kernel.tensor_core().has_value();
}

}  // namespace

// tf32 only where asked: a float32 matmul keeps float32 FMAs unless ALLOW_TF32=1; then mma.sync m16n8k8 (also on
// Hopper), its operands staged through shared memory as plain loads (no LDMATRIX: its pairs are 16-bit).
TEST(TcPrecision, Tf32Source) {
  Tensor a = Tensor::empty({128, 64}), b = Tensor::empty({64, 128});
  for (const char* arch : {"sm_80", "sm_90"}) {
    tg::CUDARenderer cuda(arch);
    {
      tg::Kernel k(last_ast(a.matmul(b)), cuda);
      EXPECT_THROW(k.apply_opt({OptOps::TC, 0, 0}), tg::KernelOptError) << "tf32 without ALLOW_TF32";
    }
    tg::Context tf32({{"ALLOW_TF32", 1}});
    tg::Kernel k(last_ast(a.matmul(b)), cuda);
    hand_coded_optimizations(k);
    ASSERT_TRUE(k.tensor_core().has_value()) << arch;
    EXPECT_TRUE(k.tensor_core()->tc.tf32());
    const std::string src = render(k, cuda);
    EXPECT_TRUE(has(src, "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32")) << arch << "\n" << src;
    EXPECT_TRUE(has(src, "cvt.rna.tf32.f32")) << src;
    EXPECT_TRUE(has(src, "cp.async.cg.shared.global")) << arch << "\n" << src;
    EXPECT_FALSE(has(src, "ldmatrix") || has(src, "wgmma")) << arch << "\n" << src;
  }
}

// round_tf32 is cvt.rna's rounding: 10 mantissa bits, ties away from zero; inf and NaN pass.
TEST(TcPrecision, Tf32Rounding) {
  EXPECT_EQ(tg::round_tf32(1.0 + std::ldexp(1.0, -12)), 1.0);
  EXPECT_EQ(tg::round_tf32(1.0 + std::ldexp(1.0, -11)), 1.0 + std::ldexp(1.0, -10));    // a tie: away from zero
  EXPECT_EQ(tg::round_tf32(-1.0 - std::ldexp(1.0, -11)), -1.0 - std::ldexp(1.0, -10));
  EXPECT_EQ(tg::round_tf32(1.0 + 3 * std::ldexp(1.0, -12)), 1.0 + std::ldexp(1.0, -10));
  EXPECT_EQ(tg::round_tf32(3.0), 3.0);
  EXPECT_TRUE(std::isinf(tg::round_tf32(INFINITY)));
  EXPECT_TRUE(std::isnan(tg::round_tf32(NAN)));
  EXPECT_EQ(tg::round_tf32(0x1.fffffep127), INFINITY) << "the largest float rounds up past the range";
}

// Values with ALLOW_TF32=1: small integers are exact in tf32 (every device agrees exactly), on shapes with
// several K steps, masks and a batch.
TEST(TcPrecision, Tf32Values) {
  tg::Context tf32({{"ALLOW_TF32", 1}});
  struct Case {
    int64_t m, k, n;
  };
  for (Case c : {Case{16, 8, 8}, Case{128, 64, 128}, Case{48, 40, 24}, Case{20, 16, 8}, Case{64, 256, 32}}) {
    std::vector<float> av = small_ints(size_t(c.m * c.k), 6), bv = small_ints(size_t(c.k * c.n), 7);
    std::vector<float> got = Tensor(av, {c.m, c.k}).matmul(Tensor(bv, {c.k, c.n})).tolist<float>();
    std::vector<double> want = matmul_ref(av, bv, 1, c.m, c.k, c.n);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < want.size(); i++)
      ASSERT_EQ(got[i], want[i]) << c.m << "x" << c.k << "x" << c.n << " at " << i;
  }
}

// A mantissa tf32 drops is dropped where a tensor core runs the kernel, and only with ALLOW_TF32=1: the same
// kernel runs without it first (the method cache keys on the knob). 1 + 2^-11 is a tie: tf32 keeps 1 + 2^-10, so
// a row of 8 sums to 8 + 2^-7 (float32: 8 + 2^-8).
TEST(TcPrecision, Tf32RoundsOnlyWhereAllowed) {
  const float x = 1.0f + std::ldexp(1.0f, -11);
  auto row_sums = [&] {
    Tensor a = Tensor(std::vector<float>(16 * 8, x), {16, 8}), b = Tensor(std::vector<float>(8 * 8, 1.0f), {8, 8});
    return a.matmul(b).tolist<float>();
  };
  for (float v : row_sums()) ASSERT_EQ(v, 8.0f + std::ldexp(1.0f, -8));
  tg::Context tf32({{"ALLOW_TF32", 1}});
  const float want = takes_tensor_core(16, 8, 8) ? 8.0f + std::ldexp(1.0f, -7) : 8.0f + std::ldexp(1.0f, -8);
  for (float v : row_sums()) ASSERT_EQ(v, want);
}
