// More elementwise math, built lazily from the primitive ALU ops as tinygrad does: trig from SIN and
// polynomials, hyperbolics from EXP2/LOG2, rounding from TRUNC, pow from EXP2/LOG2 with sign fixes, and
// the integer ops (IDIV, MOD, AND/OR/XOR, SHL/SHR) as single UOps.
#include <cmath>
#include <limits>

#include "tensor/math_helpers.h"

namespace tg {
using mathx::alu;
using mathx::broadcast_pair;

namespace {

constexpr double kPi = 3.14159265358979323846;

// Horner evaluation of coefficients given highest degree first (tinygrad's polyN).
Tensor poly(const Tensor& x, const std::vector<double>& coeffs) {
  Tensor acc = x * coeffs[0] + coeffs[1];
  for (size_t i = 2; i < coeffs.size(); i++) acc = acc * x + coeffs[i];
  return acc;
}

// An odd function from its values at |x|: f(|x|) with x's sign. |x| is where(x < 0, -x, x) so the chain rule
// gives f'(|x|) (x * sign(x) would have derivative 0 at 0). At 0 itself the result is x * f'(0): the exact 0
// (keeping -0.0), with the true slope, where a polynomial's f(0) can be off by an ulp of its constant term.
template <class F>
Tensor odd_from_abs(const Tensor& x, double slope_at_0, F f) {
  Tensor neg = x < 0;
  Tensor r = f(neg.where(-x, x));
  return (x == 0).where(x * slope_at_0, neg.where(-r, r));
}

// Polynomial approximations add up many rounded terms: half floats evaluate them in float32 and round
// once at the end.
DType wide_float(DType dt) { return dtypes::promote(mathx::float_of(dt), dtypes::float32); }

// x ** n for an integer n >= 0 by repeated squaring: exact for ints, few roundings for floats.
Tensor int_power(const Tensor& x, uint64_t n) {
  if (n == 0) return x.ones_like();
  if (n == 1) return x;
  Tensor half = int_power(x, n / 2);
  Tensor sq = half * half;
  return n % 2 ? sq * x : sq;
}

// A double bound as a C++ number that keeps an int tensor int when the bound is integral.
ConstValue bound_for(const Tensor& t, double v) {
  if (!t.dtype().is_float() && std::isfinite(v) && v == std::floor(v) && std::abs(v) < 9.0e18)
    return ConstValue(int64_t(v));
  return ConstValue(v);
}

void require_int_or_bool(const char* op, const Tensor& x, const Tensor& y) {
  for (const Tensor* t : {&x, &y})
    if (t->dtype().is_float())
      throw Error(std::string(op) + ": expected int or bool tensors, got " + x.dtype().name() + " and " +
                  y.dtype().name());
}

// Integer pow with an integer exponent tensor (both already broadcast to one int dtype): binary
// exponentiation over the exponent's bits. A negative exponent gives 1 / base**|e| truncated toward zero,
// i.e. 1 for base 1, +-1 for base -1 and 0 otherwise (Python raises; torch refuses; we define it).
Tensor int_pow_tensor(const Tensor& base, const Tensor& e) {
  DType dt = base.dtype();
  int bits = dt.itemsize() * 8 - (dt.is_unsigned() ? 0 : 1);
  Tensor mag = dt.is_unsigned() ? e : (e < 0).where(-e, e);
  Tensor one = mathx::int_const_like(base, 1), result = one, p = base;
  for (int b = 0; b < bits; b++) {
    Tensor bit = alu(Ops::AND, alu(Ops::SHR, mag, mathx::int_const_like(mag, b)), mathx::int_const_like(mag, 1));
    result = (bit != 0).where(result * p, result);
    if (b + 1 < bits) p = p * p;
  }
  if (dt.is_unsigned()) return result;
  Tensor odd = alu(Ops::AND, mag, mathx::int_const_like(mag, 1)) != 0;
  Tensor neg_exp = (base == 1).where(one, (base == -1).where(odd.where(-one, one), base.zeros_like()));
  return (e < 0).where(neg_exp, result);
}

// Float pow of two broadcast float tensors: one POW node (in at least float32), with its own gradient rule
// (gradient_rules.cpp); uop/decompositions turns it into tinygrad's exp2(e * log2|b|) with C's sign and
// special-value rules when the kernel is lowered. Built from those pieces here instead, x ** 2.0 had gradient 0
// at x = 1 (the where forcing 1 ** y = 1 blocks it) and nan at a zero or infinite base.
Tensor float_pow_tensor(const Tensor& base_in, const Tensor& e_in) {
  DType wide = wide_float(base_in.dtype());
  return alu(Ops::POW, base_in.cast(wide), e_in.cast(wide)).cast(base_in.dtype());
}

}  // namespace

// ---- sign and magnitude ----
Tensor Tensor::sign() const {
  if (dtype().is_bool()) return *this;
  Tensor s = ne(broadcast_scalar(*this, 0)).where((*this < 0).where(-1, 1), 0).cast(dtype());
  // tinygrad returns 1 for nan; torch and numpy propagate it, which keeps abs(nan) = nan too.
  return dtype().is_float() ? isnan().where(*this, s) : s;
}
Tensor Tensor::abs() const {
  if (dtype().is_bool() || dtype().is_unsigned()) return *this;
  return *this * sign();
}
Tensor Tensor::square() const { return *this * *this; }
Tensor Tensor::rsqrt() const { return sqrt().reciprocal(); }

// ---- trigonometry ----
// cos(x) = sin(pi/2 - x), computed in at least float32 (as tinygrad) and returned in x's float dtype.
Tensor Tensor::cos() const {
  DType ft = mathx::float_of(dtype());
  DType wide = dtypes::promote(ft, dtypes::float32);
  return (kPi / 2 - cast(wide)).sin().cast(ft);
}
Tensor Tensor::tan() const { return sin() / cos(); }

// Abramowitz & Stegun 4.4.46: |error| <= 2e-8 on [0, 1]; |x| > 1 gives nan through sqrt of a negative.
Tensor Tensor::asin() const {
  static const std::vector<double> kCoeffs = {-0.0012624911, 0.0066700901, -0.0170881256, 0.0308918810,
                                             -0.0501743046, 0.0889789874, -0.2145988016, 1.5707963050};
  Tensor x = cast(wide_float(dtype()));
  Tensor r = odd_from_abs(x, 1.0, [](const Tensor& a) { return kPi / 2 - (1.0 - a).sqrt() * poly(a, kCoeffs); });
  return r.cast(mathx::float_of(dtype()));
}
Tensor Tensor::acos() const { return (kPi / 2 - cast(wide_float(dtype())).asin()).cast(mathx::float_of(dtype())); }

// tinygrad's asin(x / sqrt(1 + x^2)) loses x^2 to overflow and asin's precision near 1 for large |x|, so
// |x| > 1 goes through atan(x) = sign(x) * pi/2 - atan(1/x), keeping asin's argument below 1/sqrt(2).
Tensor Tensor::atan() const {
  Tensor x = cast(wide_float(dtype()));
  Tensor big = x.abs() > 1;
  // The branch not taken sees a harmless 1, so its derivative stays finite (where's gradient masks it).
  Tensor y = big.where(big.where(x, 1.0).reciprocal(), x);
  Tensor a = (y * (y * y + 1.0).rsqrt()).asin();
  return big.where(x.sign() * (kPi / 2) - a, a).cast(mathx::float_of(dtype()));
}

// ---- hyperbolic ----
Tensor Tensor::sinh() const { return (exp() - neg().exp()) / 2; }
Tensor Tensor::cosh() const { return (exp() + neg().exp()) / 2; }
// asinh is odd: evaluating at |x| avoids the cancellation of x + sqrt(x^2 + 1) for large negative x, and
// log|x| + log(1 + sqrt(1 + 1/x^2)) for |x| > 1 avoids overflowing x^2.
Tensor Tensor::asinh() const {
  return odd_from_abs(cast(mathx::float_of(dtype())), 1.0, [](const Tensor& a) {
    Tensor big = a > 1;
    Tensor as = big.where(1.0, a), al = big.where(a, 2.0);  // each branch sees inputs where it is finite
    Tensor small = (as + (as * as + 1.0).sqrt()).log();
    Tensor inv = al.reciprocal();
    Tensor large = al.log() + ((inv * inv + 1.0).sqrt() + 1.0).log();
    return big.where(large, small);
  });
}
Tensor Tensor::acosh() const {
  Tensor x = cast(mathx::float_of(dtype()));
  Tensor inv = x.reciprocal();
  // log(x + sqrt(x^2 - 1)) = log|x| + log(1 + sqrt(1 - 1/x^2)) for x >= 1, with no overflow of x^2. Times sign(x)
  // its derivative is 1/sqrt(x^2 - 1) for every |x| > 1, the textbook formula's (and torch's) gradient; the value
  // is nan below 1 through an added constant, which carries no gradient.
  Tensor odd = x.sign() * (x.abs().log() + ((1.0 - inv * inv).sqrt() + 1.0).log());
  return odd + (x < 1).where(std::numeric_limits<double>::quiet_NaN(), 0.0);
}
// (log(1 + x) - log(1 - x)) / 2: its derivative (1/(1+x) + 1/(1-x)) / 2 is inf at +-1 as torch's, where the
// quotient's log gave 1/inf * inf = nan.
Tensor Tensor::atanh() const { return ((1.0 + *this).log() - (1.0 - *this).log()) / 2; }

// Abramowitz & Stegun 7.1.26, |error| <= 1.5e-7 (tinygrad's erf). |x| is capped at 6 (erf(6) is 1 to 2e-17):
// at +-inf, exp(-x^2) = 0 times the derivative of x^2 = inf would make the gradient nan.
Tensor Tensor::erf() const {
  static const std::vector<double> kCoeffs = {1.061405429, -1.453152027, 1.421413741, -0.284496736, 0.254829592};
  static const double kSlope0 = 2 / std::sqrt(kPi);
  Tensor x = cast(wide_float(dtype()));
  Tensor r = odd_from_abs(x, kSlope0, [](const Tensor& a_in) {
    Tensor a = (a_in > 6).where(6.0, a_in);
    Tensor t = 1.0 / (1.0 + 0.3275911 * a);
    return 1.0 - t * poly(t, kCoeffs) * (-a.square()).exp();
  });
  return r.cast(mathx::float_of(dtype()));
}

// ---- rounding (ints are already integral) ----
Tensor Tensor::floor() const {
  if (!dtype().is_float()) return *this;
  Tensor b = trunc();
  return (*this < b).where(b - 1, b);
}
Tensor Tensor::ceil() const {
  if (!dtype().is_float()) return *this;
  Tensor b = trunc();
  return (*this > b).where(b + 1, b);
}
// Half to even: where x > 0 agrees with "trunc(x) is even", ties go toward zero (ceil(x - 0.5) for x > 0,
// floor(x + 0.5) for x < 0), otherwise away from it.
// Integral values (all floats from 2^mantissa up) are returned as they are: x + 0.5 would round there.
Tensor Tensor::round() const {
  if (!dtype().is_float()) return *this;
  Tensor t = trunc();
  Tensor half = t / 2.0;
  Tensor even = half.trunc() == half;
  Tensor r = (*this > 0).eq(even).where((*this - 0.5).ceil(), (*this + 0.5).floor());
  return (t == *this).where(t, r);  // t, not *this: round is piecewise constant, its gradient 0 everywhere
}

// ---- classification ----
Tensor Tensor::isnan() const {
  if (!dtype().is_float()) return full(shape(), false, {.dtype = dtypes::bool_, .device = device()});
  return *this != *this;
}
Tensor Tensor::isinf(bool detect_positive, bool detect_negative) const {
  if (!dtype().is_float() || (!detect_positive && !detect_negative))
    return full(shape(), false, {.dtype = dtypes::bool_, .device = device()});
  double inf = std::numeric_limits<double>::infinity();
  if (!detect_negative) return *this == inf;
  if (!detect_positive) return *this == -inf;
  return (*this == inf) + (*this == -inf);
}

// ---- pow ----
Tensor Tensor::pow(ConstValue exponent) const {
  double e = exponent.value;
  bool int_exp = exponent.kind != dtypes::float32;
  if (!dtype().is_float() && int_exp) {
    if (e < 0)
      throw Error("pow: integer tensor (" + dtype().name() + ") to the negative integer power " +
                  std::to_string(int64_t(e)) + " (expected an exponent >= 0, or a float tensor)");
    Tensor base = dtype().is_bool() ? cast(dtypes::int32) : *this;
    return int_power(base, uint64_t(e));
  }
  Tensor x = cast(mathx::float_of(dtype()));
  // Exact products for integer exponents; anything else is a POW node (a constant half-integer exponent is
  // lowered to products and a sqrt, see uop/decompositions).
  // (x ** 0 too is a POW: a constant 1 would leave x out of the graph, where torch's gradient is 0.)
  bool integral = std::isfinite(e) && e == std::floor(e) && std::abs(e) <= 1 << 20 && e != 0;
  // (1/x)^n rather than 1/x^n for e < 0: the same rounding, but the gradient stays finite where x^n is 0 or inf
  // (x ** -2 at 0 is -inf as torch's, not nan)
  if (integral) return e < 0 ? int_power(x.reciprocal(), uint64_t(-e)) : int_power(x, uint64_t(e));
  return x.pow(broadcast_scalar(x, e));
}

Tensor Tensor::pow(const Tensor& exponent) const {
  auto [b, e] = broadcast_pair("pow", *this, exponent);
  if (b.dtype().is_bool()) {
    b = b.cast(dtypes::int32);
    e = e.cast(dtypes::int32);
  }
  if (!b.dtype().is_float()) return int_pow_tensor(b, e);
  return float_pow_tensor(b, e);
}

// ---- integer division and remainder ----
Tensor Tensor::idiv(const Tensor& y) const {
  auto [a, b] = broadcast_pair("idiv", *this, y);
  if (!a.dtype().is_int())
    throw Error("idiv: expected integer tensors, got " + dtype().name() + " and " + y.dtype().name() +
                " (use div for true division, then trunc or floor)");
  return alu(Ops::IDIV, a, b);  // truncates toward zero; x idiv 0 is 0 (the backends define it)
}

// Python's remainder takes the divisor's sign: the truncated remainder (C's % / fmod), moved by one
// divisor when it is nonzero and its sign differs. fmod keeps floats exact, unlike a - floor(a/b)*b.
Tensor Tensor::mod(const Tensor& y) const {
  auto [a, b] = broadcast_pair("mod", *this, y);
  if (a.dtype().is_bool()) throw Error("mod: bool tensors have no remainder (expected int or float)");
  bool is_float = a.dtype().is_float();
  Tensor ad = is_float ? a.detach() : a, bd = is_float ? b.detach() : b;
  Tensor r = alu(Ops::MOD, ad, bd);
  Tensor fix = (r != 0) * ((r < 0) != (bd < 0));
  r = fix.where(r + bd, r);
  if (!is_float) return r;
  // MOD has no gradient, but a mod b = a - floor(a/b) * b does: add terms that are exactly 0 in value and
  // carry d/da = 1, d/db = -floor(a/b). (An infinite b would make b - b be nan; its term is dropped there.)
  Tensor q = (ad / bd).floor();
  return r + (a - ad) - bd.isinf().where(0.0, q * (b - bd));
}

Tensor Tensor::clamp(std::optional<double> min_, std::optional<double> max_) const {
  if (!min_ && !max_) throw Error("clamp: at least one of min_ and max_ must be given");
  Tensor r = *this;
  if (min_) {
    ConstValue lo = bound_for(r, *min_);
    r = (r < lo).where(lo, r);
  }
  if (max_) {
    ConstValue hi = bound_for(r, *max_);
    r = (r > hi).where(hi, r);
  }
  return r;
}
Tensor Tensor::clip(std::optional<double> min_, std::optional<double> max_) const { return clamp(min_, max_); }

Tensor Tensor::lerp(const Tensor& end, const Tensor& weight) const { return *this + (end - *this) * weight; }
Tensor Tensor::lerp(const Tensor& end, ConstValue weight) const {
  Tensor d = end - *this;
  return *this + d * broadcast_scalar(d, weight);
}

// ---- bitwise ----
Tensor Tensor::bitwise_and(const Tensor& y) const {
  require_int_or_bool("bitwise_and", *this, y);
  auto [a, b] = broadcast_pair("bitwise_and", *this, y);
  return alu(Ops::AND, a, b);
}
Tensor Tensor::bitwise_or(const Tensor& y) const {
  require_int_or_bool("bitwise_or", *this, y);
  auto [a, b] = broadcast_pair("bitwise_or", *this, y);
  return alu(Ops::OR, a, b);
}
Tensor Tensor::bitwise_xor(const Tensor& y) const {
  require_int_or_bool("bitwise_xor", *this, y);
  auto [a, b] = broadcast_pair("bitwise_xor", *this, y);
  return alu(Ops::XOR, a, b);
}
Tensor Tensor::mod(ConstValue y) const { return mod(broadcast_scalar(*this, y)); }
Tensor Tensor::idiv(ConstValue y) const { return idiv(broadcast_scalar(*this, y)); }
Tensor Tensor::bitwise_and(ConstValue y) const { return bitwise_and(broadcast_scalar(*this, y)); }
Tensor Tensor::bitwise_or(ConstValue y) const { return bitwise_or(broadcast_scalar(*this, y)); }
Tensor Tensor::bitwise_xor(ConstValue y) const { return bitwise_xor(broadcast_scalar(*this, y)); }
Tensor Tensor::bitwise_not() const {
  if (dtype().is_float()) throw Error("bitwise_not: expected an int or bool tensor, got " + dtype().name());
  if (dtype().is_bool()) return logical_not();
  return alu(Ops::XOR, *this, mathx::int_const_like(*this, -1));
}

Tensor Tensor::lshift(int64_t bits) const {
  if (!dtype().is_int()) throw Error("lshift: expected an integer tensor, got " + dtype().name());
  if (bits < 0) throw Error("lshift: shift " + std::to_string(bits) + " is negative (expected >= 0)");
  return alu(Ops::SHL, *this, mathx::int_const_like(*this, bits));
}
Tensor Tensor::rshift(int64_t bits) const {
  if (!dtype().is_int()) throw Error("rshift: expected an integer tensor, got " + dtype().name());
  if (bits < 0) throw Error("rshift: shift " + std::to_string(bits) + " is negative (expected >= 0)");
  return alu(Ops::SHR, *this, mathx::int_const_like(*this, bits));  // arithmetic for signed ints
}

}  // namespace tg
