// Scalar ALU semantics: C integer wrapping and truncating division, float rounding per dtype, hand-written
// float16/bfloat16 conversions, casts and bitcasts.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "tg/error.h"
#include "uop/exec_alu.h"

using namespace tg;

namespace {
Num I(int64_t v) { return Num{v, 0}; }
Num F(double v) { return Num{0, v}; }
int64_t ialu(Ops op, DType dt, int64_t a, int64_t b) { return exec_alu(op, dt, dt, {I(a), I(b)}).i; }
double falu(Ops op, DType dt, double a, double b) { return exec_alu(op, dt, dt, {F(a), F(b)}).f; }

// Reference float -> half through the compiler's _Float16 where available, else skip those checks. (g++ before 13
// defines __FLT16_MAX__ on aarch64 but has no _Float16 in C++; on x86-64 g++ 12 has it.)
#if defined(__FLT16_MAX__) && (defined(__clang__) || defined(__x86_64__) || __GNUC__ >= 13)
#define TG_TEST_FLOAT16 1
#endif
#if TG_TEST_FLOAT16
uint16_t ref_half(float x) {
  _Float16 h = static_cast<_Float16>(x);
  uint16_t b;
  std::memcpy(&b, &h, 2);
  return b;
}
#endif
}  // namespace

TEST(ExecAlu, IntegerWrapsToWidth) {
  EXPECT_EQ(ialu(Ops::ADD, dtypes::int8, 127, 1), -128);
  EXPECT_EQ(ialu(Ops::ADD, dtypes::uint8, 255, 1), 0);
  EXPECT_EQ(ialu(Ops::MUL, dtypes::int16, 300, 300), int16_t(90000));
  EXPECT_EQ(ialu(Ops::ADD, dtypes::int32, std::numeric_limits<int32_t>::max(), 1), std::numeric_limits<int32_t>::min());
  EXPECT_EQ(ialu(Ops::SUB, dtypes::uint32, 0, 1), int64_t(0xffffffffu));
  EXPECT_EQ(ialu(Ops::ADD, dtypes::int64, std::numeric_limits<int64_t>::max(), 1), std::numeric_limits<int64_t>::min());
  // uint64 keeps its bit pattern in `i`.
  EXPECT_EQ(uint64_t(ialu(Ops::SUB, dtypes::uint64, 0, 1)), std::numeric_limits<uint64_t>::max());
  EXPECT_EQ(exec_alu(Ops::NEG, dtypes::int8, dtypes::int8, {I(-128)}).i, -128);
}

TEST(ExecAlu, DivisionTruncatesTowardZero) {
  EXPECT_EQ(ialu(Ops::IDIV, dtypes::int32, 7, 2), 3);
  EXPECT_EQ(ialu(Ops::IDIV, dtypes::int32, -7, 2), -3);
  EXPECT_EQ(ialu(Ops::IDIV, dtypes::int32, 7, -2), -3);
  EXPECT_EQ(ialu(Ops::MOD, dtypes::int32, -7, 2), -1);
  EXPECT_EQ(ialu(Ops::MOD, dtypes::int32, 7, -2), 1);
  EXPECT_EQ(ialu(Ops::IDIV, dtypes::int32, 5, 0), 0);
  EXPECT_EQ(ialu(Ops::MOD, dtypes::int32, 5, 0), 0);
  EXPECT_EQ(ialu(Ops::IDIV, dtypes::int8, -128, -1), -128);
  EXPECT_EQ(ialu(Ops::IDIV, dtypes::int64, std::numeric_limits<int64_t>::min(), -1),
            std::numeric_limits<int64_t>::min());
  EXPECT_EQ(ialu(Ops::MOD, dtypes::int64, std::numeric_limits<int64_t>::min(), -1), 0);
  // Unsigned division sees the unsigned values.
  EXPECT_EQ(uint64_t(ialu(Ops::IDIV, dtypes::uint64, -1, 2)), std::numeric_limits<uint64_t>::max() / 2);
  EXPECT_EQ(ialu(Ops::MOD, dtypes::uint32, 0xffffffffLL, 10), 5);
}

