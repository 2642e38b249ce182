// Autograd: every gradient rule against finite differences (tests/common/gradcheck.h), the Tensor API
// (backward, grad, gradient, detach, set_grad, assign) and an SGD loop that must converge.
#include <gtest/gtest.h>

#include <cmath>

#include "../common/gradcheck.h"
#include "tg/tg.h"
#include "uop/uop.h"

using tg::Tensor;
using tgtest::expect_grad_close;
using tgtest::expect_grad_close_random;
using X = std::vector<Tensor>;

namespace {

// Raw ALU nodes, to test one rule at a time without the Tensor op's own rewriting around it.
Tensor raw(tg::Ops op, const X& srcs) {
  std::vector<tg::UOpPtr> u;
  for (auto& s : srcs) u.push_back(s.uop());
  return Tensor(tg::UOp::alu(op, u), srcs[0].device());
}

}  // namespace

// ---- primitive ops ----

TEST(AutogradPrimitive, AddMulNegFdiv) {
  expect_grad_close_random([](const X& x) { return raw(tg::Ops::ADD, {x[0], x[1]}); }, {{2, 3}, {2, 3}}, 1);
  expect_grad_close_random([](const X& x) { return raw(tg::Ops::MUL, {x[0], x[1]}); }, {{2, 3}, {2, 3}}, 2);
  expect_grad_close_random([](const X& x) { return raw(tg::Ops::NEG, {x[0]}); }, {{5}}, 3);
  // Keep the divisor away from 0.
  expect_grad_close_random([](const X& x) { return raw(tg::Ops::FDIV, {x[0], x[1]}); }, {{2, 3}, {2, 3}}, 4, 0.5f,
                           2.f);
}

TEST(AutogradPrimitive, MaxSplitsTiesEqually) {
  expect_grad_close_random([](const X& x) { return raw(tg::Ops::MAX, {x[0], x[1]}); }, {{3, 2}, {3, 2}}, 5);
  // Ties: each side gets half.
  Tensor a(std::vector<float>{1, 2, 3}, {3}, {.requires_grad = true});
  Tensor b(std::vector<float>{1, 5, 0}, {3}, {.requires_grad = true});
  raw(tg::Ops::MAX, {a, b}).sum().backward();
  EXPECT_EQ(a.grad().tolist<float>(), (std::vector<float>{0.5f, 0, 1}));
  EXPECT_EQ(b.grad().tolist<float>(), (std::vector<float>{0.5f, 1, 0}));
  // minimum too (also against a constant: the tie's other half goes nowhere).
  Tensor c(std::vector<float>{1, 0, 3, -4}, {4}, {.requires_grad = true});
  c.minimum(3).sum().backward();
  EXPECT_EQ(c.grad().tolist<float>(), (std::vector<float>{1, 1, 0.5f, 1}));
  EXPECT_EQ((Tensor(std::vector<int32_t>{INT32_MIN, 5}).minimum(Tensor(std::vector<int32_t>{0, INT32_MIN})).tolist<int32_t>()),
            (std::vector<int32_t>{INT32_MIN, INT32_MIN}));
}

TEST(AutogradPrimitive, Transcendental) {
  expect_grad_close_random([](const X& x) { return raw(tg::Ops::EXP2, {x[0]}); }, {{2, 3}}, 6);
  expect_grad_close_random([](const X& x) { return raw(tg::Ops::LOG2, {x[0]}); }, {{2, 3}}, 7, 0.2f, 3.f);
  expect_grad_close_random([](const X& x) { return raw(tg::Ops::SIN, {x[0]}); }, {{2, 3}}, 8, -3.f, 3.f);
  expect_grad_close_random([](const X& x) { return raw(tg::Ops::SQRT, {x[0]}); }, {{2, 3}}, 9, 0.2f, 3.f);
  expect_grad_close_random([](const X& x) { return raw(tg::Ops::RECIP, {x[0]}); }, {{2, 3}}, 10, 0.5f, 2.f);
}

