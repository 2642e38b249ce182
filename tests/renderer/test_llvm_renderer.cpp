// The LLVM renderer's IR, on machines with or without LLVM: the kernel and its entry, noalias buffers, both pointer
// spellings, the selects that define what LLVM leaves undefined, and errors for what a CPU has not. Running the
// kernels is RenderMatchesExecAlu.LLVMOpsAndCasts (every op and cast at the edge values) and the op suite under
// DEV=LLVM (tests/CMakeLists.txt: op_suite_llvm).
#include <gtest/gtest.h>

#include "../common/kernel_source.h"
#include "codegen/kernel.h"
#include "codegen/opt/heuristic.h"
#include "renderer/cpu_isa.h"
#include "renderer/llvmir.h"
#include "tg/error.h"
#include "tg/tg.h"

using tg::Tensor;
using tgtest::has;
using tgtest::last_ast;
using tgtest::render;

namespace {
std::string llvm_source(const Tensor& t, bool opaque = false, bool optimize = false) {
  tg::LLVMRenderer llvm(opaque);
  tg::Kernel k(last_ast(t), llvm);
  if (optimize) hand_coded_optimizations(k);
  return render(k, llvm);
}
Tensor ints(std::vector<int64_t> shape) { return Tensor::empty(std::move(shape), {.dtype = tg::dtypes::int32}); }
}  // namespace

TEST(LLVMRender, KernelAndEntryTakeTheBuffersInOrder) {
  std::string src = llvm_source(ints({2}).dot(ints({2})));
  EXPECT_TRUE(has(src,
                  "define internal void @r_2(i32* noalias nocapture %data0, i32* noalias nocapture readonly "
                  "%data1, i32* noalias nocapture readonly %data2)"))
      << src;
  EXPECT_TRUE(has(src, "define void @r_2_entry(i8** %bufs, i64* %vars)")) << src;
  EXPECT_TRUE(has(src, "call void @r_2(i32* %b0, i32* %b1, i32* %b2)")) << src;
  EXPECT_TRUE(has(src, "alloca i32")) << "the accumulator lives in an alloca: " << src;
}

TEST(LLVMRender, OpaquePointersForLLVM15On) {
  std::string src = llvm_source(Tensor::empty({4}) + Tensor::empty({4}), true);
  EXPECT_TRUE(has(src, "define void @E_4_entry(ptr %bufs, ptr %vars)")) << src;
  EXPECT_FALSE(has(src, "float*")) << src;
  EXPECT_TRUE(has(src, "load float, ptr %addr")) << src;
}

TEST(LLVMRender, VariablesAndCoreIdComeFromVars) {
  tg::Variable n("n", 1, 64);
  Tensor t = Tensor::empty({64}).shrink({{0, n.bind(10)}}) * 2.0f;
  std::string src = llvm_source(t);
  EXPECT_TRUE(has(src, "%v0.raw = load i64, i64* %v0.p")) << src;
  EXPECT_TRUE(has(src, "%v0 = trunc i64 %v0.raw to i32")) << src;
}

TEST(LLVMRender, DivisionByAVariableIsDefinedEverywhere) {
  std::string src = llvm_source(ints({8}).idiv(ints({8})));
  EXPECT_TRUE(has(src, "icmp eq i32")) << "b == 0 and b == -1 are selected around: " << src;
  EXPECT_TRUE(has(src, "select i1")) << src;
  // a constant divisor (index math) divides directly
  EXPECT_FALSE(has(llvm_source(ints({8}).idiv(4)), "icmp eq i32")) << llvm_source(ints({8}).idiv(4));
}

TEST(LLVMRender, HalfBuffersWidenToFloat) {
  Tensor h = Tensor::empty({8}, {.dtype = tg::dtypes::float16});
  std::string src = llvm_source(h + h);
  EXPECT_TRUE(has(src, "load half, half*")) << src;
  EXPECT_TRUE(has(src, "fpext half")) << src;
  EXPECT_TRUE(has(src, "fptrunc float")) << "the sum rounds back to half: " << src;
}

TEST(LLVMRender, GatedLoadsBranchAroundTheAccess) {
  std::string src = llvm_source(Tensor::empty({4}).pad({{1, 1}}) + 1.0f);
  EXPECT_TRUE(has(src, "phi float")) << src;
}

TEST(LLVMRender, VectorsForFloatArithmetic) {
  std::string src = llvm_source(Tensor::empty({64, 64}) * Tensor::empty({64, 64}), false, true);
  EXPECT_TRUE(has(src, "x float>")) << src;
}

TEST(LLVMRender, LaunchIndicesAreErrors) {
  tg::LLVMRenderer llvm(false);
  auto sp = tg::UOp::make(tg::Ops::SPECIAL, tg::dtypes::int32, {}, tg::SpecialArg{tg::LaunchAxis::GROUP, 0, 4});
  EXPECT_THROW(llvm.render("k", {sp}), tg::Error);
  EXPECT_THROW(llvm.render("not an identifier", {}), tg::Error);
}

// C contracts `acc + a*b` written in one expression (-ffp-contract=on); the LLVM device the same products only:
// llvm.fmuladd where a float product's one user is a sum, and no `contract` anywhere else.
TEST(LLVMRender, ProductsIntoSumsAreFusedMultiplyAdds) {
  std::string src = llvm_source(Tensor::empty({64, 64}).matmul(Tensor::empty({64, 64})), false, true);
  const std::string w = std::to_string(tg::cpu_isa().vector_floats());  // the vectors of this CPU_ISA level
  EXPECT_TRUE(has(src, "call <" + w + " x float> @llvm.fmuladd.v" + w + "f32(")) << src;
  EXPECT_FALSE(has(src, "fmul contract")) << src;
  EXPECT_TRUE(has(src, "shufflevector <" + w + " x float>")) << "a broadcast is a splat, not " << w << " inserts: " << src;
}
