// Opts (UPCAST, UNROLL, THREAD) applied by hand to elementwise, reduce, matmul and padded kernels give the
// same numbers as the plain loops (NOOPT), on the CPU (vectors, threads) and on the interpreter (scalar
// lanes). Inputs are small integers, so every sum is exact whatever its order.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>

#include "codegen/kernel.h"
#include "codegen/opt/heuristic.h"
#include "engine/buffers.h"
#include "engine/method_cache.h"
#include "engine/realize.h"
#include "renderer/cuda.h"
#include "runtime/device.h"
#include "schedule/schedule.h"
#include "tg/context.h"
#include "tg/tg.h"

using tg::Opt;
using tg::OptOps;
using tg::Tensor;

namespace {

using Graph = std::function<Tensor(const std::string& device)>;

Tensor ints(const tg::Shape& shape, int seed, const std::string& dev, int lo = -4, int hi = 4) {
  int64_t n = 1;
  for (auto s : shape) n *= s;
  std::vector<float> v(static_cast<size_t>(n));
  uint32_t x = uint32_t(seed) * 2654435761u + 12345u;
  for (auto& e : v) {
    x = x * 1664525u + 1013904223u;
    e = float(lo + int((x >> 8) % uint32_t(hi - lo + 1)));
  }
  Tensor t(v, shape, {.device = dev});
  t.realize();
  return t;
}

// The last kernel of the graph's schedule (its inputs realized by running the items before it).
struct KernelUnderTest {
  tg::ScheduleItem item;
};

KernelUnderTest last_kernel(const Graph& g, const std::string& dev) {
  Tensor t = g(dev);
  tg::Schedule s = tg::create_schedule({t.uop()});
  EXPECT_FALSE(s.items.empty());
  for (size_t i = 0; i + 1 < s.items.size(); i++) tg::run_schedule_item(s.items[i]);
  return {s.items.back()};
}

// Runs the kernel compiled with `opts` and returns its output as floats (the output buffer is filled with
// a sentinel first, so an element the kernel forgets to write shows up).
std::vector<float> run_with(const KernelUnderTest& k, const std::string& dev, const std::vector<Opt>& opts,
                            std::string* src = nullptr) {
  auto runner = tg::compile_runner(dev, k.item.ast, &opts);
  if (src) *src = runner->spec.src;
  std::vector<void*> ptrs;
  for (auto& b : k.item.bufs) ptrs.push_back(tg::buffer_of(b.get())->ensure_allocated());
  tg::Buffer& out = *tg::buffer_of(k.item.bufs[0].get());
  EXPECT_EQ(out.dtype(), tg::dtypes::float32);
  std::vector<float> sentinel(size_t(out.size()), -12345.0f), result(size_t(out.size()));
  out.copyin(sentinel.data(), out.nbytes());
  runner->program->run(ptrs, {}, true);
  out.copyout(result.data(), out.nbytes());
  return result;
}

tg::Shape shape_of(const KernelUnderTest& k, const std::string& dev) {
  tg::Kernel kern(k.item.ast, tg::get_device(dev).renderer());
  return kern.full_shape();
}

void expect_same(const std::vector<float>& want, const std::vector<float>& got, const std::string& what) {
  ASSERT_EQ(want.size(), got.size()) << what;
  for (size_t i = 0; i < want.size(); i++)
    ASSERT_EQ(want[i], got[i]) << what << " at " << i;
}

std::string str(const std::vector<Opt>& opts) {
  std::string s;
  for (auto& o : opts) s += o.repr() + " ";
  return s;
}

// Every opt list gives the NOOPT numbers on both devices.
void check_opts(const Graph& g, const std::vector<std::vector<Opt>>& cases) {
  for (std::string dev : {"CPU", "INTERP"}) {
    KernelUnderTest k = last_kernel(g, dev);
    std::vector<float> want = run_with(k, dev, {});
    for (auto& opts : cases) expect_same(want, run_with(k, dev, opts), dev + " " + str(opts));
    // and the default heuristics
    auto runner = tg::compile_runner(dev, k.item.ast, nullptr);
    (void)runner;
  }
}

Tensor matmul_graph(const std::string& d, int m, int kk, int n) {
  return ints({m, kk}, 1, d).matmul(ints({kk, n}, 2, d));
}

}  // namespace

