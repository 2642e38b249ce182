#pragma once
// Which buffers of a plain schedule anyone can still reach once its realize has returned (the memory planner may
// give the others' memory to each other: engine/memory_planner.h).
//
// A realized node's buffer stays reachable while the node lives (its realized-table entry dies with it), and a
// node lives while anything holds it: a tensor, a node of another graph, or a node of this graph that lives. No
// node keeps a count of its tensors (tinygrad's lb_refcount), so the holders are counted here: a node of the
// realized graph whose shared_ptr count exceeds the references this graph, the schedule and the caller account
// for is held from outside, and so is everything below it (autograd may walk through realized nodes and read
// their buffers later). Buffers of the results (the roots' views) are reachable too.
#include <unordered_set>
#include <vector>

#include "schedule/schedule.h"

namespace tg {

// The BUFFER nodes reachable after the realize of `roots` scheduled as `sched` (its `becomes` already recorded),
// given that the caller then drops `released[i]` references to roots[i] besides `roots` itself (the tensors it
// swaps to their results). Counts references with shared_ptr::use_count, so only the caller's thread may touch
// the graph meanwhile; another holder only makes more buffers reachable, never fewer.
std::unordered_set<const UOp*> reachable_buffers(const std::vector<UOpPtr>& roots, const std::vector<int>& released,
                                                 const Schedule& sched);

}  // namespace tg
