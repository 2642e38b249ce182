// TinyJit (include/tg/jit.h): replays equal eager runs bit for bit, run only the captured kernels, and every
// misuse tinygrad users hit silently is a tg::Error naming the input.
#include <gtest/gtest.h>

#include <functional>

#include <string>

#include "tg/context.h"
#include "../common/expect_error.h"
#include "tg/counters.h"
#include "tg/tg.h"

using tg::Tensor;
using tg::TinyJit;
using tgtest::expect_error;

namespace {

// A small MLP layer and a reduction: several kernels, weights captured as memory.
struct Mlp {
  Tensor w1 = Tensor::randn({16, 32}), b1 = Tensor::randn({32}), w2 = Tensor::randn({32, 4});
  Mlp() { Tensor::realize_all({w1, b1, w2}); }
  std::vector<Tensor> operator()(const std::vector<Tensor>& in) const {
    Tensor h = (in[0].matmul(w1) + b1).relu();
    Tensor y = h.matmul(w2);
    return {y, (y * in[1]).sum()};
  }
};

}  // namespace

TEST(TinyJit, ReplaysEqualEagerRuns) {
  Tensor::manual_seed(1);
  Mlp mlp;
  TinyJit jit([&](const std::vector<Tensor>& in) { return mlp(in); });
  for (int call = 0; call < 5; call++) {
    Tensor x = Tensor::randn({8, 16}), s = Tensor::randn({8, 4});
    Tensor::realize_all({x, s});
    std::vector<float> want = mlp({x, s})[0].tolist<float>();
    float want_sum = mlp({x, s})[1].item<float>();
    const int64_t kernels_before = tg::GlobalCounters::kernel_count;
    std::vector<Tensor> got = jit({x, s});
    const int64_t ran = tg::GlobalCounters::kernel_count - kernels_before;
    EXPECT_EQ(got[0].tolist<float>(), want) << "call " << call;
    EXPECT_EQ(got[1].item<float>(), want_sum) << "call " << call;
    if (call >= 2) {
      EXPECT_EQ(ran, int64_t(jit.kernel_count())) << "a replay runs exactly the captured kernels";
    }
  }
  EXPECT_TRUE(jit.captured());
  EXPECT_EQ(jit.calls(), 5);
  EXPECT_GE(jit.kernel_count(), 2u);
  // graphs are a GPU's (CUDA: tests/runtime/test_cuda_runtime.cpp); elsewhere the bound kernels run one by one
  EXPECT_EQ(jit.graphed(), tg::default_device().rfind("CUDA", 0) == 0);
}

TEST(TinyJit, SeesUpdatedWeightsAndInPlaceUpdates) {
  // a training-like step: the function updates a weight in place; replays keep updating it
  Tensor w = Tensor::zeros({4});
  w.realize();
  TinyJit step([&](const std::vector<Tensor>& in) {
    w.assign(w + in[0]);
    return std::vector<Tensor>{w * 2};
  });
  for (int call = 1; call <= 4; call++) {
    Tensor x = Tensor::full({4}, float(call));
    x.realize();
    std::vector<Tensor> out = step({x});
    float total = float(call * (call + 1) / 2);
    EXPECT_EQ(w.tolist<float>(), std::vector<float>(4, total)) << "call " << call;
    EXPECT_EQ(out[0].tolist<float>(), std::vector<float>(4, 2 * total)) << "call " << call;
  }
}

TEST(TinyJit, InputsAreCheckedAgainstTheCapture) {
  TinyJit jit([](const std::vector<Tensor>& in) { return std::vector<Tensor>{in[0] * 2 + 1}; });
  Tensor a = Tensor::ones({3, 4});
  jit({a});
  jit({a});  // captured
  expect_error([&] { jit({Tensor::ones({4, 3})}); }, "input 0 has shape (4, 3), captured with (3, 4)");
  expect_error([&] { jit({Tensor::ones({3, 4}, {.dtype = tg::dtypes::int32})}); }, "input 0 has dtype");
  expect_error([&] { jit({a, a}); }, "called with 2 inputs, captured with 1");
  // a view is made contiguous first: same shape, new memory, right values
  Tensor t = Tensor::arange(12).reshape({4, 3}).cast(tg::dtypes::float32).T();
  EXPECT_EQ(jit({t})[0].tolist<float>(), (t * 2 + 1).tolist<float>());
  const std::string other = a.device() == "INTERP" ? "CPU" : "INTERP";
  expect_error([&] { jit({a.to(other)}); }, "input 0 has device " + other);
}

