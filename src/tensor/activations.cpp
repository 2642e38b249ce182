// Activation functions, each a few lazy elementwise ops as in tinygrad. Formulas are chosen to stay finite
// where the textbook form overflows: sigmoid from e^-|x| (never above 1), softplus through a max-shifted
// logaddexp.
#include <cmath>

#include "tensor/math_helpers.h"

namespace tg {
namespace {

constexpr double kLn2 = 0.69314718055994530942;
constexpr double kPi = 3.14159265358979323846;

// log(exp(a) + exp(b)) shifted by max(a, b) so neither exp overflows.
Tensor logaddexp(const Tensor& a, const Tensor& b) {
  Tensor m = a.maximum(b);
  return ((a - m).exp() + (b - m).exp()).log() + m;
}

}  // namespace

// 1 / (1 + e^-x) for x >= 0 and e^x / (1 + e^x) below, both from e = e^-|x| in (0, 1]: no exponent is positive,
// so nothing overflows. With e^-x alone, x = -400 gives 1 / (1 + inf) = 0 forward but inf * 0 = nan in the
// gradient; here the gradient is 0 there (and for tanh, gelu, quick_gelu and silu, built on this).
Tensor Tensor::sigmoid() const {
  Tensor e = (abs() * (-1.0 / kLn2)).exp2();
  Tensor r = (1.0 + e).reciprocal();
  return (*this >= 0).where(r, e * r);
}
Tensor Tensor::tanh() const { return 2.0 * (2.0 * *this).sigmoid() - 1.0; }

Tensor Tensor::gelu() const {  // tanh approximation, tinygrad's default
  return 0.5 * *this * (1.0 + (std::sqrt(2.0 / kPi) * (*this + 0.044715 * *this * *this * *this)).tanh());
}
Tensor Tensor::quick_gelu() const { return *this * (*this * 1.702).sigmoid(); }
Tensor Tensor::silu() const { return *this * sigmoid(); }

Tensor Tensor::elu(double alpha) const { return relu() - alpha * (1.0 - exp()).relu(); }
Tensor Tensor::celu(double alpha) const {
  if (alpha == 0) throw Error("celu: alpha must not be 0 (it divides x)");
  return maximum(0) + (alpha * ((*this / alpha).exp() - 1.0)).minimum(0);
}
// The constants of the SELU paper (torch's), to full double precision; tinygrad rounds them to 1.67326
// and 1.0507.
Tensor Tensor::selu() const {
  constexpr double kAlpha = 1.6732632423543772848170429916717, kScale = 1.0507009873554804934193349852946;
  return kScale * (*this >= 0).where(*this, kAlpha * (exp() - 1.0));
}
Tensor Tensor::leaky_relu(double neg_slope) const { return (*this < 0).where(neg_slope * *this, *this); }

Tensor Tensor::softplus(double beta) const {
  if (beta == 0) throw Error("softplus: beta must not be 0 (it divides the result)");
  Tensor bx = *this * beta;
  return (1.0 / beta) * logaddexp(bx, bx.zeros_like());
}
Tensor Tensor::mish() const { return *this * softplus().tanh(); }
Tensor Tensor::logsigmoid() const { return -(-*this).softplus(); }

Tensor Tensor::relu6() const { return relu() - (*this - 6).relu(); }
Tensor Tensor::hardswish() const { return *this * (*this + 3).relu6() * (1.0 / 6); }
Tensor Tensor::hardsigmoid() const {
  Tensor y = *this * (1.0 / 6) + 0.5;
  return y.relu() - (y - 1.0).relu();
}
Tensor Tensor::hardtanh(double min_val, double max_val) const { return clip(min_val, max_val); }
Tensor Tensor::softsign() const { return *this / (1 + abs()); }

}  // namespace tg