TEST(Opts, ElementwiseUpcastAndThread) {
  // a transposed input keeps the two dims apart: (16, 32)
  Graph g = [](const std::string& d) { return ints({16, 32}, 1, d) + ints({32, 16}, 2, d).T() * 2.0f; };
  ASSERT_EQ(shape_of(last_kernel(g, "CPU"), "CPU"), (tg::Shape{16, 32}));
  check_opts(g, {
                    {{OptOps::UPCAST, 1, 4}},
                    {{OptOps::UPCAST, 1, 16}},
                    {{OptOps::UPCAST, 0, 4}},
                    {{OptOps::UPCAST, 1, 8}, {OptOps::UPCAST, 0, 2}},
                    {{OptOps::UPCAST, 0, 0}},
                    {{OptOps::THREAD, 0, 2}},
                    {{OptOps::THREAD, 0, 4}, {OptOps::UPCAST, 2, 4}},
                    {{OptOps::UPCAST, 1, 4}, {OptOps::THREAD, 0, 16}},
                });
}

TEST(Opts, ReduceUnrollUpcastThread) {
  for (bool use_max : {false, true}) {
    Graph g = [use_max](const std::string& d) {
      Tensor x = ints({24, 64}, 3, d);
      return use_max ? x.max(1) : x.sum(1);
    };
    check_opts(g, {
                      {{OptOps::UNROLL, 0, 4}},
                      {{OptOps::UNROLL, 0, 8}},  // vector accumulators along the contiguous reduce dim
                      {{OptOps::UNROLL, 0, 0}},
                      {{OptOps::UPCAST, 0, 4}, {OptOps::UNROLL, 0, 4}},
                      {{OptOps::UPCAST, 0, 8}, {OptOps::UNROLL, 0, 16}},
                      {{OptOps::THREAD, 0, 3}, {OptOps::UNROLL, 0, 2}},
                  });
  }
  // a reduce over the outer dim: the output dim is contiguous in the input (vector loads)
  Graph col = [](const std::string& d) { return ints({40, 32}, 4, d).sum(0); };
  check_opts(col, {
                      {{OptOps::UPCAST, 0, 8}},
                      {{OptOps::UPCAST, 0, 16}, {OptOps::UNROLL, 0, 4}},
                      {{OptOps::UPCAST, 0, 4}, {OptOps::UNROLL, 0, 5}, {OptOps::THREAD, 0, 2}},
                  });
}

TEST(Opts, MatmulTiles) {
  Graph g = [](const std::string& d) { return matmul_graph(d, 16, 24, 32); };
  ASSERT_EQ(shape_of(last_kernel(g, "CPU"), "CPU"), (tg::Shape{16, 32, 24}));
  check_opts(g, {
                    {{OptOps::UPCAST, 1, 4}, {OptOps::UPCAST, 0, 4}},
                    {{OptOps::UPCAST, 1, 16}, {OptOps::UPCAST, 0, 2}, {OptOps::UNROLL, 0, 4}},
                    {{OptOps::UPCAST, 0, 4}, {OptOps::UPCAST, 1, 8}, {OptOps::UNROLL, 0, 3}, {OptOps::THREAD, 0, 2}},
                    {{OptOps::UNROLL, 0, 8}},  // vector along K, lanes added after the loop
                    {{OptOps::UPCAST, 1, 2}, {OptOps::UNROLL, 0, 0}},
                    {{OptOps::THREAD, 1, 4}, {OptOps::UPCAST, 1, 8}},
                });
}

