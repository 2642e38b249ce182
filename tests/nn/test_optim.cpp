// tg::nn::optim: single steps of SGD (momentum, nesterov, weight decay), Adam, AdamW and LAMB against updates
// computed by hand in double precision, and an optimizer driving a quadratic loss down.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>

#include "tg/tg.h"

using tg::Shape;
using tg::Tensor;
namespace nn = tg::nn;
namespace optim = tg::nn::optim;

namespace {

// loss = sum(w * w) / 2 has gradient w: the hand computations below use g = w.
Tensor half_square_loss(const Tensor& w) { return (w * w).sum() * 0.5f; }

void one_step(optim::Optimizer& opt, Tensor& w) {
  nn::TrainingScope train;
  opt.zero_grad();
  half_square_loss(w).backward();
  opt.step();
}

void expect_near(const std::vector<float>& got, const std::vector<double>& want, double tol = 1e-5) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); i++) EXPECT_NEAR(got[i], want[i], tol) << "at " << i;
}

// Adam's moments after steps with the gradients `gs` (each the parameter before the step), by hand.
struct AdamRef {
  double m = 0, v = 0, b1t = 1, b2t = 1;
  double step(double w, double g, double lr, double b1, double b2, double eps, double wd) {
    b1t *= b1;
    b2t *= b2;
    m = b1 * m + (1 - b1) * g;
    v = b2 * v + (1 - b2) * g * g;
    double up = (m / (1 - b1t)) / (std::sqrt(v / (1 - b2t)) + eps) + wd * w;
    return w - lr * up;
  }
};

}  // namespace

TEST(NNOptim, SGDPlainStep) {
  Tensor w(std::vector<float>{1, -2, 3}, {3});
  optim::SGD opt({w}, 0.1);
  EXPECT_TRUE(w.requires_grad());
  one_step(opt, w);
  expect_near(w.tolist<float>(), {0.9, -1.8, 2.7});  // w - 0.1 * w
  one_step(opt, w);
  expect_near(w.tolist<float>(), {0.81, -1.62, 2.43});
}

TEST(NNOptim, SGDMomentumNesterovWeightDecay) {
  // momentum 0.9: b1 = g1, w1 = w0 - lr b1; b2 = 0.9 b1 + g2, w2 = w1 - lr b2
  {
    Tensor w(std::vector<float>{1, 2}, {2});
    optim::SGD opt({w}, 0.1, 0.9);
    one_step(opt, w);
    one_step(opt, w);
    std::vector<double> want;
    for (double w0 : {1.0, 2.0}) {
      double b = w0, w1 = w0 - 0.1 * b;
      b = 0.9 * b + w1;
      want.push_back(w1 - 0.1 * b);
    }
    expect_near(w.tolist<float>(), want);
  }
  // nesterov: the step uses g + momentum * b
  {
    Tensor w(std::vector<float>{1, 2}, {2});
    optim::SGD opt({w}, 0.1, 0.9, 0.0, true);
    one_step(opt, w);
    one_step(opt, w);
    std::vector<double> want;
    for (double w0 : {1.0, 2.0}) {
      double b = w0, w1 = w0 - 0.1 * (w0 + 0.9 * b);
      b = 0.9 * b + w1;
      want.push_back(w1 - 0.1 * (w1 + 0.9 * b));
    }
    expect_near(w.tolist<float>(), want);
  }
  // weight decay adds wd * w to the gradient
  {
    Tensor w(std::vector<float>{1, 2}, {2});
    optim::SGD opt({w}, 0.1, 0.0, 0.5);
    one_step(opt, w);
    expect_near(w.tolist<float>(), {1 - 0.1 * 1.5, 2 - 0.1 * 3.0});
  }
}

TEST(NNOptim, AdamAdamWLambSteps) {
  for (int kind = 0; kind < 2; kind++) {  // Adam, then AdamW (wd 0.01)
    Tensor w(std::vector<float>{0.5f, -1, 2}, {3});
    std::unique_ptr<optim::Optimizer> opt;
    double wd = kind == 0 ? 0.0 : 0.01;
    if (kind == 0) opt = std::make_unique<optim::Adam>(std::vector<Tensor>{w}, 0.01);
    else opt = std::make_unique<optim::AdamW>(std::vector<Tensor>{w}, 0.01);
    std::vector<AdamRef> ref(3);
    std::vector<double> want = {0.5, -1, 2};
    for (int s = 0; s < 3; s++) {
      one_step(*opt, w);
      for (size_t i = 0; i < 3; i++) want[i] = ref[i].step(want[i], want[i], 0.01, 0.9, 0.999, 1e-8, wd);
      expect_near(w.tolist<float>(), want, 1e-5);
    }
  }
  // LAMB: the Adam update scaled by |w| / |update| (one trust ratio for the whole tensor), eps 1e-6.
  Tensor w(std::vector<float>{3, 4}, {2});
  optim::LAMB opt({w}, 0.1);
  one_step(opt, w);
  double up0 = 3 / (3 + 1e-6), up1 = 4 / (4 + 1e-6);  // first step: m_hat / sqrt(v_hat) = g / |g|
  double r = 5 / std::sqrt(up0 * up0 + up1 * up1);
  expect_near(w.tolist<float>(), {3 - 0.1 * r * up0, 4 - 0.1 * r * up1}, 1e-4);
  EXPECT_NEAR(opt.b1_t.item<float>(), 0.9f, 1e-6f);
  EXPECT_NEAR(opt.b2_t.item<float>(), 0.999f, 1e-6f);
}

