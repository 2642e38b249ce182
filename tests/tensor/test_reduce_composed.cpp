// The extra reductions (src/tensor/reduce_composed.cpp, src/tensor/sort.cpp) against brute-force references
// on random inputs: prod, any/all, var/std, argmax/argmin, cumsum, logsumexp, softmax, log_softmax, sort
// and topk, with negative axes, keepdim, 0- and 1-sized dims and the relevant dtypes.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "../common/gradcheck.h"
#include "../common/reference.h"
#include "math_test_util.h"
#include "tg/tg.h"

using tg::Tensor;
using mtest::kInf;
using mtest::kNaN;
using tgtest::Ref;
namespace dtypes = tg::dtypes;

namespace {

// Reduce `x` (shape `s`) along `axis` with f(values along the axis) -> double; the result drops the axis.
template <class T>
std::vector<double> along(const std::vector<T>& x, const tg::Shape& s, int64_t axis,
                          const std::function<double(const std::vector<double>&)>& f) {
  Ref r = Ref::from(std::vector<double>(x.begin(), x.end()), s);
  tg::Shape out = s;
  out.erase(out.begin() + axis);
  Ref o = Ref::generate(out, [&](const std::vector<int64_t>& idx) {
    std::vector<double> line;
    std::vector<int64_t> full = idx;
    full.insert(full.begin() + axis, 0);
    for (int64_t k = 0; k < s[size_t(axis)]; k++) {
      full[size_t(axis)] = k;
      line.push_back(r.at(full));
    }
    return f(line);
  });
  return o.data;
}

// Apply g(line) -> line along `axis`, keeping the shape.
template <class T>
std::vector<double> scan(const std::vector<T>& x, const tg::Shape& s, int64_t axis,
                         const std::function<std::vector<double>(const std::vector<double>&)>& g) {
  Ref r = Ref::from(std::vector<double>(x.begin(), x.end()), s);
  std::vector<double> out(r.data.size());
  tg::Shape lead = s;
  lead.erase(lead.begin() + axis);
  Ref::generate(lead, [&](const std::vector<int64_t>& idx) {
    std::vector<double> line;
    std::vector<int64_t> full = idx;
    full.insert(full.begin() + axis, 0);
    for (int64_t k = 0; k < s[size_t(axis)]; k++) {
      full[size_t(axis)] = k;
      line.push_back(r.at(full));
    }
    std::vector<double> res = g(line);
    auto st = r.strides();
    for (int64_t k = 0; k < s[size_t(axis)]; k++) {
      full[size_t(axis)] = k;
      int64_t off = 0;
      for (size_t d = 0; d < full.size(); d++) off += full[d] * st[d];
      out[size_t(off)] = res[size_t(k)];
    }
    return 0.0;
  });
  return out;
}

double prod_of(const std::vector<double>& v) { return std::accumulate(v.begin(), v.end(), 1.0, std::multiplies<>()); }
double mean_of(const std::vector<double>& v) { return std::accumulate(v.begin(), v.end(), 0.0) / double(v.size()); }
double var_of(const std::vector<double>& v, double correction) {
  double m = mean_of(v), s = 0;
  for (double x : v) s += (x - m) * (x - m);
  return s / std::max(double(v.size()) - correction, 0.0);
}
double lse_of(const std::vector<double>& v) {
  double m = *std::max_element(v.begin(), v.end());
  if (std::isinf(m)) m = 0;
  double s = 0;
  for (double x : v) s += std::exp(x - m);
  return std::log(s) + m;
}
// First index of the max (nan counts as the max).
double argmax_of(const std::vector<double>& v) {
  for (size_t i = 0; i < v.size(); i++)
    if (std::isnan(v[i])) return double(i);
  return double(std::max_element(v.begin(), v.end()) - v.begin());
}
double argmin_of(const std::vector<double>& v) {
  for (size_t i = 0; i < v.size(); i++)
    if (std::isnan(v[i])) return double(i);
  return double(std::min_element(v.begin(), v.end()) - v.begin());
}

// A stable sort of a line: (values, indices), nan last (first when descending).
std::pair<std::vector<double>, std::vector<double>> sort_line(const std::vector<double>& v, bool desc) {
  std::vector<size_t> order(v.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    double x = v[a], y = v[b];
    if (std::isnan(x) || std::isnan(y)) return desc ? std::isnan(x) && !std::isnan(y) : std::isnan(y) && !std::isnan(x);
    return desc ? x > y : x < y;
  });
  std::vector<double> vals, idx;
  for (size_t o : order) {
    vals.push_back(v[o]);
    idx.push_back(double(o));
  }
  return {vals, idx};
}

}  // namespace