TEST(Opts, MatmulTransposedB) {
  // A @ B.T: both operands contiguous along K
  Graph g = [](const std::string& d) { return ints({12, 32}, 5, d).matmul(ints({20, 32}, 6, d).T()); };
  check_opts(g, {
                    {{OptOps::UNROLL, 0, 8}, {OptOps::UPCAST, 0, 4}},
                    {{OptOps::UNROLL, 0, 16}, {OptOps::UPCAST, 1, 4}, {OptOps::UPCAST, 0, 2}},
                    {{OptOps::UPCAST, 1, 4}, {OptOps::UNROLL, 0, 4}},
                });
}

TEST(Opts, PaddedAndMasked) {
  // padding gives gated loads; the mask depends on the upcast and vector dims
  Graph pad = [](const std::string& d) {
    return ints({10, 14}, 7, d).pad({{1, 1}, {3, 3}}) * ints({12, 20}, 8, d);
  };
  check_opts(pad, {
                      {{OptOps::UPCAST, 1, 4}},
                      {{OptOps::UPCAST, 1, 2}, {OptOps::UPCAST, 0, 4}},
                      {{OptOps::UPCAST, 0, 3}, {OptOps::UPCAST, 1, 5}},
                      {{OptOps::THREAD, 0, 2}, {OptOps::UPCAST, 2, 4}},
                  });
  // a reduce over a padded and shrunk input: the gate depends on the unrolled dim
  Graph pad_reduce = [](const std::string& d) {
    return ints({8, 30}, 9, d).pad({{0, 0}, {1, 1}}).shrink({{0, 8}, {0, 32}}).sum(1);
  };
  check_opts(pad_reduce, {
                             {{OptOps::UNROLL, 0, 4}},
                             {{OptOps::UNROLL, 0, 8}},
                             {{OptOps::UPCAST, 0, 4}, {OptOps::UNROLL, 0, 16}},
                         });
  // an expanded (broadcast) input: a reduce over a dim the input does not depend on
  Graph expanded = [](const std::string& d) {
    return ints({6, 1}, 10, d).expand({6, 16}).sum(1) + ints({6}, 11, d);
  };
  check_opts(expanded, {{{OptOps::UNROLL, 0, 4}}, {{OptOps::UNROLL, 0, 16}}, {{OptOps::UPCAST, 0, 2}}});
}

TEST(Opts, WhatTheCpuSourceShows) {
  Graph g = [](const std::string& d) { return matmul_graph(d, 16, 24, 32); };
  KernelUnderTest k = last_kernel(g, "CPU");
  std::string src;
  run_with(k, "CPU", {{OptOps::UPCAST, 1, 8}, {OptOps::UPCAST, 0, 2}, {OptOps::THREAD, 0, 2}}, &src);
  EXPECT_NE(src.find("float8"), std::string::npos) << src;  // vector accumulators and loads
  EXPECT_NE(src.find("int core_id"), std::string::npos) << src;
  EXPECT_NE(src.find("acc1"), std::string::npos) << src;  // two accumulators share one reduce loop
  auto runner = tg::compile_runner("CPU", k.item.ast, nullptr);
  tg::Kernel kern(k.item.ast, tg::get_device("CPU").renderer());
  hand_coded_optimizations(kern);
  EXPECT_FALSE(kern.applied_opts().empty());
  EXPECT_EQ(runner->spec.name.substr(0, 2), "r_");
}

