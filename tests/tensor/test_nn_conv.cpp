// conv2d / conv_transpose2d / pools / interpolate / linear against brute-force loops over every output (or, for
// the transposed conv, every input) element; kernel counts; bad input; gradients.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <random>

#include "../common/gradcheck.h"
#include "tg/tg.h"

using tg::Tensor;

namespace {

using Vec = std::vector<double>;
using Idx = std::vector<int64_t>;

std::vector<float> random_floats(size_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> d(-1, 1);
  std::vector<float> v(n);
  for (auto& x : v) x = d(gen);
  return v;
}

int64_t numel(const Idx& s) {
  int64_t n = 1;
  for (int64_t v : s) n *= v;
  return n;
}
int64_t flat(const Idx& idx, const Idx& shape) {
  int64_t o = 0;
  for (size_t d = 0; d < shape.size(); d++) o = o * shape[d] + idx[d];
  return o;
}
// Calls f(idx) for every multi-index of `shape`, row-major.
void for_each(const Idx& shape, const std::function<void(const Idx&)>& f) {
  Idx idx(shape.size(), 0);
  for (int64_t n = numel(shape), i = 0; i < n; i++) {
    f(idx);
    for (size_t d = shape.size(); d-- > 0;) {
      if (++idx[d] < shape[d]) break;
      idx[d] = 0;
    }
  }
}

struct ConvCase {
  Idx x, w;  // (N, Cin, *spatial), (Cout, Cin/groups, *k)
  int64_t groups;
  Idx stride, dil;
  std::vector<std::pair<int64_t, int64_t>> pads;  // per spatial dim (before, after)
  bool bias;
};

// The output shape of a case.
Idx conv_out_shape(const ConvCase& c) {
  Idx os = {c.x[0], c.w[0]};
  for (size_t j = 0; j + 2 < c.w.size(); j++)
    os.push_back((c.x[2 + j] + c.pads[j].first + c.pads[j].second - c.dil[j] * (c.w[2 + j] - 1) - 1) / c.stride[j] +
                 1);
  return os;
}

// Calls f(output flat index, x flat index, w flat index) for every product x[...] * w[...] of the conv, in the
// order of a loop over outputs, then input channels, then kernel taps (taps in the padding skipped).
void for_each_product(const ConvCase& c, const std::function<void(size_t, size_t, size_t)>& f) {
  size_t D = c.w.size() - 2;
  int64_t cin = c.w[1], rcout = c.w[0] / c.groups;
  Idx os = conv_out_shape(c), ks(c.w.begin() + 2, c.w.end());
  for_each(os, [&](const Idx& o) {
    for (int64_t ci = 0; ci < cin; ci++)
      for_each(ks, [&](const Idx& k) {
        Idx xi = {o[0], o[1] / rcout * cin + ci};
        for (size_t j = 0; j < D; j++) {
          int64_t p = o[2 + j] * c.stride[j] + k[j] * c.dil[j] - c.pads[j].first;
          if (p < 0 || p >= c.x[2 + j]) return;
          xi.push_back(p);
        }
        Idx wi = {o[1], ci};
        wi.insert(wi.end(), k.begin(), k.end());
        f(size_t(flat(o, os)), size_t(flat(xi, c.x)), size_t(flat(wi, c.w)));
      });
  });
}

// out[n, co, *o] = b[co] + sum_{ci, *k} x[n, g*cin + ci, o*s + k*d - pB] * w[co, ci, *k]
Vec conv_ref(const ConvCase& c, const std::vector<float>& x, const std::vector<float>& w,
             const std::vector<float>& b, Idx* out_shape) {
  *out_shape = conv_out_shape(c);
  Vec out(size_t(numel(*out_shape)));
  if (c.bias)
    for_each(*out_shape, [&](const Idx& o) { out[size_t(flat(o, *out_shape))] = b[size_t(o[1])]; });
  for_each_product(c, [&](size_t o, size_t xf, size_t wf) { out[o] += double(x[xf]) * w[wf]; });
  return out;
}

// The torch-style padding argument for a case: one value, per dim, or per side (last dim first).
std::vector<int64_t> padding_arg(const ConvCase& c) {
  bool sym = true;
  for (auto& [b, e] : c.pads) sym &= b == e;
  std::vector<int64_t> p;
  if (sym) {
    for (auto& pr : c.pads) p.push_back(pr.first);
  } else {
    for (size_t j = c.pads.size(); j-- > 0;) p.insert(p.end(), {c.pads[j].first, c.pads[j].second});
  }
  return p;
}

void expect_close(const std::vector<float>& got, const Vec& want, double tol, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); i++) EXPECT_NEAR(got[i], want[i], tol) << what << " at " << i;
}

