// Realize points and kernel grouping.
#include <gtest/gtest.h>

#include "schedule/realized.h"
#include "schedule/schedule.h"
#include "tg/tg.h"

using tg::Tensor;

namespace {
int count_kernels(const tg::Schedule& s) {
  int n = 0;
  for (auto& i : s.items) n += i.ast->op != tg::Ops::COPY;
  return n;
}
int count_copies(const tg::Schedule& s) {
  int n = 0;
  for (auto& i : s.items) n += i.ast->op == tg::Ops::COPY;
  return n;
}
}  // namespace

TEST(Schedule, ElementwiseChainIsOneKernel) {
  Tensor a = Tensor::empty({16}), b = Tensor::empty({16});
  Tensor c = ((a + b) * 2.0f - a).relu().sqrt() / (b + 1.0f);
  auto s = tg::create_schedule({c.uop()});
  EXPECT_EQ(count_kernels(s), 1);
  EXPECT_EQ(count_copies(s), 0);
}

TEST(Schedule, DataEntersThroughCopies) {
  Tensor a(std::vector<float>{1, 2, 3});
  auto s = tg::create_schedule({(a * 2.0f).uop()});
  ASSERT_EQ(s.items.size(), 2u);
  EXPECT_EQ(s.items[0].ast->op, tg::Ops::COPY);  // the copy comes before the kernel that reads it
  EXPECT_EQ(tg::buffer_device(s.items[0].bufs[1].get()), "HOST");
  EXPECT_EQ(s.items[1].bufs[1], s.items[0].bufs[0]);
}

TEST(Schedule, ExpandedReduceIsRealized) {
  Tensor x = Tensor::empty({4, 8});
  Tensor y = x - x.max(1, true);  // the max is read 8 times per row: its own kernel
  auto s = tg::create_schedule({y.uop()});
  EXPECT_EQ(count_kernels(s), 2);
}

TEST(Schedule, EachItemSaysWhyItsBufferIsRealized) {
  using namespace tg::realize_why;
  Tensor x = Tensor::empty({4, 8});
  auto s = tg::create_schedule({(x - x.max(1, true)).uop()});  // the max is read through an expanding view
  ASSERT_EQ(s.items.size(), 2u);
  EXPECT_EQ(s.items[0].why, kExpanded);
  EXPECT_EQ(s.items[1].why, kOutput);
  Tensor c = (x * 2.0f).contiguous();
  s = tg::create_schedule({(c + 1.0f).uop()});
  ASSERT_EQ(s.items.size(), 2u);
  EXPECT_EQ(s.items[0].why, kContiguous);
  EXPECT_EQ(s.items[1].why, kOutput);
  s = tg::create_schedule({c.uop()});  // asked for, and contiguous: both
  ASSERT_EQ(s.items.size(), 1u);
  EXPECT_EQ(s.items[0].why, kOutput | kContiguous);
  EXPECT_EQ(tg::realize_why_text(s.items[0].why), "a tensor the realize asked for; contiguous()");
  Tensor h(std::vector<float>{1, 2, 3});  // data from the host: a copy
  s = tg::create_schedule({(h * 2.0f).uop()});
  ASSERT_EQ(s.items.size(), 2u);
  EXPECT_EQ(s.items[0].why, kCopy);
  s = tg::create_schedule({(c + 1.0f).uop()});  // from the schedule cache: the same reasons
  EXPECT_TRUE(s.cached);
  ASSERT_EQ(s.items.size(), 2u);
  EXPECT_EQ(s.items[0].why, kContiguous);
}

TEST(Schedule, AReduceTwoKernelsReadIsComputedOnce) {
  Tensor x = Tensor::empty({4, 8});
  Tensor s = x.sum(1);  // read by two outputs: realized once, not computed inline in each
  auto sched = tg::create_schedule({(s + 1.0f).uop(), (s * 2.0f).uop()});
  ASSERT_EQ(sched.items.size(), 3u);
  EXPECT_EQ(sched.items[0].why, tg::realize_why::kSharedReduce);
  int reduces = 0;
  for (auto& item : sched.items)
    for (const tg::UOp* u : tg::toposort(item.ast)) reduces += u->op == tg::Ops::REDUCE_AXIS;
  EXPECT_EQ(reduces, 1);
  // one kernel that reads it twice computes it once, inline: a matmul's epilogue (gelu) stays fused
  Tensor w = Tensor::empty({8, 8});
  EXPECT_EQ(count_kernels(tg::create_schedule({x.matmul(w).gelu().uop()})), 1);
}