TEST(ExecAlu, ComparisonsUseSourceDtype) {
  EXPECT_EQ(exec_alu(Ops::CMPLT, dtypes::bool_, dtypes::int32, {I(-1), I(0)}).i, 1);
  EXPECT_EQ(exec_alu(Ops::CMPLT, dtypes::bool_, dtypes::uint64, {I(-1), I(0)}).i, 0);  // 2^64-1 < 0 is false
  EXPECT_EQ(exec_alu(Ops::CMPNE, dtypes::bool_, dtypes::float32, {F(NAN), F(NAN)}).i, 1);
  EXPECT_EQ(exec_alu(Ops::CMPLT, dtypes::bool_, dtypes::float32, {F(NAN), F(1)}).i, 0);
  EXPECT_EQ(exec_alu(Ops::CMPLT, dtypes::bool_, dtypes::bool_, {I(0), I(1)}).i, 1);
  EXPECT_EQ(ialu(Ops::MAX, dtypes::uint64, -1, 5), -1);
  EXPECT_EQ(ialu(Ops::MAX, dtypes::int64, -1, 5), 5);
}

TEST(ExecAlu, BitwiseAndShifts) {
  EXPECT_EQ(ialu(Ops::AND, dtypes::int32, 12, 10), 8);
  EXPECT_EQ(ialu(Ops::OR, dtypes::int32, 12, 10), 14);
  EXPECT_EQ(ialu(Ops::XOR, dtypes::int32, 12, 10), 6);
  EXPECT_EQ(ialu(Ops::SHL, dtypes::uint8, 1, 7), 128);
  EXPECT_EQ(ialu(Ops::SHL, dtypes::uint8, 1, 8), 0);
  EXPECT_EQ(ialu(Ops::SHR, dtypes::int32, -8, 1), -4);
  EXPECT_EQ(ialu(Ops::SHR, dtypes::uint32, 0x80000000LL, 31), 1);
  EXPECT_EQ(uint64_t(ialu(Ops::SHR, dtypes::uint64, -1, 63)), 1u);
}

TEST(ExecAlu, Bools) {
  EXPECT_EQ(ialu(Ops::ADD, dtypes::bool_, 1, 1), 1);
  EXPECT_EQ(ialu(Ops::MUL, dtypes::bool_, 1, 0), 0);
  EXPECT_EQ(ialu(Ops::AND, dtypes::bool_, 1, 1), 1);
  EXPECT_EQ(ialu(Ops::OR, dtypes::bool_, 0, 0), 0);
  EXPECT_EQ(ialu(Ops::XOR, dtypes::bool_, 1, 1), 0);
  EXPECT_EQ(ialu(Ops::MAX, dtypes::bool_, 0, 1), 1);
  EXPECT_EQ(exec_alu(Ops::WHERE, dtypes::int32, dtypes::int32, {I(1), I(3), I(4)}).i, 3);
  EXPECT_EQ(exec_alu(Ops::WHERE, dtypes::float32, dtypes::float32, {I(0), F(3), F(4)}).f, 4);
}

TEST(ExecAlu, FloatRoundsToDtype) {
  EXPECT_EQ(falu(Ops::ADD, dtypes::float32, 1.0, 1e-9), 1.0);
  EXPECT_EQ(falu(Ops::ADD, dtypes::float64, 1.0, 1e-9), 1.0 + 1e-9);
  EXPECT_EQ(falu(Ops::FDIV, dtypes::float32, 1.0, 3.0), double(1.0f / 3.0f));
  EXPECT_EQ(falu(Ops::ADD, dtypes::float16, 2048, 1), 2048);  // half has 11 significant bits
  EXPECT_EQ(falu(Ops::ADD, dtypes::float16, 2048, 2), 2050);
  EXPECT_EQ(falu(Ops::ADD, dtypes::bfloat16, 256, 1), 256);
  EXPECT_TRUE(std::isinf(falu(Ops::MUL, dtypes::float16, 300, 300)));
  EXPECT_TRUE(std::isinf(falu(Ops::FDIV, dtypes::float32, 1, 0)));
  EXPECT_TRUE(std::isnan(falu(Ops::FDIV, dtypes::float32, 0, 0)));
  EXPECT_EQ(falu(Ops::MAX, dtypes::float32, -1, 2), 2);
  EXPECT_EQ(falu(Ops::IDIV, dtypes::float32, -7, 2), -3);
  EXPECT_EQ(falu(Ops::MOD, dtypes::float32, -7, 2), -1);
  EXPECT_EQ(exec_alu(Ops::MULACC, dtypes::float32, dtypes::float32, {F(2), F(3), F(4)}).f, 10);
  EXPECT_EQ(exec_alu(Ops::MULACC, dtypes::int8, dtypes::int8, {I(16), I(16), I(1)}).i, 1);
}

