#pragma once
// A ShapeTracker as index math: given one index UOp per dim of st.shape(), all of dtype `dt` (int32, or
// int64 in a kernel whose indices may pass 2^31-1: codegen decides), the linear offset into the buffer
// behind it and a bool validity (false where a pad mask hides the element; CONST true when always
// valid). Both come out simplified by the symbolic rules.
#include <utility>
#include <vector>

#include "shape/shapetracker.h"
#include "uop/uop.h"

namespace tg {

// A size as an index expression of dtype dt: a CONST, or the symbolic expression (int32) cast to dt.
UOpPtr sint_to_uop(const sint& s, DType dt = dtypes::int32);

std::pair<UOpPtr, UOpPtr> to_indexed_uops(const ShapeTracker& st, const std::vector<UOpPtr>& idxs,
                                          DType dt = dtypes::int32);

}  // namespace tg
