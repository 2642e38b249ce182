// The schedule cache: graphs of one structure over other buffers and variable values share one schedule.
#include <gtest/gtest.h>

#include "schedule/realized.h"
#include "schedule/schedule.h"
#include "tg/tg.h"

using tg::Tensor;

namespace {

tg::ScheduleCacheStats delta(const tg::ScheduleCacheStats& before) {
  auto now = tg::schedule_cache_stats();
  return {now.hits - before.hits, now.misses - before.misses, now.bypassed - before.bypassed, now.entries};
}

Tensor input(std::vector<float> v) { return Tensor(v).realize(); }

}  // namespace

TEST(ScheduleCache, SameStructureOtherBuffersIsAHit) {
  Tensor a = input({1, 2, 3}), b = input({4, 5, 6}), c = input({10, 20, 30}), d = input({-1, -2, -3});
  auto first = tg::create_schedule({((a + b) * 2.0f).uop()});
  auto before = tg::schedule_cache_stats();
  auto second = tg::create_schedule({((c + d) * 2.0f).uop()});
  EXPECT_EQ(delta(before).hits, 1);
  EXPECT_TRUE(second.cached);
  ASSERT_EQ(first.items.size(), 1u);
  ASSERT_EQ(second.items.size(), 1u);
  EXPECT_EQ(first.items[0].ast, second.items[0].ast);  // one AST: one compiled kernel
  // The second item reads the second graph's buffers and writes a buffer of its own.
  EXPECT_EQ(second.items[0].bufs[1], c.uop()->src[0]);
  EXPECT_EQ(second.items[0].bufs[2], d.uop()->src[0]);
  EXPECT_NE(second.items[0].bufs[0], first.items[0].bufs[0]);
  EXPECT_EQ(second.roots[0]->src[0], second.items[0].bufs[0]);
}

TEST(ScheduleCache, HitsComputeTheirOwnValues) {
  for (float k : {1.f, 2.f, 3.f}) {
    Tensor a = input({k, 2 * k, 3 * k}), b = input({1, 1, 1});
    Tensor y = (a * b + 1.0f).sum();
    EXPECT_FLOAT_EQ(y.item<float>(), 6 * k + 3) << "k = " << k;
  }
}

TEST(ScheduleCache, ConstantsAreKeys) {
  Tensor a = input({1, 2});
  auto before = tg::schedule_cache_stats();
  EXPECT_EQ((a * 3.0f).tolist<float>(), (std::vector<float>{3, 6}));
  EXPECT_EQ((a * 5.0f).tolist<float>(), (std::vector<float>{5, 10}));
  EXPECT_EQ(delta(before).hits, 0);
}

TEST(ScheduleCache, RealizedIntermediatesAreTheGraphsOwn) {
  // The row max is read through an expanding view: the schedule realizes it, on a hit into a buffer of its own.
  for (float k : {1.f, 2.f}) {
    Tensor a = Tensor(std::vector<float>{k, 2 * k, 3, 4, 5, 6, 7, 8}).reshape({2, 4}).realize();
    Tensor m = a.max(1, true);
    Tensor y = a - m;
    y.realize();
    auto view = m.uop();  // the tensor takes its realized view when asked
    ASSERT_EQ(view->op, tg::Ops::VIEW) << "k = " << k;
    ASSERT_EQ(view->src[0]->op, tg::Ops::BUFFER);
    EXPECT_NE(view->src[0], y.uop()->src[0]);
    EXPECT_EQ(m.tolist<float>(), (std::vector<float>{4, 8}));
    EXPECT_EQ(y.tolist<float>(), (std::vector<float>{k - 4, 2 * k - 4, -1, 0, -3, -2, -1, 0}));
  }
}

TEST(ScheduleCache, NodesRealizedSinceTheGraphWasBuiltAreRead) {
  for (float k : {1.f, 2.f}) {
    Tensor a = input({k, k});
    Tensor x = a + 1.0f;
    Tensor y = x * 2.0f;  // built on x's node, which is realized next
    x.realize();
    auto before = tg::schedule_cache_stats();
    tg::GlobalCounters::reset();
    y.realize();
    EXPECT_EQ(tg::GlobalCounters::kernel_count, 1) << "k = " << k;  // x is read, not computed again
    if (k == 2.f) EXPECT_EQ(delta(before).hits, 1);
    EXPECT_EQ(y.tolist<float>(), (std::vector<float>{2 * k + 2, 2 * k + 2}));
  }
}

TEST(ScheduleCache, AssignStepsRepeatOnTheirTarget) {
  Tensor w = input({1, 2, 3});
  for (int step = 1; step <= 3; step++) {
    auto before = tg::schedule_cache_stats();
    w.assign(w * 2.0f).realize();
    if (step == 3) EXPECT_EQ(delta(before).hits, 1);
  }
  EXPECT_EQ(w.tolist<float>(), (std::vector<float>{8, 16, 24}));
}

TEST(ScheduleCache, VariablesTakeEachGraphsValue) {
  tg::Variable i("i", 0, 100);
  Tensor a = input({1, 2});
  auto before = tg::schedule_cache_stats();
  for (int v : {3, 7, 50}) EXPECT_EQ((a + Tensor(i.bind(v))).tolist<float>(), (std::vector<float>{1.f + v, 2.f + v}));
  EXPECT_EQ(delta(before).hits, 2);
  // One variable bound to two values in one graph (two kernels): not cached, still right.
  Tensor x = (a + Tensor(i.bind(1))).contiguous(), y = (x + Tensor(i.bind(2))).contiguous();
  before = tg::schedule_cache_stats();
  EXPECT_EQ(y.tolist<float>(), (std::vector<float>{4, 5}));
  EXPECT_EQ(delta(before).bypassed, 1);
}

TEST(ScheduleCache, KeepsNoRealizedNodeAlive) {
  // The cache holds its key graphs. Were they the user's nodes, a realized zeros(4).contiguous() would outlive its
  // tensor, and the next graph that builds the same node would read the old buffer, assigned to since.
  {
    Tensor m = Tensor::zeros({4}).contiguous().realize();
    m.assign(m + 1.0f).realize();
    EXPECT_EQ(m.tolist<float>(), (std::vector<float>{1, 1, 1, 1}));
  }
  Tensor n = Tensor::zeros({4}).contiguous();
  EXPECT_EQ(n.tolist<float>(), (std::vector<float>{0, 0, 0, 0}));
}

TEST(ScheduleCache, IsBoundedAndCanBeTurnedOff) {
  Tensor a = Tensor::empty({8}, {.device = "NULL"});
  for (int k = 0; k < 300; k++) (a * float(k)).realize();  // a new structure each time
  EXPECT_LE(tg::schedule_cache_stats().entries, 256u);
  tg::Context off({{"SCACHE", 0}});
  auto before = tg::schedule_cache_stats();
  for (int k = 0; k < 2; k++) (a * 2.0f).realize();
  auto d = delta(before);
  EXPECT_EQ(d.hits + d.misses + d.bypassed, 0);
}
