// The index dtype of generated kernels: int32 where every index provably fits (the common case, and the
// fast one), int64 where a loop bound, a view's reach or a buffer passes 2^31-1. Before, every kernel
// indexed with int: a 2^31+ element buffer crashed (negative offsets) and a 2^32+10 loop ran 10 times.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "engine/realize.h"
#include "renderer/c.h"
#include "renderer/cuda.h"
#include "runtime/buffer.h"
#include "runtime/device.h"
#include "runtime/interpreter.h"
#include "schedule/schedule.h"
#include "tg/tg.h"

using tg::Tensor;

namespace {

constexpr int64_t k2e31 = int64_t(1) << 31;

// The CPU source of each kernel a tensor's realize would run (inputs are never realized: nothing runs).
std::vector<std::string> sources_of(const Tensor& t) {
  std::vector<std::string> out;
  tg::Schedule s = tg::create_schedule({t.uop()});
  for (auto& item : s.items)
    if (item.ast->op != tg::Ops::COPY) out.push_back(tg::get_runner("CPU", item.ast).spec.src);
  return out;
}

}  // namespace

TEST(IndexDtype, SmallKernelStaysInt) {
  tg::Context ctx({{"NOOPT", 1}});
  auto src = sources_of(Tensor::empty({4, 4}) + Tensor::empty({4, 4}));
  ASSERT_EQ(src.size(), 1u);
  EXPECT_NE(src[0].find("for (int ridx0 = 0; ridx0 < 16; ridx0++) {"), std::string::npos) << src[0];
  EXPECT_EQ(src[0].find("long ridx"), std::string::npos) << src[0];
  EXPECT_EQ(src[0].find("ll;"), std::string::npos) << src[0];
}

TEST(IndexDtype, BufferPast2e31ElementsIndexesIn64Bits) {
  tg::Context ctx({{"NOOPT", 1}});
  auto src = sources_of(Tensor::empty({k2e31 + 16}, {.dtype = tg::dtypes::int8}) + 1);
  ASSERT_EQ(src.size(), 1u);
  EXPECT_NE(src[0].find("for (long ridx0 = 0ll; ridx0 < 2147483664ll; ridx0++) {"), std::string::npos) << src[0];
  // Just below the limit the same kernel keeps int.
  auto small = sources_of(Tensor::empty({k2e31 - 1}, {.dtype = tg::dtypes::int8}) + 1);
  ASSERT_EQ(small.size(), 1u);
  EXPECT_NE(small[0].find("for (int ridx0 = 0; ridx0 < 2147483647; ridx0++) {"), std::string::npos) << small[0];
}

TEST(IndexDtype, ViewOffsetPast2e31IsInt64EvenForFewElements) {
  // Four elements at the end of a big buffer: the loop is tiny, the offset is not.
  Tensor big = Tensor::empty({k2e31 + 16}, {.dtype = tg::dtypes::int8});
  auto src = sources_of(big.shrink({{k2e31 + 12, k2e31 + 16}}) * 2);
  ASSERT_EQ(src.size(), 1u);
  EXPECT_NE(src[0].find("2147483660ll"), std::string::npos) << src[0];
}

TEST(IndexDtype, PadPast2e31IndexesIn64Bits) {
  // The written region sits behind 2^31 masked-off elements: the mask compares and the store index pass
  // int32 even though the source has three elements.
  tg::Context ctx({{"NOOPT", 1}});
  auto src = sources_of(Tensor::empty({3}, {.dtype = tg::dtypes::int8}).pad({{k2e31, 13}}).contiguous());
  ASSERT_EQ(src.size(), 1u);
  EXPECT_NE(src[0].find("long ridx0"), std::string::npos) << src[0];
  EXPECT_NE(src[0].find("2147483648ll"), std::string::npos) << src[0];
}