std::string describe(const ConvCase& c) {
  auto f = [](const Idx& v) {
    std::string r;
    for (auto x : v) r += std::to_string(x) + " ";
    return r;
  };
  return "x " + f(c.x) + "w " + f(c.w) + "groups " + std::to_string(c.groups) + " stride " + f(c.stride) + "dil " +
         f(c.dil);
}

const std::vector<ConvCase> kConvCases = {
    {{2, 3, 7, 6}, {4, 3, 3, 3}, 1, {1, 1}, {1, 1}, {{0, 0}, {0, 0}}, true},
    {{1, 4, 8, 8}, {6, 2, 3, 3}, 2, {1, 1}, {1, 1}, {{1, 1}, {1, 1}}, true},      // groups 2, padding
    {{2, 2, 9, 7}, {3, 2, 3, 2}, 1, {2, 2}, {1, 1}, {{1, 1}, {0, 0}}, false},     // stride 2
    {{1, 3, 9, 9}, {2, 3, 3, 3}, 1, {1, 1}, {2, 2}, {{2, 2}, {2, 2}}, true},      // dilation 2
    {{1, 1, 6, 5}, {1, 1, 2, 3}, 1, {1, 2}, {2, 1}, {{0, 2}, {1, 0}}, false},     // channel 1, per-side pad
    {{2, 4, 5, 5}, {4, 1, 3, 3}, 4, {2, 1}, {1, 2}, {{1, 1}, {2, 2}}, true},      // depthwise
    {{1, 2, 5, 6}, {3, 2, 1, 1}, 1, {1, 1}, {1, 1}, {{0, 0}, {0, 0}}, true},      // 1x1
    {{1, 6, 6, 6}, {6, 2, 2, 2}, 3, {3, 2}, {2, 1}, {{1, 0}, {0, 1}}, false},     // groups 3, stride 3
};

// conv2d (any number of spatial dims) of random inputs against the loop reference, case by case.
void expect_convs_match_loops(const std::vector<ConvCase>& cases, unsigned seed) {
  for (const ConvCase& c : cases) {
    auto x = random_floats(size_t(numel(c.x)), seed++), w = random_floats(size_t(numel(c.w)), seed++);
    auto b = random_floats(size_t(c.w[0]), seed++);
    Idx os;
    Vec want = conv_ref(c, x, w, b, &os);
    std::optional<Tensor> bias;
    if (c.bias) bias = Tensor(b);
    Tensor r = Tensor(x, c.x).conv2d(Tensor(w, c.w), bias, c.groups, c.stride, c.dil, padding_arg(c));
    EXPECT_EQ(r.shape(), os) << describe(c);
    expect_close(r.tolist<float>(), want, 1e-4, describe(c));
  }
}

}  // namespace

TEST(NNConv, Conv2dArange) {
  Tensor t = Tensor::arange(9).reshape({1, 1, 3, 3}).cast(tg::dtypes::float32);
  Tensor w = Tensor::ones({1, 1, 2, 2});
  Tensor r = t.conv2d(w);
  EXPECT_EQ(r.shape(), (tg::Shape{1, 1, 2, 2}));
  EXPECT_EQ(r.tolist<float>(), (std::vector<float>{8, 12, 20, 24}));
}

TEST(NNConv, Conv2dMatchesLoops) {
  expect_convs_match_loops(kConvCases, 1);
}

TEST(NNConv, Conv1dAnd3d) {
  std::vector<ConvCase> cases = {
      {{2, 3, 11}, {4, 3, 3}, 1, {2}, {1}, {{1, 1}}, true},
      {{1, 1, 10}, {2, 1, 4}, 1, {1}, {3}, {{0, 0}}, false},
      {{1, 2, 5, 4, 6}, {3, 2, 2, 3, 2}, 1, {1, 1, 2}, {1, 1, 1}, {{1, 1}, {0, 0}, {1, 1}}, true},
      {{2, 2, 4, 5, 4}, {2, 1, 3, 1, 2}, 2, {2, 1, 1}, {1, 2, 1}, {{1, 1}, {1, 1}, {0, 0}}, false},
  };
  expect_convs_match_loops(cases, 100);
}

TEST(NNConv, Conv2dIsOneKernel) {
  // The whole conv (padding, windows, multiply, reduce) fuses into one reduce kernel over views.
  Tensor x(random_floats(28 * 28, 7), {1, 1, 28, 28}), w(random_floats(32 * 25, 8), {32, 1, 5, 5});
  x.realize();
  w.realize();
  int64_t before = tg::GlobalCounters::kernel_count;
  Tensor r = x.conv2d(w);
  r.realize();
  EXPECT_EQ(r.shape(), (tg::Shape{1, 32, 24, 24}));
  EXPECT_EQ(tg::GlobalCounters::kernel_count - before, 1);
  before = tg::GlobalCounters::kernel_count;
  x.conv2d(w, std::nullopt, 1, {2}, {1}, {2}).realize();
  EXPECT_EQ(tg::GlobalCounters::kernel_count - before, 1);
}

