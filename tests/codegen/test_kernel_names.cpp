// Kernel names and generated source for the seed examples.
#include <gtest/gtest.h>

#include "engine/realize.h"
#include "schedule/schedule.h"
#include "tg/tg.h"

using tg::Tensor;

namespace {
// The kernels a tensor's realize would run, compiled for the CPU (inputs realized first).
std::vector<tg::CompiledRunner*> kernels_of(Tensor t) {
  std::vector<tg::CompiledRunner*> out;
  tg::Schedule s = tg::create_schedule({t.uop()});
  for (auto& item : s.items)
    if (item.ast->op != tg::Ops::COPY) out.push_back(&tg::get_runner("CPU", item.ast));
  return out;
}
}  // namespace

TEST(KernelNames, NooptAdd4x4IsE16) {
  tg::Context ctx({{"NOOPT", 1}});
  Tensor a = Tensor::empty({4, 4}), b = Tensor::empty({4, 4});
  auto ks = kernels_of(a + b);
  ASSERT_EQ(ks.size(), 1u);
  EXPECT_EQ(ks[0]->spec.name, "E_16");
}

TEST(KernelNames, DotOfTwoIsR2WithAccumulatorLoop) {
  Tensor a(std::vector<int>{1, 2}), b(std::vector<int>{3, 4});
  a.realize();
  b.realize();
  tg::Context ctx({{"DEBUG", 4}});
  testing::internal::CaptureStdout();
  Tensor d = a.dot(b);
  d.realize();
  std::string out = testing::internal::GetCapturedStdout();
  EXPECT_NE(out.find("r_2"), std::string::npos) << out;
  EXPECT_NE(out.find("for (int ridx0 = 0; ridx0 < 2; ridx0++)"), std::string::npos) << out;
  EXPECT_NE(out.find("acc0"), std::string::npos) << out;
  EXPECT_NE(out.find("*** CPU"), std::string::npos) << out;  // DEBUG>=2 line
}

TEST(KernelNames, ReduceAndElementwiseNames) {
  Tensor a = Tensor::empty({3, 4});
  auto ks = kernels_of(a.sum(1));
  ASSERT_EQ(ks.size(), 1u);
  EXPECT_EQ(ks[0]->spec.name.substr(0, 2), "r_");
  auto ke = kernels_of(a * 2.0f + 1.0f);
  ASSERT_EQ(ke.size(), 1u);
  EXPECT_EQ(ke[0]->spec.name.substr(0, 2), "E_");
}

TEST(KernelNames, Debug5PrintsTheAst) {
  Tensor a = Tensor::empty({4});
  tg::Context ctx({{"DEBUG", 5}});
  testing::internal::CaptureStdout();
  (a * 3.0f).realize();
  std::string out = testing::internal::GetCapturedStdout();
  EXPECT_NE(out.find("UOp(Ops.SINK"), std::string::npos) << out;
  EXPECT_NE(out.find("Ops.STORE"), std::string::npos) << out;
}
