// sort and topk as a lazy comparison-count (rank) construction instead of tinygrad's bitonic network:
// the rank of x[i] is the number of elements that sort before it (ties broken by index, so the sort is
// stable), and output r gathers the element of rank r. Two reduce kernels, each O(n^2) work per row
// along the sorted axis (no O(n^2) buffer: the comparison matrices fuse into the reduces), which suits the
// short axes sort is used on (top-k of logits, small tables); a bitonic network would be O(n log^2 n) work
// but ~log^2 n kernels.
#include <limits>

#include "tensor/math_helpers.h"

namespace tg {
namespace {

// a sorts strictly before b (elementwise, broadcast): by value, nan after every number (torch, numpy);
// reversed for descending, where nan comes first.
Tensor before(const Tensor& a, const Tensor& b, bool descending) {
  Tensor lt = descending ? a > b : a < b;
  if (!a.dtype().is_float()) return lt;
  Tensor an = a.isnan(), bn = b.isnan();
  return lt + (descending ? an * bn.logical_not() : bn * an.logical_not());
}

Tensor same(const Tensor& a, const Tensor& b) {
  Tensor eq = a == b;
  if (!a.dtype().is_float()) return eq;
  return eq + a.isnan() * b.isnan();
}

}  // namespace

std::pair<Tensor, Tensor> Tensor::sort(int64_t dim, bool descending) const {
  Shape s = shape();
  int64_t ax = normalize_axis("sort", dim, s);
  Tensor zeros_idx = Tensor::full(s, 0, {.dtype = dtypes::int32, .device = device()});
  if (s.empty() || s[size_t(ax)] <= 1) return {*this, zeros_idx};
  int64_t n = s[size_t(ax)];
  Tensor x = mathx::axis_to_last(*this, ax);  // (..., n)
  int64_t last = x.ndim() - 1;
  Tensor xi = mathx::insert_dim(x, last + 1);  // (..., n, 1): element i, one per row
  Tensor xj = mathx::insert_dim(x, last);      // (..., 1, n): every element j, along the row
  Tensor j_lt_i = mathx::index_range(n, device(), {1, n}) < mathx::index_range(n, device(), {n, 1});
  Tensor goes_first = before(xj, xi, descending) + same(xj, xi) * j_lt_i;
  Tensor rank = goes_first.sum(-1);  // (..., n): the output position of element i, a permutation
  // out[..., r] = x[..., i] for the i with rank[..., i] == r: a one-hot match summed over i.
  Tensor match = mathx::insert_dim(rank, last) == mathx::index_range(n, device(), {n, 1});  // (..., n_r, n_i)
  Tensor values = match.where(xj, 0).sum(-1).cast(dtype());
  Tensor idx = match.where(mathx::index_range(n, device(), {1, n}), 0).sum(-1).cast(dtypes::int32);
  return {mathx::last_to_axis(values, ax), mathx::last_to_axis(idx, ax)};
}

std::pair<Tensor, Tensor> Tensor::topk(int64_t k, int64_t dim, bool largest, bool sorted) const {
  Shape s = shape();
  int64_t ax = normalize_axis("topk", dim, s);
  int64_t n = s.empty() ? 1 : s[size_t(ax)].value();
  if (k < 0 || k > n)
    throw Error("topk: k = " + std::to_string(k) + " is out of range for dim " + std::to_string(dim) + " of shape " +
                to_string(s) + " (expected 0 <= k <= " + std::to_string(n) + ")");
  (void)sorted;  // the sorted order is also a valid unsorted answer
  auto [values, idx] = sort(ax, largest);
  if (s.empty()) return {values, idx};
  PadArg bounds(s.size());
  for (size_t i = 0; i < s.size(); i++) bounds[i] = {0, s[i]};
  bounds[size_t(ax)] = {0, k};
  return {values.shrink(bounds), idx.shrink(bounds)};
}

}  // namespace tg
