#pragma once
// Finite-difference gradient checks for op tests (tinygrad's helper_test_op backward half, without torch).
//
//   tgtest::expect_grad_close([](const std::vector<tg::Tensor>& x) { return x[0].exp() * x[1]; },
//                             {{0.1f, 0.2f, 0.3f}, {1.f, 2.f, 3.f}}, {{3}, {3}});
//
// The analytic side: float32 inputs with requires_grad, out = f(inputs), loss = sum(out * W) with W a fixed
// set of distinct weights (a plain sum would hide a gradient that lands on the wrong element), backward().
// The numeric side: the same f on float64 copies of the inputs, central differences of the same weighted
// sum (computed on the host in double), one element at a time. f must therefore work for float64 inputs too
// (ops that keep their input's float dtype do); keep shapes small: it costs two evaluations per element.
// Inputs whose gradient never arrives (unused by f) are checked against zero. Mismatches are reported with
// ADD_FAILURE naming the input, the element (flat index and multi-index) and both values.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "tg/tensor.h"

namespace tgtest {

using GradFn = std::function<tg::Tensor(const std::vector<tg::Tensor>&)>;

struct GradCheckOptions {
  double atol = 1e-3;
  double rtol = 1e-2;
  double eps = 1e-4;          // central-difference step; keep inputs further than this from kinks (relu at 0, ties)
  bool float64 = true;        // finite differences in float64; false: float32 (then use eps ~1e-2 and looser tols)
  int max_reports = 8;        // mismatches reported per input before the rest are only counted
};

// Weight k of the weighted sum: distinct, deterministic, in [0.5, 1.5).
inline double gradcheck_weight(size_t k) {
  double f = double(k) * 0.6180339887498949;
  return 0.5 + (f - std::floor(f));
}

// Uniform random inputs in [lo, hi) for the given shapes, reproducible from `seed`.
inline std::vector<std::vector<float>> random_inputs(const std::vector<tg::Shape>& shapes, unsigned seed = 0,
                                                     float lo = -1.f, float hi = 1.f) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<std::vector<float>> out;
  for (const auto& s : shapes) {
    int64_t n = 1;
    for (int64_t x : s) n *= x;
    std::vector<float> v(static_cast<size_t>(n));
    for (auto& x : v) x = d(gen);
    out.push_back(std::move(v));
  }
  return out;
}

namespace gradcheck_detail {

// A tensor of `shape` from flat data; a 0-d shape goes through (1,), as Tensor(vector) makes 1-d tensors.
template <class T>
tg::Tensor make_input(const std::vector<T>& data, const tg::Shape& shape, tg::TensorOptions opts = {}) {
  if (!shape.empty()) return tg::Tensor(data, shape, opts);
  bool grad = opts.requires_grad;
  opts.requires_grad = false;
  tg::Tensor t = tg::Tensor(data, {1}, opts).reshape({});
  return grad ? t.requires_grad_() : t;
}

inline std::string multi_index(int64_t flat, const tg::Shape& shape) {
  std::vector<int64_t> idx(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    const int64_t n = shape[d];
    idx[d] = n ? flat % n : 0;
    flat = n ? flat / n : 0;
  }
  std::string r = "(";
  for (size_t i = 0; i < idx.size(); i++) r += (i ? ", " : "") + std::to_string(idx[i]);
  return r + ")";
}

// sum_k W_k * f(inputs)_k, evaluated in `dt` and summed on the host in double.
inline double weighted_output(const GradFn& f, const std::vector<std::vector<double>>& data,
                              const std::vector<tg::Shape>& shapes, tg::DType dt) {
  std::vector<tg::Tensor> xs;
  for (size_t i = 0; i < data.size(); i++) xs.push_back(make_input(data[i], shapes[i], {.dtype = dt}));
  std::vector<double> out = f(xs).tolist<double>();
  double s = 0;
  for (size_t k = 0; k < out.size(); k++) s += gradcheck_weight(k) * out[k];
  return s;
}

}  // namespace gradcheck_detail

