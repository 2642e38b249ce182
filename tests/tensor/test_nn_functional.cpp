// layernorm / batchnorm / scaled_dot_product_attention / losses against values computed by hand (in double,
// here), einsum against explicit loops; bad input; gradients.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "../common/gradcheck.h"
#include "tg/tg.h"

using tg::Tensor;

namespace {

using Vec = std::vector<double>;

std::vector<float> random_floats(size_t n, unsigned seed, float lo = -1, float hi = 1) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = d(gen);
  return v;
}

void expect_close(const std::vector<float>& got, const Vec& want, double tol, const std::string& what = "") {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); i++) EXPECT_NEAR(got[i], want[i], tol) << what << " at " << i;
}

// log_softmax of one row, in double.
Vec log_softmax_row(const Vec& z) {
  double m = *std::max_element(z.begin(), z.end()), s = 0;
  for (double v : z) s += std::exp(v - m);
  Vec out;
  for (double v : z) out.push_back(v - m - std::log(s));
  return out;
}

}  // namespace

TEST(NNFunctional, LayernormByHand) {
  Tensor x(std::vector<float>{1, 2, 3, 4, 2, 4, 6, 8}, {2, 4});
  // row 0: mean 2.5, variance 1.25; row 1: mean 5, variance 5
  Vec want;
  for (double v : {1, 2, 3, 4}) want.push_back((v - 2.5) / std::sqrt(1.25 + 1e-5));
  for (double v : {2, 4, 6, 8}) want.push_back((v - 5) / std::sqrt(5 + 1e-5));
  expect_close(x.layernorm().tolist<float>(), want, 1e-5, "axis -1");
  // axis 0: each column (a, 2a) has mean 1.5a and variance 0.25a^2
  Vec col;
  for (int r = 0; r < 2; r++)
    for (double a : {1, 2, 3, 4}) col.push_back((r ? 0.5 * a : -0.5 * a) / std::sqrt(0.25 * a * a + 1e-3));
  expect_close(x.layernorm(0, 1e-3).tolist<float>(), col, 1e-5, "axis 0");
  EXPECT_THROW(x.layernorm(2), tg::Error);
}

TEST(NNFunctional, BatchnormMatchesLoops) {
  auto x = random_floats(2 * 3 * 2, 1);
  std::vector<float> mean = {0.1f, -0.2f, 0.3f}, invstd = {2, 0.5f, 1.5f}, w = {1, 2, -1}, b = {0, 1, -2};
  Tensor t(x, {2, 3, 2});
  Tensor r = t.batchnorm(Tensor(w), Tensor(b), Tensor(mean), Tensor(invstd));
  Tensor plain = t.batchnorm(std::nullopt, std::nullopt, Tensor(mean), Tensor(invstd));
  Vec want, want_plain;
  for (size_t i = 0; i < x.size(); i++) {
    size_t c = (i / 2) % 3;
    double n = (double(x[i]) - mean[c]) * invstd[c];
    want.push_back(n * w[c] + b[c]);
    want_plain.push_back(n);
  }
  expect_close(r.tolist<float>(), want, 1e-5, "affine");
  expect_close(plain.tolist<float>(), want_plain, 1e-5, "plain");
  // normalizing over the last axis, and a scalar invstd broadcast as it is
  Tensor last = t.batchnorm(std::nullopt, std::nullopt, Tensor(std::vector<float>{1, 2}), Tensor(2.0f), -1);
  Vec want_last;
  for (size_t i = 0; i < x.size(); i++) want_last.push_back((double(x[i]) - double(1 + i % 2)) * 2);
  expect_close(last.tolist<float>(), want_last, 1e-5, "axis -1");
  EXPECT_THROW(t.batchnorm(std::nullopt, std::nullopt, Tensor(std::vector<float>{1, 2}), Tensor(invstd)), tg::Error);
}