TEST(ReduceExtraProd, FloatIntBoolAndEdges) {
  tg::Shape s{3, 4, 5};
  auto x = mtest::uniform(60, 0.5, 1.5, 201);
  Tensor t = Tensor(x).reshape(s);
  for (int64_t ax : {0, 1, 2, -1}) {
    int64_t a = ax < 0 ? ax + 3 : ax;
    mtest::expect_close(t.prod(ax).tolist<float>(), along(x, s, a, prod_of), 1e-6, 1e-5, "prod axis");
  }
  EXPECT_EQ(t.prod(1, true).shape(), (tg::Shape{3, 1, 5}));
  EXPECT_NEAR(t.prod().item<float>(), prod_of(std::vector<double>(x.begin(), x.end())), 1e-4);
  std::vector<int> xi = mtest::uniform_int(24, -3, 3, 202);
  Tensor ti = Tensor(xi).reshape({4, 6});
  EXPECT_EQ(ti.prod(1).dtype(), dtypes::int32);
  std::vector<int> want;
  for (double v : along(xi, {4, 6}, 1, prod_of)) want.push_back(int(v));
  EXPECT_EQ(ti.prod(1).tolist<int>(), want);
  Tensor b = mtest::bools({1, 1, 0, 1, 1, 1}).reshape({2, 3});
  EXPECT_EQ(b.prod(1).dtype(), dtypes::bool_);
  EXPECT_EQ(b.prod(1).tolist<int>(), (std::vector<int>{0, 1}));
  // Empty products are 1; a 0-d prod is the value; size-1 axes change nothing.
  EXPECT_EQ(Tensor::zeros({2, 0}).prod(1).tolist<float>(), (std::vector<float>{1, 1}));
  EXPECT_EQ(Tensor::zeros({0}).prod().item<float>(), 1.0f);
  EXPECT_EQ(Tensor(3.0).prod().item<float>(), 3.0f);
  EXPECT_EQ(Tensor(std::vector<float>{2, 3}).reshape({2, 1}).prod(1).tolist<float>(), (std::vector<float>{2, 3}));
  Tensor h = Tensor(std::vector<float>{1.5f, -2, 4}).cast(dtypes::float16);
  EXPECT_EQ(h.prod().dtype(), dtypes::float16);
  EXPECT_EQ(h.prod().item<float>(), -12.0f);
  EXPECT_THROW((void)t.prod(3), tg::Error);
}

TEST(ReduceExtraAnyAll, BoolResults) {
  Tensor b = mtest::bools({1, 1, 1, 0, 0, 0}).reshape({3, 2});
  EXPECT_EQ(b.any().dtype(), dtypes::bool_);
  EXPECT_EQ(b.any().item<int>(), 1);
  EXPECT_EQ(b.all().item<int>(), 0);
  EXPECT_EQ(b.any(1).tolist<int>(), (std::vector<int>{1, 1, 0}));
  EXPECT_EQ(b.all(1).tolist<int>(), (std::vector<int>{1, 0, 0}));
  EXPECT_EQ(b.all(-2, true).shape(), (tg::Shape{1, 2}));
  EXPECT_EQ(b.all(-2, true).tolist<int>(), (std::vector<int>{0, 0}));
  Tensor f(std::vector<float>{0, 0.5f, 0, 0, float(kNaN), -1});
  EXPECT_EQ(f.reshape({3, 2}).any(1).tolist<int>(), (std::vector<int>{1, 0, 1}));
  EXPECT_EQ(f.reshape({3, 2}).all(1).tolist<int>(), (std::vector<int>{0, 0, 1}));
  Tensor i(std::vector<int>{3, -1, 7});
  EXPECT_EQ(i.all().item<int>(), 1);
  EXPECT_EQ(Tensor(std::vector<int>{0, 0}).any().item<int>(), 0);
  // Empty: any is false, all is true.
  EXPECT_EQ(Tensor::zeros({0}).any().item<int>(), 0);
  EXPECT_EQ(Tensor::zeros({0}).all().item<int>(), 1);
  EXPECT_EQ(Tensor::zeros({2, 0}).all(1).tolist<int>(), (std::vector<int>{1, 1}));
}

