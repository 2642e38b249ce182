// ShapeTracker -> (index, valid) UOps. The last view maps the per-dim indices to a linear index; each earlier
// view reads that linear index as a row-major position in its own shape, unravels it, and maps it again.
#include "shape/indexing.h"

#include "uop/symbolic.h"

namespace tg {
namespace {

// One view applied to per-dim indices: (offset + sum idx*stride, mask checks), skipping the checks the
// index ranges already guarantee.
std::pair<UOpPtr, UOpPtr> apply_view(const View& v, const std::vector<UOpPtr>& idxs, DType dt) {
  UOpPtr idx = UOp::const_int(v.offset, dt);
  UOpPtr valid = UOp::const_int(1, dtypes::bool_);
  for (size_t i = 0; i < v.shape.size(); i++) {
    if (v.strides[i] != 0) idx = idx + idxs[i] * v.strides[i];
    if (!v.mask) continue;
    auto [b, e] = (*v.mask)[i];
    if (idxs[i]->vmin < b) valid = logical_and(valid, ge(idxs[i], b));
    if (idxs[i]->vmax >= e) valid = logical_and(valid, lt(idxs[i], e));
  }
  return {simplify(idx), simplify(valid)};
}

}  // namespace

std::pair<UOpPtr, UOpPtr> to_indexed_uops(const ShapeTracker& st, const std::vector<UOpPtr>& idxs, DType dt) {
  auto [idx, valid] = apply_view(st.views.back(), idxs, dt);
  for (size_t k = st.views.size() - 1; k-- > 0;) {
    if (valid->is_const() && valid->const_value() == 0) break;  // never valid: the index does not matter
    const View& v = st.views[k];
    // Unravel the linear index by v's shape, innermost dim first. The outermost dim needs no mod: on
    // valid positions the index is below prod(shape); size-1 dims are always 0.
    std::vector<UOpPtr> dims(v.shape.size());
    int64_t acc = 1;
    for (size_t i = v.shape.size(); i-- > 0;) {
      if (v.shape[i] == 1)
        dims[i] = UOp::const_int(0, dt);
      else if (i == 0)
        dims[i] = simplify(idiv(idx, acc));
      else
        dims[i] = simplify(mod(idiv(idx, acc), v.shape[i]));
      acc *= v.shape[i];
    }
    auto [inner_idx, inner_valid] = apply_view(v, dims, dt);
    idx = inner_idx;
    valid = simplify(logical_and(valid, inner_valid));
  }
  return {idx, valid};
}

}  // namespace tg
