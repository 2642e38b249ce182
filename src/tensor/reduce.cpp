// Reductions (sum, max, min, mean) and dot/matmul, which tinygrad builds as reshape + broadcast
// multiply + sum.
#include <algorithm>

#include "tensor/matmul_pack.h"
#include "tensor/tensor_internal.h"

namespace tg {
namespace {

// Sums accumulate in at least int32 (unsigned: uint32) or float32, as tinygrad's sum_acc_dtype.
DType sum_acc_dtype(DType dt) {
  if (dt.is_unsigned()) return dtypes::promote(dt, dtypes::uint32);
  if (dt.is_int() || dt.is_bool()) return dtypes::promote(dt, dtypes::int32);
  return dtypes::promote(dt, dtypes::float32);
}

std::vector<int64_t> all_axes(const Tensor& t) {
  std::vector<int64_t> a(t.shape().size());
  for (size_t i = 0; i < a.size(); i++) a[i] = int64_t(i);
  return a;
}

// The reverse of order for max/min: -x for floats, ~x for ints, !x for bools.
Tensor inverse(const Tensor& t) {
  if (t.dtype().is_float()) return -t;
  if (t.dtype().is_bool()) return t.logical_not();
  auto ones = UOp::const_(t.dtype(), t.dtype().is_unsigned() ? t.dtype().max() : -1);
  Tensor m(const_uop(ones->const_value(), t.dtype(), t.device(), {}), t.device());
  Shape padded(t.shape().size(), 1);
  m = m.reshape(padded).expand(t.shape());
  return Tensor(UOp::alu(Ops::XOR, {t.uop(), m.uop()}), t.device());
}

}  // namespace

Tensor Tensor::reduce(const char* name, int op_i, const std::vector<int64_t>& axes, bool keepdim) const {
  Ops op = static_cast<Ops>(op_i);
  Shape s = shape();
  std::vector<int64_t> ax;
  for (int64_t a : axes) {
    int64_t n = normalize_axis(name, a, s);
    if (s.empty()) continue;  // reducing a 0-d tensor over axis 0/-1 is the identity
    if (std::find(ax.begin(), ax.end(), n) != ax.end())
      throw Error(std::string(name) + ": axis " + std::to_string(a) + " given twice");
    ax.push_back(n);
  }
  std::sort(ax.begin(), ax.end());
  Tensor x = *this;
  Shape out_keep = s;
  for (int64_t a : ax) out_keep[size_t(a)] = 1;
  Tensor r = x;
  if (!ax.empty() && out_keep != s)
    r = Tensor(UOp::make(Ops::REDUCE_AXIS, x.dtype(), {x.uop()}, ReduceArg{op, ax}), device());
  else if (!ax.empty())
    r = x;  // reducing size-1 dims only: nothing to do
  if (keepdim) return r;
  Shape out;
  for (size_t i = 0; i < s.size(); i++)
    if (std::find(ax.begin(), ax.end(), int64_t(i)) == ax.end()) out.push_back(s[i]);
  return r.reshape(out);
}

Tensor Tensor::sum() const { return sum(all_axes(*this)); }
Tensor Tensor::sum(int64_t axis, bool keepdim) const { return sum(std::vector<int64_t>{axis}, keepdim); }
Tensor Tensor::sum(const std::vector<int64_t>& axes, bool keepdim) const {
  DType acc = sum_acc_dtype(dtype());
  Tensor r = cast(acc).reduce("sum", int(Ops::ADD), axes, keepdim);
  // Half-precision sums come back in their own dtype; ints and bools stay in the wider accumulator.
  return dtype().is_float() ? r.cast(dtype()) : r;
}
Tensor Tensor::sum(const std::vector<int64_t>& axes, bool keepdim, DType dtype) const {
  return cast(dtype).reduce("sum", int(Ops::ADD), axes, keepdim);
}

Tensor Tensor::max() const { return max(all_axes(*this)); }
Tensor Tensor::max(int64_t axis, bool keepdim) const { return max(std::vector<int64_t>{axis}, keepdim); }
Tensor Tensor::max(const std::vector<int64_t>& axes, bool keepdim) const {
  return reduce("max", int(Ops::MAX), axes, keepdim);
}

Tensor Tensor::min() const { return min(all_axes(*this)); }
Tensor Tensor::min(int64_t axis, bool keepdim) const { return min(std::vector<int64_t>{axis}, keepdim); }
Tensor Tensor::min(const std::vector<int64_t>& axes, bool keepdim) const {
  return inverse(inverse(*this).max(axes, keepdim));
}

Tensor Tensor::mean() const { return mean(all_axes(*this)); }
Tensor Tensor::mean(int64_t axis, bool keepdim) const { return mean(std::vector<int64_t>{axis}, keepdim); }
Tensor Tensor::mean(const std::vector<int64_t>& axes, bool keepdim) const {
  Tensor s = sum(axes, keepdim);
  DType ft = dtype().is_float() ? dtype() : dtypes::default_float();
  if (is_symbolic(shape())) {
    // The count is the product of the reduced dims, which may be symbolic: then a value the kernel computes from its
    // variables (a mean over start_pos + 1 rows).
    sint count = 1;
    for (int64_t a : axes) count = count * shape()[size_t(normalize_axis("mean", a, shape()))];
    if (count.is_symbolic()) return (s.cast(ft) / sint_tensor(count, device()).cast(ft)).cast(ft);
    return (s.cast(ft) / double(count.value())).cast(ft);
  }
  int64_t count = std::max<int64_t>(numel(), 1) / std::max<int64_t>(s.numel(), 1);
  if (numel() == 0) count = 0;
  Tensor r = s.cast(ft) / double(count);  // an empty mean is 0/0 = nan, as in tinygrad
  return r.cast(ft);
}

Tensor Tensor::dot(const Tensor& w) const { return dot_as(w, std::nullopt); }
Tensor Tensor::dot(const Tensor& w, DType dtype) const { return dot_as(w, dtype); }

Tensor Tensor::dot_as(const Tensor& w, std::optional<DType> acc) const {
  Shape a = shape(), b = w.shape();
  size_t n1 = a.size(), n2 = b.size();
  if (n1 == 0 || n2 == 0)
    throw Error("matmul: both arguments need at least 1 dimension, got " + to_string(a) + " and " + to_string(b));
  const sint k2 = b[n2 >= 2 ? n2 - 2 : 0];
  if (!same_size(a[n1 - 1], k2))
    throw Error("matmul: cannot multiply " + to_string(a) + " and " + to_string(b) + " (" + a[n1 - 1].str() +
                " != " + k2.str() + ")");
  if (!acc || *acc == dtypes::float32)
    if (auto packed = cpu_packed_dot(*this, w)) return packed->cast(acc.value_or(packed->dtype()));
  // x: (..., n, 1, k)   w: (..., 1, k, m) -> transposed to (..., 1, m, k); multiply and sum over k.
  size_t ones = std::min({n1 - 1, n2 - 1, size_t(1)});
  Shape xs(a.begin(), a.end() - 1);
  xs.insert(xs.end(), ones, 1);
  xs.push_back(a[n1 - 1]);
  size_t tail = std::min(n2, size_t(2));
  Shape ws(b.begin(), b.end() - int64_t(tail));
  ws.insert(ws.end(), ones, 1);
  ws.insert(ws.end(), b.end() - int64_t(tail), b.end());
  Tensor x = reshape(xs);
  Tensor wt = w.reshape(ws).transpose(-1, -int64_t(tail));
  Tensor prod = x * wt;
  if (acc) return prod.sum({-1}, false, *acc);
  DType out = dtypes::promote(dtype(), w.dtype());
  return prod.sum(-1).cast(out);
}

}  // namespace tg