namespace {

// softmax(q k^T / sqrt(E) + mask) v for (B, L, E), (B, S, E), (B, S, Ev) and an additive (L, S) mask.
Vec naive_attention(const std::vector<float>& q, const std::vector<float>& k, const std::vector<float>& v, int B,
                    int L, int S, int E, int Ev, const Vec& mask) {
  Vec out;
  for (int b = 0; b < B; b++)
    for (int i = 0; i < L; i++) {
      Vec s(static_cast<size_t>(S));
      for (int j = 0; j < S; j++) {
        double d = 0;
        for (int e = 0; e < E; e++) d += double(q[size_t((b * L + i) * E + e)]) * k[size_t((b * S + j) * E + e)];
        s[size_t(j)] = d / std::sqrt(double(E)) + (mask.empty() ? 0 : mask[size_t(i * S + j)]);
      }
      Vec p = log_softmax_row(s);
      for (int c = 0; c < Ev; c++) {
        double acc = 0;
        for (int j = 0; j < S; j++) acc += std::exp(p[size_t(j)]) * v[size_t((b * S + j) * Ev + c)];
        out.push_back(acc);
      }
    }
  return out;
}

}  // namespace

TEST(NNFunctional, AttentionMatchesNaive) {
  const int B = 2, L = 3, S = 5, E = 4, Ev = 6;
  auto q = random_floats(B * L * E, 1), k = random_floats(B * S * E, 2), v = random_floats(B * S * Ev, 3);
  Tensor tq(q, {B, L, E}), tk(k, {B, S, E}), tv(v, {B, S, Ev});
  Tensor r = tq.scaled_dot_product_attention(tk, tv);
  EXPECT_EQ(r.shape(), (tg::Shape{B, L, Ev}));
  expect_close(r.tolist<float>(), naive_attention(q, k, v, B, L, S, E, Ev, {}), 1e-5, "plain");

  // additive mask, and the same mask given as bool (false = -inf)
  Vec add(L * S);
  std::vector<uint8_t> keep(L * S);
  for (int i = 0; i < L * S; i++) {
    keep[size_t(i)] = (i * 7) % 3 != 0 || i % S == 0;  // every row keeps column 0
    add[size_t(i)] = keep[size_t(i)] ? 0.25 * (i % 4) : -INFINITY;
  }
  std::vector<float> addf(add.begin(), add.end());
  Tensor ra = tq.scaled_dot_product_attention(tk, tv, Tensor(addf, {L, S}));
  expect_close(ra.tolist<float>(), naive_attention(q, k, v, B, L, S, E, Ev, add), 1e-5, "additive");
  Vec boolmask(L * S);
  for (int i = 0; i < L * S; i++) boolmask[size_t(i)] = keep[size_t(i)] ? 0 : -INFINITY;
  Tensor rb = tq.scaled_dot_product_attention(tk, tv, Tensor(keep, {L, S}).cast(tg::dtypes::bool_));
  expect_close(rb.tolist<float>(), naive_attention(q, k, v, B, L, S, E, Ev, boolmask), 1e-5, "bool");

  // causal: query i sees keys j <= i
  Vec causal(L * S);
  for (int i = 0; i < L; i++)
    for (int j = 0; j < S; j++) causal[size_t(i * S + j)] = j <= i ? 0 : -INFINITY;
  Tensor rc = tq.scaled_dot_product_attention(tk, tv, std::nullopt, true);
  expect_close(rc.tolist<float>(), naive_attention(q, k, v, B, L, S, E, Ev, causal), 1e-5, "causal");
  EXPECT_THROW(tq.scaled_dot_product_attention(tk, tv, Tensor(addf, {L, S}), true), tg::Error);
  EXPECT_THROW(tq.scaled_dot_product_attention(tv, tv), tg::Error);  // E mismatch
}

