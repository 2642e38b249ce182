// Activation functions, each a few lazy elementwise ops as in tinygrad. Formulas are chosen to stay finite
// where the textbook form overflows (sigmoid and softplus from e^-|x|, never above 1), and so that their
// gradients are torch's at the ties (0, the ends of hardtanh's interval) and finite at +-inf.
#include <cmath>

#include "tensor/math_helpers.h"

namespace tg {
namespace {

constexpr double kLn2 = 0.69314718055994530942;
constexpr double kPi = 3.14159265358979323846;

// A double bound as a C++ number that keeps an int tensor int when the bound is integral (as clamp does).
ConstValue bound_for(const Tensor& t, double v) {
  if (!t.dtype().is_float() && std::isfinite(v) && v == std::floor(v) && std::abs(v) < 9.0e18)
    return ConstValue(int64_t(v));
  return ConstValue(v);
}

}  // namespace

// 1 / (1 + e^-x) for x >= 0 and e^x / (1 + e^x) below, both from e = e^-|x| in (0, 1]: no exponent is positive,
// so nothing overflows. With e^-x alone, x = -400 gives 1 / (1 + inf) = 0 forward but inf * 0 = nan in the
// gradient; here the gradient is 0 there (and for tanh, gelu, quick_gelu and silu, built on this).
// |x| is taken as where(x >= 0, x, -x), whose derivative is 1 at 0 (x * sign(x) has 0 there): the x >= 0
// branch then gives sigmoid'(0) = 1/4, not 0.
Tensor Tensor::sigmoid() const {
  Tensor pos = *this >= 0;
  Tensor e = (pos.where(*this, -*this) * (-1.0 / kLn2)).exp2();
  Tensor r = (1.0 + e).reciprocal();
  return pos.where(r, e * r);
}
Tensor Tensor::tanh() const { return 2.0 * (2.0 * *this).sigmoid() - 1.0; }

Tensor Tensor::gelu() const {  // tanh approximation, tinygrad's default
  return 0.5 * *this * (1.0 + (std::sqrt(2.0 / kPi) * (*this + 0.044715 * *this * *this * *this)).tanh());
}
Tensor Tensor::quick_gelu() const { return *this * (*this * 1.702).sigmoid(); }
Tensor Tensor::silu() const { return *this * sigmoid(); }

// The exponential branch of elu/celu/selu sees min(x, 0): at x = 100 exp(x) is inf, and even untaken its
// derivative would turn the zero gradient that where sends there into 0 * inf = nan. x > 0 picks the linear
// branch, so at 0 the derivative is the exponential's (alpha), as torch's.
Tensor Tensor::elu(double alpha) const {
  Tensor pos = *this > 0;
  return pos.where(*this, alpha * (pos.where(0.0, *this).exp() - 1.0));
}
Tensor Tensor::celu(double alpha) const {
  if (alpha == 0) throw Error("celu: alpha must not be 0 (it divides x)");
  Tensor pos = *this > 0;
  return pos.where(*this, alpha * ((pos.where(0.0, *this) / alpha).exp() - 1.0));
}
// The constants of the SELU paper (torch's), to full double precision; tinygrad rounds them to 1.67326
// and 1.0507.
Tensor Tensor::selu() const {
  constexpr double kAlpha = 1.6732632423543772848170429916717, kScale = 1.0507009873554804934193349852946;
  return kScale * elu(kAlpha);
}
// Slope neg_slope at 0, as torch's (x > 0 takes the identity).
Tensor Tensor::leaky_relu(double neg_slope) const { return (*this > 0).where(*this, neg_slope * *this); }

// max(bx, 0) + log(1 + e^-|bx|) (1/beta): finite for every bx, so softplus(inf) = inf with gradient 1 (the
// max-shifted logaddexp gave inf - inf = nan), and the derivative at 0 is 1 - 1/2 = sigmoid(0) through the
// where-form |bx| (derivative 1 at 0) and the x >= 0 side.
Tensor Tensor::softplus(double beta) const {
  if (beta == 0) throw Error("softplus: beta must not be 0 (it divides the result)");
  Tensor bx = *this * beta;
  Tensor pos = bx >= 0;
  Tensor e = (pos.where(bx, -bx) * (-1.0 / kLn2)).exp2();
  return (1.0 / beta) * (pos.where(bx, 0.0) + (1.0 + e).log());
}
Tensor Tensor::mish() const { return *this * softplus().tanh(); }
Tensor Tensor::logsigmoid() const { return -(-*this).softplus(); }

// relu6, hardtanh and hardsigmoid are flat outside an open interval and, as in torch, have derivative 0 at
// its ends (a relu difference gave 1 at relu6's 6 and hardsigmoid's 3).
Tensor Tensor::relu6() const { return hardtanh(0, 6); }
// torch's hardswish: x (x + 3) / 6 on [-3, 3] (ends included: -1/2 at -3, 3/2 at 3), 0 below, x above. The
// quadratic sees x clamped to [-3, 3], so at +-inf its untaken derivative is finite.
Tensor Tensor::hardswish() const {
  Tensor m = clamp(-3.0, 3.0);
  return (*this > 3).where(*this, m * (m + 3) * (1.0 / 6));
}
Tensor Tensor::hardsigmoid() const {
  return (*this <= -3).where(0.0, (*this >= 3).where(1.0, *this * (1.0 / 6) + 0.5));
}
Tensor Tensor::hardtanh(double min_val, double max_val) const {
  if (!(min_val <= max_val))
    throw Error("hardtanh: min_val " + std::to_string(min_val) + " is above max_val " + std::to_string(max_val));
  ConstValue lo = bound_for(*this, min_val), hi = bound_for(*this, max_val);
  return (*this <= lo).where(lo, (*this >= hi).where(hi, *this));
}
Tensor Tensor::softsign() const { return *this / (1 + abs()); }

}  // namespace tg
