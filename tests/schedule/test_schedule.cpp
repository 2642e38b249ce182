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
