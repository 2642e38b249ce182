// Multi-reduce kernels (schedule.cpp, AstBuilder::can_host): a realized reduce that feeds another reduce over
// the same input shape and axes is computed in that reduce's kernel and stored as a second output. Softmax,
// log_softmax, var and layernorm become two kernels; the values are checked against double references on random
// shapes (1-sized and odd rows and columns, rows of one value, -inf), on the default device (CPU; INTERP with
// EMULATE=CUDA in the op suite, where rows are reduced by workgroups through shared memory).
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <limits>
#include <random>

#include "../common/random_data.h"
#include "codegen/kernel.h"
#include "codegen/opt/heuristic.h"
#include "renderer/cuda.h"
#include "schedule/schedule.h"
#include "tg/tg.h"

using tg::Tensor;

namespace {

using Vec = std::vector<double>;
using RowFn = std::function<Vec(const Vec&)>;

int count_kernels(const tg::Schedule& s) {
  int n = 0;
  for (auto& i : s.items) n += i.ast->op != tg::Ops::COPY;
  return n;
}
size_t most_outputs(const tg::Schedule& s) {
  size_t n = 0;
  for (auto& i : s.items) n = std::max(n, i.outputs);
  return n;
}

double row_max(const Vec& r) { return *std::max_element(r.begin(), r.end()); }
double row_mean(const Vec& r) {
  double s = 0;
  for (double v : r) s += v;
  return s / double(r.size());
}
double row_var(const Vec& r) {
  double m = row_mean(r), s = 0;
  for (double v : r) s += (v - m) * (v - m);
  return s / double(r.size() > 1 ? r.size() - 1 : 1);
}
Vec softmax_row(const Vec& r) {
  double m = row_max(r), s = 0;
  Vec o;
  for (double v : r) s += std::exp(v - m);
  for (double v : r) o.push_back(std::exp(v - m) / s);
  return o;
}
Vec log_softmax_row(const Vec& r) {
  double m = row_max(r), s = 0;
  Vec o;
  for (double v : r) s += std::exp(v - m);
  for (double v : r) o.push_back(v - m - std::log(s));
  return o;
}
Vec layernorm_row(const Vec& r) {
  double m = row_mean(r), s = 0;
  for (double v : r) s += (v - m) * (v - m);
  double inv = 1.0 / std::sqrt(s / double(r.size()) + 1e-5);
  Vec o;
  for (double v : r) o.push_back((v - m) * inv);
  return o;
}

// fn applied to every row of x (rows x cols, row-major), its results concatenated.
Vec by_rows(const std::vector<float>& x, int64_t rows, int64_t cols, const RowFn& fn) {
  Vec out;
  for (int64_t i = 0; i < rows; i++) {
    Vec r(x.begin() + i * cols, x.begin() + (i + 1) * cols);
    Vec o = fn(r);
    out.insert(out.end(), o.begin(), o.end());
  }
  return out;
}

void expect_close(const Vec& want, const std::vector<float>& got, double tol, const std::string& what) {
  ASSERT_EQ(want.size(), got.size()) << what;
  for (size_t i = 0; i < want.size(); i++) {
    if (std::isnan(want[i]) || std::isinf(want[i])) {
      ASSERT_TRUE(std::isnan(want[i]) ? std::isnan(got[i]) : got[i] == want[i]) << what << " at " << i;
      continue;
    }
    ASSERT_NEAR(got[i], want[i], tol * (1.0 + std::fabs(want[i]))) << what << " at " << i;
  }
}

Tensor layernorm(const Tensor& x) {
  Tensor c = x - x.mean(1, true);
  return c * ((c * c).mean(1, true) + 1e-5).rsqrt();
}

}  // namespace

