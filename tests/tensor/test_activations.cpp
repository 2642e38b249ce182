// Activations (src/tensor/activations.cpp) against double-precision references written from their
// definitions, over random inputs plus 0, large magnitudes and infinities, in float32 and float16.
#include <gtest/gtest.h>

#include <cmath>

#include "../common/gradcheck.h"
#include "math_test_util.h"
#include "tg/tg.h"

using tg::Tensor;
using mtest::kInf;
using mtest::kNaN;
namespace dtypes = tg::dtypes;

namespace {

struct Case {
  const char* name;
  std::function<Tensor(const Tensor&)> op;
  std::function<double(double)> ref;
  bool finite_only = false;  // tinygrad's formula is inf - inf (nan) or inf * 0 at +-inf
};

double sigmoid(double x) { return x >= 0 ? 1 / (1 + std::exp(-x)) : std::exp(x) / (1 + std::exp(x)); }
double softplus(double x, double beta = 1) {
  double bx = beta * x;
  return (std::max(bx, 0.0) + std::log1p(std::exp(-std::abs(bx)))) / beta;
}
double relu6(double x) { return std::min(std::max(x, 0.0), 6.0); }

std::vector<Case> cases() {
  const double kAlpha = 1.6732632423543772848170429916717, kScale = 1.0507009873554804934193349852946;
  return {
      {"sigmoid", [](const Tensor& t) { return t.sigmoid(); }, sigmoid},
      {"tanh", [](const Tensor& t) { return t.tanh(); }, [](double x) { return std::tanh(x); }},
      {"gelu", [](const Tensor& t) { return t.gelu(); },
       [](double x) { return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x))); }, true},
      {"quick_gelu", [](const Tensor& t) { return t.quick_gelu(); }, [](double x) { return x * sigmoid(1.702 * x); },
       true},
      {"silu", [](const Tensor& t) { return t.silu(); }, [](double x) { return x * sigmoid(x); }, true},
      {"swish", [](const Tensor& t) { return t.swish(); }, [](double x) { return x * sigmoid(x); }, true},
      {"elu", [](const Tensor& t) { return t.elu(); }, [](double x) { return x > 0 ? x : std::expm1(x); }},
      {"elu(0.5)", [](const Tensor& t) { return t.elu(0.5); },
       [](double x) { return x > 0 ? x : 0.5 * std::expm1(x); }},
      {"celu(2)", [](const Tensor& t) { return t.celu(2.0); },
       [](double x) { return std::max(x, 0.0) + std::min(0.0, 2.0 * std::expm1(x / 2.0)); }},
      {"selu", [](const Tensor& t) { return t.selu(); },
       [=](double x) { return kScale * (x > 0 ? x : kAlpha * std::expm1(x)); }},
      {"leaky_relu", [](const Tensor& t) { return t.leaky_relu(); }, [](double x) { return x < 0 ? 0.01 * x : x; }},
      {"leaky_relu(0.2)", [](const Tensor& t) { return t.leaky_relu(0.2); },
       [](double x) { return x < 0 ? 0.2 * x : x; }},
      {"softplus", [](const Tensor& t) { return t.softplus(); }, [](double x) { return softplus(x); }, true},
      {"softplus(2)", [](const Tensor& t) { return t.softplus(2.0); }, [](double x) { return softplus(x, 2); }, true},
      {"mish", [](const Tensor& t) { return t.mish(); }, [](double x) { return x * std::tanh(softplus(x)); }, true},
      {"hardswish", [](const Tensor& t) { return t.hardswish(); }, [](double x) { return x * relu6(x + 3) / 6; },
       true},
      {"hardsigmoid", [](const Tensor& t) { return t.hardsigmoid(); }, [](double x) { return relu6(x + 3) / 6; },
       true},
      {"hardtanh", [](const Tensor& t) { return t.hardtanh(); },
       [](double x) { return std::min(std::max(x, -1.0), 1.0); }},
      {"hardtanh(-2,3)", [](const Tensor& t) { return t.hardtanh(-2, 3); },
       [](double x) { return std::min(std::max(x, -2.0), 3.0); }},
      {"relu6", [](const Tensor& t) { return t.relu6(); }, relu6, true},
      {"softsign", [](const Tensor& t) { return t.softsign(); }, [](double x) { return x / (1 + std::abs(x)); }, true},
      {"logsigmoid", [](const Tensor& t) { return t.logsigmoid(); }, [](double x) { return -softplus(-x); }, true},
  };
}

}  // namespace

TEST(Activation, Float32MatchesReference) {
  auto x = mtest::with_edges(400, -12, 12, 101, {0.0, -0.0, 1e-4, -1e-4, 3.0, -3.0, 6.0, 50.0, -50.0, 200.0, -200.0});
  for (const Case& c : cases())
    mtest::check_unary(c.name, x, dtypes::float32, c.op, c.ref, 2e-6, 2e-5);
}

TEST(Activation, Float16MatchesReference) {
  auto x = mtest::with_edges(200, -8, 8, 102, {0.0, 3.0, -3.0, 6.0, 20.0, -20.0});
  for (const Case& c : cases())
    mtest::check_unary(c.name, x, dtypes::float16, c.op, c.ref, 4e-3, 4e-3);
}

