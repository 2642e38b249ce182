// A small training step, eager and under TinyJit (issue 12's MLP: 4 x Linear(256), batch 32, SGD): the median
// time of a step from the host's call to its loss on the host, after warm-up. The device is DEV's (default: the
// best available). Prints `eager_ms X`, `jit_ms X` and the ratio.
//   build/bench/jit_step [timed_steps=50]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <vector>

#include <tg/tg.h>

using tg::Tensor;
namespace nn = tg::nn;

namespace {

struct Mlp {
  nn::Linear l1{256, 256}, l2{256, 256}, l3{256, 256}, l4{256, 10};
  Tensor operator()(const Tensor& x) const { return l4(l3(l2(l1(x).relu()).relu()).relu()); }
  TG_PARAMETERS(l1, l2, l3, l4)
};

double median_ms(const std::function<void()>& step, int timed) {
  for (int i = 0; i < 5; i++) step();  // compile, capture
  std::vector<double> ms;
  for (int i = 0; i < timed; i++) {
    auto t0 = std::chrono::steady_clock::now();
    step();
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const int timed = argc > 1 ? std::max(1, std::atoi(argv[1])) : 50;
    Tensor::manual_seed(7);
    Mlp model;
    nn::optim::SGD opt(nn::get_parameters(model), 0.01);
    Tensor x = Tensor::randn({32, 256}), y = Tensor::randint({32}, 0, 10);
    Tensor::realize_all({x, y});
    auto train = [&](const std::vector<Tensor>& in) {
      nn::TrainingScope scope;
      opt.zero_grad();
      Tensor loss = model(in[0]).sparse_categorical_crossentropy(in[1]);
      loss.backward();
      opt.step({loss});
      return std::vector<Tensor>{loss};
    };
    const double eager = median_ms([&] { (void)train({x, y})[0].item<float>(); }, timed);
    tg::TinyJit jit(train);
    const double jitted = median_ms([&] { (void)jit({x, y})[0].item<float>(); }, timed);
    std::printf("device %s, %zu kernels a step\neager_ms %.3f\njit_ms %.3f\nratio %.2fx\n", x.device().c_str(),
                jit.kernel_count(), eager, jitted, eager / jitted);
    return 0;
  } catch (const tg::Error& e) {
    std::fprintf(stderr, "jit_step: %s\n", e.what());
    return 1;
  }
}