TEST(ReduceExtraVarStd, CorrectionAxesAndDtypes) {
  tg::Shape s{4, 7};
  auto x = mtest::uniform(28, -3, 5, 203);
  Tensor t = Tensor(x).reshape(s);
  for (double c : {0.0, 1.0, 2.0}) {
    for (int64_t ax : {0, 1, -1}) {
      int64_t a = ax < 0 ? ax + 2 : ax;
      auto v = along(x, s, a, [c](const std::vector<double>& l) { return var_of(l, c); });
      mtest::expect_close(t.var(ax, false, c).tolist<float>(), v, 1e-5, 1e-5, "var");
      std::vector<double> sd;
      for (double q : v) sd.push_back(std::sqrt(q));
      mtest::expect_close(t.std(ax, false, c).tolist<float>(), sd, 1e-5, 1e-5, "std");
    }
    EXPECT_NEAR(t.var(std::nullopt, false, c).item<float>(), var_of(std::vector<double>(x.begin(), x.end()), c), 1e-4);
  }
  EXPECT_EQ(t.var(1, true).shape(), (tg::Shape{4, 1}));
  EXPECT_EQ(t.std(std::nullopt, true).shape(), (tg::Shape{1, 1}));
  Tensor i = Tensor(std::vector<int>{1, 2, 3, 4});
  EXPECT_EQ(i.var().dtype(), dtypes::float32);
  EXPECT_NEAR(i.var().item<float>(), 5.0 / 3.0, 1e-6);
  Tensor h = Tensor(std::vector<float>{1, 2, 3, 4}).cast(dtypes::float16);
  EXPECT_EQ(h.std().dtype(), dtypes::float16);
  EXPECT_NEAR(h.std().item<float>(), std::sqrt(5.0 / 3.0), 2e-3);
  // One element with correction 1: 0/0 = nan (torch too).
  EXPECT_TRUE(std::isnan(Tensor(std::vector<float>{2}).var().item<float>()));
  EXPECT_THROW((void)t.var(2), tg::Error);
}

TEST(ReduceExtraArgmax, FirstIndexOnTiesNanAndShapes) {
  tg::Shape s{5, 6, 3};
  std::vector<int> xi = mtest::uniform_int(90, -4, 4, 204);  // many ties
  std::vector<float> x(xi.begin(), xi.end());
  Tensor t = Tensor(x).reshape(s);
  for (int64_t ax : {0, 1, 2, -1, -3}) {
    int64_t a = ax < 0 ? ax + 3 : ax;
    EXPECT_EQ(t.argmax(ax).dtype(), dtypes::int32);
    mtest::expect_close(t.argmax(ax).tolist<int>(), along(x, s, a, argmax_of), 0, 0, "argmax");
    mtest::expect_close(t.argmin(ax).tolist<int>(), along(x, s, a, argmin_of), 0, 0, "argmin");
    Tensor ti = Tensor(xi).reshape(s);
    mtest::expect_close(ti.argmax(ax).tolist<int>(), along(xi, s, a, argmax_of), 0, 0, "int argmax");
    mtest::expect_close(ti.argmin(ax).tolist<int>(), along(xi, s, a, argmin_of), 0, 0, "int argmin");
  }
  EXPECT_EQ(t.argmax(1, true).shape(), (tg::Shape{5, 1, 3}));
  std::vector<double> flat(x.begin(), x.end());
  EXPECT_EQ(t.argmax().item<int>(), int(argmax_of(flat)));
  EXPECT_EQ(t.argmin().item<int>(), int(argmin_of(flat)));
  EXPECT_EQ(t.argmax(std::nullopt, true).shape(), (tg::Shape{1, 1, 1}));
  // nan wins (first nan), infinities, half, bool, uint8.
  Tensor n(std::vector<float>{1, float(kNaN), 5, float(kNaN)});
  EXPECT_EQ(n.argmax().item<int>(), 1);
  EXPECT_EQ(n.argmin().item<int>(), 1);
  Tensor inf(std::vector<float>{float(-kInf), -1, float(kInf), float(kInf)});
  EXPECT_EQ(inf.argmax().item<int>(), 2);
  EXPECT_EQ(inf.argmin().item<int>(), 0);
  EXPECT_EQ(Tensor(std::vector<float>{1, 3, 3, -2}).cast(dtypes::float16).argmax().item<int>(), 1);
  EXPECT_EQ(mtest::bools({0, 1, 1}).argmax().item<int>(), 1);
  EXPECT_EQ(mtest::bools({1, 0, 0}).argmin().item<int>(), 1);
  Tensor u = Tensor(std::vector<int>{200, 3, 255, 0, 255}).cast(dtypes::uint8);
  EXPECT_EQ(u.argmax().item<int>(), 2);
  EXPECT_EQ(u.argmin().item<int>(), 3);
  // 0-d and size-1; empty axes throw.
  EXPECT_EQ(Tensor(4.0).argmax().item<int>(), 0);
  EXPECT_EQ(Tensor(4.0).argmax(0).item<int>(), 0);
  EXPECT_EQ(Tensor::ones({3, 1}).argmax(1).tolist<int>(), (std::vector<int>{0, 0, 0}));
  EXPECT_EQ(Tensor::ones({0, 3}).argmax(1).shape(), (tg::Shape{0}));
  EXPECT_THROW((void)Tensor::ones({0, 3}).argmax(0), tg::Error);
  EXPECT_THROW((void)Tensor::ones({0, 3}).argmin(0), tg::Error);
  EXPECT_THROW((void)Tensor::ones({0}).argmax(), tg::Error);
  EXPECT_THROW((void)t.argmax(3), tg::Error);
}