TEST(AutogradPrimitive, TruncIsZero) {
  Tensor a(std::vector<float>{1.5f, -2.25f}, {2}, {.requires_grad = true});
  (a.trunc() * 3).sum().backward();
  EXPECT_EQ(a.grad().tolist<float>(), (std::vector<float>{0, 0}));
}

TEST(AutogradPrimitive, WhereConditionGetsNone) {
  expect_grad_close({[](const X& x) { return (x[0] > 0).where(x[1], x[2]); }},
                    {{-1, 2, -3, 4}, {1, 2, 3, 4}, {5, 6, 7, 8}}, {{4}, {4}, {4}});
  Tensor c(std::vector<float>{1, -1}, {2}, {.requires_grad = true});
  Tensor y(std::vector<float>{3, 4}, {2}, {.requires_grad = true});
  (c > 0).where(y, 0).sum().backward();
  EXPECT_FALSE(c.has_grad());  // only reached through the comparison
  EXPECT_EQ(y.grad().tolist<float>(), (std::vector<float>{1, 0}));
}

TEST(AutogradPrimitive, ComparisonsAndIntOpsCarryNoGradient) {
  Tensor a(std::vector<float>{1, 2}, {2}, {.requires_grad = true});
  Tensor b(std::vector<float>{2, 1}, {2}, {.requires_grad = true});
  Tensor q = raw(tg::Ops::IDIV, {a.cast(tg::dtypes::int32), b.cast(tg::dtypes::int32)});
  Tensor loss = (a < b).cast(tg::dtypes::float32).sum() + q.cast(tg::dtypes::float32).sum();
  EXPECT_THROW(loss.gradient({a}), tg::Error);  // no path carries a gradient
  loss.backward();
  EXPECT_FALSE(a.has_grad());
}

TEST(AutogradPrimitive, CastBack) {
  expect_grad_close_random(
      [](const X& x) { return (x[0].cast(tg::dtypes::float64) * x[0].cast(tg::dtypes::float64)).cast(x[0].dtype()); },
      {{4}}, 11);
  Tensor a(std::vector<float>{1, 2}, {2}, {.requires_grad = true});
  Tensor g = (a.cast(tg::dtypes::float16) * 3).sum().gradient({a})[0];
  EXPECT_EQ(g.dtype(), tg::dtypes::float32);
  EXPECT_EQ(g.tolist<float>(), (std::vector<float>{3, 3}));
}

TEST(AutogradPrimitive, ReduceAdd) {
  expect_grad_close_random([](const X& x) { return x[0].sum(1, true); }, {{3, 4}}, 12);
  expect_grad_close_random([](const X& x) { return x[0].sum({0, 2}); }, {{2, 3, 2}}, 13);
  expect_grad_close_random([](const X& x) { return x[0].sum(); }, {{2, 3}}, 14);
}

TEST(AutogradPrimitive, ReduceMaxSharesTies) {
  expect_grad_close_random([](const X& x) { return x[0].max(1); }, {{3, 4}}, 15);
  expect_grad_close_random([](const X& x) { return x[0].max({0, 2}, true); }, {{2, 3, 2}}, 16);
  Tensor a(std::vector<float>{1, 3, 3, 2}, {4}, {.requires_grad = true});
  a.max().backward();
  EXPECT_EQ(a.grad().tolist<float>(), (std::vector<float>{0, 0.5f, 0.5f, 0}));
}

TEST(AutogradPrimitive, ReduceMul) {
  expect_grad_close_random(
      [](const X& x) {
        return Tensor(tg::UOp::make(tg::Ops::REDUCE_AXIS, x[0].dtype(), {x[0].uop()}, tg::ReduceArg{tg::Ops::MUL, {1}}),
                      x[0].device());
      },
      {{2, 3}}, 17, 0.5f, 2.f);
}

