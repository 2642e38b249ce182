// cumprod / cummax / logcumsumexp (both scan stages), diagonal, unfold, scatter_reduce and masked_select
// against brute-force loops.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "tg/tg.h"

using tg::Tensor;

namespace {

std::vector<float> randoms(size_t n, float lo, float hi, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = d(gen);
  return v;
}

}  // namespace

TEST(Scan, CumulativeOpsMatchLoopsOnShortAndLongAxes) {
  for (int64_t n : {1, 7, 600, 1100}) {  // 600 and 1100 take the two-stage (chunked) path
    std::vector<float> v = randoms(size_t(n), 0.9f, 1.1f, unsigned(n));
    Tensor t(v);
    std::vector<float> prod = t.cumprod(0).tolist<float>(), mx = t.cummax(0).tolist<float>(),
                       lse = t.logcumsumexp(0).tolist<float>();
    double p = 1, m = -INFINITY, s = 0;
    for (size_t i = 0; i < v.size(); i++) {
      p *= v[i];
      m = std::max(m, double(v[i]));
      s += std::exp(double(v[i]));
      ASSERT_NEAR(prod[i], p, 1e-4 * std::abs(p) + 1e-6) << "cumprod n=" << n << " i=" << i;
      ASSERT_EQ(mx[i], float(m)) << "cummax n=" << n << " i=" << i;
      ASSERT_NEAR(lse[i], std::log(s), 1e-4 * std::log(s) + 1e-5) << "logcumsumexp n=" << n << " i=" << i;
    }
  }
}

TEST(Scan, AlongAnyAxisKeepingIntDtypesAndStayingFinite) {
  Tensor t(std::vector<int32_t>{1, 5, 2, 3, 0, 7}, {2, 3});
  EXPECT_EQ(t.cummax(1).tolist<int32_t>(), (std::vector<int32_t>{1, 5, 5, 3, 3, 7}));
  EXPECT_EQ(t.cummax(-2).tolist<int32_t>(), (std::vector<int32_t>{1, 5, 2, 3, 5, 7}));
  EXPECT_EQ(t.cumprod(1).dtype(), tg::dtypes::int32);
  EXPECT_EQ(t.cumprod(1).tolist<int32_t>(), (std::vector<int32_t>{1, 5, 10, 3, 0, 0}));
  EXPECT_EQ(Tensor(std::vector<float>{0, 100}).logcumsumexp(0).tolist<float>()[1], 100.0f);  // not log(inf)
  EXPECT_EQ(Tensor::ones({2, 0}).cumprod(1).shape(), (tg::Shape{2, 0}));
  EXPECT_THROW(Tensor::ones({3}).cummax(1), tg::Error);
}

TEST(Diagonal, MatchesLoopsForOffsetsAndDims) {
  Tensor t = Tensor::arange(24).reshape({2, 3, 4});
  std::vector<int32_t> all = t.tolist<int32_t>();
  auto at = [&](int64_t i, int64_t j, int64_t k) { return all[size_t(i * 12 + j * 4 + k)]; };
  for (int64_t off : {-2, -1, 0, 1, 3, 5}) {
    Tensor d = t.diagonal(off, 1, 2);  // (2, len)
    int64_t len = std::max<int64_t>(0, off >= 0 ? std::min<int64_t>(3, 4 - off) : std::min<int64_t>(3 + off, 4));
    ASSERT_EQ(d.shape(), (tg::Shape{2, len})) << off;
    std::vector<int32_t> got = d.tolist<int32_t>();
    for (int64_t b = 0; b < 2; b++)
      for (int64_t i = 0; i < len; i++)
        EXPECT_EQ(got[size_t(b * len + i)], off >= 0 ? at(b, i, i + off) : at(b, i - off, i)) << off;
  }
  EXPECT_EQ(t.diagonal(0, 2, 0).shape(), (tg::Shape{3, 2}));
  EXPECT_THROW(Tensor::ones({3}).diagonal(), tg::Error);
}

TEST(Unfold, WindowsMatchLoops) {
  Tensor t = Tensor::arange(10).reshape({2, 5});
  Tensor u = t.unfold(1, 2, 2);  // (2, 2, 2): windows [0,1], [2,3] of each row
  EXPECT_EQ(u.shape(), (tg::Shape{2, 2, 2}));
  EXPECT_EQ(u.tolist<int32_t>(), (std::vector<int32_t>{0, 1, 2, 3, 5, 6, 7, 8}));
  EXPECT_EQ(t.unfold(0, 2, 1).shape(), (tg::Shape{1, 5, 2}));
  EXPECT_EQ(t.unfold(1, 0, 3).shape(), (tg::Shape{2, 2, 0}));
  EXPECT_THROW(t.unfold(1, 6, 1), tg::Error);
  EXPECT_THROW(t.unfold(1, 2, 0), tg::Error);
}

