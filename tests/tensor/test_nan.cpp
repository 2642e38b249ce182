// NaN and range edges (issue 17): max/min reductions and maximum/minimum propagate NaN whatever its position or
// operand order, argmax/argmin point at the first NaN (torch's), arange refuses a NaN or infinite bound, and
// an int linspace is torch's truncated values. Checked on the compiled CPU backend and the interpreter, against
// loops over the same data.
#include <gtest/gtest.h>

#include <cmath>

#include "math_test_util.h"
#include "tg/tg.h"

using mtest::kInf;
using mtest::kNaN;
using tg::Tensor;

namespace {

const char* kDevices[] = {"CPU", "INTERP"};

// Rows of 5 with NaN nowhere, first, in the middle, last, twice; and +-inf beside it.
std::vector<float> rows() {
  const float n = float(kNaN), i = float(kInf);
  return {1,  5, 3, -2, 0, n, 5, 3, -2, 0,  1, 5, n,  -2, 0,  1,  5, 3,
          -2, n, 1, n,  3, n, 0, i, n,  -i, 2, 1, -i, -i, -i, -i, -i};
}

TEST(NaN, MaxMinReductionsPropagate) {
  std::vector<float> v = rows();
  for (const char* dev : kDevices) {
    Tensor x(v, {7, 5}, {.device = dev});
    std::vector<double> want_max, want_min;
    std::vector<int32_t> want_argmax, want_argmin;
    for (size_t r = 0; r < 7; r++) {
      double mx = -kInf, mn = kInf;
      int32_t amx = -1, amn = -1, first_nan = -1;
      for (size_t c = 0; c < 5; c++) {
        double e = v[r * 5 + c];
        if (std::isnan(e) && first_nan < 0) first_nan = int32_t(c);
        if (amx < 0 || e > mx) mx = e, amx = int32_t(c);
        if (amn < 0 || e < mn) mn = e, amn = int32_t(c);
      }
      want_max.push_back(first_nan >= 0 ? kNaN : mx);
      want_min.push_back(first_nan >= 0 ? kNaN : mn);
      want_argmax.push_back(first_nan >= 0 ? first_nan : amx);
      want_argmin.push_back(first_nan >= 0 ? first_nan : amn);
    }
    mtest::expect_close(x.max(1).tolist<float>(), want_max, 0, 0, std::string("max on ") + dev);
    mtest::expect_close(x.min(1).tolist<float>(), want_min, 0, 0, std::string("min on ") + dev);
    EXPECT_EQ(x.argmax(1).tolist<int32_t>(), want_argmax) << dev;
    EXPECT_EQ(x.argmin(1).tolist<int32_t>(), want_argmin) << dev;
    EXPECT_TRUE(std::isnan(x.max().item<float>())) << dev;
    EXPECT_EQ(x.argmax().item<int32_t>(), 5) << dev;  // the first NaN of the flattened tensor
  }
}

// The issue's example: max([1, nan, 3]) was 3 while argmax was 1.
TEST(NaN, MaxOfIssueExample) {
  Tensor x(std::vector<float>{1, float(kNaN), 3});
  EXPECT_TRUE(std::isnan(x.max().item<float>()));
  EXPECT_EQ(x.argmax().item<int32_t>(), 1);
}

TEST(NaN, MaximumMinimumEitherOrder) {
  const float n = float(kNaN);
  std::vector<float> a = {n, 1, n, 2, float(kInf), -0.0f}, b = {1, n, n, 3, n, 0};
  for (const char* dev : kDevices) {
    Tensor ta(a, {6}, {.device = dev}), tb(b, {6}, {.device = dev});
    std::vector<double> want_max, want_min;
    for (size_t i = 0; i < a.size(); i++) {
      bool nan = std::isnan(a[i]) || std::isnan(b[i]);
      want_max.push_back(nan ? kNaN : std::max(a[i], b[i]));
      want_min.push_back(nan ? kNaN : std::min(a[i], b[i]));
    }
    for (auto [x, y] : {std::pair{ta, tb}, std::pair{tb, ta}}) {
      mtest::expect_close(x.maximum(y).tolist<float>(), want_max, 0, 0, std::string("maximum on ") + dev);
      mtest::expect_close(x.minimum(y).tolist<float>(), want_min, 0, 0, std::string("minimum on ") + dev);
    }
    // also through a vectorized (UPCAST) kernel: 64 lanes with a NaN every 7th in one operand
    std::vector<float> c(64), d(64);
    for (size_t i = 0; i < 64; i++) c[i] = i % 7 == 0 ? n : float(i), d[i] = float(63 - i);
    std::vector<float> got = Tensor(d, {64}, {.device = dev}).maximum(Tensor(c, {64}, {.device = dev})).tolist<float>();
    for (size_t i = 0; i < 64; i++) EXPECT_EQ(std::isnan(got[i]), i % 7 == 0) << dev << " lane " << i;
  }
}

TEST(NaN, ArangeRefusesNonFiniteBounds) {
  for (auto [start, stop, step] : {std::tuple{0.0, kNaN, 1.0}, std::tuple{kNaN, 3.0, 1.0}, std::tuple{0.0, 3.0, kNaN},
                                   std::tuple{0.0, kInf, 1.0}, std::tuple{-kInf, 0.0, 1.0}}) {
    try {
      Tensor::arange(start, stop, step);
      ADD_FAILURE() << "arange(" << start << ", " << stop << ", " << step << ") did not throw";
    } catch (const tg::Error& e) {
      EXPECT_NE(std::string(e.what()).find("arange: start, stop and step must be finite"), std::string::npos)
          << e.what();
    }
  }
}

// int linspace: torch's values, start + i * step from the nearer end in double, truncated toward zero.
TEST(NaN, IntLinspaceTruncatesLikeTorch) {
  struct C {
    double a, b;
    int64_t n;
  };
  for (C c : {C{5, 10, 3}, C{-10, -5, 3}, C{0, 10, 4}, C{10, 0, 4}, C{-3, 3, 4}, C{0, 2147483647.0, 3}, C{-7, 7, 6},
              C{0, 1, 7}}) {
    std::vector<int64_t> want;
    double step = (c.b - c.a) / double(c.n - 1);
    for (int64_t i = 0; i < c.n; i++)
      want.push_back(int64_t(std::trunc(i < c.n / 2 ? c.a + step * double(i) : c.b - step * double(c.n - 1 - i))));
    EXPECT_EQ(Tensor::linspace(c.a, c.b, c.n, {.dtype = tg::dtypes::int64}).tolist<int64_t>(), want)
        << c.a << " " << c.b << " " << c.n;
  }
  EXPECT_EQ(Tensor::linspace(0, 2147483647.0, 3, {.dtype = tg::dtypes::int32}).tolist<int32_t>(),
            (std::vector<int32_t>{0, 1073741823, 2147483647}));
}

}  // namespace
