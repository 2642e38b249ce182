// tinygrad's examples/beautiful_mnist.py in C++: a small convolutional network trained with Adam on
// Fashion-MNIST (Debian's dataset-fashion-mnist package; or pass a directory of MNIST-format idx files),
// with a progress bar showing the loss and the test accuracy. Prints the final test accuracy and the
// steady-state time of one training step (the median over the steps after the first two, which compile).
//
//   build/examples/beautiful_mnist [data_dir]
//   env: STEPS (default 70), BS (batch, 512), LR (Adam's learning rate, 0.001), LR_DECAY=cosine (the learning
//        rate falls from LR to 0 along a half cosine over STEPS; default: constant), EVAL_EVERY (steps between
//        test evaluations, 10; 0: only at the end), SEED (1337), GATHER=1 (sample the batch on the device,
//        X_train[randint], as tinygrad does, instead of on the host), TARGET_EVAL_ACC_PCT (stop as soon as
//        an evaluation reaches this test accuracy; exit 1 if the run ends below it), JIT=0 (run the step
//        eagerly instead of replaying it under tg::TinyJit), GPUS=n (data parallel over n devices of the default
//        kind, "CUDA, CUDA:1, ..." or "CPU, CPU:1, ...": the weights replicated, each batch split, the gradients
//        all-reduced; BS is the whole batch; BatchNorm normalizes each device's part by its own statistics, as
//        torch's DistributedDataParallel does, unless SYNC_BN=1: the whole batch's, two all-reduces a layer and pass).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include <tg/tg.h>

#include "beautiful_mnist_model.h"

using tg::Tensor;
namespace nn = tg::nn;

