// CPU_ISA (renderer/cpu_isa.h): the levels this CPU runs, the errors for the others, and kernels whose code differs
// by level (DOT4's vpdpbusd, pmaddwd or shifts; vectors as wide as the level's registers) computing the same values.
// CI runs this file at the native level and again under CPU_ISA=avx2 and CPU_ISA=generic.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>

#include "codegen/kernel.h"
#include "codegen/opt/heuristic.h"
#include "engine/buffers.h"
#include "engine/method_cache.h"
#include "engine/realize.h"
#include "renderer/cpu_isa.h"
#include "runtime/device.h"
#include "schedule/schedule.h"
#include "tg/tg.h"
#include "../common/reference.h"

using tg::Tensor;

namespace {

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

}  // namespace

TEST(CpuIsa, EveryLevelThisCpuRunsHasItsVectorWidth) {
  const std::vector<std::string> levels = tg::cpu_isa_levels();
  ASSERT_FALSE(levels.empty());
  EXPECT_EQ(levels[0], "native");
  for (const std::string& name : levels) {
    tg::CpuIsa isa = tg::cpu_isa_for(name);
    EXPECT_EQ(isa.level, name);
    EXPECT_FALSE(isa.cc_flags.empty()) << name;
    const int want_bytes = name == "avx512" ? 64 : name == "avx2" ? 32 : name == "native" ? isa.vector_bytes : 16;
    EXPECT_EQ(isa.vector_bytes, want_bytes) << name;
    EXPECT_TRUE(name == "native" || !isa.vnni) << name << " is the level's own instructions only";
    EXPECT_TRUE(contains(isa.describe(), name)) << isa.describe();
  }
  // the chosen level is one of them, and its width what the heuristics vectorize with
  const tg::CpuIsa& chosen = tg::cpu_isa();
  EXPECT_NE(std::find(levels.begin(), levels.end(), chosen.level), levels.end()) << chosen.level;
  EXPECT_GE(chosen.vector_floats(), 4);
}

TEST(CpuIsa, UnknownOrUnrunnableLevelsAreErrorsNamingTheValue) {
  try {
    tg::cpu_isa_for("avx9000");
    FAIL() << "an unknown level";
  } catch (const tg::Error& e) {
    EXPECT_TRUE(contains(e.what(), "CPU_ISA=avx9000")) << e.what();
    EXPECT_TRUE(contains(e.what(), "native")) << "the levels this CPU runs: " << e.what();
  }
  // A level this CPU lacks (on an AVX2 machine: avx512) names the missing features, never a SIGILL later.
  const std::vector<std::string> runs = tg::cpu_isa_levels();
#if defined(__x86_64__)
  for (const char* name : {"avx512", "avx2", "sse4"}) {
    if (std::find(runs.begin(), runs.end(), name) != runs.end()) continue;
    try {
      tg::cpu_isa_for(name);
      FAIL() << name << " is not among this CPU's levels and yet was accepted";
    } catch (const tg::Error& e) {
      EXPECT_TRUE(contains(e.what(), "lacks")) << e.what();
    }
  }
  EXPECT_NE(std::find(runs.begin(), runs.end(), "generic"), runs.end()) << "every x86-64 CPU runs the baseline";
#endif
}

// The CPU's float32 elementwise kernels take vectors as wide as the chosen level's registers.
TEST(CpuIsa, ElementwiseVectorsAreTheLevelsWidth) {
  Tensor a = Tensor::rand({64, 64}, {.device = "CPU"}), b = Tensor::rand({64, 64}, {.device = "CPU"});
  tg::Schedule s = tg::create_schedule({(a * b + 1.0f).uop()});
  tg::Kernel k(s.items.back().ast, tg::get_device("CPU").renderer());
  hand_coded_optimizations(k);
  int upcast = 0;
  for (auto& o : k.applied_opts())
    if (o.op == tg::OptOps::UPCAST) upcast = std::max<int>(upcast, int(o.amount));
  EXPECT_EQ(upcast, tg::cpu_isa().vector_floats());
}

// DOT4 in vectors of 1, 4, 8 and 16 lanes (by hand: UPCAST of the output), against a loop over the bytes: the VNNI,
// pmaddwd (AVX2 and SSE2) and shift paths, whichever this level compiles, on edge words and random ones.
TEST(CpuIsa, Dot4VectorsMatchTheByteLoopAtEveryWidth) {
  const auto want = tgtest::dot4_ref;
  const std::vector<int32_t> edge{0, 1, -1, INT32_MIN, INT32_MAX, int32_t(0x80808080), int32_t(0x7f7f7f7f),
                                  int32_t(0xffffffff), int32_t(0x01ff80ff), 0x0f0f0f0f, int32_t(0xf0f0f0f0)};
  uint32_t state = 777;
  auto next = [&] { return int32_t(state = state * 1664525u + 1013904223u); };
  const int64_t n = 64;
  std::vector<int32_t> a, b, c, w;
  for (int64_t i = 0; i < n; i++) {
    a.push_back(i < int64_t(edge.size()) ? edge[size_t(i)] : i < 22 ? int32_t(0xffffffff) : next());
    b.push_back(i < int64_t(edge.size()) ? edge[size_t(edge.size() - 1 - size_t(i))] : i < 22 ? int32_t(0x80808080)
                                                                                             : next());
    c.push_back(i % 3 == 0 ? INT32_MAX - int32_t(i) : next());  // sums that wrap
    w.push_back(want(a.back(), b.back(), c.back()));
  }
  Tensor out = Tensor(a, {n}, {.device = "CPU"}).dot4(Tensor(b, {n}, {.device = "CPU"}), Tensor(c, {n}, {.device = "CPU"}));
  tg::Schedule s = tg::create_schedule({out.uop()});
  for (size_t i = 0; i + 1 < s.items.size(); i++) tg::run_schedule_item(s.items[i]);
  const tg::ScheduleItem& item = s.items.back();
  for (int lanes : {1, 4, 8, 16}) {
    std::vector<tg::Opt> opts;
    if (lanes > 1) opts.push_back({tg::OptOps::UPCAST, 0, lanes});
    auto runner = tg::compile_runner("CPU", item.ast, &opts);
    const bool helper = contains(runner->spec.src, "tg_dot4_int" + std::to_string(lanes));
    EXPECT_EQ(helper, lanes > 1) << runner->spec.src;
    std::vector<void*> ptrs;
    for (auto& buf : item.bufs) ptrs.push_back(tg::buffer_of(buf.get())->ensure_allocated());
    tg::Buffer& result = *tg::buffer_of(item.bufs[0].get());
    std::vector<int32_t> got(size_t(n), -12345);
    result.copyin(got.data(), result.nbytes());
    runner->program->run(ptrs, {}, true);
    result.copyout(got.data(), result.nbytes());
    EXPECT_EQ(got, w) << lanes << " lanes at " << tg::cpu_isa().describe();
  }
}
