// The Metal renderer's source (there is no Metal compiler here): the kernel's signature with its buffer indices and
// launch indices, address spaces, 16-bit formats, float64's error, and fast math turned off. Every op-suite kernel
// is rendered by op_suite_interp_emulate_metal (tests/CMakeLists.txt).
#include <gtest/gtest.h>

#include "../common/kernel_source.h"
#include "codegen/kernel.h"
#include "codegen/opt/heuristic.h"
#include "renderer/metal.h"
#include "tg/error.h"
#include "tg/tg.h"

using tg::Tensor;
using tgtest::has;
using tgtest::last_ast;
using tgtest::render;

namespace {
std::string metal_source(const Tensor& t, bool optimize = false) {
  tg::MetalRenderer metal;
  tg::Kernel k(last_ast(t), metal);
  if (optimize) hand_coded_optimizations(k);
  return render(k, metal);
}
}  // namespace

TEST(MetalRender, KernelTakesBuffersAtIndicesThenLaunchIds) {
  std::string src = metal_source(Tensor::empty({64, 64}) + Tensor::empty({64, 64}), true);
  EXPECT_TRUE(has(src, "#include <metal_stdlib>\nusing namespace metal;\n")) << src;
  EXPECT_TRUE(has(src,
                  "device float* data0 [[buffer(0)]], const device float* data1 [[buffer(1)]], "
                  "const device float* data2 [[buffer(2)]], uint3 tg_gid [[threadgroup_position_in_grid]]"))
      << src;
  EXPECT_TRUE(has(src, "(int)tg_gid.x")) << src;
  EXPECT_TRUE(has(src, "(int)tg_lid.x")) << src;
  EXPECT_TRUE(has(src, "#pragma METAL fp contract(off)")) << "exec_alu rounds a*b and +c apart: " << src;
}

TEST(MetalRender, VariablesAreConstantReferences) {
  tg::Variable n("n", 1, 64);
  Tensor x = Tensor::empty({64}).shrink({{0, n.bind(8)}});
  std::string src = metal_source(x + 1);
  EXPECT_TRUE(has(src, "constant int& n [[buffer(")) << src;
}

TEST(MetalRender, MathIsPrecise) {
  std::string src = metal_source(Tensor::empty({16}).exp2().sqrt());
  EXPECT_TRUE(has(src, "precise::exp2(")) << src;
  EXPECT_TRUE(has(src, "precise::sqrt(")) << src;
}

TEST(MetalRender, HalfIsMetalsHalfAndBfloat16IsBits) {
  const tg::DType h = tg::dtypes::float16, bf = tg::dtypes::bfloat16;
  std::string half = metal_source(Tensor::empty({16}, {.dtype = h}) * 3);
  EXPECT_TRUE(has(half, "device half* data0")) << half;
  EXPECT_TRUE(has(half, "tg_rh(")) << half;
  std::string b = metal_source(Tensor::empty({16}, {.dtype = bf}) * 3);
  EXPECT_TRUE(has(b, "device ushort* data0")) << b;
  EXPECT_TRUE(has(b, "tg_bf_bits(")) << b;
}

// Wide integers to float16 round once, through a float rounded to odd (no double to go through).
TEST(MetalRender, WideIntegersRoundOnceTo16Bits) {
  std::string src = metal_source(Tensor::empty({16}, {.dtype = tg::dtypes::int64}).cast(tg::dtypes::bfloat16));
  EXPECT_TRUE(has(src, "tg_i2f_odd((long)(")) << src;
  EXPECT_FALSE(has(src, "double")) << src;
}

TEST(MetalRender, Float64IsAnError) {
  tg::MetalRenderer metal;
  EXPECT_FALSE(metal.supports_dtype(tg::dtypes::float64));
  Tensor x = Tensor::empty({4}, {.dtype = tg::dtypes::float64});
  tg::Kernel k(last_ast(x + 1), metal);
  try {
    render(k, metal);
    ADD_FAILURE() << "rendered float64 for Metal";
  } catch (const tg::Error& e) {
    EXPECT_TRUE(has(e.what(), "METAL has no float64")) << e.what();
  }
}

TEST(MetalRender, GroupedReduceUsesThreadgroupMemory) {
  tg::MetalRenderer metal;
  tg::Kernel k(last_ast(Tensor::empty({4096}).sum()), metal);
  k.apply_opt({tg::OptOps::GROUPTOP, 0, 16});
  std::string src = render(k, metal);
  EXPECT_TRUE(has(src, "threadgroup float")) << src;
  EXPECT_TRUE(has(src, "threadgroup_barrier(mem_flags::mem_threadgroup);")) << src;
}
