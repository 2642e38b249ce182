// Vector loads of narrow types on the CPU (C renderer): float16 read 16 at a time and converted to floats (one
// vcvtph2ps with clang, bit arithmetic with gcc), bytes read 16 at a time and unpacked with & and >>. Named
// Tensor* so the op suite runs it on every device and with CC=gcc.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "tg/tg.h"
#include "../common/float16_bits.h"

using tg::Tensor;
namespace dtypes = tg::dtypes;

TEST(TensorNarrowLoads, EveryFloat16ConvertsExactly) {
  std::vector<uint16_t> bits(1 << 16);
  for (size_t i = 0; i < bits.size(); i++) bits[i] = uint16_t(i);
  // (* 1: a float32 kernel whose output dim is a vector, so the float16 input is loaded as one)
  Tensor h = Tensor(bits, {4096, 16}).bitcast(dtypes::float16).contiguous().realize();
  std::vector<float> got = (h.cast(dtypes::float32) * 1.0f).tolist<float>();
  ASSERT_EQ(got.size(), bits.size());
  for (size_t i = 0; i < bits.size(); i++) {
    const float want = tgtest::float16_bits_to_float(bits[i]);
    if (std::isnan(want))
      EXPECT_TRUE(std::isnan(got[i])) << std::hex << i;
    else
      EXPECT_EQ(std::memcmp(&got[i], &want, 4), 0) << std::hex << i << ": " << got[i] << " != " << want;
  }
}

TEST(TensorNarrowLoads, BytesUnpackIntoNibbles) {
  std::vector<uint8_t> bytes(4096);
  for (size_t i = 0; i < bytes.size(); i++) bytes[i] = uint8_t(i * 37 + i / 256);
  Tensor b(bytes, {256, 16});
  std::vector<float> lo = b.bitwise_and(15).cast(dtypes::float32).tolist<float>();
  std::vector<float> hi = b.rshift(4).cast(dtypes::float32).tolist<float>();
  std::vector<float> sum = (b.cast(dtypes::float32) + b.lshift(1).cast(dtypes::float32)).tolist<float>();
  for (size_t i = 0; i < bytes.size(); i++) {
    EXPECT_EQ(lo[i], float(bytes[i] & 15)) << i;
    EXPECT_EQ(hi[i], float(bytes[i] >> 4)) << i;
    EXPECT_EQ(sum[i], float(bytes[i]) + float(uint8_t(bytes[i] << 1))) << i;  // lanes wrap as the scalar does
  }
}

TEST(TensorNarrowLoads, Float16MatrixVectorProduct) {
  // Rows of a float16 matrix against a float32 vector: 16 lanes of each row accumulate apart (a decode step's
  // matmul); infinities and NaN in a row reach its output.
  const int64_t n = 40, k = 256;
  std::vector<uint16_t> w(size_t(n * k));
  std::vector<float> x(static_cast<size_t>(k));
  for (int64_t i = 0; i < k; i++) x[size_t(i)] = float((i % 9) - 4) / 8;
  for (size_t i = 0; i < w.size(); i++)
    w[i] = uint16_t(0x3000 + (i * 2654435761u >> 20) % 0x1000 + (i % 3 ? 0 : 0x8000));
  w[size_t(1 * k + 17)] = 0x7c00;  // +inf in row 1 (x = 0.5 there)
  w[size_t(2 * k + 3)] = 0x7e00;   // NaN in row 2
  w[size_t(3 * k + 5)] = 0x0001;   // the smallest subnormal
  Tensor W = Tensor(w, {n, k}).bitcast(dtypes::float16).contiguous().realize();
  std::vector<float> got = Tensor(x, {1, k}).matmul(W.transpose()).tolist<float>();
  ASSERT_EQ(got.size(), size_t(n));
  for (int64_t r = 0; r < n; r++) {
    double want = 0;
    for (int64_t i = 0; i < k; i++) want += double(x[size_t(i)]) * tgtest::float16_bits_to_float(w[size_t(r * k + i)]);
    if (std::isnan(want))
      EXPECT_TRUE(std::isnan(got[size_t(r)])) << r;
    else if (std::isinf(want))
      EXPECT_EQ(got[size_t(r)], float(want)) << r;
    else
      EXPECT_NEAR(got[size_t(r)], want, 1e-4 * (1 + std::fabs(want))) << r;
  }
}
