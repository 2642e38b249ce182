// The CUDA renderer and the GPU lowering (launch grid, workgroups) on machines without a GPU: source
// structure for small kernels, the LOCAL opt's rules, and launch sizes. Running these kernels is covered by
// the op suite under DEV=INTERP EMULATE=CUDA (tests/CMakeLists.txt) and, on a GPU, by the cuda label.
#include <gtest/gtest.h>

#include <cmath>

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

using tg::Opt;
using tg::OptOps;
using tg::Tensor;
using tgtest::has;
using tgtest::last_ast;
using tgtest::render;

TEST(CudaRender, DotProductIsOneBlockWithAnAccumulatorLoop) {
  tg::CUDARenderer cuda("sm_80");  // (sm_90's kernels start early and drop __restrict__: WaitForThePreviousKernel)
  Tensor a(std::vector<int>{1, 2}), b(std::vector<int>{3, 4});
  tg::Kernel k(last_ast(a.dot(b)), cuda);
  std::string src = render(k, cuda);
  EXPECT_EQ(k.name(), "r_2");
  EXPECT_TRUE(has(src,
                  "extern \"C\" __global__ void __launch_bounds__(1) r_2(int* __restrict__ data0, "
                  "const int* __restrict__ data1, const int* __restrict__ data2)"))
      << src;
  EXPECT_TRUE(has(src, "for (int ridx0 = 0; ridx0 < 2; ridx0++)")) << src;
  EXPECT_FALSE(has(src, "restrict data")) << "C's `restrict` is not CUDA C++: " << src;
}

// Programmatic dependent launch on sm_90: each kernel lets the next start and then waits for the previous one, before
// any load; its buffers lose __restrict__ (NVCC would read them through the non-coherent cache while the previous
// kernel still writes them). Older GPUs and PDL=0 keep plain kernels.
TEST(CudaRender, KernelsWaitForThePreviousKernel) {
  Tensor a = Tensor::empty({64}), b = Tensor::empty({64});
  auto source = [&](const std::string& arch) {
    tg::CUDARenderer cuda(arch);
    tg::Kernel k(last_ast(a + b), cuda);
    return render(k, cuda);
  };
  std::string hopper = source("sm_90");
  EXPECT_TRUE(has(hopper,
                  ") {\n  asm volatile(\"griddepcontrol.launch_dependents;\" ::: \"memory\");\n"
                  "  asm volatile(\"griddepcontrol.wait;\" ::: \"memory\");\n  int "))
      << "first in the body: " << hopper;
  EXPECT_FALSE(has(hopper, "__restrict__")) << hopper;
  EXPECT_TRUE(tg::CUDARenderer::waits_for_predecessor(hopper));
  for (std::string plain : {source("sm_80"), [&] {
                              tg::Context ctx({{"PDL", 0}});
                              return source("sm_90");
                            }()}) {
    EXPECT_FALSE(has(plain, "griddepcontrol")) << plain;
    EXPECT_TRUE(has(plain, "const float* __restrict__ data1")) << plain;
    EXPECT_FALSE(tg::CUDARenderer::waits_for_predecessor(plain));
  }
}

TEST(CudaRender, ElementwiseGetsGridAndWorkgroups) {
  tg::CUDARenderer cuda;
  Tensor a = Tensor::empty({64, 64}), b = Tensor::empty({64, 64});
  tg::Kernel k(last_ast(a + b), cuda);
  hand_coded_optimizations(k);
  EXPECT_GT(k.local_size(), 1) << "the default opts give a GPU kernel threads per block";
  EXPECT_LE(k.local_size(), 256);
  std::string src = render(k, cuda);
  EXPECT_TRUE(has(src, "blockIdx.x")) << src;
  EXPECT_TRUE(has(src, "threadIdx.x")) << src;
  EXPECT_TRUE(has(src, "__launch_bounds__(" + std::to_string(k.local_size()) + ")")) << src;
  EXPECT_FALSE(has(src, "for (")) << "every element is a thread: " << src;
}