TEST(AutogradPrimitive, MovementOps) {
  expect_grad_close_random([](const X& x) { return x[0].reshape({3, 2}); }, {{2, 3}}, 20);
  expect_grad_close_random([](const X& x) { return x[0].permute({2, 0, 1}); }, {{2, 3, 2}}, 21);
  expect_grad_close_random([](const X& x) { return x[0].expand({3, 2, 4}); }, {{2, 1}}, 22);
  expect_grad_close_random([](const X& x) { return x[0].pad({{1, 2}, {0, 1}}); }, {{2, 3}}, 23);
  expect_grad_close_random([](const X& x) { return x[0].shrink({{1, 3}, {0, 2}}); }, {{3, 3}}, 24);
  expect_grad_close_random([](const X& x) { return x[0].flip({0, 1}); }, {{2, 3}}, 25);
  expect_grad_close_random([](const X& x) { return x[0].flip(1); }, {{2, 3}}, 26);
}

TEST(AutogradPrimitive, MovementChains) {
  expect_grad_close_random(
      [](const X& x) {
        return x[0].pad({{1, 1}, {2, 0}}).flip(0).permute({1, 0}).shrink({{1, 4}, {0, 3}}).reshape({9}).expand({2, 9});
      },
      {{2, 3}}, 27);
  expect_grad_close_random([](const X& x) { return x[0].transpose().reshape({2, 6}).flip(1) * x[1]; },
                           {{4, 3}, {2, 6}}, 28);
}

TEST(AutogradPrimitive, ContiguousAndDetach) {
  expect_grad_close_random([](const X& x) { return x[0].contiguous() * x[0].permute({1, 0}).contiguous().T(); },
                           {{2, 3}}, 29);
  Tensor a(std::vector<float>{1, 2, 3}, {3}, {.requires_grad = true});
  (a * a.detach()).sum().backward();
  EXPECT_EQ(a.grad().tolist<float>(), (std::vector<float>{1, 2, 3}));  // d(a*c)/da = c
  EXPECT_FALSE(a.detach().requires_grad());
}

TEST(AutogradPrimitive, CopyToAnotherDevice) {
  Tensor a(std::vector<float>{1, 2, 3}, {3}, {.requires_grad = true});
  Tensor h = a.to("INTERP");
  Tensor g = ((h * h).to(a.device())).sum().gradient({a})[0];
  EXPECT_EQ(g.device(), a.device());
  EXPECT_EQ(g.tolist<float>(), (std::vector<float>{2, 4, 6}));
}

// ---- composite Tensor ops ----

TEST(AutogradComposite, Unary) {
  expect_grad_close_random([](const X& x) { return x[0].exp(); }, {{2, 3}}, 30);
  expect_grad_close_random([](const X& x) { return x[0].log(); }, {{2, 3}}, 31, 0.2f, 3.f);
  expect_grad_close_random([](const X& x) { return x[0].sqrt(); }, {{2, 3}}, 32, 0.2f, 3.f);
  expect_grad_close_random([](const X& x) { return x[0].reciprocal(); }, {{2, 3}}, 33, 0.5f, 2.f);
  expect_grad_close({[](const X& x) { return x[0].relu(); }}, {{-1.5f, -0.2f, 0.3f, 2.f}}, {{4}});
  expect_grad_close_random([](const X& x) { return x[0].sin(); }, {{2, 3}}, 34);
  expect_grad_close_random([](const X& x) { return -x[0]; }, {{2, 3}}, 35);
}

TEST(AutogradComposite, BroadcastingBinaryUnbroadcasts) {
  expect_grad_close_random([](const X& x) { return x[0] + x[1]; }, {{2, 3}, {3}}, 40);
  expect_grad_close_random([](const X& x) { return x[0] - x[1]; }, {{2, 1}, {1, 3}}, 41);
  expect_grad_close_random([](const X& x) { return x[0] * x[1]; }, {{4, 1, 3}, {2, 1}}, 42);
  expect_grad_close_random([](const X& x) { return x[0] / x[1]; }, {{2, 3}, {3}}, 43, 0.5f, 2.f);
  expect_grad_close_random([](const X& x) { return x[0] * 2.5f + 1; }, {{3}}, 44);
  expect_grad_close_random([](const X& x) { return 1 / x[0]; }, {{3}}, 45, 0.5f, 2.f);
  // A 0-d tensor broadcast against a matrix.
  expect_grad_close_random([](const X& x) { return x[0] * x[1]; }, {{}, {2, 2}}, 46);
}