TEST(IndexDtype, LoopBoundPastInt32) {
  const int64_t n = (int64_t(1) << 32) + 10;
  for (int split : {0, 1}) {  // one kernel with a 2^32+10 loop, and the split two-kernel form
    tg::Context ctx({{"SPLIT_REDUCEOP", split}});
    EXPECT_EQ(Tensor::ones({n}, {.dtype = tg::dtypes::int64}).sum().item<int64_t>(), n) << "split " << split;
    EXPECT_EQ(Tensor::ones({n}, {.dtype = tg::dtypes::int8}).cast(tg::dtypes::int64).sum().item<int64_t>(), n)
        << "split " << split;
  }
}

// A real run on the CPU: 2^31+16 int8 elements (2 GiB), written by one kernel, then read at both ends.
TEST(IndexDtype, RunsOnABufferPast2e31Elements) {
  if (tg::default_device() != "CPU")
    GTEST_SKIP() << "the 2 GiB run is for the CPU device (DEV=" << tg::default_device() << ")";
  const int64_t n = k2e31 + 16;
  auto t0 = std::chrono::steady_clock::now();
  {
    std::optional<Tensor> x;
    try {
      x = Tensor::full({n}, 3, {.dtype = tg::dtypes::int8}).contiguous().realize();
    } catch (const tg::Error& e) {
      if (std::string(e.what()).find("out of memory") != std::string::npos)
        GTEST_SKIP() << "could not allocate the 2 GiB buffer this test needs: " << e.what();
      throw;
    }
    EXPECT_EQ(x->shrink({{n - 4, n}}).tolist<int8_t>(), (std::vector<int8_t>{3, 3, 3, 3}));
    EXPECT_EQ(x->shrink({{0, 2}}).tolist<int8_t>(), (std::vector<int8_t>{3, 3}));
  }
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("a 2 GiB kernel and two reads in %.2f s\n", s);
}

// The same int64 index math on every backend: (r * 2^20) / 2^20 is r in int64 and negative for r >= 2048
// in int32, so a backend that computed this program in 32 bits would write out of bounds.
TEST(IndexDtype, Int64IndexNodesComputeIn64BitsOnEveryBackend) {
  using namespace tg;
  const DType i64 = dtypes::int64;
  auto out = UOp::make(Ops::DEFINE_GLOBAL, dtypes::int32.pointer(), {}, int64_t(0));
  auto r = UOp::make(Ops::RANGE, i64, {UOp::const_int(0, i64), UOp::const_int(4096, i64)}, int64_t(0));
  auto scale = UOp::const_int(int64_t(1) << 20, i64);
  auto idx = UOp::alu(Ops::IDIV, {UOp::alu(Ops::MUL, {r, scale}), scale});
  auto st = UOp::make(Ops::STORE, dtypes::void_, {out, idx, UOp::make(Ops::CAST, dtypes::int32, {r})});
  std::vector<UOpPtr> uops;
  UOpPtr sink = UOp::make(Ops::SINK, dtypes::void_, {st});
  for (const UOp* u : toposort(sink)) {
    if (u->op == Ops::SINK) continue;
    uops.push_back(u->ptr());
    if (u->op == Ops::STORE) uops.push_back(UOp::make(Ops::ENDRANGE, dtypes::void_, {r}));
  }
  ProgramSpec spec;
  spec.name = "E_4096";
  spec.uops = uops;
  spec.n_bufs = 1;
  EXPECT_NE(CUDARenderer().render("E_4096", uops).find("long long ridx0"), std::string::npos);
  std::vector<int32_t> interp_out(4096, -1);
  Interpreter(spec).run({InterpBuffer{interp_out.data(), interp_out.size() * 4}}, {});
  Device& cpu = get_device("CPU");
  spec.src = ClangRenderer().render("E_4096", uops);
  auto prog = cpu.load(spec, cpu.compiler().compile_cached(spec.src));
  Buffer buf("CPU", 4096, dtypes::int32);
  prog->run({buf.ensure_allocated()}, {}, true);
  std::vector<int32_t> cpu_out(4096);
  buf.copyout(cpu_out.data(), cpu_out.size() * 4);
  for (int i = 0; i < 4096; i++) {
    ASSERT_EQ(interp_out[size_t(i)], i) << "INTERP";
    ASSERT_EQ(cpu_out[size_t(i)], i) << "CPU";
  }
}