TEST(ReduceFused, SoftmaxLogSoftmaxVarAndLayernormAreTwoKernels) {
  using Fn = std::function<Tensor(const Tensor&)>;
  const std::vector<std::pair<std::string, Fn>> cases = {
      {"softmax", [](const Tensor& x) { return x.softmax(1); }},
      {"log_softmax", [](const Tensor& x) { return x.log_softmax(1); }},
      {"var", [](const Tensor& x) { return x - x.var(1, true); }},
      {"layernorm", layernorm}};
  for (const auto& [what, fn] : cases) {
    Tensor x = Tensor::rand({16, 40});  // a new input each: a schedule marks its nodes realized
    x.realize();
    tg::Schedule s = tg::create_schedule({fn(x).uop()});
    EXPECT_EQ(count_kernels(s), 2) << what;
    EXPECT_EQ(most_outputs(s), 2u) << what;  // the inner reduce is stored too, for the last kernel
  }
  Tensor x = Tensor::rand({16, 40});
  x.realize();
  EXPECT_EQ(count_kernels(tg::create_schedule({x.logsumexp(1).uop()})), 1);
}

TEST(ReduceFused, SiblingReducesShareAKernel) {
  Tensor x = Tensor::rand({4, 8});
  x.realize();
  tg::Schedule s = tg::create_schedule({(x.sum(1) + x.max(1)).uop()});
  EXPECT_EQ(count_kernels(s), 1);
  auto v = (Tensor::ones({4, 8}).contiguous().sum(1) + Tensor::ones({4, 8}).contiguous().max(1)).tolist<float>();
  EXPECT_EQ(v, (std::vector<float>{9, 9, 9, 9}));
}

TEST(ReduceFused, RowsAgainstDoubleOnRandomShapes) {
  const int64_t sizes[] = {1, 2, 3, 17, 64, 257, 1000};
  std::mt19937 g(11);
  const std::vector<std::tuple<std::string, std::function<Tensor(const Tensor&)>, RowFn>> ops = {
      {"softmax", [](const Tensor& t) { return t.softmax(1); }, softmax_row},
      {"log_softmax", [](const Tensor& t) { return t.log_softmax(1); }, log_softmax_row},
      {"layernorm", layernorm, layernorm_row},
      {"var", [](const Tensor& t) { return t.var(1, true) + t * 0.0f; },
       [](const Vec& r) { return Vec(r.size(), row_var(r)); }},
      {"sum+max", [](const Tensor& t) { return t.sum(1, true) + t.max(1, true) + t * 0.0f; },
       [](const Vec& r) { return Vec(r.size(), row_mean(r) * double(r.size()) + row_max(r)); }}};
  for (int i = 0; i < 10; i++) {
    const int64_t rows = sizes[g() % std::size(sizes)], cols = sizes[g() % std::size(sizes)];
    auto v = tgtest::random_floats(size_t(rows * cols), uint32_t(i + 100), -4.0f, 4.0f);
    if (i % 3 == 0) std::fill(v.begin(), v.begin() + cols, 2.5f);  // a row of one value: max ties, var 0
    for (const auto& [name, fn, ref] : ops) {
      const std::string what = name + " " + std::to_string(rows) + "x" + std::to_string(cols);
      expect_close(by_rows(v, rows, cols, ref), fn(Tensor(v, {rows, cols})).tolist<float>(), 2e-5, what);
    }
  }
}

namespace {

// fn applied to every line of x (shape {a, b, c}, row-major) along `axis`, each result written back in its place.
Vec along_axis(const std::vector<float>& x, const std::array<int64_t, 3>& shape, int axis, const RowFn& fn) {
  Vec out(x.size());
  std::array<int64_t, 3> strides{shape[1] * shape[2], shape[2], 1}, idx{};
  for (idx[0] = 0; idx[0] < shape[0]; idx[0]++)
    for (idx[1] = 0; idx[1] < shape[1]; idx[1]++)
      for (idx[2] = 0; idx[2] < shape[2]; idx[2]++) {
        if (idx[size_t(axis)] != 0) continue;  // one line per position of the other two axes
        const int64_t base = idx[0] * strides[0] + idx[1] * strides[1] + idx[2] * strides[2];
        const int64_t step = strides[size_t(axis)], n = shape[size_t(axis)];
        Vec line;
        for (int64_t i = 0; i < n; i++) line.push_back(x[size_t(base + i * step)]);
        Vec o = fn(line);
        for (int64_t i = 0; i < n; i++) out[size_t(base + i * step)] = o[size_t(i)];
      }
  return out;
}

}  // namespace

