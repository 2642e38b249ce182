// Random numbers: threefry determinism, tinygrad's exact values, statistics of each distribution, the
// same numbers on every device, and bad input.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>
#include <set>

#include "../common/gradcheck.h"
#include "tg/tg.h"
#include "uop/exec_alu.h"

using tg::Tensor;
namespace dtypes = tg::dtypes;

namespace {

double mean_of(const std::vector<float>& v) { return std::accumulate(v.begin(), v.end(), 0.0) / double(v.size()); }
double var_of(const std::vector<float>& v) {
  double m = mean_of(v), s = 0;
  for (float x : v) s += (double(x) - m) * (double(x) - m);
  return s / double(v.size());
}
uint32_t bits_of(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

// Restores Tensor::training when a test that sets it ends.
struct TrainingScope {
  bool saved = Tensor::training;
  explicit TrainingScope(bool on) { Tensor::training = on; }
  ~TrainingScope() { Tensor::training = saved; }
};

}  // namespace

// A brute-force reference of rand's float32 values from the scalar THREEFRY op (which has Random123's
// known-answer test): the call's key is threefry(counter, (0x14b81119, seed)); value i of n comes from
// threefry((i, i + ceil(n/2)) or its high word, the top 23 bits as the mantissa of a float in [1, 2).
namespace {
std::vector<float> reference_rand(uint32_t seed, uint64_t counter, int64_t n) {
  auto threefry = [](uint64_t x, uint64_t key) {
    return uint64_t(tg::exec_alu(tg::Ops::THREEFRY, dtypes::uint64, dtypes::uint64,
                                 {tg::Num{int64_t(x), 0}, tg::Num{int64_t(key), 0}})
                        .i);
  };
  uint64_t key = threefry(counter, (uint64_t(seed) << 32) | 0x14b81119u);
  int64_t half = (n + 1) / 2;
  std::vector<uint32_t> words(size_t(2 * half));
  for (int64_t i = 0; i < half; i++) {
    uint64_t r = threefry((uint64_t(i + half) << 32) | uint64_t(i), key);
    words[size_t(i)] = uint32_t(r);
    words[size_t(i + half)] = uint32_t(r >> 32);
  }
  std::vector<float> out(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; i++) {
    uint32_t b = (words[size_t(i)] >> 9) | 0x3f800000u;
    float f;
    std::memcpy(&f, &b, 4);
    out[size_t(i)] = f - 1.0f;
  }
  return out;
}
}  // namespace

TEST(Random, LazyThreefryMatchesScalarReference) {
  std::mt19937 gen(1234);
  for (int trial = 0; trial < 4; trial++) {
    uint32_t seed = uint32_t(gen());
    int64_t n1 = 1 + int64_t(gen() % 300), n2 = 1 + int64_t(gen() % 300);
    Tensor::manual_seed(seed);
    auto a = Tensor::rand({n1}).tolist<float>();
    auto b = Tensor::rand({n2}).tolist<float>();  // the counter moved on by n1 words
    EXPECT_EQ(a, reference_rand(seed, 0, n1)) << "seed " << seed << " n " << n1;
    EXPECT_EQ(b, reference_rand(seed, uint64_t(n1), n2)) << "seed " << seed << " n " << n2;
  }
}

// Values printed by tinygrad 0.14 for Tensor.manual_seed(42); Tensor.rand(5); Tensor.rand(3) (float32 bits).
TEST(Random, MatchesTinygradBitExactly) {
  Tensor::manual_seed(42);
  std::vector<uint32_t> want1{1052973056u, 1008740608u, 1038550032u, 1039207536u, 1057054564u};
  std::vector<uint32_t> want2{1063186922u, 1058603830u, 1059221020u};
  auto a = Tensor::rand({5}).tolist<float>();
  auto b = Tensor::rand({3}).tolist<float>();
  ASSERT_EQ(a.size(), 5u);
  ASSERT_EQ(b.size(), 3u);
  for (size_t i = 0; i < 5; i++) EXPECT_EQ(bits_of(a[i]), want1[i]) << i;
  for (size_t i = 0; i < 3; i++) EXPECT_EQ(bits_of(b[i]), want2[i]) << i;
}

TEST(Random, MatchesTinygradHalfAndDouble) {
  Tensor::manual_seed(42);
  Tensor h = Tensor::rand({5}, {.dtype = dtypes::float16});
  EXPECT_EQ(h.dtype(), dtypes::float16);
  EXPECT_EQ(h.bitcast(dtypes::uint16).tolist<uint16_t>(), (std::vector<uint16_t>{13364, 14404, 13500, 14684, 12424}));
  Tensor::manual_seed(42);
  Tensor d = Tensor::rand({3}, {.dtype = dtypes::float64});
  EXPECT_EQ(d.dtype(), dtypes::float64);
  EXPECT_EQ(d.bitcast(dtypes::uint64).tolist<uint64_t>(),
            (std::vector<uint64_t>{4576788810050592768ull, 4593145566268809344ull, 4600374963950606296ull}));
}

TEST(Random, MatchesTinygradDistributions) {
  Tensor::manual_seed(42);
  auto n = Tensor::randn({5}).tolist<float>();
  std::vector<float> want{-1.3770372f, 1.2481382f, 0.31436655f, 2.2496521f, -0.5122631f};
  for (size_t i = 0; i < 5; i++) EXPECT_NEAR(n[i], want[i], 1e-5) << i;
  Tensor::manual_seed(42);
  EXPECT_EQ(Tensor::randint({6}, 5, 10).tolist<int>(), (std::vector<int>{6, 5, 5, 5, 7, 6}));
  Tensor::manual_seed(42);
  EXPECT_EQ(Tensor::randperm(6).tolist<int>(), (std::vector<int>{1, 2, 3, 5, 0, 4}));
}

TEST(Random, SameSeedSameNumbersAndCallsDiffer) {
  Tensor::manual_seed(7);
  auto a = Tensor::rand({64}).tolist<float>();
  auto b = Tensor::rand({64}).tolist<float>();
  Tensor::manual_seed(7);
  auto a2 = Tensor::rand({64}).tolist<float>();
  auto b2 = Tensor::rand({64}).tolist<float>();
  EXPECT_EQ(a, a2);
  EXPECT_EQ(b, b2);
  EXPECT_NE(a, b);
  Tensor::manual_seed(8);
  EXPECT_NE(Tensor::rand({64}).tolist<float>(), a);
  // Only the low 32 bits of the seed count, as in tinygrad.
  Tensor::manual_seed(7 + (uint64_t(1) << 32));
  EXPECT_EQ(Tensor::rand({64}).tolist<float>(), a);
}

TEST(Random, LazyUntilRealizedButDrawnInCallOrder) {
  // The counter is consumed when rand is called, not when it runs.
  Tensor::manual_seed(3);
  Tensor x = Tensor::rand({8}), y = Tensor::rand({8});
  auto yv = y.tolist<float>(), xv = x.tolist<float>();
  Tensor::manual_seed(3);
  EXPECT_EQ(Tensor::rand({8}).tolist<float>(), xv);
  EXPECT_EQ(Tensor::rand({8}).tolist<float>(), yv);
}

TEST(Random, SameNumbersOnCpuAndInterp) {
  Tensor::manual_seed(11);
  auto cpu = Tensor::rand({3, 7}, {.device = "CPU"}).tolist<float>();
  auto cpu_n = Tensor::randn({9}, {.device = "CPU"}).tolist<float>();
  auto cpu_h = Tensor::rand({5}, {.dtype = dtypes::float16, .device = "CPU"}).tolist<float>();
  Tensor::manual_seed(11);
  Tensor r = Tensor::rand({3, 7}, {.device = "INTERP"});
  EXPECT_EQ(r.device(), "INTERP");
  EXPECT_EQ(r.tolist<float>(), cpu);
  auto interp_n = Tensor::randn({9}, {.device = "INTERP"}).tolist<float>();
  for (size_t i = 0; i < cpu_n.size(); i++) EXPECT_NEAR(interp_n[i], cpu_n[i], 1e-5) << i;
  EXPECT_EQ(Tensor::rand({5}, {.dtype = dtypes::float16, .device = "INTERP"}).tolist<float>(), cpu_h);
}

TEST(Random, RandRangeMeanVariance) {
  Tensor::manual_seed(1);
  Tensor t = Tensor::rand({100, 100});
  EXPECT_EQ(t.shape(), (tg::Shape{100, 100}));
  EXPECT_EQ(t.dtype(), dtypes::float32);
  auto v = t.tolist<float>();
  for (float x : v) ASSERT_TRUE(x >= 0.0f && x < 1.0f) << x;
  EXPECT_NEAR(mean_of(v), 0.5, 0.01);
  EXPECT_NEAR(var_of(v), 1.0 / 12, 0.005);
  EXPECT_EQ(std::set<float>(v.begin(), v.end()).size() > 9900, true);  // 2^23 values: few repeats
}

TEST(Random, RandDtypes) {
  Tensor::manual_seed(2);
  for (tg::DType dt : {dtypes::float16, dtypes::bfloat16, dtypes::float32, dtypes::float64}) {
    Tensor t = Tensor::rand({2001}, {.dtype = dt});  // odd count: half of the last word is unused
    EXPECT_EQ(t.dtype(), dt);
    auto v = t.tolist<float>();
    ASSERT_EQ(v.size(), 2001u);
    for (float x : v) ASSERT_TRUE(x >= 0.0f && x < 1.0f) << dt.repr() << " " << x;
    EXPECT_NEAR(mean_of(v), 0.5, 0.03) << dt.repr();
  }
}

TEST(Random, EdgeShapes) {
  Tensor::manual_seed(5);
  EXPECT_EQ(Tensor::rand({}).shape(), tg::Shape{});
  float s = Tensor::rand({}).item<float>();
  EXPECT_TRUE(s >= 0 && s < 1);
  Tensor e = Tensor::rand({3, 0, 2});
  EXPECT_EQ(e.shape(), (tg::Shape{3, 0, 2}));
  EXPECT_TRUE(e.tolist<float>().empty());
  EXPECT_TRUE(Tensor::randn({0}).tolist<float>().empty());
  EXPECT_TRUE(Tensor::randint({0, 4}, 0, 3).tolist<int>().empty());
  EXPECT_EQ(Tensor::rand({1, 1, 1}).numel(), 1);
  EXPECT_EQ(Tensor::randperm(0).numel(), 0);
  EXPECT_EQ(Tensor::randperm(1).tolist<int>(), std::vector<int>{0});
}

TEST(Random, RandnMomentsAndDtype) {
  Tensor::manual_seed(3);
  auto v = Tensor::randn({10000}).tolist<float>();
  EXPECT_NEAR(mean_of(v), 0.0, 0.04);
  EXPECT_NEAR(var_of(v), 1.0, 0.05);
  // About 68% of a standard normal lies within one standard deviation.
  double within = double(std::count_if(v.begin(), v.end(), [](float x) { return std::abs(x) < 1; })) / 10000;
  EXPECT_NEAR(within, 0.6827, 0.02);
  for (float x : v) ASSERT_TRUE(std::isfinite(x));
  Tensor h = Tensor::randn({4, 4}, {.dtype = dtypes::float16});
  EXPECT_EQ(h.dtype(), dtypes::float16);
}

TEST(Random, NormalAndUniform) {
  Tensor::manual_seed(4);
  auto n = Tensor::normal({10000}, 3.0, 0.5).tolist<float>();
  EXPECT_NEAR(mean_of(n), 3.0, 0.02);
  EXPECT_NEAR(std::sqrt(var_of(n)), 0.5, 0.02);
  auto u = Tensor::uniform({10000}, -2.0, 6.0).tolist<float>();
  for (float x : u) ASSERT_TRUE(x >= -2.0f && x < 6.0f) << x;
  EXPECT_NEAR(mean_of(u), 2.0, 0.1);
  EXPECT_NEAR(var_of(u), 64.0 / 12, 0.2);
  Tensor ud = Tensor::uniform({8}, 0, 1, {.dtype = dtypes::float64});
  EXPECT_EQ(ud.dtype(), dtypes::float64);
  EXPECT_EQ(Tensor::normal({2, 2}, 0, 0).tolist<float>(), (std::vector<float>{0, 0, 0, 0}));
}

TEST(Random, RandintBoundsAndDtype) {
  Tensor::manual_seed(6);
  Tensor t = Tensor::randint({5000}, -3, 4);
  EXPECT_EQ(t.dtype(), dtypes::int32);
  auto v = t.tolist<int>();
  std::vector<int> counts(7, 0);
  for (int x : v) {
    ASSERT_TRUE(x >= -3 && x < 4) << x;
    counts[size_t(x + 3)]++;
  }
  for (int c : counts) EXPECT_NEAR(c, 5000.0 / 7, 120);  // every value appears about equally often
  Tensor l = Tensor::randint({16}, 0, 2, {.dtype = dtypes::int64});
  EXPECT_EQ(l.dtype(), dtypes::int64);
  for (int64_t x : l.tolist<int64_t>()) EXPECT_TRUE(x == 0 || x == 1);
  Tensor u8 = Tensor::randint({64}, 250, 256, {.dtype = dtypes::uint8});
  EXPECT_EQ(u8.dtype(), dtypes::uint8);
  for (int x : u8.tolist<int>()) EXPECT_TRUE(x >= 250 && x <= 255) << x;
}

TEST(Random, Initializers) {
  Tensor::manual_seed(9);
  auto check_bound = [](const Tensor& t, double bound) {
    auto v = t.tolist<float>();
    float lo = *std::min_element(v.begin(), v.end()), hi = *std::max_element(v.begin(), v.end());
    EXPECT_GE(lo, -bound - 1e-6);
    EXPECT_LT(hi, bound + 1e-6);
    EXPECT_GT(hi - lo, bound);  // the values spread over the interval
  };
  check_bound(Tensor::scaled_uniform({40, 50}), 1.0 / std::sqrt(2000.0));
  check_bound(Tensor::glorot_uniform({40, 50}), std::sqrt(6.0 / 90));
  check_bound(Tensor::kaiming_uniform({40, 50}), std::sqrt(6.0 / (1 + 0.0001) / 50));
  check_bound(Tensor::kaiming_uniform({40, 5, 10}, 0.5), std::sqrt(6.0 / 1.25 / 50));
  auto kn = Tensor::kaiming_normal({100, 100}).tolist<float>();
  EXPECT_NEAR(std::sqrt(var_of(kn)), std::sqrt(2.0 / 1.0001 / 100), 0.005);
  EXPECT_EQ(Tensor::glorot_uniform({4, 4}, {.dtype = dtypes::float16}).dtype(), dtypes::float16);
}

TEST(Random, RandpermIsAPermutation) {
  Tensor::manual_seed(10);
  for (int64_t n : {2, 7, 100}) {
    auto p = Tensor::randperm(n).tolist<int>();
    std::vector<int> sorted = p;
    std::sort(sorted.begin(), sorted.end());
    std::vector<int> want(static_cast<size_t>(n));
    std::iota(want.begin(), want.end(), 0);
    EXPECT_EQ(sorted, want);
    if (n == 100) {
      EXPECT_NE(p, want);
    }
  }
  Tensor l = Tensor::randperm(5, {.dtype = dtypes::int64});
  EXPECT_EQ(l.dtype(), dtypes::int64);
}

TEST(Random, MultinomialWithReplacement) {
  Tensor::manual_seed(12);
  Tensor w(std::vector<float>{1, 2, 3, 4});
  Tensor s = w.multinomial(8000, true);
  EXPECT_EQ(s.shape(), tg::Shape{8000});
  EXPECT_EQ(s.dtype(), dtypes::int32);
  std::vector<int> counts(4, 0);
  for (int x : s.tolist<int>()) {
    ASSERT_TRUE(x >= 0 && x < 4) << x;
    counts[size_t(x)]++;
  }
  for (size_t i = 0; i < 4; i++) EXPECT_NEAR(counts[i] / 8000.0, double(i + 1) / 10, 0.02) << i;
  // 2-D: each row samples its own distribution; zero weights are never drawn.
  Tensor w2(std::vector<float>{0, 1, 0, 1, 0, 0}, {2, 3});
  Tensor s2 = w2.multinomial(50, true);
  EXPECT_EQ(s2.shape(), (tg::Shape{2, 50}));
  auto v2 = s2.tolist<int>();
  for (size_t i = 0; i < 50; i++) EXPECT_EQ(v2[i], 1);
  for (size_t i = 50; i < 100; i++) EXPECT_EQ(v2[i], 0);
}

TEST(Random, MultinomialWithoutReplacement) {
  Tensor::manual_seed(13);
  Tensor w(std::vector<float>{1, 5, 0.5f, 2, 3});
  for (int rep = 0; rep < 5; rep++) {
    auto v = w.multinomial(5, false).tolist<int>();
    EXPECT_EQ(std::set<int>(v.begin(), v.end()).size(), 5u);  // all distinct
  }
  Tensor one_hot(std::vector<float>{0, 0, 7});
  EXPECT_EQ(one_hot.multinomial().tolist<int>(), std::vector<int>{2});
  EXPECT_EQ(one_hot.multinomial(1, false).tolist<int>(), std::vector<int>{2});
  // The first draw follows the weights: 2000 rows of the same weights, drawn in one call.
  Tensor rows = w.reshape({1, 5}).expand({2000, 5});
  auto firsts = rows.multinomial(2, false).tolist<int>();
  ASSERT_EQ(firsts.size(), 4000u);
  std::vector<int> counts(5, 0);
  for (size_t r = 0; r < 2000; r++) {
    ASSERT_NE(firsts[2 * r], firsts[2 * r + 1]);
    counts[size_t(firsts[2 * r])]++;
  }
  const double weights[] = {1, 5, 0.5, 2, 3};
  for (size_t i = 0; i < 5; i++) EXPECT_NEAR(counts[i] / 2000.0, weights[i] / 11.5, 0.03) << i;
}

TEST(Random, Linspace) {
  EXPECT_EQ(Tensor::linspace(0, 10, 5).tolist<float>(), (std::vector<float>{0, 2.5f, 5, 7.5f, 10}));
  EXPECT_EQ(Tensor::linspace(-1, 1, 5).tolist<float>(), (std::vector<float>{-1, -0.5f, 0, 0.5f, 1}));
  EXPECT_EQ(Tensor::linspace(3, 9, 1).tolist<float>(), std::vector<float>{3});
  EXPECT_EQ(Tensor::linspace(3, 9, 0).numel(), 0);
  Tensor i = Tensor::linspace(0, 9, 4, {.dtype = dtypes::int32});
  EXPECT_EQ(i.dtype(), dtypes::int32);
  EXPECT_EQ(i.tolist<int>(), (std::vector<int>{0, 3, 6, 9}));
  auto d = Tensor::linspace(1, 0, 11, {.dtype = dtypes::float64}).tolist<double>();
  for (size_t k = 0; k < d.size(); k++) EXPECT_NEAR(d[k], 1 - 0.1 * double(k), 1e-7);
}

TEST(Random, DropoutOnlyWhenTraining) {
  Tensor x = Tensor::ones({100, 100});
  {
    TrainingScope off(false);
    EXPECT_EQ(x.dropout(0.5).uop(), x.uop());  // identity, not even a new node
  }
  TrainingScope on(true);
  Tensor::manual_seed(14);
  auto v = x.dropout(0.25).tolist<float>();
  size_t kept = 0;
  for (float f : v) {
    ASSERT_TRUE(f == 0.0f || std::abs(f - 1 / 0.75f) < 1e-6) << f;
    kept += f != 0;
  }
  EXPECT_NEAR(double(kept) / 10000, 0.75, 0.02);
  EXPECT_NEAR(mean_of(v), 1.0, 0.03);  // scaling keeps the expectation
  EXPECT_EQ(x.dropout(0).uop(), x.uop());
  EXPECT_EQ(x.dropout(1).sum().item<float>(), 0.0f);
  Tensor h = Tensor::ones({8}, {.dtype = dtypes::float16}).dropout(0.5);
  EXPECT_EQ(h.dtype(), dtypes::float16);
}

TEST(Random, TrainingIsTheTrainingKnob) {
  TrainingScope off(false);
  Tensor x = Tensor::ones({64});
  {
    tg::Context ctx({{"TRAINING", 1}});  // tinygrad 0.14's form sets the same value as Tensor.training
    EXPECT_TRUE(Tensor::training);
    EXPECT_EQ(tg::TRAINING.value(), 1);
    EXPECT_NE(x.dropout(0.5).uop(), x.uop());
  }
  EXPECT_FALSE(Tensor::training);
  Tensor::training = true;
  EXPECT_EQ(tg::TRAINING.value(), 1);
}

TEST(Random, DropoutGradient) {
  TrainingScope on(true);
  // The same seed on every evaluation keeps the mask fixed, so finite differences see a linear map.
  tgtest::expect_grad_close_random(
      [](const std::vector<Tensor>& x) {
        Tensor::manual_seed(15);
        return x[0].dropout(0.4) * x[1];
      },
      {{4, 5}, {5}}, 3);
  // The gradient is the kept mask over 1 - p: zero where dropped, 1/(1-p) where kept.
  Tensor::manual_seed(16);
  Tensor x = Tensor::ones({200}, {.requires_grad = true});
  Tensor y = x.dropout(0.5);
  y.sum().backward();
  auto g = x.grad().tolist<float>(), yv = y.tolist<float>();
  for (size_t i = 0; i < g.size(); i++) EXPECT_EQ(g[i], yv[i]) << i;  // x is all ones: y is the mask too
}

TEST(Random, RequiresGradLeaves) {
  Tensor::manual_seed(20);
  Tensor w = Tensor::kaiming_uniform({3, 4}, 0.01, {.requires_grad = true});
  Tensor b = Tensor::normal({4}, 1.0, 0.1, {.requires_grad = true});
  Tensor r = Tensor::rand({4}, {.requires_grad = true});
  EXPECT_TRUE(w.requires_grad());
  EXPECT_TRUE(b.requires_grad());
  EXPECT_FALSE(Tensor::randn({2}).requires_grad());
  ((w * w).sum() * 3 + (b * r).sum()).backward();
  auto wv = w.tolist<float>(), gw = w.grad().tolist<float>();
  for (size_t i = 0; i < wv.size(); i++) EXPECT_NEAR(gw[i], 6 * wv[i], 1e-6);
  EXPECT_EQ(b.grad().tolist<float>(), r.tolist<float>());
  EXPECT_EQ(r.grad().tolist<float>(), b.tolist<float>());
}

TEST(Random, BadInputThrows) {
  EXPECT_THROW(Tensor::rand({2, -1}), tg::Error);
  EXPECT_THROW(Tensor::rand({2}, {.dtype = dtypes::int32}), tg::Error);
  EXPECT_THROW(Tensor::randn({2}, {.dtype = dtypes::int32}), tg::Error);
  EXPECT_THROW(Tensor::rand({2}, {.device = "NOPE"}), tg::Error);
  EXPECT_THROW(Tensor::randint({2}, 5, 5), tg::Error);
  EXPECT_THROW(Tensor::randint({2}, 0, 5, {.dtype = dtypes::float32}), tg::Error);
  EXPECT_THROW(Tensor::uniform({2}, 1.0, 0.0), tg::Error);
  EXPECT_THROW(Tensor::normal({2}, 0, -1), tg::Error);
  EXPECT_THROW(Tensor::glorot_uniform({}), tg::Error);
  EXPECT_THROW(Tensor::kaiming_uniform({3, 0}), tg::Error);
  EXPECT_THROW(Tensor::kaiming_normal({3, 0}), tg::Error);
  EXPECT_THROW(Tensor::randperm(-1), tg::Error);
  EXPECT_THROW(Tensor::linspace(0, 1, -1), tg::Error);
  EXPECT_THROW(Tensor::linspace(0, 1, 3, {.dtype = dtypes::bool_}), tg::Error);
  Tensor w(std::vector<float>{1, 2, 3});
  EXPECT_THROW(w.multinomial(0), tg::Error);
  EXPECT_THROW(w.multinomial(4, false), tg::Error);
  EXPECT_THROW(Tensor(1.0f).multinomial(), tg::Error);
  EXPECT_THROW(Tensor::ones({2, 2, 2}).multinomial(), tg::Error);
  EXPECT_THROW(w.dropout(-0.1), tg::Error);
  EXPECT_THROW(w.dropout(1.5), tg::Error);
  try {
    Tensor::randint({2}, 5, 3);
    FAIL();
  } catch (const tg::Error& e) {
    EXPECT_NE(std::string(e.what()).find("randint"), std::string::npos);
  }
}
