#pragma once
// The value of a float16 bit pattern (every one: subnormals, infinities and NaN payloads), exactly, as a float.
#include <cmath>
#include <cstdint>
#include <cstring>

namespace tgtest {

inline float float16_bits_to_float(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000) << 16, exp = (h >> 10) & 0x1F, mant = h & 0x3FF;
  if (exp == 0) return (sign ? -1.0f : 1.0f) * std::ldexp(float(mant), -24);
  uint32_t x = exp == 31 ? sign | 0x7F800000 | (mant << 13) : sign | ((exp + 112) << 23) | (mant << 13);
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

}  // namespace tgtest
