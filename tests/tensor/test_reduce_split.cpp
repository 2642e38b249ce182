// split_reduceop (src/schedule/split_reduce.h): a large reduce to few outputs runs as two kernels, with the
// values of one reduce and better accuracy. On the default device, so the op suite also runs these on the
// interpreter emulating CUDA, where the GPU heuristics (GROUP with 16-byte UNROLL lanes) apply; sizes stay
// small there by lowering REDUCEOP_SPLIT_THRESHOLD.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "schedule/schedule.h"
#include "schedule/split_reduce.h"
#include "tg/context.h"
#include "tg/counters.h"
#include "tg/tg.h"

using tg::Tensor;

namespace {

bool on_interpreter() { return tg::default_device().rfind("INTERP", 0) == 0; }

std::vector<float> uniform(size_t n, unsigned seed, float lo = -1.0f, float hi = 1.0f) {
  std::mt19937 g(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = d(g);
  return v;
}

size_t kernels_of(const Tensor& t) { return tg::create_schedule({t.uop()}).items.size(); }

// Sums, maxes and products over `axis` of a row-major (outer, n, inner) tensor in double.
std::vector<double> reference(const std::vector<float>& v, int64_t outer, int64_t n, int64_t inner, char op) {
  std::vector<double> out(size_t(outer * inner));
  for (int64_t o = 0; o < outer; o++)
    for (int64_t i = 0; i < inner; i++) {
      double acc = op == '+' ? 0.0 : op == '*' ? 1.0 : -INFINITY;
      for (int64_t k = 0; k < n; k++) {
        double x = v[size_t((o * n + k) * inner + i)];
        acc = op == '+' ? acc + x : op == '*' ? acc * x : std::max(acc, x);
      }
      out[size_t(o * inner + i)] = acc;
    }
  return out;
}

}  // namespace

TEST(ReduceSplit, ChoiceFollowsTinygrad) {
  auto choice = [](const tg::Shape& s, std::vector<int64_t> axes) {
    Tensor x = Tensor::empty(s);
    return tg::split_reduce_choice(x.sum(axes, true).uop().get());
  };
  // a full reduce of 2^20: the largest divisor up to 256 of the (only) axis
  EXPECT_EQ(choice({1 << 20}, {0}), (std::pair<int64_t, int64_t>{0, 256}));
  // few inputs per output: left alone (1024 < 32768)
  EXPECT_EQ(choice({1024, 1024}, {1}).first, -1);
  // a column sum: 2^16 inputs for each of 64 outputs; 2^22/64 partials allowed, so 256
  EXPECT_EQ(choice({1 << 16, 64}, {0}), (std::pair<int64_t, int64_t>{0, 256}));
  // 200 outputs cap the split by REDUCEOP_SPLIT_SIZE: 2^22 / 200 = 20971, so 256 still; 256 outputs and more
  // are left alone (they keep the device busy by themselves)
  EXPECT_EQ(choice({1 << 16, 200}, {0}), (std::pair<int64_t, int64_t>{0, 256}));
  EXPECT_EQ(choice({1 << 16, 256}, {0}).first, -1);
  EXPECT_EQ(choice({1 << 16, 1 << 16}, {0}).first, -1);
  {
    tg::Context small({{"REDUCEOP_SPLIT_SIZE", 14}});  // at most 2^14 partials: 2^14 / 200 = 81
    EXPECT_EQ(choice({1 << 16, 200}, {0}), (std::pair<int64_t, int64_t>{0, 64}));
  }
  // a prime axis has no divisor: left alone; the second reduce axis is tried next
  EXPECT_EQ(choice({65537}, {0}).first, -1);
  EXPECT_EQ(choice({65537, 64}, {0, 1}), (std::pair<int64_t, int64_t>{1, 32}));
  // 10^6 = 2^6 5^6: the largest divisor up to 256 is 250
  EXPECT_EQ(choice({1000000}, {0}), (std::pair<int64_t, int64_t>{0, 250}));
  {
    tg::Context off({{"SPLIT_REDUCEOP", 0}});
    EXPECT_EQ(choice({1 << 20}, {0}).first, -1);
  }
  {
    tg::Context low({{"REDUCEOP_SPLIT_THRESHOLD", 64}});
    EXPECT_EQ(choice({4096}, {0}), (std::pair<int64_t, int64_t>{0, 256}));
  }
}

TEST(ReduceSplit, TwoKernelsAndTheResultIsReused) {
  // (Stage two reduces at most 256 partials: below this threshold, so it is not split again.)
  tg::Context low({{"REDUCEOP_SPLIT_THRESHOLD", 512}});
  Tensor x(uniform(8192, 1), {8192});
  x.realize();
  // (create_schedule records what it schedules as realized: each count takes a graph of its own)
  EXPECT_EQ(kernels_of(x.sum()), 2u);
  EXPECT_EQ(kernels_of((x * 2.0f).max()), 2u);
  {
    tg::Context off({{"SPLIT_REDUCEOP", 0}});
    EXPECT_EQ(kernels_of((x * 3.0f).sum()), 1u);
  }
  Tensor s = x.sum();
  // A graph built on the reduce before it is realized reads the realized value: one more kernel, not three.
  Tensor later = s + 1.0f;
  s.realize();
  int64_t before = tg::GlobalCounters::kernel_count;
  later.realize();
  EXPECT_EQ(tg::GlobalCounters::kernel_count - before, 1);
  EXPECT_FLOAT_EQ(later.item<float>(), s.item<float>() + 1.0f);
}

TEST(ReduceSplit, ValuesOfEveryReduceAndLayout) {
  // Shapes that split (threshold lowered so the interpreter stays fast), along an inner, outer and middle
  // axis, with sizes that do and do not divide the GPU's group and vector widths.
  tg::Context low({{"REDUCEOP_SPLIT_THRESHOLD", 512}});
  struct Case {
    int64_t outer, n, inner;
  };
  for (Case c : {Case{1, 8192, 1}, Case{1, 6000, 1}, Case{3, 4096, 1}, Case{1, 4096, 3}, Case{2, 2048, 2},
                 Case{1, 4099, 1}, Case{1, 1280, 1}}) {
    const size_t total = size_t(c.outer * c.n * c.inner);
    std::vector<float> v = uniform(total, unsigned(total), 0.5f, 1.5f);
    Tensor x(v, {c.outer, c.n, c.inner});
    std::string what = std::to_string(c.outer) + "x" + std::to_string(c.n) + "x" + std::to_string(c.inner);
    auto check = [&](const Tensor& t, const std::vector<double>& want, double rtol, const char* op) {
      std::vector<double> got = t.tolist<double>();
      ASSERT_EQ(got.size(), want.size()) << what << " " << op;
      for (size_t i = 0; i < got.size(); i++)
        EXPECT_NEAR(got[i], want[i], rtol * std::fabs(want[i])) << what << " " << op << " at " << i;
    };
    check(x.sum(1), reference(v, c.outer, c.n, c.inner, '+'), 1e-6, "sum");
    check(x.max(1), reference(v, c.outer, c.n, c.inner, 'm'), 0, "max");
    std::vector<double> mean = reference(v, c.outer, c.n, c.inner, '+');
    for (double& m : mean) m /= double(c.n);
    check(x.mean(1), mean, 1e-6, "mean");
    // a product of values near 1 stays finite: x ** (1/n) multiplies to about the geometric mean
    std::vector<float> near1(total);
    for (size_t i = 0; i < total; i++) near1[i] = 1.0f + (v[i] - 1.0f) / 64.0f;
    check(Tensor(near1, {c.outer, c.n, c.inner}).prod(1), reference(near1, c.outer, c.n, c.inner, '*'), 1e-4,
          "prod");
  }
  // integers are exact
  std::vector<int> iv(12288);
  for (size_t i = 0; i < iv.size(); i++) iv[i] = int(i % 97) - 40;
  int64_t want = 0;
  for (int i : iv) want += i;
  EXPECT_EQ(Tensor(iv).sum().item<int>(), want);
}

TEST(ReduceSplit, FloatSumIsAccurate) {
  // The float32 sum of n uniform values in [0, 1) against float64: a single chain of n adds drifts by about
  // n * 2^-24 (1.3e-3 at 2^28 was measured before the split); split and vectorized, it stays near 1e-7.
  const int64_t n = on_interpreter() ? (1 << 16) : (1 << 24);
  tg::Context low({{"REDUCEOP_SPLIT_THRESHOLD", on_interpreter() ? 512 : 32768}});
  std::vector<float> v = uniform(size_t(n), 7, 0.0f, 1.0f);
  double want = 0;
  for (float f : v) want += f;
  double got = Tensor(v).sum().item<float>();
  EXPECT_LT(std::fabs(got - want) / want, 2e-6) << "sum " << got << " want " << want;
  // a sum of ones is exact as long as each partial stays below 2^24
  EXPECT_EQ(Tensor::ones({n}).sum().item<float>(), float(n));
}