TEST(AutogradComposite, MaximumMinimumWhere) {
  expect_grad_close_random([](const X& x) { return x[0].maximum(x[1]); }, {{2, 3}, {3}}, 50);
  expect_grad_close_random([](const X& x) { return x[0].minimum(x[1]); }, {{2, 3}, {2, 3}}, 51);
  expect_grad_close_random([](const X& x) { return x[0].maximum(0.1f); }, {{2, 3}}, 52);
  expect_grad_close_random([](const X& x) { return (x[0] > x[1]).where(x[0] * 2, x[1]); }, {{2, 3}, {3}}, 53);
}

TEST(AutogradComposite, Reductions) {
  expect_grad_close_random([](const X& x) { return x[0].sum(0); }, {{3, 4}}, 60);
  expect_grad_close_random([](const X& x) { return x[0].sum(-1, true); }, {{3, 4}}, 61);
  expect_grad_close_random([](const X& x) { return x[0].max(0, true); }, {{3, 4}}, 62);
  expect_grad_close_random([](const X& x) { return x[0].max(); }, {{3, 4}}, 63);
  expect_grad_close_random([](const X& x) { return x[0].min(1); }, {{3, 4}}, 64);
  expect_grad_close_random([](const X& x) { return x[0].mean(); }, {{3, 4}}, 65);
  expect_grad_close_random([](const X& x) { return x[0].mean({0, 2}, true); }, {{2, 3, 2}}, 66);
}

TEST(AutogradComposite, Matmul) {
  expect_grad_close_random([](const X& x) { return x[0].matmul(x[1]); }, {{2, 3}, {3, 4}}, 70);
  expect_grad_close_random([](const X& x) { return x[0].matmul(x[1]); }, {{3}, {3, 2}}, 71);
  expect_grad_close_random([](const X& x) { return x[0].matmul(x[1]); }, {{2, 2, 3}, {3, 2}}, 72);
  expect_grad_close_random([](const X& x) { return x[0].dot(x[1]); }, {{4}, {4}}, 73);
  expect_grad_close_random([](const X& x) { return x[0].matmul(x[1]).relu().matmul(x[2]).exp(); },
                           {{2, 3}, {3, 4}, {4, 2}}, 74);
}

TEST(AutogradComposite, Cast) {
  expect_grad_close_random([](const X& x) { return x[0].cast(tg::dtypes::float64).exp(); }, {{3}}, 80);
}

TEST(AutogradComposite, SharedSubexpressionsAddUp) {
  expect_grad_close_random([](const X& x) { return x[0] * x[0] + x[0].exp() * x[0].sum(); }, {{2, 2}}, 81);
}

// ---- API ----

TEST(AutogradApi, MatmulReluSumBackward) {
  Tensor w = Tensor(std::vector<float>{0.5f, -1, 2, 0, 1, 1, -0.5f, 0.25f, -2, 0.5f, 1, 3}, {3, 4},
                    {.requires_grad = true});
  Tensor x = Tensor(std::vector<float>{1, 2, 3, 4, 5, 6}, {2, 3}, {.requires_grad = true});
  Tensor loss = x.matmul(w).relu().sum();
  loss.backward();
  // x @ w = [[-3.5, 2.5, 4, 9.5], [-5, 4, 11.5, 19.25]]: every column but the first is active.
  EXPECT_EQ(w.grad().shape(), (tg::Shape{3, 4}));
  EXPECT_EQ(w.grad().tolist<float>(), (std::vector<float>{0, 5, 5, 5, 0, 7, 7, 7, 0, 9, 9, 9}));
  EXPECT_EQ(x.grad().tolist<float>(), (std::vector<float>{1, 0.75f, 4.5f, 1, 0.75f, 4.5f}));
}

