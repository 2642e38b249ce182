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

}  // namespace tgtest