TEST(NNConv, ApiForm) {
  Tensor img = Tensor::rand({1, 2, 5, 5}), k = Tensor::rand({3, 2, 3, 3});
  Tensor c = img.conv2d(k), m = img.max_pool2d(), a = img.avg_pool2d();
  EXPECT_EQ(c.shape(), (tg::Shape{1, 3, 3, 3}));
  EXPECT_EQ(m.shape(), (tg::Shape{1, 2, 2, 2}));
  EXPECT_EQ(a.shape(), (tg::Shape{1, 2, 2, 2}));
  auto iv = img.tolist<float>(), kv = k.tolist<float>();
  ConvCase cc{{1, 2, 5, 5}, {3, 2, 3, 3}, 1, {1, 1}, {1, 1}, {{0, 0}, {0, 0}}, false};
  Idx os;
  expect_close(c.tolist<float>(), conv_ref(cc, iv, kv, {}, &os), 1e-4, "api conv");
  auto mv = m.tolist<float>(), av = a.tolist<float>();
  for (int64_t ch = 0; ch < 2; ch++)
    for (int64_t y = 0; y < 2; y++)
      for (int64_t x = 0; x < 2; x++) {
        double mx = -1e30, sum = 0;
        for (int64_t dy = 0; dy < 2; dy++)
          for (int64_t dx = 0; dx < 2; dx++) {
            double v = iv[size_t(ch * 25 + (2 * y + dy) * 5 + 2 * x + dx)];
            mx = std::max(mx, v), sum += v;
          }
        EXPECT_FLOAT_EQ(mv[size_t(ch * 4 + y * 2 + x)], float(mx));
        EXPECT_NEAR(av[size_t(ch * 4 + y * 2 + x)], sum / 4, 1e-6);
      }
}

namespace {

// Scatter-add: every input element adds x * w[ci, co, *k] at out[o = i*s - pB + k*d] (torch's definition).
Vec conv_transpose_ref(const ConvCase& c, const Idx& opad, const std::vector<float>& x, const std::vector<float>& w,
                       const std::vector<float>& b, Idx* out_shape) {
  size_t D = c.w.size() - 2;
  int64_t cin = c.w[0], rcout = c.w[1], rcin = cin / c.groups;
  Idx os = {c.x[0], rcout * c.groups};
  for (size_t j = 0; j < D; j++)
    os.push_back((c.x[2 + j] - 1) * c.stride[j] - c.pads[j].first - c.pads[j].second + c.dil[j] * (c.w[2 + j] - 1) +
                 opad[j] + 1);
  *out_shape = os;
  Vec out(size_t(numel(os)), 0.0);
  for_each(os, [&](const Idx& o) { out[size_t(flat(o, os))] = c.bias ? b[size_t(o[1])] : 0; });
  Idx ks(c.w.begin() + 2, c.w.end());
  for_each(c.x, [&](const Idx& xi) {
    int64_t g = xi[1] / rcin;
    for (int64_t co = 0; co < rcout; co++) {
      for_each(ks, [&](const Idx& k) {
        Idx oi = {xi[0], g * rcout + co};
        for (size_t j = 0; j < D; j++) {
          int64_t p = xi[2 + j] * c.stride[j] - c.pads[j].first + k[j] * c.dil[j];
          if (p < 0 || p >= os[2 + j]) return;
          oi.push_back(p);
        }
        Idx wi = {xi[1], co};
        wi.insert(wi.end(), k.begin(), k.end());
        out[size_t(flat(oi, os))] += double(x[size_t(flat(xi, c.x))]) * w[size_t(flat(wi, c.w))];
      });
    }
  });
  return out;
}

}  // namespace

TEST(NNConv, ConvTranspose2dArange) {
  Tensor t = Tensor::arange(9).reshape({1, 1, 3, 3}).cast(tg::dtypes::float32);
  Tensor r = t.conv_transpose2d(Tensor::ones({1, 1, 2, 2}));
  EXPECT_EQ(r.shape(), (tg::Shape{1, 1, 4, 4}));
  EXPECT_EQ(r.tolist<float>(), (std::vector<float>{0, 1, 3, 2, 3, 8, 12, 7, 9, 20, 24, 13, 6, 13, 15, 8}));
}