TEST(ScatterReduce, EveryModeMatchesLoops) {
  std::vector<float> self = {1, 2, 3, 4}, src = {5, 6, 7, 8, 9};
  std::vector<int32_t> idx = {0, 0, 2, 2, 2};
  for (std::string mode : {"sum", "prod", "mean", "amax", "amin"})
    for (bool include_self : {true, false}) {
      std::vector<float> want = self;
      std::vector<int> count(4, include_self ? 1 : 0);
      std::vector<bool> first(4, !include_self);
      for (size_t j = 0; j < src.size(); j++) {
        float& w = want[size_t(idx[j])];
        float x = src[j];
        if (first[size_t(idx[j])]) w = mode == "prod" ? 1 : mode == "amax" ? -INFINITY : mode == "amin" ? INFINITY : 0;
        first[size_t(idx[j])] = false;
        count[size_t(idx[j])]++;
        w = mode == "sum" || mode == "mean" ? w + x
            : mode == "prod"                ? w * x
            : mode == "amax"                ? std::max(w, x)
                                            : std::min(w, x);
      }
      if (mode == "mean")
        for (size_t i = 0; i < 4; i++)
          if (count[i] > 0) want[i] /= float(count[i]);
      Tensor r = Tensor(self).scatter_reduce(0, Tensor(idx), Tensor(src), mode, include_self);
      EXPECT_EQ(r.tolist<float>(), want) << mode << " include_self=" << include_self;
    }
  EXPECT_THROW(Tensor(self).scatter_reduce(0, Tensor(idx), Tensor(src), "max"), tg::Error);
}

TEST(MaskedSelect, PicksInOrderWithBroadcasting) {
  Tensor t = Tensor::arange(6).reshape({2, 3});
  Tensor m = Tensor(std::vector<int32_t>{1, 0, 1}).cast(tg::dtypes::bool_);
  EXPECT_EQ(t.masked_select(m).tolist<int32_t>(), (std::vector<int32_t>{0, 2, 3, 5}));
  EXPECT_EQ(t.masked_select(t > 10).shape(), (tg::Shape{0}));
  EXPECT_THROW(t.masked_select(t), tg::Error);
}

// ceil_mode keeps the last partial window (unless it would start in the right padding); count_include_pad=false
// averages over the real elements only; indices point at the first max; unpool puts each max back.
TEST(Pools, CeilModeCountsAndIndicesMatchLoops) {
  std::vector<float> v(25);
  for (size_t i = 0; i < v.size(); i++) v[i] = float((i * 7) % 11);
  Tensor x = Tensor(v).reshape({1, 1, 5, 5});
  // k=2, s=2, p=0 on 5: floor gives 2 windows, ceil 3 (the last one a single column/row).
  EXPECT_EQ(x.max_pool2d({2, 2}, {2, 2}, {1}, {0}, true).shape(), (tg::Shape{1, 1, 3, 3}));
  // k=3, s=3, p=1 on 5: ceil would give 3 windows but the third would start in the right padding: 2.
  EXPECT_EQ(x.avg_pool2d({3, 3}, {3, 3}, {1}, {1}, true).shape(), (tg::Shape{1, 1, 2, 2}));
  std::vector<float> avg = x.avg_pool2d({2, 2}, {2, 2}, {1}, {1}, true, false).tolist<float>();  // (1,1,3,3)
  for (int oi = 0; oi < 3; oi++)
    for (int oj = 0; oj < 3; oj++) {
      double sum = 0;
      int n = 0;
      for (int a = oi * 2 - 1; a < oi * 2 + 1; a++)
        for (int b = oj * 2 - 1; b < oj * 2 + 1; b++)
          if (a >= 0 && a < 5 && b >= 0 && b < 5) sum += v[size_t(a * 5 + b)], n++;
      EXPECT_NEAR(avg[size_t(oi * 3 + oj)], sum / n, 1e-5) << oi << "," << oj;
    }
  auto [vals, idx] = x.max_pool2d_with_indices({2, 2});
  std::vector<float> mv = vals.tolist<float>();
  std::vector<int32_t> mi = idx.tolist<int32_t>();
  for (size_t k = 0; k < mi.size(); k++) EXPECT_EQ(v[size_t(mi[k])], mv[k]);
  Tensor back = vals.max_unpool2d(idx, {2, 2}, {}, {1}, {0}, {5, 5});
  std::vector<float> b = back.tolist<float>();
  for (size_t k = 0; k < b.size(); k++)
    EXPECT_EQ(b[k], std::find(mi.begin(), mi.end(), int32_t(k)) != mi.end() ? v[k] : 0.0f) << k;
  EXPECT_THROW(x.max_unpool2d(idx, {2, 2}), tg::Error);  // indices of another shape
}
