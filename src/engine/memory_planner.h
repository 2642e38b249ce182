#pragma once
// The memory planner of TinyJit's replays (engine/replay_plan.h): the intermediate buffers of a captured batch
// share one arena per device where their lifetimes do not overlap.
//
// A buffer is planned when nothing outside the batch can see it: it is not an input, not an output, nothing but
// the batch's items holds its BUFFER node (no tensor the caller keeps, no gradient stored on a parameter), its
// first use is a kernel writing it, and its device's memory is plain (host or GPU, not the interpreter's checked
// allocations). Its lifetime is the items from that write to its last use, both included (a kernel never reads
// and writes overlapping memory). Buffers are placed first-fit in order of size, largest first, at 256-byte
// offsets; each planned Buffer is then moved into its slice of the arena (Buffer::rebase), its own block freed.
#include <cstdint>
#include <vector>

#include "schedule/schedule.h"

namespace tg {

struct MemoryPlanStats {
  int64_t buffers = 0;      // planned
  int64_t bytes = 0;        // their sizes, summed (what they took before)
  int64_t arena_bytes = 0;  // what they take now, all devices
};

// Plans the intermediates of `items` (the caller's only copy of them: BUFFER nodes held elsewhere are kept out)
// given the batch's inputs and outputs. Call before anything binds the buffers' pointers.
MemoryPlanStats plan_memory(const std::vector<ScheduleItem>& items, const std::vector<UOpPtr>& keep);

}  // namespace tg