// Checks d(sum(f(inputs) * W))/d(inputs) from backward() against central differences.
inline void expect_grad_close(const GradFn& f, const std::vector<std::vector<float>>& inputs_data,
                              const std::vector<tg::Shape>& shapes, const GradCheckOptions& opt) {
  ASSERT_EQ(inputs_data.size(), shapes.size()) << "gradcheck: one shape per input";
  // Analytic gradients.
  std::vector<tg::Tensor> xs;
  for (size_t i = 0; i < inputs_data.size(); i++)
    xs.push_back(gradcheck_detail::make_input(inputs_data[i], shapes[i], {.requires_grad = true}));
  tg::Tensor out = f(xs);
  std::vector<float> w(static_cast<size_t>(out.numel()));
  for (size_t k = 0; k < w.size(); k++) w[k] = float(gradcheck_weight(k));
  tg::Tensor weights = gradcheck_detail::make_input(w, out.shape(), {.device = out.device()}).cast(out.dtype());
  tg::Tensor loss = (out * weights).sum();
  loss.backward();
  std::vector<std::vector<double>> analytic;
  for (size_t i = 0; i < xs.size(); i++) {
    if (!xs[i].has_grad()) {
      analytic.emplace_back(inputs_data[i].size(), 0.0);
      continue;
    }
    tg::Tensor g = xs[i].grad();
    ASSERT_EQ(g.shape(), shapes[i]) << "gradcheck: gradient of input " << i << " has the wrong shape";
    analytic.push_back(g.tolist<double>());
  }
  // Numeric gradients, one element at a time.
  tg::DType dt = opt.float64 ? tg::dtypes::float64 : tg::dtypes::float32;
  std::vector<std::vector<double>> data;
  for (const auto& v : inputs_data) data.emplace_back(v.begin(), v.end());
  for (size_t i = 0; i < data.size(); i++) {
    int reported = 0, bad = 0;
    for (size_t j = 0; j < data[i].size(); j++) {
      double x0 = data[i][j];
      data[i][j] = x0 + opt.eps;
      double hi = gradcheck_detail::weighted_output(f, data, shapes, dt);
      data[i][j] = x0 - opt.eps;
      double lo = gradcheck_detail::weighted_output(f, data, shapes, dt);
      data[i][j] = x0;
      double numeric = (hi - lo) / (2 * opt.eps), a = analytic[i][j];
      bool ok = std::abs(a - numeric) <= opt.atol + opt.rtol * std::abs(numeric);  // NaN fails too
      if (ok) continue;
      bad++;
      if (reported++ < opt.max_reports)
        ADD_FAILURE() << "gradcheck: input " << i << " element " << j << " "
                      << gradcheck_detail::multi_index(int64_t(j), shapes[i]) << ": analytic " << a << ", numeric "
                      << numeric << " (x = " << x0 << ")";
    }
    if (bad > opt.max_reports)
      ADD_FAILURE() << "gradcheck: input " << i << ": " << bad << " mismatching elements in all";
  }
}

inline void expect_grad_close(const GradFn& f, const std::vector<std::vector<float>>& inputs_data,
                              const std::vector<tg::Shape>& shapes, double atol = 1e-3, double rtol = 1e-2) {
  GradCheckOptions opt;
  opt.atol = atol;
  opt.rtol = rtol;
  expect_grad_close(f, inputs_data, shapes, opt);
}

// Random inputs in [lo, hi) for `shapes` (seeded), then expect_grad_close.
inline void expect_grad_close_random(const GradFn& f, const std::vector<tg::Shape>& shapes, unsigned seed = 0,
                                     float lo = -1.f, float hi = 1.f, GradCheckOptions opt = {}) {
  expect_grad_close(f, random_inputs(shapes, seed, lo, hi), shapes, opt);
}

}  // namespace tgtest
