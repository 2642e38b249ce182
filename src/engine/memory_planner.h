#pragma once
// The memory planner: the intermediate buffers of TinyJit's captured batch (engine/replay_plan.h), and of a plain
// schedule (engine/realize.h), share one arena per device where their lifetimes do not overlap.
//
// A buffer is planned when nothing outside the batch can see it: it is not an input, not an output, nothing but
// the batch's items holds its BUFFER node (no tensor the caller keeps, no gradient stored on a parameter), its
// first use is a kernel writing it, and its device's memory is plain (host or GPU, not the interpreter's checked
// allocations). Its lifetime is the items from that write to its last use, both included (a kernel never reads
// and writes overlapping memory). Buffers are placed first-fit in order of size, largest first, at 256-byte
// offsets; each planned Buffer is then moved into its slice of the arena (Buffer::rebase), its own block freed.
#include <cstdint>
#include <memory>
#include <unordered_set>
#include <vector>

#include "runtime/buffer.h"

#include "schedule/schedule.h"

namespace tg {

struct MemoryPlanStats {
  int64_t buffers = 0;      // planned
  int64_t bytes = 0;        // their sizes, summed (what they took before)
  int64_t arena_bytes = 0;  // what they take now, all devices
  std::vector<std::shared_ptr<Buffer>> arenas;  // one per device that saved memory
};

// Plans the intermediates of `items` (the caller's only copy of them: BUFFER nodes held elsewhere are kept out)
// given the batch's inputs and outputs. Call before anything binds the buffers' pointers.
MemoryPlanStats plan_memory(const std::vector<ScheduleItem>& items, const std::vector<UOpPtr>& keep);

// Plans the intermediates of one plain schedule about to run: the buffers it makes (first written by its kernels,
// not allocated yet) that no one can reach once it has run (all but `reachable`: schedule/liveness.h) and that no
// copy touches (a copy between devices may read its source while the next kernels run, as tinygrad keeps them
// out too). Lifetimes are as above; all of them end with the schedule.
MemoryPlanStats plan_schedule_memory(const std::vector<ScheduleItem>& items,
                                     const std::unordered_set<const UOp*>& reachable);

// MEMORY_POISON=1 (for tests): overwrites the arenas with 0xff bytes (NaN as floats) once the kernels that used
// them are done, so a later read of a buffer the planner thought dead gives NaN instead of a stale right answer.
void poison_if_asked(const MemoryPlanStats& stats);

}  // namespace tg