TEST(AutogradApi, RandnWithRequiresGrad) {
  Tensor w = Tensor::randn({3, 4}, {.requires_grad = true});
  EXPECT_TRUE(w.requires_grad());
  Tensor x = Tensor(std::vector<float>{1, 2, 3, 4, 5, 6}, {2, 3}, {.requires_grad = true});
  Tensor loss = x.matmul(w).sum();
  loss.backward();
  EXPECT_EQ(w.grad().tolist<float>(), (std::vector<float>{5, 5, 5, 5, 7, 7, 7, 7, 9, 9, 9, 9}));
}

TEST(AutogradApi, GradThrowsWhenThereIsNone) {
  Tensor a(std::vector<float>{1, 2}, {2});
  EXPECT_FALSE(a.has_grad());
  EXPECT_THROW(a.grad(), tg::Error);
  Tensor b(std::vector<float>{1, 2}, {2}, {.requires_grad = true});
  EXPECT_THROW(b.grad(), tg::Error);
}

TEST(AutogradApi, BackwardErrors) {
  Tensor a(std::vector<float>{1, 2}, {2});
  EXPECT_THROW(a.sum().backward(), tg::Error);  // nothing requires grad
  Tensor b(std::vector<float>{1, 2}, {2}, {.requires_grad = true});
  EXPECT_THROW((b * 2).backward(), tg::Error);  // not a scalar
  EXPECT_THROW((b * 2).backward(Tensor(std::vector<float>{1, 2, 3})), tg::Error);  // wrong gradient shape
  (b * 2).backward(Tensor(std::vector<float>{1, 3}));
  EXPECT_EQ(b.grad().tolist<float>(), (std::vector<float>{2, 6}));
}

TEST(AutogradApi, GradientsAccumulateAndReset) {
  Tensor a(std::vector<float>{1, 2}, {2}, {.requires_grad = true});
  (a * 3).sum().backward();
  (a * a).sum().backward();
  EXPECT_EQ(a.grad().tolist<float>(), (std::vector<float>{5, 7}));
  a.set_grad(std::nullopt);
  EXPECT_FALSE(a.has_grad());
  a.set_grad(Tensor(std::vector<float>{1, 1}));
  EXPECT_EQ(a.grad().tolist<float>(), (std::vector<float>{1, 1}));
  EXPECT_THROW(a.set_grad(Tensor(std::vector<float>{1, 1, 1})), tg::Error);
}

TEST(AutogradApi, GradientDoesNotTouchGrad) {
  Tensor a(std::vector<float>{1, 2}, {2}, {.requires_grad = true});
  Tensor b(std::vector<float>{3, 4}, {2});  // no requires_grad needed for gradient()
  auto g = (a * b).sum().gradient({a, b});
  EXPECT_EQ(g[0].tolist<float>(), (std::vector<float>{3, 4}));
  EXPECT_EQ(g[1].tolist<float>(), (std::vector<float>{1, 2}));
  EXPECT_FALSE(a.has_grad());
  Tensor c(std::vector<float>{1, 2}, {2});
  EXPECT_THROW((a * b).sum().gradient({c}), tg::Error);  // not in the graph
}

TEST(AutogradApi, RequiresGradToggle) {
  Tensor a(std::vector<float>{1, 2}, {2});
  EXPECT_FALSE(a.requires_grad());
  a.requires_grad_();
  EXPECT_TRUE(a.requires_grad());
  Tensor b(std::vector<float>{3, 4}, {2});
  b.requires_grad_(true);
  (a * b).sum().backward();
  EXPECT_EQ(a.grad().tolist<float>(), (std::vector<float>{3, 4}));
  EXPECT_EQ(b.grad().tolist<float>(), (std::vector<float>{1, 2}));
  a.requires_grad_(false);
  a.set_grad(std::nullopt);
  b.set_grad(std::nullopt);
  (a * b).sum().backward();
  EXPECT_FALSE(a.has_grad());
  EXPECT_TRUE(b.has_grad());
}