TEST(Opts, BadOptsThrow) {
  Graph g = [](const std::string& d) { return matmul_graph(d, 16, 24, 32); };
  KernelUnderTest k = last_kernel(g, "CPU");
  tg::Kernel kern(k.item.ast, tg::get_device("CPU").renderer());
  EXPECT_THROW(kern.apply_opt({OptOps::UPCAST, 0, 5}), tg::KernelOptError);   // 5 does not divide 16
  EXPECT_THROW(kern.apply_opt({OptOps::UPCAST, 2, 4}), tg::KernelOptError);   // a reduce dim
  EXPECT_THROW(kern.apply_opt({OptOps::UNROLL, 1, 2}), tg::KernelOptError);   // only one reduce dim
  EXPECT_THROW(kern.apply_opt({OptOps::UPCAST, 9, 2}), tg::KernelOptError);   // no such axis
  EXPECT_THROW(kern.apply_opt({OptOps::LOCAL, 0, 2}), tg::KernelOptError);    // not on the CPU
  EXPECT_EQ(kern.full_shape(), (tg::Shape{16, 32, 24}));                      // unchanged
  kern.apply_opt({OptOps::THREAD, 0, 2});
  EXPECT_THROW(kern.apply_opt({OptOps::THREAD, 1, 2}), tg::KernelOptError);   // one THREAD dim
  EXPECT_EQ(kern.name(), "r_2_8_32_24");
}

TEST(Opts, DefaultsAgreeWithInterpreter) {
  // The heuristics do not depend on the renderer (but for THREAD), so the CPU and the interpreter compute
  // the same sums in the same order. The CPU's compiler fuses a product into the sum it feeds (one rounding
  // instead of two, -ffp-contract=fast), so sums of products agree within a rounding per term; sums without
  // products agree bit-exactly, even with non-integer data.
  auto frac = [](const std::string& d, const tg::Shape& s, int seed) { return ints(s, seed, d, -50, 50) * 0.37f; };
  Graph mm = [&](const std::string& d) { return frac(d, {40, 72}, 1).matmul(frac(d, {72, 48}, 2)).relu(); };
  Graph dot = [&](const std::string& d) { return (frac(d, {64, 96}, 3) * 1.1f).sum(1); };
  for (const Graph& gr : {mm, dot}) {
    auto c = gr("CPU").tolist<float>(), i = gr("INTERP").tolist<float>();
    ASSERT_EQ(c.size(), i.size());
    for (size_t k = 0; k < c.size(); k++) EXPECT_NEAR(c[k], i[k], 0.05f + 1e-4f * std::fabs(i[k])) << k;  // partial sums reach ~5e3
  }
  // (quotients: no product for the compiler to fuse)
  auto quot = [](const std::string& d, const tg::Shape& s, int seed) { return ints(s, seed, d, -50, 50) / 2.7f; };
  Graph sum = [&](const std::string& d) { return (quot(d, {64, 96}, 3) + 1.1f).sum(1); };
  Graph mx = [&](const std::string& d) { return (quot(d, {64, 96}, 4) - 1.3f).max(1); };
  for (const Graph& gr : {sum, mx}) expect_same(gr("INTERP").tolist<float>(), gr("CPU").tolist<float>(), "no products");
}

TEST(Opts, ThreadsOneDisablesThreading) {
  Graph g = [](const std::string& d) { return matmul_graph(d, 128, 64, 128); };
  KernelUnderTest k = last_kernel(g, "CPU");
  {
    tg::Context ctx({{"THREADS", 1}});
    tg::Kernel kern(k.item.ast, tg::get_device("CPU").renderer());
    hand_coded_optimizations(kern);
    for (auto& o : kern.applied_opts()) EXPECT_NE(o.op, OptOps::THREAD);
  }
  {
    tg::Context ctx({{"THREADS", 3}});
    tg::Kernel kern(k.item.ast, tg::get_device("CPU").renderer());
    EXPECT_EQ(kern.renderer().threads(), 3);
  }
}

// A transpose on a GPU: the channels-last copy of an NCHW image makes the input's contiguous dim (the pixels) a
// thread dim of the workgroup, so a warp's loads take consecutive pixels, and keeps 16-byte vector stores along the
// channels.
TEST(GpuHeuristics, TransposeLanesRunAlongTheInput) {
  tg::CUDARenderer cuda;
  Tensor x = Tensor::empty({2, 16, 8, 8}, {.dtype = tg::dtypes::float16});
  tg::Schedule s = tg::create_schedule({x.permute({0, 2, 3, 1}).contiguous().uop()});
  tg::Kernel k(s.items.back().ast, cuda);
  hand_coded_optimizations(k);
  const auto& fs = k.full_shape();
  bool pixel_threads = false;
  for (int d = 0; d < int(fs.size()); d++)
    pixel_threads |= k.kinds()[size_t(d)] == tg::AxisKind::LOCAL && fs[size_t(d)] >= 8 && k.last_view_stride(1, d) == 1;
  EXPECT_TRUE(pixel_threads) << "threads of a workgroup walk the input's pixels";
  ASSERT_GE(k.vector_dim(), 0);
  EXPECT_EQ(k.last_view_stride(0, k.vector_dim()), 1) << "the output's channels stay a vector";
}