TEST(NNFunctional, SparseCrossEntropyByHand) {
  Tensor logits(std::vector<float>{-1, 2, -3, 1, -2, 3}, {2, 3});
  Vec r0 = log_softmax_row({-1, 2, -3}), r1 = log_softmax_row({1, -2, 3});
  Tensor Y(std::vector<int>{1, 2});
  EXPECT_NEAR(logits.sparse_categorical_crossentropy(Y).item<float>(), -(r0[1] + r1[2]) / 2, 1e-6);
  EXPECT_NEAR(logits.cross_entropy(Y).item<float>(), -(r0[1] + r1[2]) / 2, 1e-6);
  // ignore_index: the ignored row neither adds loss nor counts in the mean
  Tensor Yi(std::vector<int>{1, -100});
  EXPECT_NEAR(logits.sparse_categorical_crossentropy(Yi, -100).item<float>(), -r0[1], 1e-6);
  // label smoothing mixes in the mean log-probability of each row
  double ls = 0.2;
  auto mean = [](const Vec& v) { return (v[0] + v[1] + v[2]) / 3; };
  double want = -((1 - ls) * (r0[1] + r1[2]) + ls * (mean(r0) + mean(r1))) / 2;
  EXPECT_NEAR(logits.sparse_categorical_crossentropy(Y, -1, ls).item<float>(), want, 1e-6);
  EXPECT_NEAR(logits.cross_entropy(Y, ls).item<float>(), want, 1e-6);
  double want_i = -((1 - ls) * r0[1] + ls * mean(r0));
  EXPECT_NEAR(logits.sparse_categorical_crossentropy(Yi, -100, ls).item<float>(), want_i, 1e-6);
  // huge logits stay finite (the max is subtracted before exp)
  Tensor big(std::vector<float>{1000, 0, -1000}, {1, 3});
  EXPECT_NEAR(big.sparse_categorical_crossentropy(Tensor(std::vector<int>{0}, {1})).item<float>(), 0, 1e-6);
  EXPECT_NEAR(big.sparse_categorical_crossentropy(Tensor(std::vector<int>{1}, {1})).item<float>(), 1000, 1e-3);
  EXPECT_THROW(logits.sparse_categorical_crossentropy(Tensor(std::vector<int>{1, 2, 0})), tg::Error);
  EXPECT_THROW(logits.sparse_categorical_crossentropy(Tensor(std::vector<float>{1, 2})), tg::Error);
  EXPECT_THROW(logits.sparse_categorical_crossentropy(Y, -1, 1.5), tg::Error);
}

TEST(NNFunctional, CrossEntropyProbabilitiesAndDims) {
  Tensor logits(std::vector<float>{-1, 2, -3, 1, -2, 3}, {2, 3});
  Vec r0 = log_softmax_row({-1, 2, -3}), r1 = log_softmax_row({1, -2, 3});
  Tensor P(std::vector<float>{0.2f, 0.5f, 0.3f, 1, 0, 0}, {2, 3});
  double want = -((0.2 * r0[0] + 0.5 * r0[1] + 0.3 * r0[2]) + r1[0]) / 2;
  EXPECT_NEAR(logits.cross_entropy(P).item<float>(), want, 1e-6);
  // 1-d input: one sample, classes on dim 0, a 0-d class id
  EXPECT_NEAR(Tensor(std::vector<float>{-1, 2, -3}).cross_entropy(Tensor(1)).item<float>(), -r0[1], 1e-6);
  // (N, C, d): classes on dim 1
  Tensor x3(std::vector<float>{-1, 1, 2, -2, -3, 3}, {1, 3, 2});  // columns: (-1, 2, -3) and (1, -2, 3)
  EXPECT_NEAR(x3.cross_entropy(Tensor(std::vector<int>{1, 2}, {1, 2})).item<float>(), -(r0[1] + r1[2]) / 2, 1e-6);
  EXPECT_THROW(logits.cross_entropy(Tensor(std::vector<int>{1, 2, 0})), tg::Error);
}

TEST(NNFunctional, BinaryCrossEntropyByHand) {
  Tensor p(std::vector<float>{0.1f, 0.9f, 0.2f}), y(std::vector<float>{0, 1, 0});
  double want = -(std::log(0.9) + std::log(0.9) + std::log(0.8)) / 3;
  EXPECT_NEAR(p.binary_crossentropy(y).item<float>(), want, 1e-6);
  Tensor z(std::vector<float>{-1, 2, -3});
  double wl = (std::log1p(std::exp(-1.0)) + std::log1p(std::exp(2.0)) - 2 + std::log1p(std::exp(-3.0))) / 3;
  EXPECT_NEAR(z.binary_crossentropy_logits(y).item<float>(), wl, 1e-6);
  // stable for large logits: log(1 + e^100) would overflow float if computed directly
  Tensor big(std::vector<float>{100, -100}), yb(std::vector<float>{0, 1});
  EXPECT_NEAR(big.binary_crossentropy_logits(yb).item<float>(), 100, 1e-3);
  EXPECT_NEAR(big.binary_crossentropy_logits(Tensor(std::vector<float>{1, 0})).item<float>(), 0, 1e-6);
  EXPECT_THROW(p.binary_crossentropy(Tensor(std::vector<float>{0, 1})), tg::Error);
}

// ---- einsum ----