TEST(AutogradApi, BackwardAfterLeafWasRealized) {
  Tensor a(std::vector<float>{1, 2}, {2}, {.requires_grad = true});
  Tensor loss = (a * a).sum();
  EXPECT_FLOAT_EQ(loss.item<float>(), 5.f);  // realizes a's copy to the device too
  a.realize();
  loss.backward();
  EXPECT_EQ(a.grad().tolist<float>(), (std::vector<float>{2, 4}));
}

TEST(AutogradApi, LeafUsedBeforeAndAfterRealize) {
  Tensor a(std::vector<float>{1, 2}, {2}, {.requires_grad = true});
  Tensor first = a * 2;
  a.realize();
  Tensor loss = (first + a * a).sum();  // one use of the unrealized node, one of its buffer view
  loss.backward();
  EXPECT_EQ(a.grad().tolist<float>(), (std::vector<float>{4, 6}));
}

TEST(AutogradApi, IntermediateWithRequiresGrad) {
  Tensor a(std::vector<float>{1, 2}, {2}, {.requires_grad = true});
  Tensor h = (a * 3).requires_grad_();
  (h * h).sum().backward();
  EXPECT_EQ(h.grad().tolist<float>(), (std::vector<float>{6, 12}));
  EXPECT_EQ(a.grad().tolist<float>(), (std::vector<float>{18, 36}));
}

// ---- assign ----

TEST(AutogradAssign, RealizedTensorKeepsItsBuffer) {
  Tensor p(std::vector<float>{1, 2, 3}, {3}, {.requires_grad = true});
  p.realize();
  ASSERT_EQ(p.uop()->op, tg::Ops::VIEW);
  auto buf = p.uop()->src[0];
  ASSERT_EQ(buf->op, tg::Ops::BUFFER);
  (p * p).sum().backward();
  p.assign(p - 0.5f * p.grad()).realize();
  EXPECT_EQ(p.uop()->src.at(0), buf);
  EXPECT_EQ(p.tolist<float>(), (std::vector<float>{0, 0, 0}));
  EXPECT_TRUE(p.requires_grad());
}

TEST(AutogradAssign, UnrealizedTensorTakesTheGraph) {
  Tensor a(std::vector<float>{1, 2}, {2});
  Tensor b = a * 2;
  b.assign(a + 1);
  EXPECT_EQ(b.uop(), (a + 1).uop());
  EXPECT_EQ(b.tolist<float>(), (std::vector<float>{2, 3}));
}

TEST(AutogradAssign, CopiesShareTheAssignment) {
  Tensor a = Tensor::zeros({2}).contiguous().realize();
  Tensor alias = a;
  a.assign(Tensor(std::vector<float>{4, 5}));
  EXPECT_EQ(alias.tolist<float>(), (std::vector<float>{4, 5}));
}

TEST(AutogradAssign, Mismatches) {
  Tensor a = Tensor::zeros({2, 3}).contiguous().realize();
  EXPECT_THROW(a.assign(Tensor::zeros({3, 2})), tg::Error);
  EXPECT_THROW(a.assign(Tensor::zeros({2, 3}, {.dtype = tg::dtypes::int32})), tg::Error);
  EXPECT_THROW(a.assign(Tensor::zeros({2, 3}, {.device = "HOST"})), tg::Error);
}

// ---- training ----