TEST(NNConv, ConvTransposeMatchesScatterLoops) {
  // ConvCase.w is (Cin, Cout/groups, *k) here.
  std::vector<std::pair<ConvCase, Idx>> cases = {
      {{{2, 3, 4, 5}, {3, 2, 3, 3}, 1, {1, 1}, {1, 1}, {{0, 0}, {0, 0}}, true}, {0, 0}},
      {{{1, 2, 4, 4}, {2, 3, 3, 3}, 1, {2, 2}, {1, 1}, {{1, 1}, {1, 1}}, false}, {1, 1}},    // stride 2, opad
      {{{1, 4, 3, 5}, {4, 2, 2, 3}, 2, {2, 1}, {1, 2}, {{0, 0}, {1, 1}}, true}, {1, 0}},     // groups 2, dilation
      {{{2, 1, 3, 3}, {1, 1, 3, 2}, 1, {3, 2}, {2, 1}, {{2, 1}, {0, 1}}, false}, {0, 1}},    // per-side padding
      {{{1, 2, 6}, {2, 2, 3}, 1, {2}, {2}, {{3, 3}}, true}, {1}},                            // 1-d, large padding
      {{{1, 2, 2, 3, 2}, {2, 1, 2, 2, 2}, 2, {2, 1, 2}, {1, 1, 1}, {{0, 0}, {1, 1}, {0, 0}}, true}, {0, 0, 1}},
  };
  unsigned seed = 200;
  for (auto& [c, opad] : cases) {
    auto x = random_floats(size_t(numel(c.x)), seed++), w = random_floats(size_t(numel(c.w)), seed++);
    auto b = random_floats(size_t(c.w[1] * c.groups), seed++);
    Idx os;
    Vec want = conv_transpose_ref(c, opad, x, w, b, &os);
    std::optional<Tensor> bias;
    if (c.bias) bias = Tensor(b);
    Tensor r = Tensor(x, c.x).conv_transpose2d(Tensor(w, c.w), bias, c.groups, c.stride, c.dil, padding_arg(c), opad);
    EXPECT_EQ(r.shape(), os) << describe(c);
    expect_close(r.tolist<float>(), want, 1e-4, "transpose " + describe(c));
  }
}

namespace {

struct PoolCase {
  Idx x, k, stride, dil;
  std::vector<std::pair<int64_t, int64_t>> pads;
};

// Window reduce over the last k.size() dims; padded positions are -inf (max) or 0 counted in the mean (avg).
Vec pool_ref(const PoolCase& c, const std::vector<float>& x, bool is_max, Idx* out_shape) {
  size_t D = c.k.size(), lead = c.x.size() - D;
  Idx os(c.x.begin(), c.x.begin() + int64_t(lead));
  for (size_t j = 0; j < D; j++)
    os.push_back((c.x[lead + j] + c.pads[j].first + c.pads[j].second - c.dil[j] * (c.k[j] - 1) - 1) / c.stride[j] + 1);
  *out_shape = os;
  Vec out(size_t(numel(os)));
  for_each(os, [&](const Idx& o) {
    double acc = is_max ? -std::numeric_limits<double>::infinity() : 0;
    for_each(c.k, [&](const Idx& k) {
      Idx xi(o.begin(), o.begin() + int64_t(lead));
      double v = 0;
      bool inside = true;
      for (size_t j = 0; j < D; j++) {
        int64_t p = o[lead + j] * c.stride[j] + k[j] * c.dil[j] - c.pads[j].first;
        inside &= p >= 0 && p < c.x[lead + j];
        xi.push_back(p);
      }
      if (inside) v = x[size_t(flat(xi, c.x))];
      else if (is_max) v = -std::numeric_limits<double>::infinity();
      acc = is_max ? std::max(acc, v) : acc + v;
    });
    out[size_t(flat(o, os))] = is_max ? acc : acc / double(numel(c.k));
  });
  return out;
}

std::vector<int64_t> pool_padding(const PoolCase& c) {
  ConvCase cc{};
  cc.pads = c.pads;
  return padding_arg(cc);
}

}  // namespace

TEST(NNConv, PoolsDefault2x2) {
  Tensor t = Tensor::arange(25).reshape({1, 1, 5, 5});
  EXPECT_EQ(t.max_pool2d().tolist<int>(), (std::vector<int>{6, 8, 16, 18}));
  EXPECT_EQ(t.avg_pool2d().tolist<float>(), (std::vector<float>{3, 5, 13, 15}));
  // tinygrad's docs: avg_pool2d(padding=1) counts the padded zeros.
  Tensor a = t.cast(tg::dtypes::float32).avg_pool2d({2, 2}, {}, {1}, {1});
  EXPECT_EQ(a.shape(), (tg::Shape{1, 1, 3, 3}));
  auto av = a.tolist<float>();
  EXPECT_FLOAT_EQ(av[0], 0.0f);
  EXPECT_FLOAT_EQ(av[4], (6 + 7 + 11 + 12) / 4.0f);
  EXPECT_FLOAT_EQ(av[8], (18 + 19 + 23 + 24) / 4.0f);
  Tensor m = (-t.cast(tg::dtypes::float32)).max_pool2d({2, 2}, {}, {1}, {1});
  EXPECT_EQ(m.tolist<float>()[0], 0.0f);   // -inf padding never wins: the corner's only element is -0
  EXPECT_EQ(m.tolist<float>()[8], -18.0f);
}

