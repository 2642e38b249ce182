// The C renderer's exp2 on float vectors (a polynomial, tg_exp2_floatN) against exp2 in double rounded to
// float: within 2 ulp over the whole range, and exp2's values at the edges (overflow to inf, underflow
// through the subnormals to 0, inf, -inf, NaN, exact powers of two).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "tg/tg.h"

using tg::Tensor;

namespace {

int64_t ordered(float f) {  // floats as integers in order: the difference of two is their distance in ulp
  int32_t i;
  std::memcpy(&i, &f, 4);
  return i < 0 ? int64_t(INT32_MIN) - i : i;
}

}  // namespace

TEST(CVectorExp2, WithinTwoUlpOverTheRange) {
  std::vector<float> xs;
  for (int i = 0; i < (1 << 16); i++) xs.push_back(-160.0f + 300.0f * float(i) / float(1 << 16));
  for (float x : {0.0f, -0.0f, 1.0f, -1.0f, 127.0f, 127.99f, 128.0f, -126.0f, -149.0f, -149.5f, -150.0f, 1e-8f,
                  std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity()})
    xs.push_back(x);
  while (xs.size() % 64 != 0) xs.push_back(0.5f);
  Tensor x(xs, {int64_t(xs.size())}, {.device = "CPU"});
  auto got = x.exp2().tolist<float>();
  ASSERT_EQ(got.size(), xs.size());
  int64_t worst = 0;
  for (size_t i = 0; i < xs.size(); i++) {
    const float want = float(std::exp2(double(xs[i])));
    if (std::isinf(want) || want == 0.0f) {
      EXPECT_EQ(got[i], want) << "exp2(" << xs[i] << ")";
      continue;
    }
    const int64_t d = std::llabs(ordered(got[i]) - ordered(want));
    worst = std::max(worst, d);
    EXPECT_LE(d, 2) << "exp2(" << xs[i] << ") = " << got[i] << ", want " << want;
  }
  EXPECT_LE(worst, 2);
  for (int e = -126; e <= 127; e += 7) {  // exact powers of two stay exact
    Tensor p(std::vector<float>(16, float(e)), {16}, {.device = "CPU"});
    EXPECT_EQ(p.exp2().tolist<float>()[3], std::ldexp(1.0f, e)) << e;
  }
  std::vector<float> nan(16, std::numeric_limits<float>::quiet_NaN());
  EXPECT_TRUE(std::isnan(Tensor(nan, {16}, {.device = "CPU"}).exp2().tolist<float>()[0]));
}