TEST(AutogradTraining, SgdLeastSquaresConverges) {
  // y = X @ w_true + b_true, fitted from zero by plain SGD on the mean squared error.
  Tensor X(std::vector<float>{1, 0, 0, 1, 1, 1, 2, 1, 1, 2, -1, 0.5f, 0.5f, -1, 3, 1}, {8, 2});
  Tensor y = X.matmul(Tensor(std::vector<float>{2, -1}, {2, 1})) + 0.5f;
  y.realize();
  Tensor w = Tensor::zeros({2, 1}).contiguous().realize();
  Tensor b = Tensor::zeros({1}).contiguous().realize();
  w.requires_grad_();
  b.requires_grad_();
  auto w_buf = w.uop()->src.at(0), b_buf = b.uop()->src.at(0);
  size_t graph_size = 0;
  float first_loss = 0, last_loss = 0;
  for (int step = 0; step < 200; step++) {
    Tensor loss = ((X.matmul(w) + b - y) * (X.matmul(w) + b - y)).mean();
    if (step == 0) first_loss = loss.item<float>();
    size_t n = tg::toposort(loss.uop()).size();
    if (step == 1) graph_size = n;
    if (step > 1) {
      ASSERT_EQ(n, graph_size) << "the graph grows across steps";
    }
    w.set_grad(std::nullopt);
    b.set_grad(std::nullopt);
    loss.backward();
    w.assign(w - 0.1f * w.grad());
    b.assign(b - 0.1f * b.grad());
    Tensor::realize_all({w, b});
    ASSERT_EQ(w.uop()->src.at(0), w_buf);
    ASSERT_EQ(b.uop()->src.at(0), b_buf);
    if (step == 199) last_loss = loss.item<float>();
  }
  EXPECT_GT(first_loss, 1.f);
  EXPECT_LT(last_loss, 1e-4f);
  auto wv = w.tolist<float>();
  EXPECT_NEAR(wv[0], 2.f, 1e-2);
  EXPECT_NEAR(wv[1], -1.f, 1e-2);
  EXPECT_NEAR(b.item<float>(), 0.5f, 1e-2);
}

TEST(AutogradAssign, ValueReadsTargetThroughAnotherView) {
  Tensor p = Tensor(std::vector<float>{1, 2, 3, 4}, {4}).contiguous().realize();
  p.assign(p.flip(0) + p).realize();
  EXPECT_EQ(p.tolist<float>(), (std::vector<float>{5, 5, 5, 5}));
  Tensor q = Tensor(std::vector<float>{1, 2, 3, 4}, {2, 2}).contiguous().realize();
  q.assign(q.T() * 10).realize();
  EXPECT_EQ(q.tolist<float>(), (std::vector<float>{10, 30, 20, 40}));
}

TEST(AutogradAssign, OtherKernelsReadTheOldValue) {
  // Both updates read the values from before either assignment, whatever order the kernels run in.
  Tensor a = Tensor(std::vector<float>{1, 2}, {2}).contiguous().realize();
  Tensor b = Tensor(std::vector<float>{10, 20}, {2}).contiguous().realize();
  Tensor new_a = a + b.sum();
  Tensor new_b = b + a.sum();
  a.assign(new_a);
  b.assign(new_b);
  Tensor::realize_all({a, b});
  EXPECT_EQ(a.tolist<float>(), (std::vector<float>{31, 32}));
  EXPECT_EQ(b.tolist<float>(), (std::vector<float>{13, 23}));
  Tensor c = Tensor(std::vector<float>{1, 2}, {2}).contiguous().realize();
  Tensor d = Tensor(std::vector<float>{10, 20}, {2}).contiguous().realize();
  Tensor new_c = c * d, new_d = d - c;  // elementwise: each value would fuse into the other's kernel
  c.assign(new_c);
  d.assign(new_d);
  Tensor::realize_all({c, d});
  EXPECT_EQ(c.tolist<float>(), (std::vector<float>{10, 40}));
  EXPECT_EQ(d.tolist<float>(), (std::vector<float>{9, 18}));
}

