// BEAM's search side (codegen/opt/search.h): the action space on CPU and GPU renderers, that every candidate it
// returns applies, and the beam loop driven by a made-up timer (no compiling or running here). Also the static
// bounds check BEAM runs candidates through (codegen/access_bounds.h).
#include <gtest/gtest.h>

#include <set>

#include "codegen/access_bounds.h"
#include "codegen/kernel.h"
#include "codegen/opt/search.h"
#include "renderer/c.h"
#include "renderer/cuda.h"
#include "schedule/schedule.h"
#include "tg/context.h"
#include "tg/tg.h"

using tg::Kernel;
using tg::Opt;
using tg::OptOps;
using tg::Tensor;

namespace {

tg::UOpPtr last_ast(const Tensor& t) { return tg::create_schedule({t.uop()}).items.back().ast; }

std::set<OptOps> kinds_of(const std::vector<Kernel>& kernels) {
  std::set<OptOps> out;
  for (const Kernel& k : kernels) out.insert(k.applied_opts().back().op);
  return out;
}

// Every candidate's opts, replayed on a fresh kernel, apply, and the candidate keeps the limits.
void expect_all_apply(const tg::UOpPtr& ast, const tg::Renderer& r, const std::vector<Kernel>& candidates) {
  for (const Kernel& c : candidates) {
    Kernel fresh(ast, r);
    EXPECT_NO_THROW(fresh.apply_opts(c.applied_opts())) << c.name();
    EXPECT_EQ(fresh.full_shape(), c.full_shape());
    EXPECT_LE(c.upcast_size(), c.max_upcast());
    if (r.has_local()) {
      EXPECT_LE(c.local_size(), r.max_local_size());
    }
  }
}

}  // namespace

TEST(SearchActions, CpuMatmulHasUpcastUnrollSwapThreadPadTo) {
  tg::Context threads({{"THREADS", 2}});
  tg::ClangRenderer cpu;
  const tg::UOpPtr ast = last_ast(Tensor::empty({48, 36}).matmul(Tensor::empty({36, 40})));
  Kernel k(ast, cpu);
  const std::vector<Kernel> children = tg::kernel_actions(k);
  const std::set<OptOps> kinds = kinds_of(children);
  for (OptOps op : {OptOps::UPCAST, OptOps::UNROLL, OptOps::SWAP, OptOps::THREAD, OptOps::PADTO})
    EXPECT_TRUE(kinds.count(op)) << int(op);
  // a CPU renderer has no workgroups or tensor cores
  for (OptOps op : {OptOps::LOCAL, OptOps::GROUP, OptOps::GROUPTOP, OptOps::TC})
    EXPECT_FALSE(kinds.count(op)) << int(op);
  // THREAD never asks for more pieces than there are threads
  for (const Opt& o : tg::search_actions(k))
    if (o.op == OptOps::THREAD) {
      EXPECT_LE(o.amount, 2);
    }
  expect_all_apply(ast, cpu, children);
  // and one level deeper, from a kernel that already has opts
  expect_all_apply(ast, cpu, tg::kernel_actions(children.front()));
}

TEST(SearchActions, GpuKernelsHaveLocalGroupAndTensorCores) {
  tg::CUDARenderer cuda("sm_80");
  const tg::UOpPtr half_mm = last_ast(Tensor::empty({64, 32}, {.dtype = tg::dtypes::float16})
                                          .matmul(Tensor::empty({32, 48}, {.dtype = tg::dtypes::float16})));
  std::vector<Kernel> children = tg::kernel_actions(Kernel(half_mm, cuda));
  std::set<OptOps> kinds = kinds_of(children);
  for (OptOps op : {OptOps::UPCAST, OptOps::UNROLL, OptOps::LOCAL, OptOps::GROUP, OptOps::GROUPTOP, OptOps::TC})
    EXPECT_TRUE(kinds.count(op)) << int(op);
  EXPECT_FALSE(kinds.count(OptOps::THREAD));
  expect_all_apply(half_mm, cuda, children);
  // a tensor core comes first or not at all
  for (const Kernel& c : children)
    for (const Opt& o : tg::search_actions(c)) EXPECT_NE(o.op, OptOps::TC);
}

TEST(SearchActions, WholeDimAmountIsTriedOnce) {
  tg::ClangRenderer cpu;
  Kernel k(last_ast(Tensor::empty({4, 35}) + 1), cpu);  // one merged dim of 140
  for (const Opt& o : tg::search_actions(k)) EXPECT_FALSE(o.op == OptOps::UPCAST && o.amount == 140);
  Kernel small(last_ast(Tensor::empty({2, 2}) + 1), cpu);  // 4: UPCAST 4 is UPCAST 0
  for (const Opt& o : tg::search_actions(small)) EXPECT_FALSE(o.op == OptOps::UPCAST && o.amount == 4);
}

// A made-up cost: each upcast lane halves the time, down to 8 lanes; more lanes cost more.
double fake_seconds(const Kernel& k) {
  const int64_t u = k.upcast_size();
  return u <= 8 ? 1.0 / double(u) : double(u) / 64.0;
}

