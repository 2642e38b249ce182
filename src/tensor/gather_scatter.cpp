// Ops that read or write at tensor-given positions, and the masks built from an arange: gather, scatter,
// scatter_reduce, masked_select, one_hot, masked_fill, tril, triu. As in tinygrad they are comparisons with an
// arange plus where/sum (no kernel is written by hand), so an index out of range (negative included) matches nothing: gather reads 0
// there, scatter writes nothing and one_hot gives an all-zero row.
#include <algorithm>
#include <cmath>

#include "tensor/indexing_internal.h"

namespace tg {
namespace {

using indexing::scalar_like;

// Accumulator dtype for products: at least int32 / uint32 / float32, as sums.
DType acc_dtype(DType dt) {
  if (dt.is_float()) return dtypes::promote(dt, dtypes::float32);
  if (dt.is_unsigned()) return dtypes::promote(dt, dtypes::uint32);
  return dtypes::promote(dt, dtypes::int32);
}

// Bounds [0, to[d]) in every dim except `skip` (kept whole).
PadArg shrink_to(const Shape& from, const Shape& to, int64_t skip) {
  PadArg b;
  for (size_t d = 0; d < from.size(); d++) b.emplace_back(0, int64_t(d) == skip ? from[d] : to[d]);
  return b;
}

// A triangle mask: row + diagonal <= col, (rows, cols) of bool.
Tensor tri(int64_t rows, int64_t cols, int64_t diagonal, const std::string& device) {
  // Past the corners every row is all-true or all-false: clamp so the int32 arithmetic cannot wrap.
  diagonal = std::clamp(diagonal, -rows - 1, cols + 1);
  Tensor r = Tensor::arange(rows, {.device = device}).reshape({rows, 1});
  Tensor c = Tensor::arange(cols, {.device = device}).reshape({1, cols});
  return (r + diagonal) <= c;
}

}  // namespace

Tensor Tensor::gather(int64_t dim, const Tensor& index) const {
  Tensor idx = indexing::checked_index("gather", *this, index);
  Shape s = shape(), is = idx.shape();
  if (is.size() != s.size())
    throw Error("gather: index of shape " + to_string(is) + " for tensor of shape " + to_string(s) +
                " (expected the same number of dims)");
  if (s.empty()) return reshape({1}).gather(normalize_axis("gather", dim, s), idx.reshape({1})).reshape({});
  int64_t d = normalize_axis("gather", dim, s);
  for (size_t i = 0; i < s.size(); i++)
    if (int64_t(i) != d && is[i] > s[i])
      throw Error("gather: index of shape " + to_string(is) + " is larger than tensor of shape " + to_string(s) +
                  " in dim " + std::to_string(i) + " (expected index.shape[d] <= shape[d] for d != dim " +
                  std::to_string(dim) + ")");
  int64_t n = s[size_t(d)];
  if (tg::prod(is) == 0 || n == 0) return full(is, 0, {.dtype = dtype(), .device = device()});
  // x: the tensor cut to the index's shape with its dim `d` moved to a new last axis; the index compared with
  // arange(n) along that axis picks one element per output.
  Tensor x = shrink(shrink_to(s, is, d)).unsqueeze(-1).transpose(-1, d);
  Tensor mask = indexing::eq_arange(idx.unsqueeze(-1), n, 0);
  return mask.where(x, scalar_like(x, 0)).sum(-1).cast(dtype());
}

Tensor Tensor::scatter(int64_t dim, const Tensor& index, ConstValue src, const std::string& reduce) const {
  Tensor v = full(index.shape(), src, {.dtype = dtype(), .device = device()});
  return scatter(dim, index, v, reduce);
}

namespace {

// scatter's layout: src and a landing mask in (self's shape, n), entry [..., j] being source element j along
// dim d and whether it lands on this output position (src and mask come in the index's shape and are padded
// with 0 / false to self's). nullopt when nothing can land (an empty tensor or index). Checks the arguments.
struct ScatterParts {
  Tensor v, mask;
  int64_t d, k;
};
std::optional<ScatterParts> scatter_parts(const char* op, const Tensor& self, int64_t dim, const Tensor& index,
                                          const Tensor& src) {
  Tensor idx = indexing::checked_index(op, self, index);
  if (src.device() != self.device())
    throw Error(std::string(op) + ": src is on " + src.device() + ", the tensor on " + self.device() +
                " (expected one device)");
  if (src.dtype() != self.dtype())
    throw Error(std::string(op) + ": src of dtype " + src.dtype().name() + " for tensor of dtype " +
                self.dtype().name() + " (expected the same dtype)");
  Shape s = self.shape(), is = idx.shape(), ss = src.shape();
  if (is.size() != s.size() || ss.size() != s.size())
    throw Error(std::string(op) + ": tensor " + to_string(s) + ", index " + to_string(is) + " and src " +
                to_string(ss) + " (expected the same number of dims)");
  int64_t d = normalize_axis(op, dim, s);
  for (size_t i = 0; i < s.size(); i++)
    if (is[i] > ss[i] || (int64_t(i) != d && is[i] > s[i]))
      throw Error(std::string(op) + ": index of shape " + to_string(is) + " does not fit src " + to_string(ss) +
                  " and tensor " + to_string(s) + " in dim " + std::to_string(i) +
                  " (expected index.shape[d] <= src.shape[d], and <= shape[d] for d != dim " + std::to_string(dim) +
                  ")");
  if (tg::prod(s) == 0 || tg::prod(is) == 0) return std::nullopt;
  int64_t n = s[size_t(d)];
  Tensor v = src.shrink(shrink_to(ss, is, -1)).unsqueeze(-1);
  Shape ve = v.shape();
  ve.back() = n;
  v = v.expand(ve).transpose(-1, d);
  Tensor mask = indexing::eq_arange(idx.unsqueeze(-1), n, 0).transpose(-1, d);
  PadArg grow;
  for (size_t i = 0; i < s.size(); i++) grow.emplace_back(0, int64_t(i) == d ? sint(0) : s[i] - is[i]);
  grow.emplace_back(0, 0);
  return ScatterParts{v.pad(grow), mask.pad(grow), d, is[size_t(d)]};
}

}  // namespace

Tensor Tensor::scatter(int64_t dim, const Tensor& index, const Tensor& src, const std::string& reduce) const {
  if (reduce != "" && reduce != "add" && reduce != "multiply")
    throw Error("scatter: unknown reduce '" + reduce + "' (expected \"\", \"add\" or \"multiply\")");
  if (ndim() == 0)
    return reshape({1}).scatter(normalize_axis("scatter", dim, {}), index.reshape({1}), src.reshape({1}), reduce)
        .reshape({});
  std::optional<ScatterParts> parts = scatter_parts("scatter", *this, dim, index, src);
  if (!parts) return *this;
  auto& [v, mask, d, k] = *parts;
  if (reduce == "add") return (mask.where(v, scalar_like(v, 0)).sum(-1) + *this).cast(dtype());
  if (reduce == "multiply") {
    DType acc = acc_dtype(dtype());
    Tensor p = mask.where(v, scalar_like(v, 1)).cast(acc).reduce("scatter", int(Ops::MUL), {-1}, false);
    return (p * cast(acc)).cast(dtype());
  }
  // Replace: when several sources land on one position the last one wins (as tinygrad). last = 1 + the
  // position of the last source landing here, 0 where none does.
  Tensor pos = Tensor::arange(k, {.device = device()}) + 1;
  Tensor last = mask.where(pos, scalar_like(pos, 0)).max(-1);
  Tensor pick = mask * pos.eq(last.unsqueeze(-1));
  Tensor val = pick.where(v, scalar_like(v, 0)).sum(-1).cast(dtype());
  return (last > 0).where(val, *this);
}

// torch's scatter_reduce (tinygrad's construction): each position reduces the sources landing on it, and its
// own value unless include_self is false; a position nothing lands on keeps its value either way.
Tensor Tensor::scatter_reduce(int64_t dim, const Tensor& index, const Tensor& src, const std::string& reduce,
                              bool include_self) const {
  if (reduce != "sum" && reduce != "prod" && reduce != "mean" && reduce != "amax" && reduce != "amin")
    throw Error("scatter_reduce: reduce must be one of \"sum\", \"prod\", \"mean\", \"amax\" or \"amin\", got \"" +
                reduce + "\"");
  if (ndim() == 0)
    return reshape({1})
        .scatter_reduce(normalize_axis("scatter_reduce", dim, {}), index.reshape({1}), src.reshape({1}), reduce,
                        include_self)
        .reshape({});
  std::optional<ScatterParts> parts = scatter_parts("scatter_reduce", *this, dim, index, src);
  if (!parts) return *this;
  const Tensor &v = parts->v, &mask = parts->mask;
  Tensor untouched = mask.any(-1).logical_not();
  DType dt = dtype();
  // Constants in the tensor's kind, so that `where` keeps its dtype (a float 1.0 would promote ints).
  auto like = [&](double c) { return dt.is_float() ? ConstValue(c) : ConstValue(int64_t(c)); };
  double lowest = dt.is_float() ? -INFINITY : dt.min(), highest = dt.is_float() ? INFINITY : dt.max();
  // This tensor's own values, or the reduction's identity where sources land and include_self is false.
  auto own = [&](double identity) { return include_self ? *this : untouched.where(*this, like(identity)); };
  if (reduce == "sum") return (mask.where(v, like(0)).sum(-1) + own(0)).cast(dt);
  if (reduce == "prod") {
    DType acc = acc_dtype(dt);
    return (mask.where(v, like(1)).cast(acc).reduce("scatter_reduce", int(Ops::MUL), {-1}, false) * own(1).cast(acc))
        .cast(dt);
  }
  if (reduce == "amax") return mask.where(v, like(lowest)).max(-1).maximum(own(lowest));
  if (reduce == "amin") return mask.where(v, like(highest)).min(-1).minimum(own(highest));
  // mean: ints divide with torch's rounding toward -inf ("floor"), floats truly
  Tensor total = mask.where(v, like(0)).sum(-1) + own(0);
  Tensor count = mask.where(1, 0).sum(-1) + (include_self ? Tensor::broadcast_scalar(total, 1)
                                                           : untouched.where(1, 0));
  if (dt.is_float()) return (total / count.cast(total.dtype())).cast(dt);
  Tensor c = count.cast(total.dtype());
  return total.sub(total.mod(c)).idiv(c).cast(dt);
}

Tensor Tensor::masked_select(const Tensor& mask) const {
  if (!mask.dtype().is_bool())
    throw Error("masked_select: mask must be a bool tensor, got " + mask.dtype().name());
  if (mask.device() != device())
    throw Error("masked_select: mask on " + mask.device() + ", the tensor on " + device() + " (expected one device)");
  Shape s = shape(), ms = mask.shape();
  // torch broadcasts the two against each other
  Tensor x = *this, m = mask;
  if (s != ms) {
    Shape out = indexing::broadcast_shapes("masked_select", "tensor and mask", {s, ms});
    x = x.expand(out);
    m = m.expand(out);
  }
  Tensor flat = x.flatten(), mf = m.flatten();
  int64_t count = mf.cast(dtypes::int64).sum().item<int64_t>();
  int64_t n = flat.numel();
  if (count == 0) return flat.shrink({{0, 0}});
  // The k-th selected element sits at the number of positions whose running count is <= k.
  Tensor running = mf.cast(dtypes::int32).cumsum().reshape({1, n});
  Tensor k = Tensor::arange(count, {.device = device()}).reshape({count, 1});
  Tensor idx = (running <= k).cast(dtypes::int32).sum(-1);
  return flat.gather(0, idx);
}

Tensor Tensor::one_hot(int64_t num_classes) const {
  if (!dtype().is_int())
    throw Error("one_hot: tensor of dtype " + dtype().name() + " (expected an integer dtype)");
  if (num_classes < -1)
    throw Error("one_hot: num_classes must be >= 0 (or -1: max + 1), got " + std::to_string(num_classes));
  if (num_classes == -1) {
    // The number of classes depends on the data: this runs the tensor (as torch does).
    if (numel() == 0) throw Error("one_hot: num_classes=-1 needs a non-empty tensor, got shape " + to_string(shape()));
    num_classes = std::max<int64_t>(max().cast(dtypes::int64).item<int64_t>() + 1, 0);
  }
  Shape out = shape();
  out.push_back(num_classes);
  if (tg::prod(out) == 0) return full(out, 0, {.dtype = dtypes::default_int, .device = device()});
  Tensor idx = indexing::checked_index("one_hot", *this, *this);
  return indexing::eq_arange(idx.unsqueeze(-1), num_classes, 0).where(1, 0);
}

Tensor Tensor::masked_fill(const Tensor& mask, ConstValue value) const {
  if (mask.device() != device())
    throw Error("masked_fill: mask is on " + mask.device() + ", the tensor on " + device() + " (expected one device)");
  indexing::broadcast_shapes("masked_fill", "tensor and mask", {shape(), mask.shape()});
  return mask.where(value, *this);
}

Tensor Tensor::tril(int64_t diagonal) const {
  Shape s = shape();
  if (s.size() < 2) throw Error("tril: tensor of shape " + to_string(s) + " (expected at least 2 dims)");
  if (numel() == 0) return *this;
  int64_t rows = s[s.size() - 2], cols = s.back();
  diagonal = std::clamp(diagonal, -rows - 2, cols + 2);  // so that + 1 cannot overflow
  Tensor keep = tri(rows, cols, diagonal + 1, device()).logical_not();
  return keep.where(*this, scalar_like(*this, 0));
}

Tensor Tensor::triu(int64_t diagonal) const {
  Shape s = shape();
  if (s.size() < 2) throw Error("triu: tensor of shape " + to_string(s) + " (expected at least 2 dims)");
  if (numel() == 0) return *this;
  return tri(s[s.size() - 2], s.back(), diagonal, device()).where(*this, scalar_like(*this, 0));
}

}  // namespace tg
