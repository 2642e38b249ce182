#pragma once
// reduce_to_acc: the pass that turns each REDUCE of a lowered kernel graph into an accumulator, run by
// linearize_kernel before it orders the graph (codegen/linearize.h):
//
//   REDUCE(value, ranges.., op)  ->  ASSIGN(acc, op(acc, value)),  acc = DEFINE_ACC(identity, ranges..)
//
// The accumulator lists the loops it sums over; the linearizer declares it (without them) before those loops, puts
// the update and the ASSIGN at the end of their body, and later users read the ASSIGN: the accumulator's value
// once the loops are done. Two other updates than op(acc, value):
//   - a tensor core's lanes, all summed by REDUCEs over the same loops, of a chain of WMMAs (or WGMMAs) started
//     from zeros: the chain's first op takes the accumulators as C, and each update is the last op's lane
//     (no add per lane and mma);
//   - sequential_sums: a float sum of a tree of single-use ADDs inside the loops adds the terms one at a time,
//     acc = ((acc + x0) + x1) .. (each a fused multiply-add on a GPU).
#include "uop/uop.h"

namespace tg {

UOpPtr reduce_to_acc(const UOpPtr& sink, bool sequential_sums);

}  // namespace tg