TEST(CudaRender, LocalOptRules) {
  tg::CUDARenderer cuda;
  tg::ClangRenderer c;
  Tensor a = Tensor::empty({64, 64}), b = Tensor::empty({64, 64});
  tg::UOpPtr ast = last_ast((a + b).sum(1));
  tg::Kernel cpu(ast, c);
  EXPECT_THROW(cpu.apply_opt({OptOps::LOCAL, 0, 4}), tg::KernelOptError) << "the CPU has no workgroups";
  tg::Kernel k(ast, cuda);
  EXPECT_THROW(k.apply_opt({OptOps::LOCAL, 1, 4}), tg::KernelOptError) << "the reduce dim cannot be local";
  EXPECT_THROW(k.apply_opt({OptOps::LOCAL, 0, 3}), tg::KernelOptError) << "3 does not divide 64";
  k.apply_opt({OptOps::LOCAL, 0, 16});
  EXPECT_EQ(k.local_size(), 16);
  EXPECT_EQ(k.full_shape(), (tg::Shape{4, 16, 64}));
  std::string src = render(k, cuda);
  EXPECT_TRUE(has(src, "__launch_bounds__(16)")) << src;
  EXPECT_TRUE(has(src, "int gidx0 = blockIdx.x;")) << src;
  EXPECT_TRUE(has(src, "int lidx0 = threadIdx.x;")) << src;
}

TEST(CudaRender, LaunchSizesFromSpecials) {
  tg::CUDARenderer cuda;
  Tensor a = Tensor::empty({8, 32}), b = Tensor::empty({8, 32});
  tg::Kernel k(last_ast(a * b), cuda);
  k.apply_opt({OptOps::LOCAL, 0, 32});  // 8x32 merges into one dim of 256
  auto uops = tg::linearize_kernel(tg::lower_kernel(k));
  int64_t grid = 1, block = 1;
  for (auto& u : uops) {
    if (u->op != tg::Ops::SPECIAL) continue;
    const auto& sp = u->get<tg::SpecialArg>();
    if (sp.axis == tg::LaunchAxis::GROUP) grid *= sp.size;
    if (sp.axis == tg::LaunchAxis::LOCAL) block *= sp.size;
  }
  EXPECT_EQ(grid * block, 256);
  EXPECT_EQ(block, 32);
}

TEST(CudaRender, HalfAndBfloat16UseCudaTypes) {
  tg::CUDARenderer cuda;
  Tensor h = Tensor::empty({16}, {.dtype = tg::dtypes::float16});
  tg::Kernel k(last_ast((h * 2.0f).exp2()), cuda);
  std::string src = render(k, cuda);
  EXPECT_TRUE(has(src, "#include <cuda_fp16.h>")) << src;
  EXPECT_TRUE(has(src, "half* data0")) << src;
  EXPECT_TRUE(has(src, "__float2half_rn(")) << src;
  EXPECT_TRUE(has(src, "exp2f(")) << src;
  EXPECT_FALSE(has(src, "__builtin_")) << src;
  Tensor bf = Tensor::empty({16}, {.dtype = tg::dtypes::bfloat16});
  tg::Kernel kb(last_ast(bf + bf), cuda);
  std::string srcb = render(kb, cuda);
  EXPECT_TRUE(has(srcb, "#include <cuda_bf16.h>")) << srcb;
  EXPECT_TRUE(has(srcb, "__nv_bfloat16")) << srcb;
}

TEST(CudaRender, BitcastAndInfinities) {
  tg::CUDARenderer cuda;
  Tensor f = Tensor::empty({4});
  tg::Kernel k(last_ast(f.bitcast(tg::dtypes::int32)), cuda);
  std::string src = render(k, cuda);
  EXPECT_TRUE(has(src, "tg_bitcast<int, float>(")) << src;
  EXPECT_FALSE(has(src, "union")) << "compound literals are C, not C++: " << src;
  tg::Kernel ki(last_ast(f.maximum(Tensor::full({4}, INFINITY))), cuda);
  std::string srci = render(ki, cuda);
  EXPECT_TRUE(has(srci, "__int_as_float(0x7f800000)")) << srci;
}