TEST(ExecAlu, UnaryOps) {
  auto u = [](Ops op, DType dt, double x) { return exec_alu(op, dt, dt, {F(x)}).f; };
  EXPECT_EQ(u(Ops::EXP2, dtypes::float32, 3), 8);
  EXPECT_EQ(u(Ops::LOG2, dtypes::float32, 8), 3);
  EXPECT_TRUE(std::isinf(u(Ops::LOG2, dtypes::float32, 0)));
  EXPECT_TRUE(std::isnan(u(Ops::LOG2, dtypes::float32, -1)));
  EXPECT_EQ(u(Ops::SQRT, dtypes::float32, 2), double(std::sqrt(2.0f)));
  EXPECT_EQ(u(Ops::SIN, dtypes::float64, 1), std::sin(1.0));
  EXPECT_EQ(u(Ops::RECIP, dtypes::float32, 4), 0.25);
  EXPECT_TRUE(std::isinf(u(Ops::RECIP, dtypes::float32, 0)));
  EXPECT_EQ(u(Ops::TRUNC, dtypes::float32, -2.7), -2);
  EXPECT_EQ(u(Ops::NEG, dtypes::float32, 2), -2);
  EXPECT_TRUE(std::signbit(u(Ops::NEG, dtypes::float32, 0)));
  EXPECT_EQ(exec_alu(Ops::NEG, dtypes::int32, dtypes::int32, {I(5)}).i, -5);
  EXPECT_EQ(exec_alu(Ops::TRUNC, dtypes::int32, dtypes::int32, {I(5)}).i, 5);
}

TEST(ExecAlu, HalfKnownValues) {
  EXPECT_EQ(double_to_half_bits(1.0), 0x3c00);
  EXPECT_EQ(double_to_half_bits(-2.0), 0xc000);
  EXPECT_EQ(double_to_half_bits(65504.0), 0x7bff);
  EXPECT_EQ(double_to_half_bits(65520.0), 0x7c00);  // rounds up to inf (halfway, max is odd)
  EXPECT_EQ(double_to_half_bits(65519.99), 0x7bff);
  EXPECT_EQ(double_to_half_bits(std::ldexp(1.0, -24)), 0x0001);  // smallest subnormal
  EXPECT_EQ(double_to_half_bits(std::ldexp(1.0, -25)), 0x0000);  // halfway to 0: even
  EXPECT_EQ(double_to_half_bits(std::ldexp(1.5, -25)), 0x0001);
  EXPECT_EQ(double_to_half_bits(std::ldexp(3.0, -25)), 0x0002);        // 1.5 ulp -> 2 (even)
  EXPECT_EQ(double_to_half_bits(std::ldexp(1023.5, -24)), 0x0400);     // subnormal rounding into normal
  EXPECT_EQ(double_to_half_bits(1.0 + std::ldexp(1.0, -11)), 0x3c00);  // halfway: even
  EXPECT_EQ(double_to_half_bits(1.0 + std::ldexp(3.0, -11)), 0x3c02);
  EXPECT_EQ(double_to_half_bits(-0.0), 0x8000);
  EXPECT_EQ(double_to_half_bits(INFINITY), 0x7c00);
  EXPECT_EQ(double_to_half_bits(-INFINITY), 0xfc00);
  EXPECT_EQ(double_to_half_bits(NAN) & 0x7c00, 0x7c00);
  EXPECT_NE(double_to_half_bits(NAN) & 0x3ff, 0);
  EXPECT_EQ(half_bits_to_double(0x3555), 0.333251953125);
  EXPECT_EQ(half_bits_to_double(0x0001), std::ldexp(1.0, -24));
  EXPECT_TRUE(std::isnan(half_bits_to_double(0x7e00)));
  EXPECT_EQ(half_bits_to_double(0xfc00), -INFINITY);
}

