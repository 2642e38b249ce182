// Helpers shared by the math, activation, extra-reduction and sort files.
#include "tensor/math_helpers.h"

#include <algorithm>

namespace tg::mathx {

Tensor alu(Ops op, const Tensor& x) { return Tensor(UOp::alu(op, {x.uop()}), x.device()); }
Tensor alu(Ops op, const Tensor& x, const Tensor& y) { return Tensor(UOp::alu(op, {x.uop(), y.uop()}), x.device()); }

std::pair<Tensor, Tensor> broadcast_pair(const char* op, const Tensor& x, const Tensor& y) {
  if (x.device() != y.device())
    throw Error(std::string(op) + ": tensors are on different devices (" + x.device() + " and " + y.device() + ")");
  Shape a = x.shape(), b = y.shape();
  size_t n = std::max(a.size(), b.size());
  Shape out(n);
  for (size_t i = 0; i < n; i++) {
    sint p = i < n - a.size() ? sint(1) : a[i - (n - a.size())];
    sint q = i < n - b.size() ? sint(1) : b[i - (n - b.size())];
    if (p != q && p != 1 && q != 1)
      throw Error(std::string(op) + ": shapes " + to_string(a) + " and " + to_string(b) + " cannot be broadcast");
    out[i] = p == 1 ? q : p;
  }
  DType dt = dtypes::promote(x.dtype(), y.dtype());
  auto to = [&](const Tensor& t) {
    Tensor c = t.cast(dt);
    Shape s = c.shape();
    if (s == out) return c;
    Shape padded(out.size() - s.size(), 1);
    padded.insert(padded.end(), s.begin(), s.end());
    return c.reshape(padded).expand(out);
  };
  return {to(x), to(y)};
}

Tensor const_like(const Tensor& like, double v) {
  return Tensor(const_uop(v, like.dtype(), like.device(), like.shape()), like.device());
}

Tensor int_const_like(const Tensor& like, int64_t v) {
  auto dev = UOp::make(Ops::DEVICE, dtypes::void_, {}, like.device());
  auto c = UOp::make(Ops::CONST, like.dtype(), {dev}, UOp::const_int(v, like.dtype())->arg);
  Shape s = like.shape();
  ShapeTracker st = ShapeTracker::from_shape({});
  if (!s.empty()) st = st.reshape(Shape(s.size(), 1)).expand(s);
  return Tensor(UOp::make(Ops::VIEW, like.dtype(), {c}, st), like.device());
}

DType float_of(DType dt) { return dt.is_float() ? dt : dtypes::default_float(); }

Tensor inverse(const Tensor& t) {
  if (t.dtype().is_float()) return -t;
  if (t.dtype().is_bool()) return t.logical_not();
  return alu(Ops::XOR, t, int_const_like(t, -1));  // ~x reverses the order of signed and unsigned ints alike
}

Tensor index_range(int64_t n, const std::string& device, const Shape& shape) {
  return Tensor::arange(n, {.dtype = dtypes::int32, .device = device}).reshape(shape);
}

Tensor axis_to_last(const Tensor& t, int64_t axis) {
  int64_t n = t.ndim();
  if (axis == n - 1) return t;
  std::vector<int64_t> order;
  for (int64_t i = 0; i < n; i++)
    if (i != axis) order.push_back(i);
  order.push_back(axis);
  return t.permute(order);
}

Tensor last_to_axis(const Tensor& t, int64_t axis) {
  int64_t n = t.ndim();
  if (axis == n - 1) return t;
  std::vector<int64_t> order;
  for (int64_t i = 0; i < n - 1; i++) {
    if (i == axis) order.push_back(n - 1);
    order.push_back(i);
  }
  return t.permute(order);
}

Tensor insert_dim(const Tensor& t, int64_t dim) {
  Shape s = t.shape();
  s.insert(s.begin() + dim, 1);
  return t.reshape(s);
}

}  // namespace tg::mathx
