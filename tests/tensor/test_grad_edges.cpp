// Gradients at 0, at ties and at the edges of each op's domain (issue 17), against derivatives written out in
// double precision, following torch's conventions where a derivative is one-sided (relu6 and hardtanh are
// flat at the ends of their interval, leaky_relu and elu take the negative side at 0).
#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include "math_test_util.h"
#include "tg/tg.h"

using mtest::kInf;
using mtest::kNaN;
using tg::Tensor;

namespace {

struct GradCase {
  const char* name;
  std::function<Tensor(const Tensor&)> op;
  std::function<double(double)> dref;  // the derivative
  std::vector<double> points;
};

double sigmoid(double x) { return 1 / (1 + std::exp(-x)); }
double dsigmoid(double x) { return std::isinf(x) ? 0.0 : sigmoid(x) * (1 - sigmoid(x)); }
double dtanh(double x) { return std::isinf(x) ? 0.0 : 1 - std::tanh(x) * std::tanh(x); }
constexpr double kAlpha = 1.6732632423543772848170429916717, kScale = 1.0507009873554804934193349852946;

std::vector<double> grad_at(const std::function<Tensor(const Tensor&)>& op, const std::vector<double>& xs) {
  std::vector<float> v(xs.begin(), xs.end());
  Tensor x(v, {int64_t(v.size())}, {.requires_grad = true});
  op(x).sum().backward();
  std::vector<float> g = x.grad().tolist<float>();
  return std::vector<double>(g.begin(), g.end());
}

std::vector<GradCase> unary_cases() {
  const std::vector<double> ends = {0.0, -0.0, 1.0, -1.0, 1e-30, 100.0, -100.0, kInf, -kInf};
  return {
      {"sigmoid",
       [](const Tensor& t) { return t.sigmoid(); },
       dsigmoid,
       {0.0, -0.0, 2.0, -2.0, 300, -300, kInf, -kInf}},
      {"tanh", [](const Tensor& t) { return t.tanh(); }, dtanh, {0.0, -0.0, 0.5, -0.5, 50, -50, kInf, -kInf}},
      {"silu",
       [](const Tensor& t) { return t.silu(); },
       [](double x) { return std::isinf(x) ? (x > 0 ? 1.0 : 0.0) : sigmoid(x) * (1 + x * (1 - sigmoid(x))); },
       {0.0, 1.0, -1.0, 100, -100}},
      {"asin",
       [](const Tensor& t) { return t.asin(); },
       [](double x) { return 1 / std::sqrt(1 - x * x); },
       {0.0, -0.0, 0.5, -0.5}},
      {"acos",
       [](const Tensor& t) { return t.acos(); },
       [](double x) { return -1 / std::sqrt(1 - x * x); },
       {0.0, 0.5, -0.5}},
      {"atan",
       [](const Tensor& t) { return t.atan(); },
       [](double x) { return 1 / (1 + x * x); },
       {0.0, -0.0, 0.5, -3.0, kInf, -kInf}},
      {"asinh",
       [](const Tensor& t) { return t.asinh(); },
       [](double x) { return 1 / std::sqrt(x * x + 1); },
       {0.0, -0.0, 0.5, -3.0, 1e20}},
      {"atanh",
       [](const Tensor& t) { return t.atanh(); },
       [](double x) { return 1 / (1 - x * x); },
       {0.0, 0.5, -0.5, 1.0, -1.0}},
      {"erf",
       [](const Tensor& t) { return t.erf(); },
       [](double x) { return 2 / std::sqrt(M_PI) * std::exp(-x * x); },
       {0.0, -0.0, 0.5, -1.0, 7.0, kInf, -kInf}},
      {"softplus", [](const Tensor& t) { return t.softplus(); }, sigmoid, {0.0, 1.0, -1.0, 100, -100, kInf, -kInf}},
      {"logsigmoid",
       [](const Tensor& t) { return t.logsigmoid(); },
       [](double x) { return 1 - sigmoid(x); },
       {0.0, 1.0, -1.0, 100, kInf}},
      {"elu", [](const Tensor& t) { return t.elu(); }, [](double x) { return x > 0 ? 1.0 : std::exp(x); }, ends},
      {"celu", [](const Tensor& t) { return t.celu(2.0); }, [](double x) { return x > 0 ? 1.0 : std::exp(x / 2); },
       ends},
      {"selu", [](const Tensor& t) { return t.selu(); },
       [](double x) { return kScale * (x > 0 ? 1.0 : kAlpha * std::exp(x)); }, ends},
      {"leaky_relu", [](const Tensor& t) { return t.leaky_relu(0.01); }, [](double x) { return x > 0 ? 1.0 : 0.01; },
       ends},
      {"relu6",
       [](const Tensor& t) { return t.relu6(); },
       [](double x) { return x > 0 && x < 6 ? 1.0 : 0.0; },
       {0.0, 3.0, 6.0, 7.0, -1.0, kInf}},
      {"hardtanh",
       [](const Tensor& t) { return t.hardtanh(); },
       [](double x) { return x > -1 && x < 1 ? 1.0 : 0.0; },
       {0.0, 1.0, -1.0, 2.0, -kInf}},
      {"hardsigmoid",
       [](const Tensor& t) { return t.hardsigmoid(); },
       [](double x) { return x > -3 && x < 3 ? 1.0 / 6 : 0.0; },
       {0.0, 3.0, -3.0, 4.0, kInf}},
      {"hardswish",
       [](const Tensor& t) { return t.hardswish(); },
       [](double x) { return x < -3   ? 0.0
                             : x <= 3 ? x / 3 + 0.5
                                      : 1.0; },
       {0.0, 3.0, -3.0, 4.0, -4.0, kInf, -kInf}},
      {"round", [](const Tensor& t) { return t.round(); }, [](double) { return 0.0; }, {0.0, 1.0, -2.0, 2.5, 1e9}},
      {"abs",
       [](const Tensor& t) { return t.abs(); },
       [](double x) { return x > 0   ? 1.0
                             : x < 0 ? -1.0
                                     : 0.0; },
       {0.0, 2.0, -2.0, kInf}},
      {"relu", [](const Tensor& t) { return t.relu(); }, [](double x) { return x > 0 ? 1.0 : 0.0; }, {0.0, 2.0, -2.0}},
      {"clamp",
       [](const Tensor& t) { return t.clamp(-1.0, 1.0); },
       [](double x) { return x >= -1 && x <= 1 ? 1.0 : 0.0; },
       {0.0, 1.0, -1.0, 2.0, -2.0}},
  };
}

TEST(GradEdges, UnaryRulesAtZeroTiesAndInfinities) {
  for (const GradCase& c : unary_cases()) {
    std::vector<double> want;
    for (double x : c.points) want.push_back(c.dref(x));
    mtest::expect_close(grad_at(c.op, c.points), want, 1e-6, 1e-4, c.name);
  }
}

// The derivative at 0 itself is the one the issue names: sigmoid'(0) = 1/4 (the stable e^-|x| form gave 0).
TEST(GradEdges, SigmoidFamilyAtExactlyZero) {
  EXPECT_FLOAT_EQ(grad_at([](const Tensor& t) { return t.sigmoid(); }, {0.0})[0], 0.25f);
  EXPECT_FLOAT_EQ(grad_at([](const Tensor& t) { return t.tanh(); }, {0.0})[0], 1.0f);
  EXPECT_FLOAT_EQ(grad_at([](const Tensor& t) { return t.silu(); }, {0.0})[0], 0.5f);
  EXPECT_FLOAT_EQ(grad_at([](const Tensor& t) { return t.gelu(); }, {0.0})[0], 0.5f);
  EXPECT_FLOAT_EQ(grad_at([](const Tensor& t) { return t.quick_gelu(); }, {0.0})[0], 0.5f);
}

// Values stay exact where the gradient fixes changed the formula: odd functions are exactly +-0 at +-0.
TEST(GradEdges, OddFunctionsKeepExactZero) {
  Tensor z(std::vector<float>{0.0f, -0.0f});
  for (const auto& f : {&Tensor::asin, &Tensor::atan, &Tensor::asinh, &Tensor::erf}) {
    std::vector<float> r = (z.*f)().tolist<float>();
    EXPECT_EQ(r[0], 0.0f);
    EXPECT_FALSE(std::signbit(r[0]));
    EXPECT_EQ(r[1], 0.0f);
    EXPECT_TRUE(std::signbit(r[1]));
  }
  std::vector<float> sp = Tensor(std::vector<float>{float(kInf), float(-kInf)}).softplus().tolist<float>();
  EXPECT_EQ(sp[0], float(kInf));
  EXPECT_EQ(sp[1], 0.0f);
}

// prod's gradient is the product of the other elements, also where some are 0 (prod / x gave nan there).
TEST(GradEdges, ProdWithZeros) {
  const std::vector<std::vector<double>> rows = {{1, 0, 2, 3}, {0, 0, 2, 3}, {4, 1, 2, 3}, {0, 5, -1, 2}};
  std::vector<double> flat;
  for (auto& r : rows) flat.insert(flat.end(), r.begin(), r.end());
  std::vector<float> v(flat.begin(), flat.end());
  Tensor x(v, {4, 4}, {.requires_grad = true});
  x.prod(1).sum().backward();
  std::vector<double> want;
  for (auto& r : rows)
    for (size_t i = 0; i < r.size(); i++) {
      double p = 1;
      for (size_t j = 0; j < r.size(); j++)
        if (j != i) p *= r[j];
      want.push_back(p);
    }
  mtest::expect_close(x.grad().tolist<float>(), want, 0, 0, "prod");
}

TEST(GradEdges, StdOfConstantInputIsZero) {
  Tensor x(std::vector<float>{2, 2, 2, 2}, {2, 2}, {.requires_grad = true});
  x.std(1).sum().backward();
  mtest::expect_close(x.grad().tolist<float>(), std::vector<double>(4, 0.0), 0, 0, "std");
}

// Ties: maximum/minimum split the gradient in half (torch's), max/min reductions share it among the maxima.
TEST(GradEdges, TiesSplitTheGradient) {
  Tensor a(std::vector<float>{1, 2, 3, 0}, {4}, {.requires_grad = true});
  Tensor b(std::vector<float>{1, 1, 4, -0.0f}, {4}, {.requires_grad = true});
  (a.maximum(b) + a.minimum(b) * 3).sum().backward();
  mtest::expect_close(a.grad().tolist<float>(), std::vector<double>{2, 1, 3, 2}, 0, 0, "maximum/minimum a");
  mtest::expect_close(b.grad().tolist<float>(), std::vector<double>{2, 3, 1, 2}, 0, 0, "maximum/minimum b");
  Tensor c(std::vector<float>{1, 3, 3, 0, 0}, {5}, {.requires_grad = true});
  (c.max() + c.min()).backward();
  mtest::expect_close(c.grad().tolist<float>(), std::vector<double>{0, 0.5, 0.5, 0.5, 0.5}, 0, 0, "max/min");
}

}  // namespace