TEST(ExecAlu, Bfloat16KnownValues) {
  EXPECT_EQ(double_to_bf16_bits(1.0), 0x3f80);
  EXPECT_EQ(double_to_bf16_bits(-1.0), 0xbf80);
  EXPECT_EQ(double_to_bf16_bits(1.0 + std::ldexp(1.0, -8)), 0x3f80);  // halfway: even
  EXPECT_EQ(double_to_bf16_bits(1.0 + std::ldexp(3.0, -8)), 0x3f82);
  EXPECT_EQ(double_to_bf16_bits(3.0e38), 0x7f62);
  EXPECT_EQ(double_to_bf16_bits(3.4e38), 0x7f80);  // overflow -> inf
  EXPECT_EQ(double_to_bf16_bits(std::ldexp(1.0, -133)), 0x0001);
  EXPECT_EQ(bf16_bits_to_double(0x4049), 3.140625);
}

// Every half bit pattern survives decode -> encode, and every float16 round trip agrees with the
// compiler's own conversion of a float where the compiler has _Float16.
TEST(ExecAlu, HalfExhaustive) {
  for (uint32_t b = 0; b < 0x10000; b++) {
    double d = half_bits_to_double(uint16_t(b));
    if (std::isnan(d)) continue;
    ASSERT_EQ(double_to_half_bits(d), b) << b;
    EXPECT_EQ(double_to_bf16_bits(bf16_bits_to_double(uint16_t(b))), b) << "bf16 " << b;
  }
#if TG_TEST_FLOAT16
  std::mt19937 rng(1);
  for (int k = 0; k < 200000; k++) {
    uint32_t fb = rng();
    float f;
    std::memcpy(&f, &fb, 4);
    if (std::isnan(f)) continue;
    ASSERT_EQ(double_to_half_bits(f), ref_half(f)) << f;
  }
#endif
}

// bfloat16 from float is well known: add the rounding bias to the high half of the bits.
TEST(ExecAlu, Bfloat16MatchesBitTrick) {
  std::mt19937 rng(2);
  for (int k = 0; k < 200000; k++) {
    uint32_t fb = rng();
    float f = std::bit_cast<float>(fb);
    if (std::isnan(f)) continue;
    uint32_t ref = (fb + 0x7fff + ((fb >> 16) & 1)) >> 16;
    ASSERT_EQ(double_to_bf16_bits(f), ref) << f;
  }
}

