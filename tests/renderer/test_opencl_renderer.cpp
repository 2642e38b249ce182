// The OpenCL renderer's source, on machines with or without an OpenCL device: the kernel's signature and address
// spaces, launch indices, 16-bit formats and 64-bit spellings. Running the kernels is the op suite under DEV=CL
// (tests/CMakeLists.txt: op_suite_cl, on PoCL in CI).
#include <gtest/gtest.h>

#include "../common/kernel_source.h"
#include "codegen/kernel.h"
#include "codegen/opt/heuristic.h"
#include "renderer/opencl.h"
#include "tg/tg.h"

using tg::Tensor;
using tgtest::has;
using tgtest::last_ast;
using tgtest::render;

namespace {
std::string cl_source(const Tensor& t, bool optimize = false) {
  tg::OpenCLRenderer cl(tg::OpenCLRenderer::Limits{256, 32768});
  tg::Kernel k(last_ast(t), cl);
  if (optimize) hand_coded_optimizations(k);
  return render(k, cl);
}
}  // namespace

TEST(OpenCLRender, DotProductIsAKernelOverGlobalBuffers) {
  tg::OpenCLRenderer cl;
  Tensor a = Tensor::empty({2}, {.dtype = tg::dtypes::int32}), b = Tensor::empty({2}, {.dtype = tg::dtypes::int32});
  tg::Kernel k(last_ast(a.dot(b)), cl);
  std::string src = render(k, cl);
  EXPECT_EQ(k.name(), "r_2");
  EXPECT_TRUE(has(src,
                  "__kernel void r_2(__global int* restrict data0, __global const int* restrict data1, "
                  "__global const int* restrict data2)"))
      << src;
  EXPECT_TRUE(has(src, "#pragma OPENCL FP_CONTRACT OFF")) << "exec_alu rounds a*b and +c apart: " << src;
}

TEST(OpenCLRender, ElementwiseUsesGroupsAndLocalIds) {
  std::string src = cl_source(Tensor::empty({64, 64}) + Tensor::empty({64, 64}), true);
  EXPECT_TRUE(has(src, "(int)get_group_id(0)")) << src;
  EXPECT_TRUE(has(src, "(int)get_local_id(0)")) << src;
  EXPECT_FALSE(has(src, "blockIdx")) << src;
}

// float16 buffers are `half` read and written through vload_half / vstore_half_rte (no cl_khr_fp16 needed);
// values are floats rounded back to float16 after each op.
TEST(OpenCLRender, HalfBuffersGoThroughVloadHalf) {
  const tg::DType h = tg::dtypes::float16;
  std::string src = cl_source(Tensor::empty({16}, {.dtype = h}) * Tensor::empty({16}, {.dtype = h}));
  EXPECT_TRUE(has(src, "__global half* restrict data0")) << src;
  EXPECT_TRUE(has(src, "vload_half(")) << src;
  EXPECT_TRUE(has(src, "vstore_half_rte(")) << src;
  EXPECT_TRUE(has(src, "tg_rh(")) << src;
}

TEST(OpenCLRender, Bfloat16IsUshortBits) {
  const tg::DType bf = tg::dtypes::bfloat16;
  std::string src = cl_source(Tensor::empty({16}, {.dtype = bf}) + Tensor::empty({16}, {.dtype = bf}));
  EXPECT_TRUE(has(src, "__global ushort* restrict data0")) << src;
  EXPECT_TRUE(has(src, "tg_bf_from_bits(")) << src;
  EXPECT_TRUE(has(src, "= tg_bf_bits(")) << src;
}

// A kernel may not take a pointer to bool: bool buffers are bytes.
TEST(OpenCLRender, BoolBuffersAreBytes) {
  std::string src = cl_source(Tensor::empty({8}) < Tensor::empty({8}));
  EXPECT_TRUE(has(src, "__global uchar* restrict data0")) << src;
}

// OpenCL C reserves `long long`: 64-bit integers are long / ulong, constants L / UL, also in the helpers the C-style
// base writes (float -> int conversion).
TEST(OpenCLRender, SixtyFourBitIntegersAreLong) {
  const tg::DType i64 = tg::dtypes::int64;
  Tensor x = Tensor::empty({8}, {.dtype = i64});
  std::string src = cl_source((x + Tensor::full({8}, int64_t(5000000000LL), {.dtype = i64})).lshift(3));
  EXPECT_TRUE(has(src, "5000000000L")) << src;
  EXPECT_TRUE(has(src, "__global long* restrict data0")) << src;
  EXPECT_FALSE(has(src, "long long")) << src;
  std::string ftoi = cl_source(Tensor::empty({8}).cast(i64));
  EXPECT_TRUE(has(ftoi, "long tg_ftoi(double x)")) << ftoi;
  EXPECT_FALSE(has(ftoi, "long long")) << ftoi;
}

// Reductions across a workgroup: __local arrays and barriers.
TEST(OpenCLRender, GroupedReduceUsesLocalMemoryAndBarriers) {
  tg::OpenCLRenderer cl(tg::OpenCLRenderer::Limits{256, 32768});
  tg::Kernel k(last_ast(Tensor::empty({4096}).sum()), cl);
  k.apply_opt({tg::OptOps::GROUPTOP, 0, 16});
  std::string src = render(k, cl);
  EXPECT_TRUE(has(src, "__local float")) << src;
  EXPECT_TRUE(has(src, "barrier(CLK_LOCAL_MEM_FENCE);")) << src;
}
