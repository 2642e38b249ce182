// Gradients at 0, at ties and at the edges of each op's domain (issue 17), against derivatives written out in
// double precision, following torch's conventions where a derivative is one-sided (relu6 and hardtanh are
// flat at the ends of their interval, leaky_relu and elu take the negative side at 0).
#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include "math_test_util.h"
#include "tg/tg.h"

using tg::Tensor;
using mtest::kInf;
using mtest::kNaN;

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
      {"sigmoid", [](const Tensor& t) { return t.sigmoid(); }, dsigmoid, {0.0, -0.0, 2.0, -2.0, 300, -300, kInf, -kInf}},
      {"tanh", [](const Tensor& t) { return t.tanh(); }, dtanh, {0.0, -0.0, 0.5, -0.5, 50, -50, kInf, -kInf}},
      {"silu", [](const Tensor& t) { return t.silu(); },
       [](double x) { return std::isinf(x) ? (x > 0 ? 1.0 : 0.0) : sigmoid(x) * (1 + x * (1 - sigmoid(x))); },
       {0.0, 1.0, -1.0, 100, -100}},
      {"asin", [](const Tensor& t) { return t.asin(); }, [](double x) { return 1 / std::sqrt(1 - x * x); },
       {0.0, -0.0, 0.5, -0.5}},
      {"acos", [](const Tensor& t) { return t.acos(); }, [](double x) { return -1 / std::sqrt(1 - x * x); },
       {0.0, 0.5, -0.5}},
      {"atan", [](const Tensor& t) { return t.atan(); }, [](double x) { return 1 / (1 + x * x); },
       {0.0, -0.0, 0.5, -3.0, kInf, -kInf}},
      {"asinh", [](const Tensor& t) { return t.asinh(); }, [](double x) { return 1 / std::sqrt(x * x + 1); },
       {0.0, -0.0, 0.5, -3.0, 1e20}},
      {"atanh", [](const Tensor& t) { return t.atanh(); }, [](double x) { return 1 / (1 - x * x); },
       {0.0, 0.5, -0.5, 1.0, -1.0}},
      {"erf", [](const Tensor& t) { return t.erf(); },
       [](double x) { return 2 / std::sqrt(M_PI) * std::exp(-x * x); }, {0.0, -0.0, 0.5, -1.0, 7.0, kInf, -kInf}},
      {"softplus", [](const Tensor& t) { return t.softplus(); }, sigmoid, {0.0, 1.0, -1.0, 100, -100, kInf, -kInf}},
      {"logsigmoid", [](const Tensor& t) { return t.logsigmoid(); }, [](double x) { return 1 - sigmoid(x); },
       {0.0, 1.0, -1.0, 100, kInf}},
      {"elu", [](const Tensor& t) { return t.elu(); }, [](double x) { return x > 0 ? 1.0 : std::exp(x); }, ends},
      {"celu", [](const Tensor& t) { return t.celu(2.0); }, [](double x) { return x > 0 ? 1.0 : std::exp(x / 2); },
       ends},
      {"selu", [](const Tensor& t) { return t.selu(); },
       [](double x) { return kScale * (x > 0 ? 1.0 : kAlpha * std::exp(x)); }, ends},
      {"leaky_relu", [](const Tensor& t) { return t.leaky_relu(0.01); },
       [](double x) { return x > 0 ? 1.0 : 0.01; }, ends},
      {"relu6", [](const Tensor& t) { return t.relu6(); }, [](double x) { return x > 0 && x < 6 ? 1.0 : 0.0; },
       {0.0, 3.0, 6.0, 7.0, -1.0, kInf}},
      {"hardtanh", [](const Tensor& t) { return t.hardtanh(); }, [](double x) { return x > -1 && x < 1 ? 1.0 : 0.0; },
       {0.0, 1.0, -1.0, 2.0, -kInf}},
      {"hardsigmoid", [](const Tensor& t) { return t.hardsigmoid(); },
       [](double x) { return x > -3 && x < 3 ? 1.0 / 6 : 0.0; }, {0.0, 3.0, -3.0, 4.0, kInf}},
      {"hardswish", [](const Tensor& t) { return t.hardswish(); },
       [](double x) { return x < -3 ? 0.0 : x <= 3 ? x / 3 + 0.5 : 1.0; }, {0.0, 3.0, -3.0, 4.0, -4.0, kInf, -kInf}},
      {"round", [](const Tensor& t) { return t.round(); }, [](double) { return 0.0; }, {0.0, 1.0, -2.0, 2.5, 1e9}},
      {"abs", [](const Tensor& t) { return t.abs(); }, [](double x) { return x > 0 ? 1.0 : x < 0 ? -1.0 : 0.0; },
       {0.0, 2.0, -2.0, kInf}},
      {"relu", [](const Tensor& t) { return t.relu(); }, [](double x) { return x > 0 ? 1.0 : 0.0; }, {0.0, 2.0, -2.0}},
      {"clamp", [](const Tensor& t) { return t.clamp(-1.0, 1.0); },
       [](double x) { return x >= -1 && x <= 1 ? 1.0 : 0.0; }, {0.0, 1.0, -1.0, 2.0, -2.0}},
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
