// The steady-state time of one beautiful_mnist training step (batch 512, Adam, Fashion-MNIST): warm-up steps
// compile the kernels, then the median of the timed ones. Prints `median_ms X` and `first_ms X`;
// bench/beautiful_mnist_tinygrad.py runs this next to upstream tinygrad's step and prints the ratio.
//   build/bench/beautiful_mnist_step [timed_steps=10] [data_dir]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include <tg/tg.h>

#include "beautiful_mnist_model.h"  // examples/

using tg::Tensor;
namespace nn = tg::nn;

namespace {

constexpr int kWarmup = 3;
constexpr int64_t kBatch = 512;

}  // namespace

int main(int argc, char** argv) {
  try {
    int timed = argc > 1 ? std::max(1, std::atoi(argv[1])) : 10;
    Tensor::manual_seed(1337);
    auto data = nn::datasets::mnist(argc > 2 ? argv[2] : "");
    std::vector<uint8_t> xs = data.X_train.tolist<uint8_t>(), ys = data.Y_train.tolist<uint8_t>();
    const int64_t n = data.X_train.shape()[0], pixels = 28 * 28;

    Model model;
    nn::optim::Adam opt(nn::get_parameters(model));
    std::mt19937_64 rng(1337);
    std::uniform_int_distribution<int64_t> pick(0, n - 1);
    std::vector<double> ms;
    for (int s = 0; s < kWarmup + timed; s++) {
      auto t0 = std::chrono::steady_clock::now();
      // The batch is drawn on the host, as the example does (see bench/beautiful_mnist_tinygrad.py).
      std::vector<uint8_t> bx(static_cast<size_t>(kBatch * pixels)), by(static_cast<size_t>(kBatch));
      for (int64_t i = 0; i < kBatch; i++) {
        int64_t j = pick(rng);
        std::copy_n(xs.begin() + j * pixels, pixels, bx.begin() + i * pixels);
        by[size_t(i)] = ys[size_t(j)];
      }
      Tensor x(bx, {kBatch, 1, 28, 28}), y(by, {kBatch});
      nn::TrainingScope train;
      opt.zero_grad();
      Tensor loss = model(x).sparse_categorical_crossentropy(y);
      loss.backward();
      opt.step({loss});
      (void)loss.item<float>();
      ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
    double first = ms.front();
    std::vector<double> steady(ms.begin() + kWarmup, ms.end());
    std::sort(steady.begin(), steady.end());
    std::printf("median_ms %.3f\nfirst_ms %.3f\n", steady[steady.size() / 2], first);
  } catch (const tg::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
