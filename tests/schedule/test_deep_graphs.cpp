// Graphs a million ops deep: every walk over them (building, scheduling, AST building, rendering, autograd,
// freeing) uses an explicit stack, so nothing overflows, and a fused chain is cut into kernels short enough
// to compile. Release builds realize the full million (and backprop through 200,000, which takes about as
// long per op; a million backprops too, in about 3x the time); Debug builds (the asan stage) use chains of
// 20,000, still 4x what overflowed a Debug build's stack before.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>

#include "tg/tg.h"

using tg::Tensor;

namespace {

#ifdef NDEBUG
constexpr int64_t kChain = 1'000'000, kBackward = 200'000, kProducts = 5'000;
#else
constexpr int64_t kChain = 20'000, kBackward = 20'000, kProducts = 2'000;
#endif

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

TEST(DeepGraphs, MillionOpChainRealizes) {
  // x = x0 + 1 + 1 + ... (kChain adds) realized: its kernels are pieces of at most 256 adds sharing one AST.
  auto t0 = std::chrono::steady_clock::now();
  Tensor x(std::vector<float>{1, 2, 3, 4}, {4});
  for (int64_t i = 0; i < kChain; i++) x = x + 1;
  double build = seconds_since(t0);
  t0 = std::chrono::steady_clock::now();
  x.realize();
  std::printf("chain of %lld adds: build %.2f s, realize %.2f s\n", static_cast<long long>(kChain), build,
              seconds_since(t0));
  const float n = float(kChain);
  EXPECT_EQ(x.tolist<float>(), (std::vector<float>{1 + n, 2 + n, 3 + n, 4 + n}));
}

TEST(DeepGraphs, LongChainBackprops) {
  // x = x0 + w + w + ... (kBackward adds): d(sum x)/dw = kBackward, summed along a chain as long; d/dx0 = 1.
  // The value and both gradients in one schedule; then the whole graph is freed without recursing.
  auto t0 = std::chrono::steady_clock::now();
  Tensor x0(std::vector<float>{1, 2, 3, 4}, {4}, {.requires_grad = true});
  Tensor w(std::vector<float>{1, 1, 1, 1}, {4}, {.requires_grad = true});
  Tensor x = x0;
  for (int64_t i = 0; i < kBackward; i++) x = x + w;
  x.sum().backward();
  double backward = seconds_since(t0);
  t0 = std::chrono::steady_clock::now();
  Tensor gw = w.grad(), gx = x0.grad();
  Tensor::realize_all({x, gw, gx});
  std::printf("chain of %lld adds: build and backward %.2f s, realize value and gradients %.2f s\n",
              static_cast<long long>(kBackward), backward, seconds_since(t0));
  const float n = float(kBackward);
  EXPECT_EQ(x.tolist<float>(), (std::vector<float>{1 + n, 2 + n, 3 + n, 4 + n}));
  EXPECT_EQ(gw.tolist<float>(), (std::vector<float>{n, n, n, n}));
  EXPECT_EQ(gx.tolist<float>(), (std::vector<float>{1, 1, 1, 1}));
}

TEST(DeepGraphs, ProductChainGradient) {
  // x = x0 * w * w ... (kProducts multiplies; w = 1): the backward graph holds the forward chain, the chain
  // of incoming gradients and the sum of w's contributions, each as deep as the chain. d(sum x)/dw = n * x0.
  constexpr float n = float(kProducts);
  Tensor x0(std::vector<float>{1, 2, 3, 4}, {4}, {.requires_grad = true});
  Tensor w(std::vector<float>{1, 1, 1, 1}, {4}, {.requires_grad = true});
  Tensor x = x0;
  for (int64_t i = 0; i < kProducts; i++) x = x * w;
  x.sum().backward();
  EXPECT_EQ(w.grad().tolist<float>(), (std::vector<float>{1 * n, 2 * n, 3 * n, 4 * n}));
  EXPECT_EQ(x0.grad().tolist<float>(), (std::vector<float>{1, 1, 1, 1}));
}

TEST(DeepGraphs, LongFusedChainCompiles) {
  // 1,000 elementwise ops in one expression were rendered as 1,000 nested parentheses, past clang's limit
  // of 256: the renderer now names deep subexpressions. Mixed ops, so no rewrite shortens the chain.
  Tensor x(std::vector<float>{0.5f, 1, 1.5f, 2}, {4});
  std::vector<float> want = {0.5f, 1, 1.5f, 2};
  for (int i = 0; i < 1000; i++) {
    x = i % 2 ? x * 0.5f : x + 1.0f;
    for (float& v : want) v = i % 2 ? v * 0.5f : v + 1.0f;
  }
  EXPECT_EQ(x.tolist<float>(), want);
}
