#pragma once
// Reproducible random test data: n floats uniform in [lo, hi) from std::mt19937 seeded with `seed`.
#include <cstdint>
#include <random>
#include <vector>

namespace tgtest {

inline std::vector<float> random_floats(size_t n, uint32_t seed, float lo = -1.0f, float hi = 1.0f) {
  std::mt19937 g(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = d(g);
  return v;
}

// n small integers in [-4, 4] as floats (a fixed LCG per seed): products and sums of them stay exact in float16
// and float32, so a tensor core, the CPU and a reference must agree exactly.
inline std::vector<float> small_ints(size_t n, int seed) {
  std::vector<float> v(n);
  uint32_t x = uint32_t(seed) * 2654435761u + 7u;
  for (auto& e : v) {
    x = x * 1664525u + 1013904223u;
    e = float(int((x >> 9) % 9u) - 4);
  }
  return v;
}

}  // namespace tgtest