TEST(NNConv, PoolsMatchLoops) {
  std::vector<PoolCase> cases = {
      {{2, 3, 6, 7}, {2, 2}, {2, 2}, {1, 1}, {{0, 0}, {0, 0}}},
      {{1, 2, 7, 7}, {3, 3}, {1, 1}, {1, 1}, {{1, 1}, {1, 1}}},      // overlapping windows, padding
      {{1, 1, 8, 9}, {3, 2}, {2, 3}, {2, 1}, {{1, 1}, {0, 0}}},      // dilation, mixed strides
      {{2, 5, 5}, {2, 3}, {1, 2}, {1, 1}, {{0, 1}, {1, 0}}},         // per-side padding, 3-d input
      {{1, 2, 9}, {4}, {3}, {2}, {{2, 2}}},                         // 1-d pooling
      {{1, 1, 4, 5, 6}, {2, 3, 2}, {2, 1, 2}, {1, 1, 2}, {{1, 1}, {0, 0}, {1, 1}}},  // 3-d pooling
  };
  unsigned seed = 300;
  for (const PoolCase& c : cases) {
    auto x = random_floats(size_t(numel(c.x)), seed++);
    for (bool is_max : {true, false}) {
      Idx os;
      Vec want = pool_ref(c, x, is_max, &os);
      Tensor t(x, c.x);
      Tensor r = is_max ? t.max_pool2d(c.k, c.stride, c.dil, pool_padding(c))
                        : t.avg_pool2d(c.k, c.stride, c.dil, pool_padding(c));
      EXPECT_EQ(r.shape(), os);
      expect_close(r.tolist<float>(), want, 1e-5, is_max ? "max_pool" : "avg_pool");
    }
  }
}

TEST(NNConv, LinearMatchesLoops) {
  auto x = random_floats(2 * 3 * 5, 1), w = random_floats(4 * 5, 2), b = random_floats(4, 3);
  Tensor r = Tensor(x, {2, 3, 5}).linear(Tensor(w, {4, 5}), Tensor(b));
  EXPECT_EQ(r.shape(), (tg::Shape{2, 3, 4}));
  Vec want;
  for (int i = 0; i < 6; i++)
    for (int o = 0; o < 4; o++) {
      double acc = b[size_t(o)];
      for (int k = 0; k < 5; k++) acc += double(x[size_t(i * 5 + k)]) * w[size_t(o * 5 + k)];
      want.push_back(acc);
    }
  expect_close(r.tolist<float>(), want, 1e-5, "linear");
  Tensor nb = Tensor(x, {6, 5}).linear(Tensor(w, {4, 5}));
  EXPECT_EQ(nb.shape(), (tg::Shape{6, 4}));
  // a 1-d weight scales elementwise (tinygrad)
  EXPECT_EQ(Tensor(std::vector<float>{1, 2}).linear(Tensor(std::vector<float>{3, 4})).tolist<float>(),
            (std::vector<float>{3, 8}));
}

TEST(NNConv, InterpolateLinearByHand) {
  Tensor t(std::vector<float>{1, 2, 3, 4, 21, 22, 23, 24, 41, 42, 43, 44}, {3, 4});
  // tinygrad's docs example: rows sample 0.25 and 1.75, columns 1/6, 1.5 and 17/6.
  auto v = t.interpolate({2, 3}).tolist<float>();
  Vec want = {6 + 1 / 6.0, 7.5, 9 - 1 / 6.0, 36 + 1 / 6.0, 37.5, 39 - 1 / 6.0};
  expect_close(v, want, 1e-5, "bilinear");
  // align_corners: samples at 0, 1.5 and 3 along the columns; 0 and 2 along the rows.
  auto ac = t.interpolate({2, 3}, "linear", true).tolist<float>();
  expect_close(ac, {1, 2.5, 4, 41, 42.5, 44}, 1e-5, "align_corners");
  // 1-d upsampling of (1, 1, 2): pixel centres at -0.25 (clamped), 0.25, 0.75, 1.25 (clamped)
  Tensor l(std::vector<float>{0, 4}, {1, 1, 2});
  expect_close(l.interpolate({4}).tolist<float>(), {0, 1, 3, 4}, 1e-6, "linear 1-d");
  expect_close(l.interpolate({3}, "linear", true).tolist<float>(), {0, 2, 4}, 1e-6, "linear 1-d corners");
  expect_close(l.interpolate({1}, "linear", true).tolist<float>(), {0}, 1e-6, "one sample");
}

