#pragma once
// A ShapeTracker as index math: given one int32 index UOp per dim of st.shape(), the linear offset into
// the buffer behind it and a bool validity (false where a pad mask hides the element; CONST true when
// always valid). Both come out simplified by the symbolic rules.
#include <utility>
#include <vector>

#include "shape/shapetracker.h"
#include "uop/uop.h"

namespace tg {

std::pair<UOpPtr, UOpPtr> to_indexed_uops(const ShapeTracker& st, const std::vector<UOpPtr>& idxs);

}  // namespace tg