TEST(ReduceFused, ReducesAlongAnInnerOrOuterAxis) {
  // softmax over axis 0 (strided rows) and log_softmax over the middle axis of a 3-d tensor
  auto v = tgtest::random_floats(5 * 7 * 3, 5, -3.0f, 3.0f);
  Tensor t(v, {5, 7, 3});
  expect_close(along_axis(v, {5, 7, 3}, 0, softmax_row), t.softmax(0).tolist<float>(), 2e-5, "softmax(0)");
  expect_close(along_axis(v, {5, 7, 3}, 1, log_softmax_row), t.log_softmax(1).tolist<float>(), 2e-5, "log_softmax(1)");
}

TEST(ReduceFused, InfinitiesAndEmptyRows) {
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> v = {-inf, 1, 2, -inf, -inf, -inf, 3, inf, 0};
  Tensor t(v, {3, 3});
  expect_close(by_rows(v, 3, 3, softmax_row), t.softmax(1).tolist<float>(), 1e-6, "softmax with -inf");
  expect_close(by_rows(v, 3, 3, log_softmax_row), t.log_softmax(1).tolist<float>(), 1e-6, "log_softmax with -inf");
  EXPECT_EQ(Tensor::ones({0, 4}).softmax(1).shape(), (tg::Shape{0, 4}));
  EXPECT_EQ(Tensor::ones({4, 0}).log_softmax(1).shape(), (tg::Shape{4, 0}));
}

TEST(ReduceFused, AHostedReduceReadByAThirdKernelAndACycle) {
  auto v = tgtest::random_floats(6 * 9, 7, -2.0f, 2.0f);
  Tensor x(v, {6, 9});
  Tensor m = x.max(1, true);
  // m is hosted by the sum's kernel and read from its buffer by the abs-sum's kernel
  Tensor a = (x - m).exp().sum(1), b = (x - m).abs().sum(1);
  // e (its own kernel) reads m, and the sum reads e: hosting m in that sum would be a cycle
  Tensor e = (x - m).exp().contiguous(), c = (e * (x - m)).sum(1);
  Tensor::realize_all({a, b, c});
  Vec wa, wb, wc;
  for (int64_t i = 0; i < 6; i++) {
    Vec r(v.begin() + i * 9, v.begin() + (i + 1) * 9);
    double mx = row_max(r), sa = 0, sb = 0, sc = 0;
    for (double z : r) sa += std::exp(z - mx), sb += std::fabs(z - mx), sc += std::exp(z - mx) * (z - mx);
    wa.push_back(sa), wb.push_back(sb), wc.push_back(sc);
  }
  expect_close(wa, a.tolist<float>(), 1e-5, "sum exp");
  expect_close(wb, b.tolist<float>(), 1e-5, "sum abs");
  expect_close(wc, c.tolist<float>(), 1e-5, "sum e * (x - m)");
}

TEST(ReduceFused, GpuRowsStayInRegisters) {
  // On a GPU the fused max-and-sum kernel of an 8192-wide softmax keeps its row in registers: 256 threads of a
  // workgroup hold 32 floats each and no reduce loop is left, so both reduces use one read of the row.
  tg::CUDARenderer cuda;
  Tensor x = Tensor::empty({64, 8192});
  tg::Schedule s = tg::create_schedule({x.softmax(1).uop()});
  const tg::ScheduleItem* fused = nullptr;
  for (auto& i : s.items)
    if (i.outputs == 2) fused = &i;
  ASSERT_NE(fused, nullptr);
  tg::Kernel k(fused->ast, cuda);
  ASSERT_EQ(k.reduce_count(), 2);
  hand_coded_optimizations(k);
  int64_t group = 1, unrolled = 1;
  for (size_t d = 0; d < k.full_shape().size(); d++) {
    EXPECT_NE(k.kinds()[d], tg::AxisKind::REDUCE) << "a reduce loop would read the row once per reduce";
    if (k.kinds()[d] == tg::AxisKind::GROUP) group *= k.full_shape()[d];
    if (k.kinds()[d] == tg::AxisKind::UNROLL) unrolled *= k.full_shape()[d];
  }
  EXPECT_EQ(group, 256);
  EXPECT_EQ(unrolled, 32);
}