TEST(Einsum, MatmulAndBatched) {
  auto a = random_floats(3 * 4, 1), b = random_floats(4 * 5, 2);
  Tensor r = Tensor::einsum("ij,jk->ik", {Tensor(a, {3, 4}), Tensor(b, {4, 5})});
  Vec want;
  for (int i = 0; i < 3; i++)
    for (int k = 0; k < 5; k++) {
      double s = 0;
      for (int j = 0; j < 4; j++) s += double(a[size_t(i * 4 + j)]) * b[size_t(j * 5 + k)];
      want.push_back(s);
    }
  EXPECT_EQ(r.shape(), (tg::Shape{3, 5}));
  expect_close(r.tolist<float>(), want, 1e-5, "ij,jk->ik");
  expect_close(Tensor::einsum("ij, jk", {Tensor(a, {3, 4}), Tensor(b, {4, 5})}).tolist<float>(), want, 1e-5,
               "implicit");
  // transposed output
  Tensor rt = Tensor::einsum("ij,jk->ki", {Tensor(a, {3, 4}), Tensor(b, {4, 5})});
  EXPECT_EQ(rt.shape(), (tg::Shape{5, 3}));
  auto tv = rt.tolist<float>();
  for (int i = 0; i < 3; i++)
    for (int k = 0; k < 5; k++) EXPECT_NEAR(tv[size_t(k * 3 + i)], want[size_t(i * 5 + k)], 1e-5);

  auto x = random_floats(2 * 3 * 4, 3), y = random_floats(2 * 4 * 2, 4);
  Tensor bb = Tensor::einsum("bij,bjk->bik", {Tensor(x, {2, 3, 4}), Tensor(y, {2, 4, 2})});
  Vec wb;
  for (int n = 0; n < 2; n++)
    for (int i = 0; i < 3; i++)
      for (int k = 0; k < 2; k++) {
        double s = 0;
        for (int j = 0; j < 4; j++) s += double(x[size_t(n * 12 + i * 4 + j)]) * y[size_t(n * 8 + j * 2 + k)];
        wb.push_back(s);
      }
  expect_close(bb.tolist<float>(), wb, 1e-5, "bij,bjk->bik");
  expect_close(Tensor::einsum("...ij,...jk->...ik", {Tensor(x, {2, 3, 4}), Tensor(y, {2, 4, 2})}).tolist<float>(), wb,
               1e-5, "ellipsis");
}

TEST(Einsum, TraceOuterAndReductions) {
  Tensor m = Tensor::arange(9).reshape({3, 3});
  EXPECT_EQ(Tensor::einsum("ii->i", {m}).tolist<int>(), (std::vector<int>{0, 4, 8}));
  EXPECT_EQ(Tensor::einsum("ii", {m}).item<int>(), 12);
  EXPECT_EQ(Tensor::einsum("ij->ji", {m}).tolist<int>(), (std::vector<int>{0, 3, 6, 1, 4, 7, 2, 5, 8}));
  EXPECT_EQ(Tensor::einsum("ij->", {m}).item<int>(), 36);
  EXPECT_EQ(Tensor::einsum("ij->j", {m}).tolist<int>(), (std::vector<int>{9, 12, 15}));
  Tensor u(std::vector<int>{1, 2, 3}), v(std::vector<int>{4, 5});
  EXPECT_EQ(Tensor::einsum("i,j->ij", {u, v}).tolist<int>(), (std::vector<int>{4, 5, 8, 10, 12, 15}));
  EXPECT_EQ(Tensor::einsum("i,i->", {u, u}).item<int>(), 14);
  EXPECT_EQ(Tensor::einsum("i,i", {u, u}).item<int>(), 14);
  // a diagonal inside a bigger operand: "bii->bi"
  Tensor t = Tensor::arange(18).reshape({2, 3, 3});
  EXPECT_EQ(Tensor::einsum("bii->bi", {t}).tolist<int>(), (std::vector<int>{0, 4, 8, 9, 13, 17}));
  // iij: the repeated label is not adjacent to the end
  EXPECT_EQ(Tensor::einsum("iij->ij", {t.reshape({3, 3, 2})}).tolist<int>(), (std::vector<int>{0, 1, 8, 9, 16, 17}));
  // three operands: a chain of matmuls
  auto a = random_floats(6, 5), b = random_floats(6, 6), c = random_floats(4, 7);
  Tensor r = Tensor::einsum("ij,jk,kl->il", {Tensor(a, {2, 3}), Tensor(b, {3, 2}), Tensor(c, {2, 2})});
  Tensor ref = Tensor(a, {2, 3}).matmul(Tensor(b, {3, 2})).matmul(Tensor(c, {2, 2}));
  auto rv = r.tolist<float>(), fv = ref.tolist<float>();
  for (size_t i = 0; i < rv.size(); i++) EXPECT_NEAR(rv[i], fv[i], 1e-5);
  // size-1 dims broadcast
  EXPECT_EQ(Tensor::einsum("ij,ij->ij", {Tensor(std::vector<int>{1, 2}, {1, 2}), m.shrink({{0, 3}, {0, 2}})})
                .tolist<int>(),
            (std::vector<int>{0, 2, 3, 8, 6, 14}));
}