TEST(Opts, PadToAwkwardSizes) {
  // A 30 x 30 @ 30 x 20 matmul: PADTO rounds the dims up so the upcasts of a 32-wide tile apply; the padded
  // outputs are never stored (the sentinel check in run_with) and the padded products add 0.
  Graph g = [](const std::string& d) { return matmul_graph(d, 30, 30, 20); };
  ASSERT_EQ(shape_of(last_kernel(g, "CPU"), "CPU"), (tg::Shape{30, 20, 30}));
  check_opts(g, {
                    {{OptOps::PADTO, 0, 32}},
                    {{OptOps::PADTO, 0, 32}, {OptOps::UPCAST, 0, 8}},
                    {{OptOps::PADTO, 1, 32}, {OptOps::UPCAST, 1, 16}, {OptOps::PADTO, 0, 32}, {OptOps::UPCAST, 0, 4}},
                    {{OptOps::PADTO, 2, 32}, {OptOps::UNROLL, 0, 8}},  // the reduce dim: a sum of products
                    {{OptOps::PADTO, 2, 8}, {OptOps::UNROLL, 0, 4}, {OptOps::THREAD, 0, 2}},
                });
  // a sum of x + 1 pads its reduce dim: the viewed const reads 0 in the padding too
  Graph plus_one = [](const std::string& d) { return (ints({6, 30}, 12, d) + 1.0f).sum(1); };
  check_opts(plus_one, {{{OptOps::PADTO, 1, 32}, {OptOps::UNROLL, 0, 16}}, {{OptOps::PADTO, 0, 8}}});
}

TEST(Opts, PadToRefusesWhatPaddingWouldChange) {
  auto kernel_of = [](const Graph& g) {
    KernelUnderTest k = last_kernel(g, "CPU");
    return tg::Kernel(k.item.ast, tg::get_device("CPU").renderer());
  };
  // a max, and a sum of exp(x) (exp(0) = 1 in the padding), may not pad their reduce dims; their output loops may
  tg::Kernel mx = kernel_of([](const std::string& d) { return ints({6, 30}, 13, d).max(1); });
  EXPECT_THROW(mx.apply_opt({OptOps::PADTO, 1, 32}), tg::KernelOptError);
  mx.apply_opt({OptOps::PADTO, 0, 8});
  EXPECT_EQ(mx.full_shape(), (tg::Shape{8, 30}));
  tg::Kernel ex = kernel_of([](const std::string& d) { return ints({6, 30}, 14, d).exp().sum(1); });
  EXPECT_THROW(ex.apply_opt({OptOps::PADTO, 1, 32}), tg::KernelOptError);
  // nothing to pad, more than quadruple the work, an upcast dim
  tg::Kernel mm = kernel_of([](const std::string& d) { return matmul_graph(d, 16, 24, 32); });
  EXPECT_THROW(mm.apply_opt({OptOps::PADTO, 0, 16}), tg::KernelOptError);
  EXPECT_THROW(mm.apply_opt({OptOps::PADTO, 2, 128}), tg::KernelOptError);
  mm.apply_opt({OptOps::UPCAST, 1, 4});
  EXPECT_THROW(mm.apply_opt({OptOps::PADTO, 3, 8}), tg::KernelOptError);
  EXPECT_EQ(mm.full_shape(), (tg::Shape{16, 8, 24, 4}));
}
