#pragma once
// Movement ops in the tensor graph and their folding into VIEW nodes: shared by the Tensor front end (which
// builds them) and the scheduler (which folds them into ShapeTrackers).
#include <vector>

#include "uop/uop.h"

namespace tg {

// A view of `u` through `st`: folds into an existing VIEW, drops identity views of computed nodes.
UOpPtr make_view(const UOpPtr& u, const ShapeTracker& st);
// The ShapeTracker currently applied to a node (identity for non-VIEW nodes).
ShapeTracker tracker_of(const UOpPtr& u);
// A movement op node (RESHAPE, PERMUTE, EXPAND, PAD, SHRINK, FLIP) on top of `u`; the arg is a Shape (sizes, axes,
// flattened (begin, end) pairs or flip flags). The tensor graph keeps
// them (autograd needs each one); the scheduler folds them into VIEWs.
UOpPtr movement_uop(Ops op, const UOpPtr& u, Shape arg);
// Apply one movement op (arg as in movement_uop) to a tracker.
ShapeTracker apply_movement(const ShapeTracker& st, Ops op, const Shape& arg);

}  // namespace tg