TEST(AutogradTraining, TwoLayerMlpMatchesFiniteDifferenceStep) {
  // One SGD step on a 2-layer MLP with realize_all(params): every gradient must use the weights from before
  // the step, so the result equals the step computed from gradient() realized beforehand.
  auto data = tgtest::random_inputs({{4, 3}, {3, 5}, {5, 2}, {4, 2}}, 90);
  Tensor x(data[0], {4, 3}), y(data[3], {4, 2});
  Tensor w1 = Tensor(data[1], {3, 5}).contiguous().realize().requires_grad_();
  Tensor w2 = Tensor(data[2], {5, 2}).contiguous().realize().requires_grad_();
  auto loss_of = [&] { return ((x.matmul(w1).relu().matmul(w2) - y) * (x.matmul(w1).relu().matmul(w2) - y)).mean(); };
  auto expected = loss_of().gradient({w1, w2});
  std::vector<float> g1 = expected[0].tolist<float>(), g2 = expected[1].tolist<float>();
  std::vector<float> w1v = w1.tolist<float>(), w2v = w2.tolist<float>();
  loss_of().backward();
  w1.assign(w1 - 0.5f * w1.grad());
  w2.assign(w2 - 0.5f * w2.grad());
  Tensor::realize_all({w1, w2});
  auto n1 = w1.tolist<float>(), n2 = w2.tolist<float>();
  for (size_t i = 0; i < n1.size(); i++) EXPECT_NEAR(n1[i], w1v[i] - 0.5f * g1[i], 1e-5) << "w1 " << i;
  for (size_t i = 0; i < n2.size(); i++) EXPECT_NEAR(n2[i], w2v[i] - 0.5f * g2[i], 1e-5) << "w2 " << i;
}

TEST(AutogradAssign, TwiceBeforeRealizeKeepsTheBuffer) {
  Tensor p = Tensor(std::vector<float>{1, 2}, {2}).contiguous().realize();
  auto buf = p.uop()->src.at(0);
  Tensor old = p;  // shares the handle: sees the assignments too
  p.assign(p * 10);
  p.assign(p + 1);
  p.realize();
  EXPECT_EQ(p.uop()->src.at(0), buf);
  EXPECT_EQ(p.tolist<float>(), (std::vector<float>{11, 21}));
  EXPECT_EQ(old.tolist<float>(), (std::vector<float>{11, 21}));
}

// An assign realized through another tensor that reads it (w * 1) is done: reading w afterwards, or realizing
// it again, does not write the value a second time.
TEST(AutogradAssign, RealizedThroughAReaderRunsOnce) {
  Tensor w = Tensor::ones({4});
  w.realize();
  for (int step = 1; step <= 3; step++) {
    Tensor a = (w * 2).contiguous();
    w.assign(w + 1);
    std::vector<Tensor> out{a.sum(), w * 1};
    Tensor::realize_all(out);
    EXPECT_EQ(out[1].tolist<float>(), std::vector<float>(4, float(1 + step))) << "step " << step;
    EXPECT_EQ(w.tolist<float>(), std::vector<float>(4, float(1 + step))) << "step " << step;
    EXPECT_EQ(w.tolist<float>(), std::vector<float>(4, float(1 + step))) << "read twice, step " << step;
  }
}

TEST(AutogradAssign, SwapThroughAssign) {
  Tensor a = Tensor(std::vector<float>{1, 2}, {2}).contiguous().realize();
  Tensor b = Tensor(std::vector<float>{3, 4}, {2}).contiguous().realize();
  Tensor old_a = a.detach(), old_b = b.detach();  // views of the old values, read by the other assign
  a.assign(old_b);
  b.assign(old_a);
  Tensor::realize_all({a, b});
  EXPECT_EQ(a.tolist<float>(), (std::vector<float>{3, 4}));
  EXPECT_EQ(b.tolist<float>(), (std::vector<float>{1, 2}));
}

TEST(Autograd, EmptyTargetsGetEmptyGradients) {
  Tensor a = Tensor::ones({2, 3}), e = Tensor::ones({2, 0});
  a.requires_grad_(true);
  e.requires_grad_(true);
  std::vector<Tensor> g = Tensor::cat({a, e}, 1).sum().gradient({a, e});
  EXPECT_EQ(g[0].tolist<float>(), std::vector<float>(6, 1.0f));
  EXPECT_EQ(g[1].shape(), (tg::Shape{2, 0}));
  Tensor b = Tensor::ones({3});  // a non-empty tensor outside the graph is still an error
  EXPECT_THROW(a.sum().gradient({b}), tg::Error);
}