TEST(Schedule, ContiguousForcesAKernel) {
  Tensor x = Tensor::empty({4, 4});
  auto s = tg::create_schedule({x.permute({1, 0}).contiguous().uop()});
  EXPECT_EQ(count_kernels(s), 1);
  auto s2 = tg::create_schedule({x.contiguous().uop()});  // already contiguous: nothing to do
  EXPECT_EQ(count_kernels(s2), 0);
}

TEST(Schedule, RealizedNodesAreReused) {
  Tensor a = Tensor::ones({8}).contiguous() * 3.0f;
  Tensor b = a + 1.0f;  // built before a is realized
  a.realize();
  auto s = tg::create_schedule({b.uop()});
  EXPECT_EQ(count_kernels(s), 1);  // a is not computed again
  EXPECT_EQ(b.tolist<float>(), std::vector<float>(8, 4.0f));
}

TEST(Schedule, ZeroSizedOutputsRunNothing) {
  Tensor z = Tensor::empty({0, 4}) + 1.0f;
  auto s = tg::create_schedule({z.uop()});
  EXPECT_EQ(count_kernels(s), 0);
  EXPECT_TRUE(z.tolist<float>().empty());
}

TEST(Schedule, APadOverAReduceRealizesTheReduceNotWhatIsPadded) {
  // Rope's shape: two elementwise halves of a matmul's output, concatenated, then stacked with another slice.
  // The matmul is realized once; the halves, their cat and the stack fuse into one kernel (the halves realized
  // for the cat's pads took three). Half: the reduce has a single user, the cast, so only a pad realizes it.
  Tensor w = Tensor::rand({12, 4}).cast(tg::dtypes::float16).realize();
  Tensor x = Tensor::rand({1, 4}).cast(tg::dtypes::float16).realize();
  Tensor y = x.matmul(w.transpose(0, 1)).cast(tg::dtypes::float32);  // (1, 12)
  Tensor a = y.shrink({{0, 1}, {0, 2}}), b = y.shrink({{0, 1}, {2, 4}}), v = y.shrink({{0, 1}, {4, 8}});
  Tensor rot = Tensor::cat({a * 0.5f - b * 2.0f, a * 2.0f + b * 0.5f}, -1);  // (1, 4)
  Tensor out = Tensor::stack({rot, v});
  auto s = tg::create_schedule({out.uop()});
  EXPECT_EQ(count_kernels(s), 2);
  std::vector<float> wv = w.cast(tg::dtypes::float32).tolist<float>(), xv = x.cast(tg::dtypes::float32).tolist<float>(),
                     want;
  auto yv = [&](int i) {
    return xv[0] * wv[i * 4] + xv[1] * wv[i * 4 + 1] + xv[2] * wv[i * 4 + 2] + xv[3] * wv[i * 4 + 3];
  };
  for (int i = 0; i < 2; i++) want.push_back(yv(i) * 0.5f - yv(2 + i) * 2.0f);
  for (int i = 0; i < 2; i++) want.push_back(yv(i) * 2.0f + yv(2 + i) * 0.5f);
  for (int i = 0; i < 4; i++) want.push_back(yv(4 + i));
  std::vector<float> got = out.tolist<float>();
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); i++) EXPECT_NEAR(got[i], want[i], 2e-3f) << i;
}

TEST(Schedule, APadOverAnUnsafeOpRealizesWhatIsPadded) {
  Tensor x = Tensor::rand({4}).realize();
  Tensor e = x.sum(0, true).exp();  // exp(0) is 1: padded inline, the zeros would read 1
  Tensor out = e.pad({{0, 3}});
  EXPECT_EQ(out.tolist<float>()[1], 0.0f);
  EXPECT_EQ(out.tolist<float>()[2], 0.0f);
}
