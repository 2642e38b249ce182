// More reductions, built from REDUCE_AXIS (ADD/MAX/MUL) and elementwise ops as in tinygrad: prod, any/all,
// var/std, argmax/argmin (max, an equality mask and a reversed arange), cumsum/cumprod/cummax (a triangular
// mask reduced, in two stages for long axes), logsumexp, logcumsumexp and (log_)softmax shifted by the max.
#include <cmath>
#include <limits>

#include "tensor/math_helpers.h"

namespace tg {
namespace {

std::vector<int64_t> all_axes(const Tensor& t) {
  std::vector<int64_t> a(size_t(t.ndim()));
  for (size_t i = 0; i < a.size(); i++) a[i] = int64_t(i);
  return a;
}

// The number of elements a reduction over `axes` folds into one (axes already valid): an expression when symbolic.
sint reduced_count(const Shape& s, const std::vector<int64_t>& axes) {
  sint n = 1;
  for (int64_t a : axes)
    if (!s.empty()) n *= s[size_t(a < 0 ? a + int64_t(s.size()) : a)];
  return n;
}

// The value that leaves `op` unchanged, as a constant of the dtype's kind (so `where` keeps the dtype): 0 for
// ADD, 1 for MUL, the lowest value of the dtype for MAX.
ConstValue identity_of(Ops op, DType dt) {
  double lowest = dt.is_float() ? -std::numeric_limits<double>::infinity() : dt.min();
  double v = op == Ops::ADD ? 0 : op == Ops::MUL ? 1 : lowest;
  if (dt.is_bool()) return ConstValue(op == Ops::MUL);
  return dt.is_float() ? ConstValue(v) : ConstValue(int64_t(v));
}

// Inclusive prefix `op` (ADD, MUL or MAX) along the last axis as one masked reduce: out[..., i] = op over
// j <= i of x[..., j]. O(n^2) work per row but no O(n^2) buffer: the mask and the expand fuse into the reduce
// kernel. `where` (not a multiply by the mask) keeps an inf or nan from leaking into earlier results.
Tensor masked_scan(const Tensor& x, Ops op) {
  Shape s = x.shape();
  int64_t n = s.back();
  Tensor rows = mathx::index_range(n, x.device(), {n, 1}), cols = mathx::index_range(n, x.device(), {1, n});
  Tensor mask = cols <= rows;
  Tensor masked = mask.where(mathx::insert_dim(x, int64_t(s.size()) - 1), identity_of(op, x.dtype()));
  return op == Ops::ADD ? masked.sum(-1) : op == Ops::MUL ? masked.prod(-1) : masked.max(-1);
}

// Combine two partial results elementwise with the scan's op.
Tensor combine(const Tensor& a, const Tensor& b, Ops op) {
  return op == Ops::ADD ? a + b : op == Ops::MUL ? a * b : a.maximum(b);
}

// Prefix `op` along the last axis. Up to 2*kSplit elements in one stage; longer axes are cut into chunks of
// kSplit, scanned within each chunk, and each chunk combined with the (recursively computed) total of the
// chunks before it: O(n * kSplit) work instead of O(n^2), as tinygrad's _split_cumalu.
Tensor scan_last(const Tensor& x, Ops op) {
  constexpr int64_t kSplit = 256;
  Shape s = x.shape();
  int64_t n = s.back();
  if (n <= 2 * kSplit) return masked_scan(x, op);
  ConstValue identity = identity_of(op, x.dtype());
  int64_t chunks = (n + kSplit - 1) / kSplit, padded = chunks * kSplit;
  Shape lead(s.begin(), s.end() - 1);
  PadArg front(s.size(), {0, 0});
  front.back() = {padded - n, 0};  // identities in front: they change no prefix
  Shape split = lead;
  split.push_back(chunks);
  split.push_back(kSplit);
  Tensor local = masked_scan(x.pad(front, "constant", identity).reshape(split), op);  // (..., chunks, kSplit)
  PadArg last_col(split.size(), {0, 0});
  for (size_t i = 0; i < lead.size(); i++) last_col[i] = {0, lead[i]};
  last_col[lead.size()] = {0, chunks};
  last_col.back() = {kSplit - 1, kSplit};
  Shape totals_shape = lead;
  totals_shape.push_back(chunks);
  Tensor totals = local.shrink(last_col).reshape(totals_shape);
  // Exclusive prefix of the chunk totals: shift the inclusive one right by one chunk.
  Tensor before = scan_last(totals, op);
  PadArg shift(totals_shape.size(), {0, 0});
  shift.back() = {1, 0};
  PadArg keep(totals_shape.size(), {0, 0});
  for (size_t i = 0; i < totals_shape.size(); i++) keep[i] = {0, totals_shape[i]};
  before = before.pad(shift, "constant", identity).shrink(keep);
  Shape col = totals_shape;
  col.push_back(1);
  Shape flat = lead;
  flat.push_back(padded);
  PadArg tail(flat.size(), {0, 0});
  for (size_t i = 0; i < lead.size(); i++) tail[i] = {0, lead[i]};
  tail.back() = {padded - n, padded};
  return combine(local, before.reshape(col), op).reshape(flat).shrink(tail);
}

// A prefix scan along `axis`; 0-d and empty tensors are their own scan.
Tensor scan(const char* name, const Tensor& x, int64_t axis, Ops op) {
  Shape s = x.shape();
  int64_t ax = normalize_axis(name, axis, s);
  if (s.empty() || x.numel() == 0) return x;
  return mathx::last_to_axis(scan_last(mathx::axis_to_last(x, ax), op), ax);
}

}  // namespace

// ---- prod / any / all ----
// prod keeps the dtype (no widening, as tinygrad); bools go through all().
Tensor Tensor::prod() const {
  if (dtype().is_bool()) return all();
  return reduce("prod", int(Ops::MUL), all_axes(*this), false);
}
Tensor Tensor::prod(int64_t axis, bool keepdim) const {
  if (dtype().is_bool()) return all(axis, keepdim);
  return reduce("prod", int(Ops::MUL), {axis}, keepdim);
}

Tensor Tensor::any() const { return cast(dtypes::bool_).max(); }
Tensor Tensor::any(int64_t axis, bool keepdim) const { return cast(dtypes::bool_).max(axis, keepdim); }
// all = not any(not x): a MAX reduce of bools, whose empty identity (false) makes all([]) true.
Tensor Tensor::all() const { return cast(dtypes::bool_).logical_not().max().logical_not(); }
Tensor Tensor::all(int64_t axis, bool keepdim) const {
  return cast(dtypes::bool_).logical_not().max(axis, keepdim).logical_not();
}

// ---- var / std ----
Tensor Tensor::var(std::optional<int64_t> axis, bool keepdim, double correction) const {
  std::vector<int64_t> axes = axis ? std::vector<int64_t>{*axis} : all_axes(*this);
  Shape s = shape();
  for (int64_t a : axes) normalize_axis("var", a, s);
  DType out = mathx::float_of(dtype());
  Tensor x = cast(out);
  Tensor sq = (x - x.mean(axes, true)).square();
  const sint count = reduced_count(s, axes);
  if (count.is_symbolic())  // a count the kernel computes from its variables (a variance over start_pos + 1 rows)
    return (sq.sum(axes, keepdim) / (sint_tensor(count, device()).cast(out) - correction).maximum(0.0)).cast(out);
  double n = double(count.value());
  // n - correction <= 0 divides by 0: inf, or nan for an empty or constant input, as torch.
  return (sq.sum(axes, keepdim) / std::max(n - correction, 0.0)).cast(out);
}
// A zero variance (constant input) has gradient 0, as torch's, not 1/(2 sqrt(0)) * 0 = nan: sqrt sees 1 there.
Tensor Tensor::std(std::optional<int64_t> axis, bool keepdim, double correction) const {
  Tensor v = var(axis, keepdim, correction);
  Tensor zero = v == 0;
  return zero.where(v, zero.where(1.0, v).sqrt());
}

// ---- argmax / argmin ----
// tinygrad's construction: mark the maxima, weight them by n, n-1, ..., 1 and take the max weight, so the
// first maximum wins. A nan counts as the maximum (torch, numpy): argmax points at a row's first nan.
Tensor Tensor::argmax(std::optional<int64_t> axis, bool keepdim) const {
  if (!axis) {
    if (numel() == 0) throw Error("argmax: tensor of shape " + to_string(shape()) + " is empty (expected elements)");
    Tensor r = flatten().argmax(0);
    return keepdim ? r.reshape(Shape(size_t(ndim()), 1)) : r;
  }
  Shape s = shape();
  int64_t ax = normalize_axis("argmax", *axis, s);
  if (s.empty()) return Tensor::full({}, 0, {.dtype = dtypes::int32, .device = device()});
  int64_t n = s[size_t(ax)];
  if (n == 0)
    throw Error("argmax: axis " + std::to_string(*axis) + " of shape " + to_string(s) +
                " is empty (expected size > 0)");
  Tensor m = max(ax, true);
  Tensor mask = eq(m);
  // max propagates NaN, so a row holding one has max NaN (equal to nothing): mark its NaNs instead.
  if (dtype().is_float()) mask = m.isnan().where(isnan(), mask);
  Shape weight_shape(s.size() - size_t(ax), 1);
  weight_shape[0] = n;
  Tensor weights = Tensor::arange(double(n), 0, -1, {.dtype = dtypes::int32, .device = device()}).reshape(weight_shape);
  Tensor best = mask.where(weights, 0).max(ax, keepdim);
  return (n - best).cast(dtypes::int32);
}
Tensor Tensor::argmin(std::optional<int64_t> axis, bool keepdim) const {
  if (!axis && numel() == 0)
    throw Error("argmin: tensor of shape " + to_string(shape()) + " is empty (expected elements)");
  if (axis && ndim() > 0 && shape()[size_t(normalize_axis("argmin", *axis, shape()))] == 0)
    throw Error("argmin: axis " + std::to_string(*axis) + " of shape " + to_string(shape()) +
                " is empty (expected size > 0)");
  return mathx::inverse(*this).argmax(axis, keepdim);
}

// ---- cumsum ----
// Sums accumulate as sum() does: ints and bools in at least int32, half floats come back in their dtype.
Tensor Tensor::cumsum(int64_t axis) const {
  Tensor x = cast(sum().dtype());  // sums accumulate in at least int32 / float32, as sum()
  return scan("cumsum", x, axis, Ops::ADD);
}
Tensor Tensor::cumprod(int64_t axis) const { return scan("cumprod", *this, axis, Ops::MUL); }
Tensor Tensor::cummax(int64_t axis) const { return scan("cummax", *this, axis, Ops::MAX); }

// log(sum_{j <= i} e^x_j) shifted by the running max m_i: every exponent is <= 0, so nothing overflows
// (x = [0, 100] gives [0, 100], not [0, inf]); the shift is exact, gradients flow through both terms.
Tensor Tensor::logcumsumexp(int64_t axis) const {
  Shape s = shape();
  int64_t ax = normalize_axis("logcumsumexp", axis, s);
  Tensor x = cast(mathx::float_of(dtype()));
  if (s.empty() || numel() == 0) return x;
  Tensor last = mathx::axis_to_last(x, ax);
  int64_t n = last.shape().back();
  Tensor m = scan_last(last, Ops::MAX).detach();  // (..., n) running max: a shift only
  Tensor diff = mathx::insert_dim(last, last.ndim() - 1) - mathx::insert_dim(m, last.ndim());  // (..., i, j)
  Tensor rows = mathx::index_range(n, device(), {n, 1}), cols = mathx::index_range(n, device(), {1, n});
  Tensor terms = (cols <= rows).where(diff, -std::numeric_limits<double>::infinity()).exp();
  return mathx::last_to_axis(terms.sum(-1).log() + m, ax);
}

// ---- logsumexp / softmax ----
// An infinite max is replaced by 0 before shifting (as torch), so rows of -inf give -inf, not nan.
Tensor Tensor::logsumexp(int64_t axis, bool keepdim) const {
  Shape s = shape();
  int64_t ax = normalize_axis("logsumexp", axis, s);
  Tensor x = cast(mathx::float_of(dtype()));
  Tensor m = x.max(ax, true).detach();  // a shift only: the result does not depend on it
  m = m.isinf().where(0.0, m);
  Tensor r = (x - m).exp().sum(ax, true).log() + m;
  if (keepdim || s.empty()) return r;
  Shape out = s;
  out.erase(out.begin() + ax);
  return r.reshape(out);
}

Tensor Tensor::softmax(int64_t axis) const {
  int64_t ax = normalize_axis("softmax", axis, shape());
  Tensor x = cast(mathx::float_of(dtype()));
  Tensor e = (x - x.max(ax, true).detach()).exp();
  return e * e.sum(ax, true).reciprocal();
}

Tensor Tensor::log_softmax(int64_t axis) const {
  int64_t ax = normalize_axis("log_softmax", axis, shape());
  Tensor x = cast(mathx::float_of(dtype()));
  Tensor m = x - x.max(ax, true).detach();
  return m - m.exp().sum(ax, true).log();
}

}  // namespace tg