TEST(NNConv, InterpolateNearestByHand) {
  Tensor t = Tensor::arange(6).reshape({1, 2, 3});
  Tensor up = t.interpolate({4, 6}, "nearest");
  EXPECT_EQ(up.dtype(), tg::dtypes::int32);
  EXPECT_EQ(up.tolist<int>(), (std::vector<int>{0, 0, 1, 1, 2, 2, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 3, 3, 4, 4, 5, 5}));
  // downsampling 3 -> 2: scale 1.5, sources floor(0), floor(1.5) = 0, 1
  EXPECT_EQ(t.interpolate({2}, "nearest").tolist<int>(), (std::vector<int>{0, 1, 3, 4}));
  // nearest-exact: floor((o + 0.5) * 1.5) = 0, 2
  EXPECT_EQ(t.interpolate({2}, "nearest-exact").tolist<int>(), (std::vector<int>{0, 2, 3, 5}));
}

TEST(NNConv, InterpolateLinearMatchesLoops) {
  auto x = random_floats(2 * 5 * 4, 9);
  Tensor t(x, {2, 5, 4});
  for (bool corners : {false, true}) {
    auto v = t.interpolate({7, 3}, "linear", corners).tolist<float>();
    auto src = [&](int64_t o, int64_t in, int64_t out) {
      double p = corners ? (out == 1 ? 0 : double(o) * double(in - 1) / double(out - 1))
                         : (double(o) + 0.5) * double(in) / double(out) - 0.5;
      return std::clamp(p, 0.0, double(in - 1));
    };
    Vec want;
    for (int64_t b = 0; b < 2; b++)
      for (int64_t i = 0; i < 7; i++)
        for (int64_t j = 0; j < 3; j++) {
          double y = src(i, 5, 7), z = src(j, 4, 3);
          int64_t y0 = int64_t(y), z0 = int64_t(z), y1 = std::min<int64_t>(y0 + 1, 4), z1 = std::min<int64_t>(z0 + 1, 3);
          auto at = [&](int64_t r, int64_t c) { return double(x[size_t(b * 20 + r * 4 + c)]); };
          double fy = y - double(y0), fz = z - double(z0);
          want.push_back((at(y0, z0) * (1 - fz) + at(y0, z1) * fz) * (1 - fy) + (at(y1, z0) * (1 - fz) + at(y1, z1) * fz) * fy);
        }
    expect_close(v, want, 1e-5, corners ? "corners" : "centres");
  }
}

TEST(NNConv, BadInputThrows) {
  Tensor x = Tensor::ones({1, 4, 5, 5});
  EXPECT_THROW(x.conv2d(Tensor::ones({2, 3, 3, 3})), tg::Error);                      // channels
  EXPECT_THROW(x.conv2d(Tensor::ones({3, 2, 3, 3}), std::nullopt, 2), tg::Error);     // cout % groups
  EXPECT_THROW(x.conv2d(Tensor::ones({2, 4, 3})), tg::Error);                         // rank
  EXPECT_THROW(x.conv2d(Tensor::ones({2, 4, 6, 6})), tg::Error);                      // kernel > input
  EXPECT_THROW(x.conv2d(Tensor::ones({2, 4, 3, 3}), std::nullopt, 1, {1}, {1}, {1, 2, 3}), tg::Error);
  EXPECT_THROW(x.conv2d(Tensor::ones({2, 4, 3, 3}), std::nullopt, 1, {0}), tg::Error);  // stride 0
  EXPECT_THROW(x.conv2d(Tensor::ones({2, 4, 3, 3}), Tensor::ones({3})), tg::Error);     // bias
  EXPECT_THROW(x.conv2d(Tensor::ones({2, 4, 3, 3}), std::nullopt, 0), tg::Error);       // groups 0
  EXPECT_THROW(x.conv_transpose2d(Tensor::ones({3, 2, 3, 3})), tg::Error);
  EXPECT_THROW(x.max_pool2d({6, 6}), tg::Error);
  EXPECT_THROW(Tensor::ones({4}).max_pool2d(), tg::Error);
  EXPECT_THROW(x.avg_pool2d({2, 2}, {}, {1}, {-1}), tg::Error);
  EXPECT_THROW(x.interpolate({2, 2}, "cubic"), tg::Error);
  EXPECT_THROW(x.interpolate({2, 2}, "nearest", true), tg::Error);
  EXPECT_THROW(x.interpolate({1, 2, 2, 2, 2}), tg::Error);
  EXPECT_THROW(Tensor::ones({2, 3}).linear(Tensor::ones({4, 2})), tg::Error);
  try {
    x.conv2d(Tensor::ones({2, 3, 3, 3}));
  } catch (const tg::Error& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("conv2d"), std::string::npos) << m;
    EXPECT_NE(m.find("(1, 4, 5, 5)"), std::string::npos) << m;
    EXPECT_NE(m.find("(2, 3, 3, 3)"), std::string::npos) << m;
  }
}

