#pragma once
// Collectives between devices for sharded tensors (schedule/multi.h): which device sets have one, and running them.
// The scheduler emits one ALLREDUCE item per device (each reads every device's part); the engine runs them as one
// item and one call (NCCL between CUDA GPUs, a reduce in shared memory between CPU devices).
#include <string>
#include <vector>

#include "schedule/schedule.h"

namespace tg {

// The multi pass's CollectiveSupport: distinct CUDA GPUs with NCCL loaded and a dtype NCCL reduces, or CPU devices
// (whose memory is all this process's: the reduce reads the parts in place) and a 32/64-bit number type.
bool has_collective(const std::vector<std::string>& devices, DType dtype);
// The ALLREDUCE items of one collective (the same parts and op) as one item at the first one's place: the ast an
// ALLREDUCE of the op over the device set, bufs the n results in device order (a new buffer for a device whose result
// this schedule does not use), then the n parts. Other items unchanged.
std::vector<ScheduleItem> merge_collectives(std::vector<ScheduleItem> items);
// Runs a merged item (DEBUG=2 prints it as one line).
void run_collective(const ScheduleItem& item);
// Runs merged items that are ready together; the GPUs' in one NCCL group (one launch and rendezvous for all), unless
// each item is timed (DEBUG>=2, PROFILE).
void run_collectives(const std::vector<ScheduleItem>& items);

}  // namespace tg