TEST(TinyJit, RefusesWhatCannotBeReplayed) {
  TinyJit identity([](const std::vector<Tensor>& in) { return std::vector<Tensor>{in[0]}; });
  Tensor a = Tensor::ones({4});
  identity({a});
  expect_error([&] { identity({a}); }, "ran no kernel");
  TinyJit echo([](const std::vector<Tensor>& in) { return std::vector<Tensor>{in[0], in[0] + 1}; });
  echo({a});
  expect_error([&] { echo({a}); }, "output 0 is input 0");
}

TEST(TinyJit, JitZeroRunsTheFunctionEveryCall) {
  int runs = 0;
  TinyJit jit([&](const std::vector<Tensor>& in) {
    runs++;
    return std::vector<Tensor>{in[0] + 1};
  });
  tg::Context off({{"JIT", 0}});
  for (int i = 0; i < 4; i++) EXPECT_EQ(jit({Tensor::full({2}, 1.0f)})[0].tolist<float>(), std::vector<float>(2, 2.0f));
  EXPECT_EQ(runs, 4);
  EXPECT_FALSE(jit.captured());
}

// Random numbers drawn inside a jitted function (rand, randn and dropout, two draws per call) are the numbers
// the same calls draw without the JIT: each replay draws the next ones, none repeats the capture's.
TEST(TinyJit, RandomDrawsFollowTheEagerStream) {
  auto draws = [](int jit_level) {
    tg::Context ctx({{"JIT", jit_level}, {"TRAINING", 1}});
    Tensor::manual_seed(11);
    TinyJit jit([](const std::vector<Tensor>& in) {
      return std::vector<Tensor>{in[0] + Tensor::rand({3, 5}), in[0].dropout(0.5) * Tensor::randn({3, 5})};
    });
    std::vector<std::vector<float>> out;
    for (int call = 0; call < 5; call++) {
      std::vector<Tensor> r = jit({Tensor::full({3, 5}, 1.0f)});
      for (const Tensor& t : r) out.push_back(t.tolist<float>());
    }
    out.push_back(Tensor::rand({4}).tolist<float>());  // the stream goes on where the calls left it
    return out;
  };
  std::vector<std::vector<float>> eager = draws(0), jitted = draws(1);
  ASSERT_EQ(jitted.size(), eager.size());
  for (size_t i = 0; i < eager.size(); i++) EXPECT_EQ(jitted[i], eager[i]) << "draw " << i;
  EXPECT_NE(jitted[4], jitted[6]) << "two replays drew the same numbers";
}

// A training step under TinyJit (forward, backward, SGD updating the weights in place) follows the same
// trajectory as the eager loop: the same loss at every step, the same weights at the end.
namespace {
struct Net {
  tg::nn::Linear l1{8, 16}, l2{16, 3};
  Tensor operator()(const Tensor& x) const { return l2(l1(x).relu()); }
  TG_PARAMETERS(l1, l2)
};
}  // namespace

// One training step of `net` with `opt` (loss of in[0] against labels in[1], backward, step), returning the loss.
template <class Net, class Optimizer>
std::function<std::vector<Tensor>(const std::vector<Tensor>&)> training_step(Net& net, Optimizer& opt) {
  return [&net, &opt](const std::vector<Tensor>& in) {
    tg::nn::TrainingScope scope;
    opt.zero_grad();
    Tensor loss = net(in[0]).sparse_categorical_crossentropy(in[1]);
    loss.backward();
    opt.step({loss});
    return std::vector<Tensor>{loss};
  };
}

TEST(TinyJit, TrainingStepMatchesEager) {
  auto run = [](bool jitted) {
    Tensor::manual_seed(5);
    Net net;
    tg::nn::optim::SGD opt(tg::nn::get_parameters(net), 0.05);
    Tensor x = Tensor::randn({4, 8}), y = Tensor::randint({4}, 0, 3);
    Tensor::realize_all({x, y});
    auto step = training_step(net, opt);
    TinyJit jit(step);
    std::vector<float> losses;
    for (int i = 0; i < 6; i++) losses.push_back((jitted ? jit({x, y}) : step({x, y}))[0].item<float>());
    losses.push_back(net.l1.weight.sum().item<float>());
    return losses;
  };
  std::vector<float> eager = run(false), jitted = run(true);
  EXPECT_EQ(jitted, eager);
  EXPECT_GT(eager[0], eager[5]) << "the loss goes down";
}