TEST(ExecAlu, Casts) {
  EXPECT_EQ(cast_num(F(-2.7), dtypes::float32, dtypes::int32).i, -2);
  EXPECT_EQ(cast_num(F(2.7), dtypes::float32, dtypes::uint8).i, 2);
  EXPECT_EQ(cast_num(F(300), dtypes::float32, dtypes::uint8).i, 44);  // out of range: wraps
  EXPECT_EQ(cast_num(F(NAN), dtypes::float32, dtypes::int32).i, 0);
  EXPECT_EQ(cast_num(F(0.5), dtypes::float32, dtypes::bool_).i, 1);
  EXPECT_EQ(cast_num(F(0.0), dtypes::float32, dtypes::bool_).i, 0);
  EXPECT_EQ(cast_num(I(-1), dtypes::int32, dtypes::uint8).i, 255);
  EXPECT_EQ(cast_num(I(255), dtypes::uint8, dtypes::int8).i, -1);
  EXPECT_EQ(cast_num(I(256), dtypes::int32, dtypes::bool_).i, 1);
  EXPECT_EQ(cast_num(I(-1), dtypes::int32, dtypes::uint64).i, -1);
  EXPECT_EQ(cast_num(I(-1), dtypes::uint64, dtypes::float64).f, 18446744073709551615.0);
  EXPECT_EQ(cast_num(I(-1), dtypes::int64, dtypes::float64).f, -1);
  EXPECT_EQ(cast_num(I((int64_t(1) << 53) + 1), dtypes::int64, dtypes::float32).f,
            double(float((int64_t(1) << 53) + 1)));
  EXPECT_EQ(cast_num(I(16777217), dtypes::int32, dtypes::float32).f, 16777216);
  EXPECT_EQ(cast_num(I(2049), dtypes::int32, dtypes::float16).f, 2048);
  EXPECT_EQ(cast_num(F(0.1), dtypes::float64, dtypes::float32).f, double(0.1f));
  EXPECT_EQ(cast_num(F(1e10), dtypes::float64, dtypes::float16).f, INFINITY);
  EXPECT_EQ(cast_num(I(1), dtypes::bool_, dtypes::float32).f, 1);
  EXPECT_EQ(cast_num(F(1e19), dtypes::float64, dtypes::uint64).i, int64_t(uint64_t(1e19)));
  EXPECT_EQ(exec_alu(Ops::CAST, dtypes::int32, dtypes::float32, {F(3.9)}).i, 3);
}

TEST(ExecAlu, Bitcasts) {
  EXPECT_EQ(bitcast_num(F(1.0), dtypes::float32, dtypes::int32).i, 0x3f800000);
  EXPECT_EQ(bitcast_num(F(-0.0), dtypes::float32, dtypes::uint32).i, 0x80000000LL);
  EXPECT_EQ(bitcast_num(I(0x3c00), dtypes::uint16, dtypes::float16).f, 1.0);
  EXPECT_EQ(bitcast_num(F(1.0), dtypes::bfloat16, dtypes::int16).i, 0x3f80);
  EXPECT_EQ(bitcast_num(I(-1), dtypes::int8, dtypes::uint8).i, 255);
  EXPECT_EQ(bitcast_num(I(0x4000000000000000LL), dtypes::int64, dtypes::float64).f, 2.0);
  EXPECT_EQ(exec_alu(Ops::BITCAST, dtypes::float32, dtypes::uint32, {I(0x40400000)}).f, 3.0);
  EXPECT_THROW(bitcast_num(F(1.0), dtypes::float32, dtypes::int16), Error);
  EXPECT_EQ(num_to_bits(I(-1), dtypes::int16), 0xffffu);
  EXPECT_EQ(num_from_bits(0xffff, dtypes::int16).i, -1);
}

TEST(ExecAlu, Truncate) {
  EXPECT_EQ(truncate_num(I(300), dtypes::uint8).i, 44);
  EXPECT_EQ(truncate_num(I(5), dtypes::bool_).i, 1);
  EXPECT_EQ(truncate_num(F(0.1), dtypes::float32).f, double(0.1f));
  EXPECT_EQ(truncate_num(F(0.1), dtypes::float64).f, 0.1);
  EXPECT_EQ(truncate_num(F(1.0 / 3), dtypes::float16).f, half_bits_to_double(0x3555));
}

TEST(ExecAlu, Threefry) {
  // Random123's known-answer test for threefry2x32_20 with zero counter and key.
  uint64_t r = uint64_t(exec_alu(Ops::THREEFRY, dtypes::uint64, dtypes::uint64, {I(0), I(0)}).i);
  EXPECT_EQ(uint32_t(r), 0x6b200159u);
  EXPECT_EQ(uint32_t(r >> 32), 0x99ba4efeu);
}

TEST(ExecAlu, ErrorsAreExceptions) {
  EXPECT_THROW(exec_alu(Ops::ADD, dtypes::int32, dtypes::int32, {I(1)}), Error);
  EXPECT_THROW(exec_alu(Ops::AND, dtypes::float32, dtypes::float32, {F(1), F(1)}), Error);
  EXPECT_THROW(exec_alu(Ops::LOAD, dtypes::int32, dtypes::int32, {}), Error);
}