TEST(NNOptim, AdamDecreasesQuadraticLoss) {
  Tensor target(std::vector<float>{1, -2, 3, 0.5f}, {2, 2});
  Tensor w = Tensor::zeros({2, 2}).contiguous();
  optim::Adam opt({w}, 0.1);
  auto loss_of = [&] { return ((w - target) * (w - target)).sum(); };
  float first = loss_of().item<float>();
  float last = first;
  nn::TrainingScope train;
  for (int i = 0; i < 100; i++) {
    opt.zero_grad();
    Tensor loss = loss_of();
    loss.backward();
    opt.step({loss});
    last = loss.item<float>();
  }
  EXPECT_NEAR(first, 1 + 4 + 9 + 0.25, 1e-5);
  EXPECT_LT(last, 0.05f * first);
  std::vector<float> got = w.tolist<float>();
  EXPECT_NEAR(got[1], -2, 0.2);
}

TEST(NNOptim, SGDTrainsALinearLayer) {
  // Fit y = 2 x - 1 with a Linear(1, 1): the loss falls and the weights approach (2, -1).
  Tensor::manual_seed(3);
  nn::Linear l(1, 1);
  optim::SGD opt(nn::get_parameters(l), 0.1, 0.9);
  Tensor x(std::vector<float>{-1, -0.5f, 0, 0.5f, 1}, {5, 1});
  Tensor y = x * 2 - 1;
  nn::TrainingScope train;
  float first = 0, last = 0;
  for (int i = 0; i < 60; i++) {
    opt.zero_grad();
    Tensor loss = ((l(x) - y) * (l(x) - y)).mean();
    loss.backward();
    opt.step({loss});
    last = loss.item<float>();
    if (i == 0) first = last;
  }
  EXPECT_LT(last, 0.01f * first + 1e-4f);
  EXPECT_NEAR(l.weight.item<float>(), 2, 0.1);
  EXPECT_NEAR(l.bias->item<float>(), -1, 0.1);
}

TEST(NNOptim, BuffersAndTensorsWithoutGradient) {
  // Float tensors with no gradient are realized unchanged; int tensors are buffers.
  Tensor w(std::vector<float>{1, 2}, {2}), frozen(std::vector<float>{5, 6}, {2});
  Tensor count(std::vector<int>{3}, {1});
  optim::SGD opt({w, frozen, count}, 0.5);
  EXPECT_EQ(opt.params.size(), 2u);
  EXPECT_EQ(opt.buffers.size(), 1u);
  {
    nn::TrainingScope train;
    half_square_loss(w).backward();
    count.assign(count + 1);
    opt.step();
  }
  expect_near(w.tolist<float>(), {0.5, 1});
  expect_near(frozen.tolist<float>(), {5, 6});
  EXPECT_EQ(count.tolist<int>(), (std::vector<int>{4}));
  // zero_grad clears the gradients.
  EXPECT_TRUE(w.has_grad());
  opt.zero_grad();
  EXPECT_FALSE(w.has_grad());
}

TEST(NNOptim, Errors) {
  Tensor w(std::vector<float>{1, 2}, {2});
  EXPECT_THROW(optim::SGD({}, 0.1), tg::Error);
  EXPECT_THROW(optim::SGD({Tensor(std::vector<int>{1}, {1})}, 0.1), tg::Error);  // nothing to train
  EXPECT_THROW(optim::SGD({w}, -1.0), tg::Error);
  EXPECT_THROW(optim::AdamW({w}, 0.1, 0.9, 0.999, 1e-8, -0.1), tg::Error);
  optim::Adam opt({w});
  bool was = Tensor::training;
  Tensor::training = false;
  half_square_loss(w).backward();
  EXPECT_THROW(opt.step(), tg::Error);  // as tinygrad: the optimizer needs training mode
  Tensor::training = was;
}

TEST(NNOptim, LearningRateIsATensor) {
  // Changing lr by assigning to it takes effect at the next step.
  Tensor w(std::vector<float>{1, 1}, {2});
  optim::SGD opt({w}, 0.1);
  opt.lr.assign(Tensor(std::vector<float>{0.5f}, {1}));
  one_step(opt, w);
  expect_near(w.tolist<float>(), {0.5, 0.5});
  EXPECT_EQ(opt.lr.shape(), (Shape{1}));
}