TEST(ReduceExtraCumsum, LengthsAxesAndDtypes) {
  // Ints give exact answers for every length, across the two-stage split (> 512) and its recursion.
  for (int64_t n : {1, 2, 7, 256, 512, 513, 1000, 3001}) {
    std::vector<int> x = mtest::uniform_int(size_t(n), -50, 50, 205 + unsigned(n));
    std::vector<int> want(x.size());
    std::partial_sum(x.begin(), x.end(), want.begin());
    Tensor c = Tensor(x).cumsum();
    EXPECT_EQ(c.dtype(), dtypes::int32);
    EXPECT_EQ(c.tolist<int>(), want) << "n = " << n;
  }
  // Floats along every axis of a 3-d tensor.
  tg::Shape s{3, 5, 4};
  auto x = mtest::uniform(60, -2, 2, 206);
  Tensor t = Tensor(x).reshape(s);
  auto cum = [](const std::vector<double>& l) {
    std::vector<double> r(l.size());
    std::partial_sum(l.begin(), l.end(), r.begin());
    return r;
  };
  for (int64_t ax : {0, 1, 2, -1, -2}) {
    int64_t a = ax < 0 ? ax + 3 : ax;
    Tensor c = t.cumsum(ax);
    EXPECT_EQ(c.shape(), s);
    mtest::expect_close(c.tolist<float>(), scan(x, s, a, cum), 1e-5, 1e-5, "cumsum axis");
  }
  // A long float axis on a 2-d tensor (two stages, with an axis that is not last).
  auto y = mtest::uniform(2 * 1500, -1, 1, 207);
  Tensor ty = Tensor(y).reshape({1500, 2});
  mtest::expect_close(ty.cumsum(0).tolist<float>(), scan(y, {1500, 2}, 0, cum), 1e-4, 1e-5, "long cumsum");
  // inf and nan only reach the sums after them.
  mtest::expect_close(Tensor(std::vector<float>{1, 2, float(kInf), 3}).cumsum().tolist<float>(),
                      std::vector<double>{1, 3, kInf, kInf}, 0, 0, "inf cumsum");
  mtest::expect_close(Tensor(std::vector<float>{1, float(kNaN), 3}).cumsum().tolist<float>(),
                      std::vector<double>{1, kNaN, kNaN}, 0, 0, "nan cumsum");
  // bool and int8 count in int32; half stays half.
  Tensor b = mtest::bools({1, 0, 1, 1});
  EXPECT_EQ(b.cumsum().dtype(), dtypes::int32);
  EXPECT_EQ(b.cumsum().tolist<int>(), (std::vector<int>{1, 1, 2, 3}));
  Tensor i8 = Tensor(std::vector<int>{100, 100, 100}).cast(dtypes::int8);
  EXPECT_EQ(i8.cumsum().tolist<int>(), (std::vector<int>{100, 200, 300}));
  Tensor h = Tensor(std::vector<float>{0.5f, 1, 2}).cast(dtypes::float16);
  EXPECT_EQ(h.cumsum().dtype(), dtypes::float16);
  EXPECT_EQ(h.cumsum().tolist<float>(), (std::vector<float>{0.5f, 1.5f, 3.5f}));
  // Edge shapes.
  EXPECT_EQ(Tensor(2.0).cumsum().item<float>(), 2.0f);
  EXPECT_EQ(Tensor::zeros({0, 3}).cumsum(0).shape(), (tg::Shape{0, 3}));
  EXPECT_EQ(Tensor::ones({2, 3}).cumsum(1).tolist<float>(), (std::vector<float>{1, 2, 3, 1, 2, 3}));
  EXPECT_THROW((void)t.cumsum(3), tg::Error);
  EXPECT_THROW((void)t.cumsum(-4), tg::Error);
}