TEST(CudaRender, GroupedReduceUsesSharedMemoryAndABarrier) {
  tg::CUDARenderer cuda;
  Tensor a = Tensor::empty({4096});
  tg::Kernel k(last_ast(a.sum()), cuda);
  hand_coded_optimizations(k);
  // each thread reads float4s (lanes that accumulate apart), a block of 256 threads shares the reduce
  ASSERT_GE(k.applied_opts().size(), 2u);
  EXPECT_EQ(k.applied_opts()[0], (Opt{OptOps::UNROLL, 0, 4}));
  EXPECT_EQ(k.applied_opts()[1], (Opt{OptOps::GROUP, 0, 256})) << "a reduce to one value is split across a workgroup";
  EXPECT_EQ(k.local_size(), 256);
  std::string src = render(k, cuda);
  EXPECT_TRUE(has(src, "(*((float4*)(data1+")) << "16-byte loads: " << src;
  EXPECT_TRUE(has(src, "extern __shared__ __align__(1024) unsigned char tg_smem[];")) << src;
  EXPECT_TRUE(has(src, "float* temp0 = reinterpret_cast<float*>(tg_smem + ")) << src;
  // two stages: 16 threads each reduce 16 of the 256 partials, then every thread reads those 16
  EXPECT_EQ(tg::shared_bytes(tg::linearize_kernel(tg::lower_kernel(k))), 2 * 256 * 4);
  EXPECT_TRUE(has(src, "if (lidx0<16) { temp1[lidx0] = ")) << src;
  EXPECT_TRUE(has(src, "__syncthreads();")) << src;
  EXPECT_TRUE(has(src, "if (lidx0<1) { data0[0] = ")) << "one thread writes the total: " << src;
}

TEST(CudaRender, ManyRowsReduceAWarpPerRow) {
  // softmax-like rows: a warp per row (GROUP 32, float4 lanes), several rows per block (LOCAL)
  tg::CUDARenderer cuda;
  Tensor a = Tensor::empty({8192, 1024});
  tg::Kernel k(last_ast(a.max(1)), cuda);
  hand_coded_optimizations(k);
  EXPECT_EQ(k.applied_opts()[0], (Opt{OptOps::UNROLL, 0, 4}));
  EXPECT_EQ(k.applied_opts()[1], (Opt{OptOps::GROUP, 0, 32}));
  EXPECT_EQ(k.local_size(), 256);
  // up to 4096 rows, a block of 256 threads per row (a warp per row would leave SMs idle)
  tg::Kernel few(last_ast(Tensor::empty({4096, 1024}).max(1)), cuda);
  hand_coded_optimizations(few);
  EXPECT_EQ(few.applied_opts()[1], (Opt{OptOps::GROUP, 0, 256}));
  // an upcast output dim on top of a grouped reduce would need a shared slot per lane: refused
  EXPECT_THROW(k.apply_opt({OptOps::UPCAST, 0, 4}), tg::KernelOptError);
  // a matmul keeps its register tiles: no GROUP with many outputs
  Tensor b = Tensor::empty({1024, 1024}), a4 = Tensor::empty({4096, 1024});
  tg::Kernel mm(last_ast(a4.matmul(b)), cuda);
  hand_coded_optimizations(mm);
  for (auto& o : mm.applied_opts()) EXPECT_NE(o.op, OptOps::GROUP) << o.repr();
}

TEST(CudaRender, MatrixVectorProductsReadWeightsIn16ByteVectors) {
  tg::CUDARenderer cuda;
  namespace dt = tg::dtypes;
  auto opts_of = [&](const Tensor& x, const Tensor& w) {
    tg::Kernel k(last_ast(x.matmul(w.transpose(0, 1))), cuda);
    hand_coded_optimizations(k);
    return k.applied_opts();
  };
  // a row of 5632 halves is no whole number of 256 threads' 8-half vectors: 64-thread groups of them (11 steps),
  // not 2-byte loads by 256 threads
  auto down =
      opts_of(Tensor::empty({1, 5632}, {.dtype = dt::float16}), Tensor::empty({2048, 5632}, {.dtype = dt::float16}));
  ASSERT_GE(down.size(), 2u);
  EXPECT_EQ(down[0], (Opt{OptOps::UNROLL, 0, 8}));
  EXPECT_EQ(down[1], (Opt{OptOps::GROUP, 0, 64}));
  // a float32 x beside float16 weights: the vector is the weights' 16 bytes (8 lanes), not x's (4)
  auto head = opts_of(Tensor::empty({1, 2048}), Tensor::empty({32000, 2048}, {.dtype = dt::float16}));
  ASSERT_GE(head.size(), 1u);
  EXPECT_EQ(head[0], (Opt{OptOps::UNROLL, 0, 8}));
  // one output (an argmax, a full sum) keeps all 256 threads whatever the vectors
  auto one = opts_of(Tensor::empty({1, 32000}), Tensor::empty({1, 32000}));
  for (auto& o : one) {
    if (o.op == OptOps::GROUP) {
      EXPECT_EQ(o.amount, 256) << o.repr();
    }
  }
}

