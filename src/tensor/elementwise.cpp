// Elementwise Tensor ops: broadcasting, dtype promotion, and the ALU graph nodes.
#include <cmath>

#include "tensor/tensor_internal.h"

namespace tg {
namespace {

// Right-aligned broadcast of two shapes; throws "<op>: shapes A and B cannot be broadcast".
Shape broadcast_shape(const char* op, const Shape& a, const Shape& b) {
  size_t n = std::max(a.size(), b.size());
  Shape out(n);
  for (size_t i = 0; i < n; i++) {
    sint x = i < n - a.size() ? sint(1) : a[i - (n - a.size())];
    sint y = i < n - b.size() ? sint(1) : b[i - (n - b.size())];
    if (x != y && x != 1 && y != 1)
      throw Error(std::string(op) + ": shapes " + to_string(a) + " and " + to_string(b) + " cannot be broadcast");
    out[i] = x == 1 ? y : x;
  }
  return out;
}

Tensor broadcast_to(const Tensor& t, const Shape& shape) {
  Shape s = t.shape();
  if (s == shape) return t;
  Shape padded(shape.size() - s.size(), 1);
  padded.insert(padded.end(), s.begin(), s.end());
  return t.reshape(padded).expand(shape);
}

// Bring x and y to one shape and one dtype, as tinygrad's _broadcasted does.
std::pair<Tensor, Tensor> broadcasted(const char* op, const Tensor& x, const Tensor& y) {
  if (x.device() != y.device())
    throw Error(std::string(op) + ": tensors are on different devices (" + x.device() + " and " + y.device() + ")");
  DType dt = dtypes::promote(x.dtype(), y.dtype());
  Shape s = broadcast_shape(op, x.shape(), y.shape());
  return {broadcast_to(x.cast(dt), s), broadcast_to(y.cast(dt), s)};
}

Tensor alu(Ops op, const Tensor& x) { return Tensor(UOp::alu(op, {x.uop()}), x.device()); }
Tensor alu(Ops op, const Tensor& x, const Tensor& y) { return Tensor(UOp::alu(op, {x.uop(), y.uop()}), x.device()); }

DType least_upper_float(DType dt) { return dt.is_float() ? dt : dtypes::default_float(); }

constexpr double kLn2 = 0.69314718055994530942;

}  // namespace

Tensor Tensor::broadcast_scalar(const Tensor& like, ConstValue v) {
  // A float scalar makes an int/bool tensor float; an int scalar keeps the tensor's dtype unless it is
  // bool; a bool scalar keeps the tensor's dtype.
  DType dt = like.dtype();
  if (v.kind == dtypes::float32 && !dt.is_float()) dt = dtypes::default_float();
  else if (v.kind == dtypes::int32 && dt.is_bool()) dt = dtypes::default_int;
  return Tensor(const_uop(v, dt, like.device(), {}), like.device());
}

Tensor Tensor::cast(DType dt) const {
  if (dt == dtype()) return *this;
  return Tensor(uop()->cast(dt), device());
}

// ---- unary ----
Tensor Tensor::neg() const { return dtype().is_bool() ? logical_not() : alu(Ops::NEG, *this); }
Tensor Tensor::logical_not() const {
  Tensor b = cast(dtypes::bool_);
  return b.ne(broadcast_scalar(b, true));
}
Tensor Tensor::exp2() const { return alu(Ops::EXP2, cast(least_upper_float(dtype()))); }
Tensor Tensor::log2() const { return alu(Ops::LOG2, cast(least_upper_float(dtype()))); }
Tensor Tensor::exp() const { return (cast(least_upper_float(dtype())) * (1.0 / kLn2)).exp2(); }
Tensor Tensor::log() const { return log2() * kLn2; }
Tensor Tensor::sqrt() const { return alu(Ops::SQRT, cast(least_upper_float(dtype()))); }
Tensor Tensor::sin() const { return alu(Ops::SIN, cast(least_upper_float(dtype()))); }
Tensor Tensor::reciprocal() const { return alu(Ops::RECIP, cast(least_upper_float(dtype()))); }
Tensor Tensor::trunc() const { return dtype().is_float() ? alu(Ops::TRUNC, *this) : *this; }
Tensor Tensor::relu() const { return (*this > 0).where(*this, 0); }

// ---- binary ----
Tensor Tensor::add(const Tensor& y) const {
  auto [a, b] = broadcasted("add", *this, y);
  return a.dtype().is_bool() ? alu(Ops::OR, a, b) : alu(Ops::ADD, a, b);
}
Tensor Tensor::sub(const Tensor& y) const {
  auto [a, b] = broadcasted("sub", *this, y);
  if (a.dtype().is_bool()) throw Error("sub: subtraction of bool tensors is not supported (use logical ops)");
  return alu(Ops::ADD, a, alu(Ops::NEG, b));
}
Tensor Tensor::mul(const Tensor& y) const {
  auto [a, b] = broadcasted("mul", *this, y);
  return a.dtype().is_bool() ? alu(Ops::AND, a, b) : alu(Ops::MUL, a, b);
}
Tensor Tensor::div(const Tensor& y) const {
  auto [a, b] = broadcasted("div", *this, y);
  DType ft = least_upper_float(a.dtype());
  return alu(Ops::FDIV, a.cast(ft), b.cast(ft));
}
Tensor Tensor::maximum(const Tensor& y) const {
  auto [a, b] = broadcasted("maximum", *this, y);
  return a.dtype().is_bool() ? alu(Ops::OR, a, b) : alu(Ops::MAX, a, b);
}
Tensor Tensor::minimum(const Tensor& y) const {
  auto [a, b] = broadcasted("minimum", *this, y);
  // Floats: -max(-a, -b), so a tie splits the gradient in half as maximum's does (tinygrad's form). Ints keep a
  // select: negating INT_MIN or an unsigned value would wrap.
  if (a.dtype().is_float()) return alu(Ops::MAX, a.neg(), b.neg()).neg();
  return (a < b).where(a, b);
}
Tensor Tensor::maximum(ConstValue y) const { return maximum(broadcast_scalar(*this, y)); }
Tensor Tensor::minimum(ConstValue y) const { return minimum(broadcast_scalar(*this, y)); }

Tensor Tensor::where(const Tensor& x, const Tensor& y) const {
  auto [a, b] = broadcasted("where", x, y);
  Shape s = broadcast_shape("where", shape(), a.shape());
  Tensor c = broadcast_to(cast(dtypes::bool_), s);
  return Tensor(UOp::alu(Ops::WHERE, {c.uop(), broadcast_to(a, s).uop(), broadcast_to(b, s).uop()}), device());
}
Tensor Tensor::where(const Tensor& x, ConstValue y) const { return where(x, broadcast_scalar(x, y)); }
Tensor Tensor::where(ConstValue x, const Tensor& y) const { return where(broadcast_scalar(y, x), y); }
Tensor Tensor::where(ConstValue x, ConstValue y) const {
  Tensor tx(x, {.device = device()});
  return where(tx, broadcast_scalar(tx, y));
}

Tensor Tensor::dot4(const Tensor& b, const Tensor& acc) const {
  if (dtype() != dtypes::int32 || b.dtype() != dtypes::int32 || acc.dtype() != dtypes::int32)
    throw Error("dot4: expected int32 tensors (4 bytes packed in each), got " + dtype().name() + ", " +
                b.dtype().name() + " and " + acc.dtype().name());
  Shape s = broadcast_shape("dot4", broadcast_shape("dot4", shape(), b.shape()), acc.shape());
  return Tensor(
      UOp::alu(Ops::DOT4, {broadcast_to(*this, s).uop(), broadcast_to(b, s).uop(), broadcast_to(acc, s).uop()}),
      device());
}

// ---- comparisons ----
Tensor Tensor::lt(const Tensor& y) const {
  auto [a, b] = broadcasted("lt", *this, y);
  return alu(Ops::CMPLT, a, b);
}
Tensor Tensor::gt(const Tensor& y) const { return y.lt(*this); }
Tensor Tensor::le(const Tensor& y) const { return gt(y).logical_not(); }
Tensor Tensor::ge(const Tensor& y) const { return lt(y).logical_not(); }
Tensor Tensor::ne(const Tensor& y) const {
  auto [a, b] = broadcasted("ne", *this, y);
  return alu(Ops::CMPNE, a, b);
}
Tensor Tensor::eq(const Tensor& y) const { return ne(y).logical_not(); }

// ---- operators ----
Tensor operator+(const Tensor& a, const Tensor& b) { return a.add(b); }
Tensor operator-(const Tensor& a, const Tensor& b) { return a.sub(b); }
Tensor operator*(const Tensor& a, const Tensor& b) { return a.mul(b); }
Tensor operator/(const Tensor& a, const Tensor& b) { return a.div(b); }
Tensor operator-(const Tensor& a) { return a.neg(); }
Tensor operator<(const Tensor& a, const Tensor& b) { return a.lt(b); }
Tensor operator>(const Tensor& a, const Tensor& b) { return a.gt(b); }
Tensor operator<=(const Tensor& a, const Tensor& b) { return a.le(b); }
Tensor operator>=(const Tensor& a, const Tensor& b) { return a.ge(b); }
Tensor operator==(const Tensor& a, const Tensor& b) { return a.eq(b); }
Tensor operator!=(const Tensor& a, const Tensor& b) { return a.ne(b); }

}  // namespace tg