TEST(BeamSearch, FollowsTheTimerAndStopsWhenNoProgress) {
  tg::Context ctx({{"THREADS", 1}});
  tg::ClangRenderer cpu;
  Kernel start(last_ast(Tensor::empty({64, 64}) + 1), cpu);
  int batches = 0;
  auto timer = [&](const std::vector<Kernel>& c, double) {
    batches++;
    std::vector<double> t;
    for (const Kernel& k : c) t.push_back(fake_seconds(k));
    return t;
  };
  const tg::BeamResult r = tg::beam_search(start, {}, 2, timer);
  Kernel best(start.ast(), cpu);
  best.apply_opts(r.opts);
  EXPECT_EQ(best.upcast_size(), 8);
  EXPECT_DOUBLE_EQ(r.seconds, 1.0 / 8);
  EXPECT_GE(r.steps, 1);
  EXPECT_EQ(batches, r.steps + 2);  // the seeds (none), the start, then one batch per step
}

TEST(BeamSearch, NeverLosesToASeed) {
  tg::ClangRenderer cpu;
  Kernel start(last_ast(Tensor::empty({64, 64}) + 1), cpu);
  Kernel seed = start;
  seed.apply_opt({OptOps::UPCAST, 0, 16});
  // everything but the seed is slow
  auto timer = [&](const std::vector<Kernel>& c, double) {
    std::vector<double> t;
    for (const Kernel& k : c) t.push_back(k.applied_opts() == seed.applied_opts() ? 0.001 : 1.0);
    return t;
  };
  const tg::BeamResult r = tg::beam_search(start, {seed}, 2, timer);
  EXPECT_EQ(r.opts, seed.applied_opts());
  EXPECT_DOUBLE_EQ(r.seconds, 0.001);
}

TEST(BeamSearch, NothingTimedKeepsTheStartAndBadWidthThrows) {
  tg::ClangRenderer cpu;
  Kernel start(last_ast(Tensor::empty({8, 8}) + 1), cpu);
  auto failing = [](const std::vector<Kernel>& c, double) { return std::vector<double>(c.size(), tg::kNotTimed); };
  const tg::BeamResult r = tg::beam_search(start, {}, 1, failing);
  EXPECT_TRUE(r.opts.empty());
  EXPECT_EQ(r.seconds, tg::kNotTimed);
  EXPECT_THROW(tg::beam_search(start, {}, 0, failing), tg::Error);
}

// ---- the static bounds check ----

namespace {
using tg::UOp;
using tg::UOpPtr;
namespace dt = tg::dtypes;

UOpPtr global(int64_t param) { return UOp::make(tg::Ops::DEFINE_GLOBAL, dt::float32.pointer(), {}, param); }
UOpPtr range(int64_t n) {
  return UOp::make(tg::Ops::RANGE, dt::int32, {UOp::const_int(0), UOp::const_int(n)}, int64_t(0));
}
UOpPtr load(const UOpPtr& buf, const UOpPtr& idx, int width = 1) {
  return UOp::make(tg::Ops::LOAD, dt::float32.vec(width), {buf, idx});
}
}  // namespace

TEST(AccessBounds, ProvesIndexRangesInsideBuffers) {
  const UOpPtr b = global(0), r = range(16);
  EXPECT_EQ(tg::unproven_access({b, r, load(b, r)}, {16}), "");
  EXPECT_NE(tg::unproven_access({b, r, load(b, r)}, {15}), "") << "reads element 15 of 15";
  EXPECT_NE(tg::unproven_access({b, r, load(b, r + 1)}, {16}), "");
  EXPECT_NE(tg::unproven_access({b, r, load(b, r + (-1))}, {16}), "") << "reads element -1";
  // a vector of 4 at 4r reads up to 4*3 + 3 = 15
  const UOpPtr r4 = range(4);
  EXPECT_EQ(tg::unproven_access({b, r4, load(b, r4 * 4, 4)}, {16}), "");
  EXPECT_NE(tg::unproven_access({b, r4, load(b, r4 * 4 + 1, 4)}, {16}), "");
  // a parameter the sizes do not cover is never in bounds
  EXPECT_NE(tg::unproven_access({global(1), r, load(global(1), r)}, {16}), "");
}

TEST(AccessBounds, GatedAccessesAndStores) {
  const UOpPtr b = global(0), r = range(20);
  const UOpPtr gate = tg::lt(r, 16);
  const UOpPtr gated = UOp::make(tg::Ops::LOAD, dt::float32, {b, r, gate, UOp::const_(dt::float32, 0)});
  EXPECT_EQ(tg::unproven_access({b, r, gated}, {16}), "");
  // a gate that is the constant true guards nothing
  const UOpPtr always =
      UOp::make(tg::Ops::LOAD, dt::float32, {b, r, UOp::const_(dt::bool_, 1), UOp::const_(dt::float32, 0)});
  EXPECT_NE(tg::unproven_access({b, r, always}, {16}), "");
  const UOpPtr store = UOp::make(tg::Ops::STORE, dt::void_, {b, r, UOp::const_(dt::float32, 1)});
  EXPECT_NE(tg::unproven_access({b, r, store}, {16}), "");
  EXPECT_EQ(tg::unproven_access({b, r, store}, {20}), "");
}