TEST(CudaRender, SmallMatmulSplitsItsReduce) {
  // An MLP's 32 x 256 @ 256 x 256 in float32: register tiles left 4 blocks of 256 threads, each looping over all
  // of K (39 us on an H100). The workgroup splits K in 16 parts of 16 steps instead.
  tg::CUDARenderer cuda;
  Tensor x = Tensor::empty({32, 256}), w = Tensor::empty({256, 256});
  tg::Kernel k(last_ast(x.matmul(w)), cuda);
  hand_coded_optimizations(k);
  ASSERT_FALSE(k.applied_opts().empty());
  EXPECT_EQ(k.applied_opts()[0], (Opt{OptOps::GROUP, 0, 16}));
  EXPECT_EQ(k.local_size(), 256);
  // outputs enough to fill the GPU: the tiles stay, no GROUP
  Tensor big = Tensor::empty({256, 256});
  tg::Kernel mm(last_ast(big.matmul(w)), cuda);
  hand_coded_optimizations(mm);
  for (auto& o : mm.applied_opts()) EXPECT_NE(o.op, OptOps::GROUP) << o.repr();
}

TEST(CudaRender, GroupOptRules) {
  tg::CUDARenderer cuda;
  tg::ClangRenderer c;
  Tensor a = Tensor::empty({8, 1024});
  tg::UOpPtr ast = last_ast(a.max(1));
  tg::Kernel cpu(ast, c);
  EXPECT_THROW(cpu.apply_opt({OptOps::GROUP, 0, 16}), tg::KernelOptError) << "the CPU has no shared memory";
  tg::Kernel k(ast, cuda);
  EXPECT_THROW(k.apply_opt({OptOps::GROUP, 0, 3}), tg::KernelOptError) << "3 does not divide 1024";
  EXPECT_THROW(k.apply_opt({OptOps::GROUP, 0, 2048}), tg::KernelOptError) << "more threads than a block has";
  k.apply_opt({OptOps::GROUPTOP, 0, 32});
  EXPECT_EQ(k.full_shape(), (tg::Shape{8, 32, 32}));
  EXPECT_EQ(k.name(), "r_8_32_32");
  std::string src = render(k, cuda);
  EXPECT_TRUE(has(src, "float* temp0 = reinterpret_cast<float*>(tg_smem + 0);")) << src;
}

TEST(CudaRender, Float4WhereAligned) {
  tg::CUDARenderer cuda;
  Tensor a = Tensor::empty({64, 64}), b = Tensor::empty({64, 64});
  tg::Kernel k(last_ast(a + b), cuda);
  hand_coded_optimizations(k);
  std::string src = render(k, cuda);
  EXPECT_TRUE(has(src, "*((float4*)(data0+")) << "a float4 store: " << src;
  EXPECT_TRUE(has(src, "(*((float4*)(data1+")) << "float4 loads: " << src;
  EXPECT_TRUE(has(src, ".w")) << "lanes of a float4 by name: " << src;
  // b read from element 1 on: the loads of b cannot be float4 (misaligned), the rest still are
  Tensor c = Tensor::empty({64 * 64 + 1});
  tg::Kernel k2(last_ast(a + c.shrink({{1, 64 * 64 + 1}}).reshape({64, 64})), cuda);
  hand_coded_optimizations(k2);
  std::string src2 = render(k2, cuda);
  EXPECT_TRUE(has(src2, "(*((float4*)(data1+")) << src2;
  EXPECT_FALSE(has(src2, "(*((float4*)(data2+")) << "misaligned: " << src2;
  // no float4 of other dtypes (CUDA's vector types of those have no loads we render)
  Tensor i = Tensor::empty({64, 64}, {.dtype = tg::dtypes::int32});
  tg::Kernel k3(last_ast(i + i), cuda);
  hand_coded_optimizations(k3);
  EXPECT_FALSE(has(render(k3, cuda), "int4")) << render(k3, cuda);
}

