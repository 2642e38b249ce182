// Scalar ALU semantics. Integers are computed in 64-bit two's complement and then wrapped to the dtype,
// which is what C gives after integer promotion and the store back (signed overflow wraps here instead of
// being undefined). Floats are computed in double and rounded to the dtype: for + - * / sqrt a double
// result rounded once more to float32/half/bfloat16 equals the correctly rounded narrow result.
#include "uop/exec_alu.h"

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

#include "tg/error.h"

namespace tg {
namespace {

int bit_width(DType dt) { return dt.is_bool() ? 1 : dt.scalar_type().itemsize() * 8; }

// Wrap a 64-bit pattern to an integer/bool dtype.
int64_t wrap_int(uint64_t v, DType dt) {
  switch (dt.scalar) {
    case Scalar::Bool:
      return v != 0;
    case Scalar::Int8:
      return static_cast<int8_t>(v);
    case Scalar::UInt8:
      return static_cast<uint8_t>(v);
    case Scalar::Int16:
      return static_cast<int16_t>(v);
    case Scalar::UInt16:
      return static_cast<uint16_t>(v);
    case Scalar::Int32:
      return static_cast<int32_t>(v);
    case Scalar::UInt32:
      return static_cast<uint32_t>(v);
    default:
      return static_cast<int64_t>(v);  // int64, uint64 (bit pattern)
  }
}

// Encode a double into a narrow IEEE-like format with `E` exponent bits and `M` mantissa bits, rounding
// to nearest even. Works from the double's own bits so no intermediate rounding happens.
uint32_t encode_narrow(double x, int E, int M) {
  uint64_t b = std::bit_cast<uint64_t>(x);
  uint32_t sign = uint32_t(b >> 63) << (E + M);
  uint32_t exp_all = (1u << E) - 1;
  if (std::isnan(x)) return sign | (exp_all << M) | (1u << (M - 1));  // quiet NaN
  if (std::isinf(x)) return sign | (exp_all << M);
  int dexp = int((b >> 52) & 0x7ff);
  if (dexp == 0) return sign;  // zero or a double subnormal: far below any narrow subnormal
  int e = dexp - 1023;
  uint64_t m = (uint64_t(1) << 52) | (b & ((uint64_t(1) << 52) - 1));  // 53 significant bits
  int bias = (1 << (E - 1)) - 1;
  int min_e = 1 - bias;
  bool normal = e >= min_e;
  int shift = 52 - M + (normal ? 0 : min_e - e);
  if (shift > 60) return sign;  // below half the smallest subnormal
  uint64_t r = m >> shift, rem = m & ((uint64_t(1) << shift) - 1), half = uint64_t(1) << (shift - 1);
  if (rem > half || (rem == half && (r & 1))) r++;
  // A carry out of the mantissa bumps the exponent by itself (and past the top gives inf: mantissa 0).
  uint64_t mag = normal ? (uint64_t(e + bias) << M) + (r - (uint64_t(1) << M)) : r;
  if (mag >= uint64_t(exp_all) << M) mag = uint64_t(exp_all) << M;
  return sign | uint32_t(mag);
}

double decode_narrow(uint32_t bits, int E, int M) {
  bool neg = (bits >> (E + M)) & 1;
  uint32_t exp = (bits >> M) & ((1u << E) - 1), man = bits & ((1u << M) - 1);
  int bias = (1 << (E - 1)) - 1;
  double v;
  if (exp == (1u << E) - 1)
    v = man ? std::numeric_limits<double>::quiet_NaN() : std::numeric_limits<double>::infinity();
  else if (exp == 0)
    v = std::ldexp(double(man), 1 - bias - M);
  else
    v = std::ldexp(double(man | (1u << M)), int(exp) - bias - M);
  return neg ? -v : v;
}

double round_float(double x, DType dt) {
  switch (dt.scalar) {
    case Scalar::Float16:
      return half_bits_to_double(double_to_half_bits(x));
    case Scalar::BFloat16:
      return bf16_bits_to_double(double_to_bf16_bits(x));
    case Scalar::Float32:
      return double(float(x));
    default:
      return x;
  }
}

// C's float -> integer conversion truncates; out of range is undefined in C, here it wraps like Python's
// int() followed by a store (NaN and inf give 0) so results are at least deterministic.
int64_t float_to_int(double x, DType dt) {
  if (dt.is_bool()) return x != 0;  // NaN != 0 is true, as in C
  if (!std::isfinite(x)) return 0;
  double t = std::trunc(x);
  uint64_t bits;
  if (t >= 0x1p64 || t <= -0x1p64)
    bits = 0;
  else if (t >= 0x1p63)
    bits = uint64_t(t);
  else if (t < -0x1p63)
    bits = 0 - uint64_t(-t);
  else
    bits = uint64_t(int64_t(t));
  return wrap_int(bits, dt);
}

uint32_t rotl32(uint32_t x, int r) { return (x << r) | (x >> (32 - r)); }

// Threefry-2x32 with 20 rounds (Random123), as tinygrad defines THREEFRY on uint64: the low/high words of
// x are the counter, of key the key.
uint64_t threefry2x32(uint64_t x, uint64_t key) {
  static constexpr int kRot[2][4] = {{13, 15, 26, 6}, {17, 29, 16, 24}};
  uint32_t k0 = uint32_t(key), k1 = uint32_t(key >> 32);
  uint32_t ks[3] = {k1, k0 ^ k1 ^ 0x1BD11BDAu, k0};
  uint32_t x0 = uint32_t(x) + ks[2], x1 = uint32_t(x >> 32) + ks[0];
  for (int i = 0; i < 5; i++) {
    for (int r : kRot[i % 2]) {
      x0 += x1;
      x1 = rotl32(x1, r) ^ x0;
    }
    x0 += ks[i % 3];
    x1 += ks[(i + 1) % 3] + uint32_t(i + 1);
  }
  return (uint64_t(x1) << 32) | x0;
}

bool int_like(DType dt) { return dt.is_int() || dt.is_bool(); }

Num make_int(uint64_t v, DType dt) { return Num{wrap_int(v, dt), 0}; }
Num make_float(double v, DType dt) { return Num{0, round_float(v, dt)}; }

Num int_binary(Ops op, DType dt, int64_t a, int64_t b) {
  bool uns = dt.is_unsigned();
  uint64_t ua = uint64_t(a), ub = uint64_t(b);
  switch (op) {
    case Ops::ADD:
      return make_int(ua + ub, dt);
    case Ops::SUB:
      return make_int(ua - ub, dt);
    case Ops::MUL:
      return make_int(ua * ub, dt);
    case Ops::IDIV:
      if (b == 0) return make_int(0, dt);
      if (uns) return make_int(ua / ub, dt);
      if (a == std::numeric_limits<int64_t>::min() && b == -1) return make_int(ua, dt);
      return make_int(uint64_t(a / b), dt);
    case Ops::MOD:
      if (b == 0) return make_int(0, dt);
      if (uns) return make_int(ua % ub, dt);
      if (b == -1) return make_int(0, dt);
      return make_int(uint64_t(a % b), dt);
    case Ops::MAX:
      return make_int(uns ? std::max(ua, ub) : uint64_t(std::max(a, b)), dt);
    case Ops::AND:
      return make_int(ua & ub, dt);
    case Ops::OR:
      return make_int(ua | ub, dt);
    case Ops::XOR:
      return make_int(ua ^ ub, dt);
    case Ops::SHL:
      if (b < 0 || b >= 64) return make_int(0, dt);
      return make_int(ua << b, dt);
    case Ops::SHR:
      if (uns) return make_int(b < 0 || b >= 64 ? 0 : ua >> b, dt);
      if (b < 0 || b >= 64) return make_int(a < 0 ? ~uint64_t(0) : 0, dt);
      return make_int(uint64_t(a >> b), dt);  // arithmetic shift (defined since C++20)
    case Ops::FDIV: {
      double db = uns ? double(ub) : double(b);
      if (db == 0) return make_int(0, dt);
      return Num{float_to_int((uns ? double(ua) : double(a)) / db, dt), 0};
    }
    case Ops::THREEFRY:
      return make_int(threefry2x32(ua, ub), dt);
    default:
      break;
  }
  throw Error(std::string("exec_alu: ") + op_name(op) + " is not a binary op on " + dt.repr());
}

Num float_binary(Ops op, DType dt, double a, double b) {
  switch (op) {
    case Ops::ADD:
      return make_float(a + b, dt);
    case Ops::SUB:
      return make_float(a - b, dt);
    case Ops::MUL:
      return make_float(a * b, dt);
    case Ops::FDIV:
      return make_float(a / b, dt);
    case Ops::IDIV:
      return make_float(std::trunc(a / b), dt);
    case Ops::MOD:
      return make_float(std::fmod(a, b), dt);
    case Ops::POW:
      return make_float(std::pow(a, b), dt);  // C's special values, which decompositions' exp2/log2 form keeps
    case Ops::MAX:
      return make_float(a < b || b != b ? b : a, dt);  // NaN propagates from either operand, as torch's maximum
    default:
      break;
  }
  throw Error(std::string("exec_alu: ") + op_name(op) + " is not defined on " + dt.repr());
}

Num unary(Ops op, DType dt, Num a) {
  if (op == Ops::NEG) return int_like(dt) ? make_int(0 - uint64_t(a.i), dt) : make_float(-a.f, dt);
  if (op == Ops::TRUNC) return int_like(dt) ? a : make_float(std::trunc(a.f), dt);
  // Transcendentals on integer dtypes are not emitted by tinygrad; compute in double and convert back.
  double x = int_like(dt) ? num_as_double(a, dt) : a.f, r;
  switch (op) {
    case Ops::EXP2:
      r = std::exp2(x);
      break;
    case Ops::LOG2:
      r = std::log2(x);
      break;  // log2(0) = -inf, log2(<0) = NaN
    case Ops::SIN:
      r = std::sin(x);
      break;
    case Ops::SQRT:
      r = std::sqrt(x);
      break;
    case Ops::RECIP:
      r = 1.0 / x;
      break;
    default:
      throw Error(std::string("exec_alu: ") + op_name(op) + " is not a unary op");
  }
  return int_like(dt) ? Num{float_to_int(r, dt), 0} : make_float(r, dt);
}

}  // namespace

uint16_t double_to_half_bits(double x) { return uint16_t(encode_narrow(x, 5, 10)); }
double half_bits_to_double(uint16_t bits) { return decode_narrow(bits, 5, 10); }
uint16_t double_to_bf16_bits(double x) { return uint16_t(encode_narrow(x, 8, 7)); }
double bf16_bits_to_double(uint16_t bits) { return decode_narrow(bits, 8, 7); }

double num_as_double(Num v, DType dt) {
  if (dt.is_float()) return v.f;
  if (dt.scalar == Scalar::UInt64) return double(uint64_t(v.i));
  return double(v.i);
}

Num truncate_num(Num v, DType dt) {
  if (dt.is_float()) return make_float(v.f, dt);
  if (int_like(dt)) return make_int(uint64_t(v.i), dt);
  return v;
}

Num cast_num(Num v, DType from, DType to) {
  if (to.is_float()) {
    if (from.is_float()) return make_float(v.f, to);
    // One rounding straight from the integer where it matters most (int64 -> float32); other paths
    // through double are exact for every int below 2^53.
    if (to.scalar == Scalar::Float32)
      return Num{0, double(from.scalar == Scalar::UInt64 ? float(uint64_t(v.i)) : float(v.i))};
    return make_float(num_as_double(v, from), to);
  }
  if (!int_like(to)) return v;
  if (from.is_float()) return Num{float_to_int(v.f, to), 0};
  return make_int(uint64_t(v.i), to);
}

uint64_t num_to_bits(Num v, DType dt) {
  switch (dt.scalar) {
    case Scalar::Float16:
      return double_to_half_bits(v.f);
    case Scalar::BFloat16:
      return double_to_bf16_bits(v.f);
    case Scalar::Float32:
      return std::bit_cast<uint32_t>(float(v.f));
    case Scalar::Float64:
      return std::bit_cast<uint64_t>(v.f);
    default: {
      int w = bit_width(dt);
      uint64_t b = uint64_t(v.i);
      return w >= 64 ? b : b & ((uint64_t(1) << w) - 1);
    }
  }
}

Num num_from_bits(uint64_t bits, DType dt) {
  switch (dt.scalar) {
    case Scalar::Float16:
      return Num{0, half_bits_to_double(uint16_t(bits))};
    case Scalar::BFloat16:
      return Num{0, bf16_bits_to_double(uint16_t(bits))};
    case Scalar::Float32:
      return Num{0, double(std::bit_cast<float>(uint32_t(bits)))};
    case Scalar::Float64:
      return Num{0, std::bit_cast<double>(bits)};
    default:
      return make_int(bits, dt);
  }
}

Num bitcast_num(Num v, DType from, DType to) {
  if (from.scalar_type().itemsize() != to.scalar_type().itemsize())
    throw Error("bitcast_num: " + from.repr() + " and " + to.repr() + " differ in size");
  return num_from_bits(num_to_bits(v, from), to);
}

Num exec_alu(Ops op, DType dtype, DType src_dtype, const std::vector<Num>& srcs) {
  DType dt = dtype.scalar_type(), sdt = src_dtype.scalar_type();
  auto need = [&](size_t n) {
    if (srcs.size() != n)
      throw Error(std::string("exec_alu: ") + op_name(op) + " takes " + std::to_string(n) + " sources, got " +
                  std::to_string(srcs.size()));
  };
  switch (op) {
    case Ops::CAST:
      need(1);
      return cast_num(srcs[0], sdt, dt);
    case Ops::BITCAST:
      need(1);
      return bitcast_num(srcs[0], sdt, dt);
    case Ops::WHERE:
      need(3);
      return truncate_num(srcs[0].i ? srcs[1] : srcs[2], dt);
    case Ops::MULACC: {
      need(3);
      if (int_like(dt)) return make_int(uint64_t(srcs[0].i) * uint64_t(srcs[1].i) + uint64_t(srcs[2].i), dt);
      return make_float(srcs[0].f * srcs[1].f + srcs[2].f, dt);
    }
    case Ops::DOT4: {  // int32: c + sum over k of byte k of a (unsigned) * byte k of b (signed), wrapping
      need(3);
      if (dt != dtypes::int32) throw Error("exec_alu: DOT4 on " + dt.repr() + " (expected int32)");
      uint64_t acc = uint64_t(srcs[2].i);
      for (int k = 0; k < 4; k++)
        acc += uint64_t(int64_t((uint64_t(srcs[0].i) >> (8 * k)) & 255) *
                        int64_t(int8_t(uint8_t(uint64_t(srcs[1].i) >> (8 * k)))));
      return make_int(acc, dt);
    }
    case Ops::CMPLT:
    case Ops::CMPNE: {
      need(2);
      const Num &a = srcs[0], &b = srcs[1];
      bool r;
      if (sdt.is_float())
        r = op == Ops::CMPLT ? a.f < b.f : a.f != b.f;
      else if (sdt.scalar == Scalar::UInt64)
        r = op == Ops::CMPLT ? uint64_t(a.i) < uint64_t(b.i) : a.i != b.i;
      else
        r = op == Ops::CMPLT ? a.i < b.i : a.i != b.i;
      return Num{r, 0};
    }
    default:
      break;
  }
  if (is_unary(op)) {
    need(1);
    return unary(op, dt, srcs[0]);
  }
  if (is_binary(op)) {
    need(2);
    if (int_like(dt)) return int_binary(op, dt, srcs[0].i, srcs[1].i);
    return float_binary(op, dt, srcs[0].f, srcs[1].f);
  }
  throw Error(std::string("exec_alu: ") + op_name(op) + " is not an ALU op");
}

}  // namespace tg
