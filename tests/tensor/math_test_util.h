#pragma once
// Helpers for the Math*, Activation* and ReduceExtra* tests: random inputs with edge values, and an
// elementwise comparison that treats nan == nan and infinities exactly.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "tg/tg.h"

namespace mtest {

inline constexpr double kInf = std::numeric_limits<double>::infinity();
inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

inline std::vector<float> uniform(size_t n, double lo, double hi, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> d(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = float(d(gen));
  return v;
}

inline std::vector<int> uniform_int(size_t n, int lo, int hi, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_int_distribution<int> d(lo, hi);
  std::vector<int> v(n);
  for (auto& x : v) x = d(gen);
  return v;
}

// A bool tensor from 0/1 values (std::vector<bool> has no data() to build from).
inline tg::Tensor bools(const std::vector<int>& v) { return tg::Tensor(v).cast(tg::dtypes::bool_); }

// Random values in [lo, hi] followed by the given edge values.
inline std::vector<float> with_edges(size_t n, double lo, double hi, unsigned seed, const std::vector<double>& edges) {
  std::vector<float> v = uniform(n, lo, hi, seed);
  for (double e : edges) v.push_back(float(e));
  return v;
}

inline bool close(double got, double want, double atol, double rtol) {
  if (std::isnan(want)) return std::isnan(got);
  if (std::isinf(want)) return got == want;
  return std::abs(got - want) <= atol + rtol * std::abs(want);
}

template <class G, class W>
void expect_close(const std::vector<G>& got, const std::vector<W>& want, double atol, double rtol,
                  const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  int bad = 0;
  for (size_t i = 0; i < got.size(); i++) {
    if (!close(double(got[i]), double(want[i]), atol, rtol)) {
      if (++bad <= 5) ADD_FAILURE() << what << " [" << i << "]: got " << got[i] << ", want " << want[i];
    }
  }
  EXPECT_EQ(bad, 0) << what << ": " << bad << " of " << got.size() << " values differ";
}

// The inputs as the tensor holds them (rounded to its dtype), as doubles.
inline std::vector<double> values_of(const tg::Tensor& t) {
  std::vector<float> f = t.tolist<float>();
  return std::vector<double>(f.begin(), f.end());
}

// Apply `op` to x (float data cast to `dt`) and compare with `ref` on the rounded inputs.
inline void check_unary(const std::string& what, const std::vector<float>& data, tg::DType dt,
                        const std::function<tg::Tensor(const tg::Tensor&)>& op,
                        const std::function<double(double)>& ref, double atol, double rtol) {
  tg::Tensor x = tg::Tensor(data).cast(dt);
  std::vector<double> in = values_of(x);
  std::vector<double> want;
  for (double v : in) want.push_back(ref(v));
  tg::Tensor y = op(x);
  EXPECT_EQ(y.shape(), x.shape()) << what;
  expect_close(y.tolist<float>(), want, atol, rtol, what + " (" + dt.name() + ")");
}

}  // namespace mtest