// beautiful_mnist's step in small: conv, BatchNorm (running statistics assigned inside the step), max-pool, Adam,
// a new batch each step and a learning rate assigned (and realized) before each call, as examples/beautiful_mnist
// does. The replays read the new batch and the new rate: losses and weights equal the eager run's, bit for bit.
struct ConvNet {
  tg::nn::Conv2d c{1, 4, 3};
  tg::nn::BatchNorm bn{4};
  tg::nn::Linear l{144, 3};
  TG_PARAMETERS(c, bn, l)
  Tensor operator()(const Tensor& x) { return l(bn(c(x)).relu().max_pool2d().flatten(1)); }
};

TEST(TinyJit, ConvBatchNormAdamStepWithAScheduledRateMatchesEager) {
  auto run = [](bool jitted) {
    Tensor::manual_seed(7);
    ConvNet net;
    tg::nn::optim::Adam opt(tg::nn::get_parameters(net), 0.01);
    auto step = training_step(net, opt);
    TinyJit jit(step);
    std::vector<float> out;
    for (int i = 0; i < 6; i++) {
      opt.lr.assign(Tensor(std::vector<float>{0.01f / float(i + 1)}, {1})).realize();
      std::vector<float> xv(2 * 14 * 14);
      for (size_t j = 0; j < xv.size(); j++) xv[j] = float((j * 7 + size_t(i) * 13) % 17) / 17.0f;
      Tensor x(xv, {2, 1, 14, 14}), y(std::vector<int32_t>{i % 3, (i + 1) % 3}, {2});
      out.push_back((jitted ? jit({x, y}) : step({x, y}))[0].item<float>());
    }
    EXPECT_EQ(jit.captured(), jitted);
    out.push_back(net.c.weight.sum().item<float>());
    out.push_back(net.bn.running_mean->sum().item<float>());
    return out;
  };
  std::vector<float> eager = run(false), jitted = run(true);
  EXPECT_EQ(jitted, eager);
}

TEST(TinyJit, EmptyInputsReplay) {
  TinyJit jit([](const std::vector<Tensor>& in) { return std::vector<Tensor>{in[0] + 1, in[1].sum()}; });
  for (int call = 1; call <= 4; call++) {
    std::vector<Tensor> out = jit({Tensor::ones({0, 3}), Tensor::full({4}, float(call))});
    EXPECT_EQ(out[0].shape(), (tg::Shape{0, 3}));
    EXPECT_EQ(out[1].item<float>(), 4.0f * float(call)) << "call " << call;
  }
}

// The memory planner: a chain of realized intermediates (each needed only by the next kernel) shares memory, the
// replays still equal eager runs, and JIT_PLAN=0 keeps each buffer apart. Nothing the caller holds is planned: the
// weight updated in place and the outputs keep their memory.
TEST(TinyJit, IntermediatesShareMemory) {
  for (long plan : {1L, 0L}) {
    // (MEMORY_POISON: the shared memory reads NaN after each replay, so a live buffer planned would show)
    tg::Context ctx({{"JIT_PLAN", plan}, {"MEMORY_POISON", 1}});
    Tensor w = Tensor::ones({1024});
    w.realize();
    auto fn = [&](const std::vector<Tensor>& in) {
      Tensor a = (in[0] * 2).contiguous(), b = (a + 1).contiguous(), c = (b * w).contiguous();
      Tensor d = (c - in[0]).contiguous(), e = (d * d).contiguous();
      w.assign(w + 1);
      return std::vector<Tensor>{e.sum(), w * 1};
    };
    TinyJit jit(fn);
    for (int call = 0; call < 4; call++) {
      Tensor x = Tensor::randn({1024});
      x.realize();
      std::vector<float> xs = x.tolist<float>(), ws = w.tolist<float>();
      double want = 0;
      for (size_t i = 0; i < xs.size(); i++) {
        const double d = (xs[i] * 2.0 + 1) * ws[i] - xs[i];
        want += d * d;
      }
      std::vector<Tensor> got = jit({x});
      EXPECT_NEAR(got[0].item<float>(), want, 1e-3 * std::abs(want)) << "JIT_PLAN=" << plan << " call " << call;
      EXPECT_EQ(got[1].tolist<float>(), std::vector<float>(1024, ws[0] + 1)) << "JIT_PLAN=" << plan << " call " << call;
    }
    const auto [before, after] = jit.planned_memory();
    if (plan) {
      EXPECT_GE(before, 4 * 4096) << "a, b, c, d and e are the capture's own";
      EXPECT_GT(after, 0);
      EXPECT_LT(after, before);
    } else {
      EXPECT_EQ(before, 0);
      EXPECT_EQ(after, 0);
    }
  }
}