namespace {

long env_int(const char* name, long dflt) {
  const char* v = std::getenv(name);
  return v && *v ? std::atol(v) : dflt;
}

// A batch drawn on the host: rows of the training set copied into fresh tensors. Equivalent to
// X_train[randint(bs)], which on the CPU costs a one-hot reduction over all 60000 images.
struct HostSampler {
  std::vector<uint8_t> x, y;
  int64_t n, pixels;
  std::mt19937_64 rng;
  HostSampler(const Tensor& X, const Tensor& Y, uint64_t seed)
      : x(X.tolist<uint8_t>()), y(Y.tolist<uint8_t>()), n(X.shape()[0]), pixels(X.numel() / X.shape()[0]), rng(seed) {}
  std::pair<Tensor, Tensor> batch(int64_t bs, const tg::Shape& image_shape) {
    std::uniform_int_distribution<int64_t> pick(0, n - 1);
    std::vector<uint8_t> bx(static_cast<size_t>(bs * pixels)), by(static_cast<size_t>(bs));
    for (int64_t i = 0; i < bs; i++) {
      int64_t j = pick(rng);
      std::copy_n(x.begin() + j * pixels, pixels, bx.begin() + i * pixels);
      by[size_t(i)] = y[size_t(j)];
    }
    tg::Shape s = image_shape;
    s[0] = bs;
    return {Tensor(bx, s), Tensor(by, {bs})};
  }
};

// The devices of a data-parallel run (GPUS=n): n of the default device's kind; empty for one device.
std::vector<std::string> parallel_devices(long n) {
  if (n <= 1) return {};
  std::string kind = tg::default_device();
  kind = kind.substr(0, kind.find(':'));
  std::vector<std::string> devs;
  for (long i = 0; i < n; i++) devs.push_back(i == 0 ? kind : kind + ":" + std::to_string(i));
  return devs;
}

// A batch on the run's devices: split along the batch axis over several (a whole copy on each when it does not split
// evenly), as it is on one.
Tensor place(const Tensor& t, const std::vector<std::string>& devs) {
  if (devs.empty()) return t;
  return int64_t(t.shape()[0]) % int64_t(devs.size()) == 0 ? t.shard(devs, 0) : t.shard(devs);
}

// Test accuracy in percent, evaluated in chunks so the activations of 10000 images need not fit at once.
float test_accuracy(Model& model, const Tensor& X_test, const Tensor& Y_test, const std::vector<std::string>& devs) {
  int64_t n = X_test.shape()[0], chunk = 2000, correct = 0;
  for (int64_t s = 0; s < n; s += chunk) {
    int64_t e = std::min(n, s + chunk);
    Tensor x = place(X_test.shrink({{s, e}, {0, 1}, {0, X_test.shape()[2]}, {0, X_test.shape()[3]}}), devs);
    Tensor y = place(Y_test.shrink({{s, e}}), devs);
    correct += (model(x).argmax(1) == y.cast(tg::dtypes::int32)).sum().item<int64_t>();
  }
  return 100.0f * float(correct) / float(n);
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const long steps = env_int("STEPS", 70), bs = env_int("BS", 512), eval_every = env_int("EVAL_EVERY", 10);
    const bool gather = env_int("GATHER", 0) != 0;
    if (steps < 1 || bs < 1) throw tg::Error("STEPS and BS must be >= 1");
    Tensor::manual_seed(uint64_t(env_int("SEED", 1337)));

    auto t0 = std::chrono::steady_clock::now();
    // (tensors of their own, not a structured binding: a lambda below captures them, which clang accepts from 16 on)
    auto data = nn::datasets::mnist(argc > 1 ? argv[1] : "");
    Tensor &X_train = data.X_train, &Y_train = data.Y_train, &X_test = data.X_test, &Y_test = data.Y_test;
    std::fprintf(stderr, "loaded %lld training and %lld test images in %.2f s\n",
                 static_cast<long long>(X_train.shape()[0]), static_cast<long long>(X_test.shape()[0]),
                 std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    HostSampler sampler(X_train, Y_train, uint64_t(env_int("SEED", 1337)));

    Model model;
    const std::vector<std::string> devs = parallel_devices(env_int("GPUS", 1));
    if (!devs.empty()) {  // data parallel: every weight and statistic replicated (before the optimizer makes its state)
      if (bs % long(devs.size()) != 0) throw tg::Error("BS must be a multiple of GPUS");
      for (auto& [name, t] : nn::get_state_dict(model)) t.shard_(devs);
      model.bn1.sync_stats = model.bn2.sync_stats = env_int("SYNC_BN", 0) != 0;
      std::fprintf(stderr, "data parallel over %s\n", tg::Tensor::zeros({1}).shard(devs).device().c_str());
    }
    const char* lr_env = std::getenv("LR");
    const double lr = lr_env && *lr_env ? std::atof(lr_env) : 0.001;
    const char* decay_env = std::getenv("LR_DECAY");
    const std::string decay = decay_env ? decay_env : "";
    if (!decay.empty() && decay != "cosine") throw tg::Error("LR_DECAY=" + decay + ": expected cosine or nothing");
    nn::optim::Adam opt(nn::get_parameters(model), lr);
    const char* target_env = std::getenv("TARGET_EVAL_ACC_PCT");
    const double target = target_env && *target_env ? std::atof(target_env) : 0.0;

    // One training step, as tinygrad's @TinyJit train_step: the first calls run it, later ones replay its kernels
    // with the new batch (JIT=0: every call runs it).
    auto train_step = [&](const std::vector<Tensor>& in) {
      nn::TrainingScope train;
      opt.zero_grad();
      Tensor l = model(in[0]).sparse_categorical_crossentropy(in[1]);
      l.backward();
      opt.step({l});  // the loss is realized in the step's schedule
      return std::vector<Tensor>{l};
    };
    tg::TinyJit jit_step(train_step);

    std::vector<double> step_s;
    float test_acc = NAN, loss_value = NAN;
    long done = 0;
    tg::Progress bar(steps, "train");
    for (long i = 0; i < steps; i++) {
      auto s0 = std::chrono::steady_clock::now();
      auto [x, y] = [&]() -> std::pair<Tensor, Tensor> {
        if (!gather) return sampler.batch(bs, X_train.shape());
        Tensor samples = Tensor::randint({bs}, 0, X_train.shape()[0]);
        return {X_train[{samples}], Y_train[{samples}]};
      }();
      // lr is a tensor of the optimizer's graph: a new value recompiles nothing. It is written before the step
      // (realized here), so a replayed step reads the new value from lr's buffer.
      if (decay == "cosine")
        opt.lr.assign(Tensor(std::vector<float>{float(lr * 0.5 * (1 + std::cos(M_PI * double(i) / double(steps))))}, {1}))
            .realize();
      // Host-drawn batches go through the jitted step; a device-drawn one (GATHER=1) draws random numbers inside
      // the step, which a replay would repeat, so it runs eagerly.
      x = place(x, devs), y = place(y, devs);
      Tensor loss = gather ? train_step({x, y})[0] : jit_step({x, y})[0];
      loss_value = loss.item<float>();  // (waits for the step: a replay only queues its work on a GPU)
      step_s.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - s0).count());
      if ((eval_every > 0 && i % eval_every == eval_every - 1) || i == steps - 1)
        test_acc = test_accuracy(model, X_test, Y_test, devs);
      char post[96];
      std::snprintf(post, sizeof post, "loss: %6.2f test_accuracy: %5.2f%%", loss_value, test_acc);
      bar.set_postfix(post);
      bar.update();
      done = i + 1;
      if (target > 0 && test_acc >= target) break;  // reached: no need to train on
    }
    bar.close();

    // Steady state: the first two steps compile their kernels.
    std::vector<double> steady(step_s.size() > 2 ? step_s.begin() + 2 : step_s.begin(), step_s.end());
    std::sort(steady.begin(), steady.end());
    std::printf("test accuracy: %.2f%% after %ld steps (loss %.3f)\n", test_acc, done, loss_value);
    std::printf("training step (batch %ld): median %.1f ms over %zu steady-state steps; first step %.1f ms\n", bs,
                1e3 * steady[steady.size() / 2], steady.size(), 1e3 * step_s.front());
    if (target > 0 && !(test_acc >= target)) {
      std::fprintf(stderr, "test accuracy %.2f%% < target %.2f%%\n", test_acc, target);
      return 1;
    }
  } catch (const tg::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