// ---- gradients ----

TEST(NNConv, GradConv2d) {
  tgtest::expect_grad_close_random(
      [](const std::vector<Tensor>& t) { return t[0].conv2d(t[1], t[2], 1, {2, 1}, {1}, {1}); },
      {{1, 2, 5, 4}, {3, 2, 3, 2}, {3}}, 11);
  tgtest::expect_grad_close_random(
      [](const std::vector<Tensor>& t) { return t[0].conv2d(t[1], std::nullopt, 2, {1}, {2}, {0, 1, 1, 0}); },
      {{2, 4, 5, 5}, {2, 2, 2, 2}}, 12);
}

TEST(NNConv, GradConvTranspose2d) {
  tgtest::expect_grad_close_random(
      [](const std::vector<Tensor>& t) { return t[0].conv_transpose2d(t[1], t[2], 1, {2}, {1}, {1}, {1}); },
      {{1, 2, 3, 3}, {2, 3, 2, 2}, {3}}, 13);
}

TEST(NNConv, GradPools) {
  // random inputs: ties (where max's gradient is ambiguous) have probability zero
  tgtest::expect_grad_close_random([](const std::vector<Tensor>& t) { return t[0].max_pool2d({2, 2}, {1}, {1}, {1}); },
                                   {{1, 2, 4, 4}}, 14);
  tgtest::expect_grad_close_random([](const std::vector<Tensor>& t) { return t[0].max_pool2d({3, 2}, {2, 2}); },
                                   {{2, 1, 5, 6}}, 15);
  tgtest::expect_grad_close_random([](const std::vector<Tensor>& t) { return t[0].avg_pool2d({2, 3}, {1, 2}, {1}, {1}); },
                                   {{1, 2, 4, 5}}, 16);
}

TEST(NNConv, GradLinearAndInterpolate) {
  tgtest::expect_grad_close_random([](const std::vector<Tensor>& t) { return t[0].linear(t[1], t[2]); },
                                   {{3, 4}, {5, 4}, {5}}, 17);
  tgtest::expect_grad_close_random([](const std::vector<Tensor>& t) { return t[0].interpolate({5, 3}); },
                                   {{1, 3, 4}}, 18);
}

// ---- the conv's hand-written gradient (src/tensor/conv_grad.cpp) against loops ----

namespace {

// d(sum(conv(x, w) * dy))/dx and /dw by the loops of conv_ref: each product x[pos] * w[k] sends dy * w to
// dx[pos] and dy * x to dw[k].
void conv_grad_ref(const ConvCase& c, const std::vector<float>& x, const std::vector<float>& w,
                   const std::vector<float>& dy, Vec* dx, Vec* dw) {
  dx->assign(size_t(numel(c.x)), 0);
  dw->assign(size_t(numel(c.w)), 0);
  for_each_product(c, [&](size_t o, size_t xf, size_t wf) {
    (*dx)[xf] += double(dy[o]) * w[wf];
    (*dw)[wf] += double(dy[o]) * x[xf];
  });
}

void expect_conv_grads_match_loops(const std::vector<ConvCase>& cases, unsigned seed, double tol = 1e-3) {
  for (const ConvCase& c : cases) {
    auto x = random_floats(size_t(numel(c.x)), seed++), w = random_floats(size_t(numel(c.w)), seed++);
    Idx os = conv_out_shape(c);
    auto dy = random_floats(size_t(numel(os)), seed++);
    Vec want_dx, want_dw;
    conv_grad_ref(c, x, w, dy, &want_dx, &want_dw);
    Tensor tx(x, c.x), tw(w, c.w);
    tx.requires_grad_(true);
    tw.requires_grad_(true);
    Tensor out = tx.conv2d(tw, std::nullopt, c.groups, c.stride, c.dil, padding_arg(c));
    auto g = (out * Tensor(dy, os)).sum().gradient({tx, tw});
    expect_close(g[0].tolist<float>(), want_dx, tol, "dx " + describe(c));
    expect_close(g[1].tolist<float>(), want_dw, tol, "dw " + describe(c));
  }
}

}  // namespace