TEST(CudaRender, SixteenBitVectorsAreOneAccess) {
  tg::CUDARenderer cuda;
  for (tg::DType t : {tg::dtypes::float16, tg::dtypes::bfloat16}) {
    Tensor a = Tensor::empty({1 << 16}, {.dtype = t}), b = Tensor::empty({1 << 16}, {.dtype = t});
    tg::Kernel k(last_ast(a + b), cuda);
    hand_coded_optimizations(k);
    std::string src = render(k, cuda);
    const std::string T = t == tg::dtypes::float16 ? "tg_half8" : "tg_bf16_8";
    // 8 lanes: 16 bytes loaded and stored at once; the arithmetic stays per lane in float registers
    EXPECT_TRUE(has(src, "struct __align__(16) " + T + " {")) << src;
    EXPECT_TRUE(has(src, T + " val0 = (*((" + T + "*)(data1+")) << src;
    EXPECT_TRUE(has(src, "*((" + T + "*)(data0+")) << src;
  }
}

namespace {
// The hand-coded opts of the schedule's kernel with the most work (the split reduce's first half for a gradient).
std::vector<Opt> opts_of_biggest_kernel(const Tensor& t, std::string* name = nullptr) {
  tg::CUDARenderer cuda;
  tg::UOpPtr biggest;
  int64_t most = 0;
  for (const auto& item : tg::create_schedule({t.uop()}).items) {
    if (item.ast->op != tg::Ops::SINK) continue;
    const int64_t work = int64_t(tg::prod(tg::Kernel(item.ast, cuda).full_shape()));  // (the loops' iterations)
    if (work > most) most = work, biggest = item.ast;
  }
  EXPECT_NE(biggest, nullptr);
  tg::Kernel k(biggest, cuda);
  hand_coded_optimizations(k);
  if (name) *name = k.name();
  return k.applied_opts();
}
}  // namespace

TEST(CudaRender, ConvolutionsShareTheirWindowsLoads) {
  // beautiful_mnist's 32x32x5x5 conv at batch 512: its weight gradient upcasts kw whole and unrolls the rest of
  // ow whole (x[ow + kw]: 24 loads for 100 products, dy's 20 for 5 accumulators), the tiles BEAM found on an
  // H200 (6.09 ms -> 0.66 ms).
  Tensor x = Tensor::empty({512, 32, 24, 24}), w = Tensor::empty({32, 32, 5, 5}).requires_grad_();
  Tensor dy = Tensor::empty({512, 32, 20, 20});
  (x.conv2d(w) * dy).sum().backward();
  std::string name;
  std::vector<Opt> opts = opts_of_biggest_kernel(w.grad(), &name);
  ASSERT_GE(opts.size(), 2u);
  EXPECT_EQ(opts[opts.size() - 2].op, OptOps::UPCAST);
  EXPECT_EQ(opts[opts.size() - 2].amount, 0);
  EXPECT_EQ(opts.back().op, OptOps::UNROLL);
  EXPECT_EQ(opts.back().amount, 0);
  EXPECT_EQ(name, "r_64_5_8_16_2_4_20_4_2_4_5_5");
  // its forward: a window along ow (w does not move along it)
  opts = opts_of_biggest_kernel(x.conv2d(w.detach()));
  EXPECT_TRUE(std::any_of(opts.begin(), opts.end(), [](const Opt& o) { return o.op == OptOps::UPCAST && o.amount == 0; }));
  // a stride-1 pool has one load: nothing to share, no window tiles
  opts = opts_of_biggest_kernel(x.avg_pool2d({3, 3}, {1, 1}));
  EXPECT_TRUE(std::none_of(opts.begin(), opts.end(), [](const Opt& o) { return o.amount == 0 && o.op == OptOps::UPCAST; }));
}