TEST(ReduceExtraSoftmax, StableLogsumexpSoftmaxLogSoftmax) {
  tg::Shape s{4, 9};
  auto x = mtest::uniform(36, -5, 5, 208);
  x[0] = 1000;  // a large logit must not overflow
  x[10] = -1000;
  Tensor t = Tensor(x).reshape(s);
  for (int64_t ax : {0, 1, -1}) {
    int64_t a = ax < 0 ? ax + 2 : ax;
    mtest::expect_close(t.logsumexp(ax).tolist<float>(), along(x, s, a, lse_of), 1e-5, 1e-6, "logsumexp");
    auto lse = [](const std::vector<double>& l) {
      double m = lse_of(l);
      std::vector<double> r;
      for (double v : l) r.push_back(v - m);
      return r;
    };
    auto sm = [&](const std::vector<double>& l) {
      auto r = lse(l);
      for (auto& v : r) v = std::exp(v);
      return r;
    };
    mtest::expect_close(t.log_softmax(ax).tolist<float>(), scan(x, s, a, lse), 1e-5, 1e-6, "log_softmax");
    mtest::expect_close(t.softmax(ax).tolist<float>(), scan(x, s, a, sm), 1e-6, 1e-5, "softmax");
  }
  EXPECT_EQ(t.logsumexp(1, true).shape(), (tg::Shape{4, 1}));
  // Rows of -inf: logsumexp is -inf (not nan); rows with +inf give +inf.
  Tensor inf = Tensor(std::vector<float>{float(-kInf), float(-kInf), 1, float(kInf)}).reshape({2, 2});
  mtest::expect_close(inf.logsumexp(1).tolist<float>(), std::vector<double>{-kInf, kInf}, 0, 0, "inf logsumexp");
  // Softmax of each row sums to 1; half stays half; ints become float.
  Tensor h = Tensor(x).reshape(s).cast(dtypes::float16).softmax();
  EXPECT_EQ(h.dtype(), dtypes::float16);
  mtest::expect_close(h.sum(1).tolist<float>(), std::vector<double>(4, 1.0), 5e-3, 0, "half softmax sums");
  Tensor i = Tensor(std::vector<int>{1, 2, 3}).softmax();
  EXPECT_EQ(i.dtype(), dtypes::float32);
  double z = std::exp(1) + std::exp(2) + std::exp(3);
  mtest::expect_close(i.tolist<float>(), std::vector<double>{std::exp(1) / z, std::exp(2) / z, std::exp(3) / z},
                      1e-6, 1e-6, "int softmax");
  // 1-sized and empty axes; 0-d.
  EXPECT_EQ(Tensor::ones({3, 1}).softmax().tolist<float>(), std::vector<float>(3, 1.0f));
  EXPECT_EQ(Tensor::ones({3, 1}).log_softmax().tolist<float>(), std::vector<float>(3, 0.0f));
  EXPECT_EQ(Tensor::ones({0, 4}).softmax().shape(), (tg::Shape{0, 4}));
  EXPECT_EQ(Tensor::zeros({2, 0}).logsumexp(1).tolist<float>(), std::vector<float>(2, -float(kInf)));
  EXPECT_EQ(Tensor(3.0).softmax(0).item<float>(), 1.0f);
  EXPECT_THROW((void)t.softmax(2), tg::Error);
  EXPECT_THROW((void)t.logsumexp(-3), tg::Error);
}