TEST(NNConv, GradientsMatchLoops) {
  expect_conv_grads_match_loops(kConvCases, 200);
  std::vector<ConvCase> more = {
      {{2, 3, 11}, {4, 3, 3}, 1, {2}, {1}, {{1, 1}}, false},                                          // 1-D
      {{1, 2, 5, 4, 6}, {3, 2, 2, 3, 2}, 1, {1, 1, 2}, {1, 1, 1}, {{1, 1}, {0, 0}, {1, 1}}, false},  // 3-D
      {{1, 2, 7, 7}, {2, 2, 3, 3}, 1, {2, 2}, {1, 1}, {{0, 0}, {0, 0}}, false},  // the last row is never read
      {{1, 2, 6, 6}, {2, 2, 1, 1}, 1, {1, 1}, {1, 1}, {{3, 3}, {3, 3}}, false},  // pad past the kernel
  };
  expect_conv_grads_match_loops(more, 300);
}

TEST(NNConv, GradientsOfLargeConvsMatchLoops) {
  // The CPU's fast paths: weights packed (32 output channels, past 2^20 products), the input gradient's wide
  // pad copied out, and the weight gradient summed over chunks of the batch (4 images of 32x32x32 floats of
  // output gradient: chunks of 2).
  std::vector<ConvCase> cases = {
      {{4, 2, 36, 36}, {32, 2, 5, 5}, 1, {1, 1}, {1, 1}, {{0, 0}, {0, 0}}, false},
      {{4, 16, 12, 12}, {32, 16, 3, 3}, 1, {1, 1}, {1, 1}, {{1, 1}, {1, 1}}, false},
  };
  expect_conv_grads_match_loops(cases, 400, 5e-3);
}

TEST(NNConv, GradientReachesANodeInsideTheConv) {
  // The conv's own graph pads x; the same pad built by hand is the same node, and a gradient asked for it
  // must come through the conv's windows (the hand-written gradient skips those nodes, so it steps aside).
  ConvCase c{{1, 2, 4, 4}, {3, 2, 3, 3}, 1, {1, 1}, {1, 1}, {{1, 1}, {1, 1}}, false};
  auto x = random_floats(size_t(numel(c.x)), 500), w = random_floats(size_t(numel(c.w)), 501);
  Tensor tx(x, c.x), tw(w, c.w);
  Tensor padded = tx.pad({{0, 0}, {0, 0}, {1, 1}, {1, 1}});
  Tensor out = tx.conv2d(tw, std::nullopt, 1, {1}, {1}, {1});
  auto g = out.sum().gradient({padded});
  // d(sum)/d(padded[b, ci, i, j]) = sum over outputs whose window covers (i, j) of w[co, ci, i - oy, j - ox]
  Vec want(2 * 6 * 6, 0);
  for (int64_t ci = 0; ci < 2; ci++)
    for (int64_t i = 0; i < 6; i++)
      for (int64_t j = 0; j < 6; j++)
        for (int64_t oy = 0; oy < 4; oy++)
          for (int64_t ox = 0; ox < 4; ox++)
            if (i - oy >= 0 && i - oy < 3 && j - ox >= 0 && j - ox < 3)
              for (int64_t co = 0; co < 3; co++)
                want[size_t((ci * 6 + i) * 6 + j)] += w[size_t(((co * 2 + ci) * 3 + (i - oy)) * 3 + (j - ox))];
  expect_close(g[0].tolist<float>(), want, 1e-4, "gradient at the padded input");
}

TEST(NNConv, GradientAfterTheForwardWasRead) {
  // Reading the output realizes x's copy; a tensor made from the gradient entry's input node then reads the
  // realized buffer, and the gradient must still reach x (it was dropped: helper_test_op's order).
  auto x = random_floats(2 * 3 * 9 * 9, 510), w = random_floats(4 * 3 * 3 * 3, 511);
  auto grads = [&](bool read_first) {
    Tensor tx(x, {2, 3, 9, 9}), tw(w, {4, 3, 3, 3});
    tx.requires_grad_(), tw.requires_grad_();
    Tensor out = tx.conv2d(tw);
    if (read_first) (void)out.tolist<float>();
    (out + 1.0f).square().mean().backward();
    EXPECT_TRUE(tx.has_grad() && tw.has_grad());
    return std::make_pair(tx.grad().tolist<float>(), tw.grad().tolist<float>());
  };
  auto [dx0, dw0] = grads(false);
  auto [dx1, dw1] = grads(true);
  EXPECT_EQ(dx0, dx1);
  EXPECT_EQ(dw0, dw1);
}
