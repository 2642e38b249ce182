// ShapeTracker -> (index, valid) UOps. The last view maps the per-dim indices to a linear index; each earlier
// view reads that linear index as a row-major position in its own shape, unravels it, and maps it again.
#include "shape/indexing.h"

#include "uop/symbolic.h"

namespace tg {

UOpPtr sint_to_uop(const sint& s, DType dt) {
  if (s.is_int()) return UOp::const_int(s.value(), dt);
  return s.uop()->dtype == dt ? s.uop() : s.uop()->cast(dt);
}

namespace {

// One view applied to per-dim indices: (offset + sum idx*stride, mask checks), skipping the checks the
// index ranges already guarantee.
std::pair<UOpPtr, UOpPtr> apply_view(const View& v, const std::vector<UOpPtr>& idxs, DType dt) {
  UOpPtr idx = sint_to_uop(v.offset, dt);
  UOpPtr valid = UOp::const_int(1, dtypes::bool_);
  for (size_t i = 0; i < v.shape.size(); i++) {
    if (v.strides[i] != 0) idx = idx + idxs[i] * sint_to_uop(v.strides[i], dt);
    if (!v.mask) continue;
    auto [b, e] = (*v.mask)[i];
    // A bound checked only where the index's range does not already guarantee it (for every variable value).
    if (idxs[i]->vmin < b.vmax())
      valid = logical_and(valid, ne(lt(idxs[i], sint_to_uop(b, dt)), UOp::const_int(1, dtypes::bool_)));
    if (idxs[i]->vmax >= e.vmin()) valid = logical_and(valid, lt(idxs[i], sint_to_uop(e, dt)));
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
    sint acc = 1;
    for (size_t i = v.shape.size(); i-- > 0;) {
      if (v.shape[i] == 1)
        dims[i] = UOp::const_int(0, dt);
      else if (i == 0)
        dims[i] = simplify(idiv(idx, sint_to_uop(acc, dt)));
      else
        dims[i] = simplify(mod(idiv(idx, sint_to_uop(acc, dt)), sint_to_uop(v.shape[i], dt)));
      acc *= v.shape[i];
    }
    auto [inner_idx, inner_valid] = apply_view(v, dims, dt);
    idx = inner_idx;
    valid = simplify(logical_and(valid, inner_valid));
  }
  return {idx, valid};
}

}  // namespace tg