TEST(ReduceExtraSort, MatchesStableSort) {
  tg::Shape s{4, 6, 5};
  std::vector<int> xi = mtest::uniform_int(120, -5, 5, 209);  // duplicates test the stable indices
  std::vector<float> x(xi.begin(), xi.end());
  for (size_t k = 0; k < x.size(); k += 7) x[k] += 0.25f;
  Tensor t = Tensor(x).reshape(s);
  for (bool desc : {false, true}) {
    for (int64_t ax : {0, 1, 2, -1}) {
      int64_t a = ax < 0 ? ax + 3 : ax;
      auto [v, i] = t.sort(ax, desc);
      EXPECT_EQ(v.shape(), s);
      EXPECT_EQ(i.dtype(), dtypes::int32);
      mtest::expect_close(v.tolist<float>(), scan(x, s, a, [&](auto& l) { return sort_line(l, desc).first; }), 0, 0,
                          "sort values");
      mtest::expect_close(i.tolist<int>(), scan(x, s, a, [&](auto& l) { return sort_line(l, desc).second; }), 0, 0,
                          "sort indices");
      auto [vi, ii] = Tensor(xi).reshape(s).sort(ax, desc);
      EXPECT_EQ(vi.dtype(), dtypes::int32);
      mtest::expect_close(vi.tolist<int>(), scan(xi, s, a, [&](auto& l) { return sort_line(l, desc).first; }), 0, 0,
                          "int sort values");
      mtest::expect_close(ii.tolist<int>(), scan(xi, s, a, [&](auto& l) { return sort_line(l, desc).second; }), 0, 0,
                          "int sort indices");
    }
  }
  // A longer random row, nan and infinities, half and bool.
  auto r = mtest::uniform(300, -100, 100, 210);
  auto [rv, ri] = Tensor(r).sort();
  std::vector<double> rd(r.begin(), r.end());
  mtest::expect_close(rv.tolist<float>(), sort_line(rd, false).first, 0, 0, "long sort");
  mtest::expect_close(ri.tolist<int>(), sort_line(rd, false).second, 0, 0, "long sort idx");
  std::vector<float> sp = {3, float(kNaN), float(-kInf), 0, float(kInf), -0.0f, float(kNaN), -2};
  std::vector<double> spd(sp.begin(), sp.end());
  for (bool desc : {false, true}) {
    auto [sv, si] = Tensor(sp).sort(0, desc);
    mtest::expect_close(sv.tolist<float>(), sort_line(spd, desc).first, 0, 0, "special sort");
    mtest::expect_close(si.tolist<int>(), sort_line(spd, desc).second, 0, 0, "special sort idx");
  }
  auto [hv, hi] = Tensor(std::vector<float>{0.5f, -1, 2, 0.5f}).cast(dtypes::float16).sort(0, true);
  EXPECT_EQ(hv.dtype(), dtypes::float16);
  EXPECT_EQ(hv.tolist<float>(), (std::vector<float>{2, 0.5f, 0.5f, -1}));
  EXPECT_EQ(hi.tolist<int>(), (std::vector<int>{2, 0, 3, 1}));
  auto [bv, bi] = mtest::bools({1, 0, 1, 0}).sort();
  EXPECT_EQ(bv.dtype(), dtypes::bool_);
  EXPECT_EQ(bv.tolist<int>(), (std::vector<int>{0, 0, 1, 1}));
  EXPECT_EQ(bi.tolist<int>(), (std::vector<int>{1, 3, 0, 2}));
  // Size 0/1 axes and 0-d.
  auto [ov, oi] = Tensor::ones({3, 1}).sort();
  EXPECT_EQ(ov.shape(), (tg::Shape{3, 1}));
  EXPECT_EQ(oi.tolist<int>(), (std::vector<int>{0, 0, 0}));
  EXPECT_EQ(Tensor::ones({0, 4}).sort().first.shape(), (tg::Shape{0, 4}));
  EXPECT_EQ(Tensor(5.0).sort().first.item<float>(), 5.0f);
  EXPECT_THROW((void)t.sort(3), tg::Error);
}