namespace {

// b ** e over zero, negative, infinite bases and exponents: forward is C's pow, both gradients torch's
// (d/db = e b^(e-1), 0 at e = 0; d/de = b^e ln b, at b = 0 -inf for e < 0 and 0 otherwise), on the compiled
// backend and the interpreter (both lower the POW node through uop/decompositions).
TEST(GradEdges, PowGridAgainstTorchRules) {
  const std::vector<double> bases = {-kInf, -2, -1, -0.5, 0, 0.5, 1, 2, 3, kInf};
  const std::vector<double> exps = {-kInf, -2, -1, -0.3, 0, 0.3, 1, 2, 3, 2.5, kInf};
  std::vector<float> b, e;
  std::vector<double> want, want_db, want_de;
  for (double x : bases)
    for (double y : exps) {
      b.push_back(float(x)), e.push_back(float(y));
      want.push_back(std::pow(x, y));
      want_db.push_back(y == 0 ? 0.0 : y * std::pow(x, y - 1));
      want_de.push_back(x == 0 ? (y < 0 ? -kInf : 0.0) : std::pow(x, y) * std::log(x));
    }
  const int64_t n = int64_t(b.size());
  for (const char* dev : {"CPU", "INTERP"}) {
    Tensor tb(b, {n}, {.device = dev, .requires_grad = true}), te(e, {n}, {.device = dev, .requires_grad = true});
    Tensor r = tb.pow(te);
    mtest::expect_close(r.tolist<float>(), want, 1e-6, 1e-5, std::string("pow on ") + dev);
    r.sum().backward();
    mtest::expect_close(tb.grad().tolist<float>(), want_db, 1e-6, 1e-5, std::string("d/db on ") + dev);
    mtest::expect_close(te.grad().tolist<float>(), want_de, 1e-6, 1e-5, std::string("d/de on ") + dev);
  }
}

// A constant exponent: x ** 2.0 had gradient 0 at x = 1 (the where forcing 1 ** y = 1 blocked it), x ** 0
// dropped x from the graph, x ** 0.3 was nan at 0 and +-inf.
TEST(GradEdges, PowConstantExponent) {
  const std::vector<double> xs = {0, 1, 2, -1, -2, kInf, -kInf};
  for (double c : {0.0, 1.0, 2.0, 3.0, -1.0, -2.0, -3.0, 0.3, 1.5, -0.5, 2.5}) {
    std::vector<double> want;
    std::vector<double> pts;
    for (double x : xs) {
      if ((c == 0.3 || c == 1.5 || c == -0.5 || c == 2.5) && x == -kInf) continue;  // C's pow(-inf, c) is +-inf
      pts.push_back(x);
      want.push_back(c == 0 ? 0.0 : c * std::pow(x, c - 1));
    }
    mtest::expect_close(grad_at([c](const Tensor& t) { return t.pow(c); }, pts), want, 1e-6, 1e-5,
                        "x ** " + std::to_string(c));
  }
  EXPECT_EQ(grad_at([](const Tensor& t) { return t.pow(2.0); }, {1.0})[0], 2.0);
  EXPECT_EQ(grad_at([](const Tensor& t) { return t.pow(Tensor(2.0f)); }, {1.0})[0], 2.0);
}

// Constants keep exact 64-bit integers (a double rounded 2^64 - 1 to 2^63 as uint64, and int64 near 2^63).
TEST(GradEdges, ConstantsKeepExact64BitIntegers) {
  constexpr uint64_t kU = ~uint64_t(0);
  EXPECT_EQ(Tensor(kU, {.dtype = tg::dtypes::uint64}).item<uint64_t>(), kU);
  EXPECT_EQ(Tensor::full({2}, kU - 1, {.dtype = tg::dtypes::uint64}).tolist<uint64_t>(),
            (std::vector<uint64_t>{kU - 1, kU - 1}));
  Tensor u(std::vector<uint64_t>{kU, kU - 1, 5});
  EXPECT_EQ(u.idiv(kU).tolist<uint64_t>(), (std::vector<uint64_t>{1, 0, 0}));
  EXPECT_EQ(u.idiv(uint64_t(3)).tolist<uint64_t>(), (std::vector<uint64_t>{kU / 3, (kU - 1) / 3, 1}));
  constexpr int64_t kMax = INT64_MAX, kMin = INT64_MIN;
  EXPECT_EQ(Tensor(kMax - 6, {.dtype = tg::dtypes::int64}).item<int64_t>(), kMax - 6);
  EXPECT_EQ(Tensor(kMin + 1, {.dtype = tg::dtypes::int64}).item<int64_t>(), kMin + 1);
  Tensor i(std::vector<int64_t>{int64_t(1) << 62, -5});
  EXPECT_EQ((i + (kMax - (int64_t(1) << 62))).tolist<int64_t>(),
            (std::vector<int64_t>{kMax, kMax - (int64_t(1) << 62) - 5}));
  // -5 - kMax wraps (two's complement, as the kernels compute it): written in uint64 here, where wrapping is defined
  const int64_t wrapped = int64_t(uint64_t(-5) - uint64_t(kMax));
  EXPECT_EQ((i - kMax).tolist<int64_t>(), (std::vector<int64_t>{(int64_t(1) << 62) - kMax, wrapped}));
}

}  // namespace