TEST(Activation, Infinities) {
  std::vector<float> x = {float(kInf), float(-kInf)};
  for (const Case& c : cases()) {
    if (c.finite_only) continue;
    mtest::check_unary(c.name, x, dtypes::float32, c.op, c.ref, 0, 1e-6);
  }
  // The stable forms stay finite where a naive exp overflows.
  mtest::expect_close(Tensor(std::vector<float>{-100, 100, -1000}).sigmoid().tolist<float>(),
                      std::vector<double>{sigmoid(-100), 1, 0}, 1e-30, 0, "sigmoid far");
  mtest::expect_close(Tensor(std::vector<float>{-1000, 1000, 100}).softplus().tolist<float>(),
                      std::vector<double>{0, 1000, 100}, 1e-6, 1e-7, "softplus far");
  mtest::expect_close(Tensor(std::vector<float>{-1000, 1000}).logsigmoid().tolist<float>(),
                      std::vector<double>{-1000, 0}, 1e-6, 1e-7, "logsigmoid far");
  mtest::expect_close(Tensor(std::vector<float>{-1000, 1000, float(kNaN)}).tanh().tolist<float>(),
                      std::vector<double>{-1, 1, kNaN}, 0, 0, "tanh far");
}

// Saturated activations have a gradient of 0 (sigmoid' = s(1 - s)), not inf * 0 = nan: training through a
// saturated unit must not poison the step.
TEST(Activation, GradientsAtExtremeInputsAreFinite) {
  std::vector<float> far = {-400, -300, -100, 100, 300, 400};
  std::vector<std::pair<const char*, Tensor (*)(const Tensor&)>> ops = {
      {"sigmoid", [](const Tensor& t) { return t.sigmoid(); }},
      {"tanh", [](const Tensor& t) { return t.tanh(); }},
      {"gelu", [](const Tensor& t) { return t.gelu(); }},
      {"quick_gelu", [](const Tensor& t) { return t.quick_gelu(); }},
      {"silu", [](const Tensor& t) { return t.silu(); }}};
  for (auto& [name, op] : ops) {
    Tensor x(far);
    x.requires_grad_(true);
    op(x).sum().backward();
    std::vector<float> g = x.grad().tolist<float>();
    for (size_t i = 0; i < far.size(); i++) {
      ASSERT_TRUE(std::isfinite(g[i])) << name << " at " << far[i];
      // sigmoid/tanh flatten on both sides; the gelus and silu tend to 0 below and 1 above
      double want = (std::string(name) == "sigmoid" || std::string(name) == "tanh" || far[i] < 0) ? 0.0 : 1.0;
      EXPECT_NEAR(g[i], want, 1e-6) << name << " at " << far[i];
    }
  }
}

TEST(Activation, IntInputs) {
  Tensor i(std::vector<int>{-8, -1, 0, 2, 7});
  Tensor r6 = i.relu6();
  EXPECT_EQ(r6.dtype(), dtypes::int32);
  EXPECT_EQ(r6.tolist<int>(), (std::vector<int>{0, 0, 0, 2, 6}));
  Tensor ht = i.hardtanh(-2, 3);
  EXPECT_EQ(ht.dtype(), dtypes::int32);
  EXPECT_EQ(ht.tolist<int>(), (std::vector<int>{-2, -1, 0, 2, 3}));
  Tensor s = i.sigmoid();
  EXPECT_EQ(s.dtype(), dtypes::float32);
  std::vector<double> want;
  for (int v : {-8, -1, 0, 2, 7}) want.push_back(sigmoid(v));
  mtest::expect_close(s.tolist<float>(), want, 1e-6, 1e-6, "int sigmoid");
  EXPECT_EQ(i.tanh().dtype(), dtypes::float32);
  EXPECT_EQ(i.gelu().dtype(), dtypes::float32);
  EXPECT_EQ(i.leaky_relu().dtype(), dtypes::float32);
  EXPECT_EQ(i.softsign().dtype(), dtypes::float32);
}

TEST(Activation, ShapesAndErrors) {
  Tensor e = Tensor::zeros({3, 0, 2});
  for (const Case& c : cases()) EXPECT_EQ(c.op(e).shape(), (tg::Shape{3, 0, 2})) << c.name;
  Tensor s(0.5);
  EXPECT_EQ(s.sigmoid().shape(), tg::Shape{});
  EXPECT_NEAR(s.sigmoid().item<float>(), sigmoid(0.5), 1e-7);
  Tensor b = Tensor(std::vector<float>{-1, 2}).reshape({2, 1, 1});
  EXPECT_EQ(b.mish().shape(), (tg::Shape{2, 1, 1}));
  EXPECT_THROW((void)b.softplus(0.0), tg::Error);
  EXPECT_THROW((void)b.celu(0.0), tg::Error);
}

// Every activation's backward() against finite differences, at points away from its kinks.
TEST(ActivationGrad, AllActivations) {
  std::vector<float> v = {-7.f, -3.7f, -2.2f, -0.8f, -0.25f, 0.2f, 0.7f, 1.3f, 2.9f, 4.1f, 6.6f, 9.f};
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.name);
    auto op = c.op;
    tgtest::expect_grad_close({[op](const std::vector<Tensor>& x) { return op(x[0]); }}, {v}, {{3, 4}});
  }
}