TEST(ReduceExtraTopk, LargestSmallestAndErrors) {
  tg::Shape s{3, 8};
  auto x = mtest::uniform(24, -10, 10, 211);
  Tensor t = Tensor(x).reshape(s);
  for (bool largest : {true, false}) {
    for (int64_t k : {0, 1, 3, 8}) {
      auto [v, i] = t.topk(k, -1, largest);
      EXPECT_EQ(v.shape(), (tg::Shape{3, k}));
      std::vector<double> wv, wi;
      for (int64_t r = 0; r < 3; r++) {
        std::vector<double> line(x.begin() + r * 8, x.begin() + r * 8 + 8);
        auto [sv, si] = sort_line(line, largest);
        wv.insert(wv.end(), sv.begin(), sv.begin() + k);
        wi.insert(wi.end(), si.begin(), si.begin() + k);
      }
      mtest::expect_close(v.tolist<float>(), wv, 0, 0, "topk values");
      mtest::expect_close(i.tolist<int>(), wi, 0, 0, "topk indices");
    }
  }
  auto [v0, i0] = t.topk(2, 0);
  EXPECT_EQ(v0.shape(), (tg::Shape{2, 8}));
  for (int64_t c = 0; c < 8; c++) {
    std::vector<double> col;
    for (int64_t r = 0; r < 3; r++) col.push_back(x[size_t(r * 8 + c)]);
    auto [sv, si] = sort_line(col, true);
    EXPECT_EQ(v0.tolist<float>()[size_t(c)], float(sv[0]));
    EXPECT_EQ(i0.tolist<int>()[size_t(8 + c)], int(si[1]));
  }
  auto [iv, ii] = Tensor(std::vector<int>{4, 9, 9, 1}).topk(2);
  EXPECT_EQ(iv.tolist<int>(), (std::vector<int>{9, 9}));
  EXPECT_EQ(ii.tolist<int>(), (std::vector<int>{1, 2}));
  EXPECT_THROW((void)t.topk(9), tg::Error);
  EXPECT_THROW((void)t.topk(-1), tg::Error);
  EXPECT_THROW((void)t.topk(1, 2), tg::Error);
}

// ---- gradients (finite differences in float64 against backward()) ----
namespace {
using X = std::vector<Tensor>;
using tgtest::expect_grad_close_random;
}  // namespace

TEST(ReduceExtraGrad, ProdVarStd) {
  expect_grad_close_random([](const X& x) { return x[0].prod(1); }, {{3, 4}}, 60, 0.5f, 1.5f);
  expect_grad_close_random([](const X& x) { return x[0].prod(); }, {{2, 3}}, 61, -1.5f, -0.5f);
  expect_grad_close_random([](const X& x) { return x[0].var(0); }, {{4, 3}}, 62);
  expect_grad_close_random([](const X& x) { return x[0].var(std::nullopt, false, 0); }, {{2, 3}}, 63);
  expect_grad_close_random([](const X& x) { return x[0].std(-1, true); }, {{3, 4}}, 64);
}

TEST(ReduceExtraGrad, CumsumAndSoftmaxFamily) {
  expect_grad_close_random([](const X& x) { return x[0].cumsum(1); }, {{2, 5}}, 65);
  expect_grad_close_random([](const X& x) { return x[0].cumsum(0); }, {{4, 2}}, 66);
  expect_grad_close_random([](const X& x) { return x[0].logsumexp(1); }, {{3, 4}}, 67, -3.f, 3.f);
  expect_grad_close_random([](const X& x) { return x[0].softmax(0); }, {{3, 4}}, 68, -3.f, 3.f);
  expect_grad_close_random([](const X& x) { return x[0].log_softmax(); }, {{3, 4}}, 69, -3.f, 3.f);
}

TEST(ReduceExtraGrad, SortAndTopkValues) {
  // Distinct random values: the permutation is locally constant, so values move their gradients back.
  expect_grad_close_random([](const X& x) { return x[0].sort(1).first; }, {{2, 5}}, 70);
  expect_grad_close_random([](const X& x) { return x[0].sort(0, true).first; }, {{4, 2}}, 71);
  expect_grad_close_random([](const X& x) { return x[0].topk(2).first; }, {{3, 4}}, 72);
}