TEST(Einsum, BadInput) {
  Tensor a = Tensor::ones({2, 3}), b = Tensor::ones({4, 5});
  EXPECT_THROW(Tensor::einsum("ij,jk->ik", {a, b}), tg::Error);      // j is 3 and 4
  EXPECT_THROW(Tensor::einsum("ij,jk->ik", {a}), tg::Error);         // operand count
  EXPECT_THROW(Tensor::einsum("ijk->i", {a}), tg::Error);            // rank
  EXPECT_THROW(Tensor::einsum("ij->iz", {a}), tg::Error);            // unknown output label
  EXPECT_THROW(Tensor::einsum("ij->ii", {a}), tg::Error);            // repeated output label
  EXPECT_THROW(Tensor::einsum("i1->i", {a}), tg::Error);             // not a letter
  EXPECT_THROW(Tensor::einsum("ii->i", {a}), tg::Error);             // diagonal of a non-square
  EXPECT_THROW(Tensor::einsum("ij", {}), tg::Error);
}

// ---- gradients ----

TEST(NNFunctional, GradNorms) {
  tgtest::expect_grad_close_random([](const std::vector<Tensor>& t) { return t[0].layernorm(); }, {{3, 5}}, 1);
  tgtest::expect_grad_close_random([](const std::vector<Tensor>& t) { return t[0].layernorm(0); }, {{4, 2}}, 2);
  tgtest::expect_grad_close_random(
      [](const std::vector<Tensor>& t) { return t[0].batchnorm(t[1], t[2], t[3], t[4]); },
      {{2, 3, 2}, {3}, {3}, {3}, {3}}, 3);
}

TEST(NNFunctional, GradAttention) {
  tgtest::expect_grad_close_random(
      [](const std::vector<Tensor>& t) { return t[0].scaled_dot_product_attention(t[1], t[2], std::nullopt, true); },
      {{1, 3, 4}, {1, 3, 4}, {1, 3, 2}}, 4);
}

TEST(NNFunctional, GradLosses) {
  Tensor Y(std::vector<int>{2, 0, -100, 1});
  tgtest::expect_grad_close_random(
      [Y](const std::vector<Tensor>& t) { return t[0].sparse_categorical_crossentropy(Y, -100, 0.1); }, {{4, 3}}, 5);
  tgtest::expect_grad_close_random([](const std::vector<Tensor>& t) { return t[0].cross_entropy(t[1], 0.1); },
                                   {{2, 4}, {2, 4}}, 6, 0.f, 1.f);
  tgtest::expect_grad_close_random([](const std::vector<Tensor>& t) { return t[0].binary_crossentropy(t[1]); },
                                   {{2, 3}, {2, 3}}, 7, 0.1f, 0.9f);
  tgtest::expect_grad_close_random([](const std::vector<Tensor>& t) { return t[0].binary_crossentropy_logits(t[1]); },
                                   {{2, 3}, {2, 3}}, 8, -3.f, 3.f);
}

TEST(Einsum, Grad) {
  tgtest::expect_grad_close_random(
      [](const std::vector<Tensor>& t) { return Tensor::einsum("bij,bjk->bki", {t[0], t[1]}); }, {{2, 2, 3}, {2, 3, 2}},
      9);
  tgtest::expect_grad_close_random([](const std::vector<Tensor>& t) { return Tensor::einsum("ii->i", {t[0]}); },
                                   {{3, 3}}, 10);
}
