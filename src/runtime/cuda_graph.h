#pragma once
// CUDA graphs by stream capture: the launches a callback makes are recorded on a stream of their own, and the
// graph they form is queued again with one cuGraphLaunch (TinyJit's replays: engine/replay_plan.h).
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "runtime/cuda_driver.h"
#include "runtime/device.h"

namespace tg::cu {

// The stream this thread's kernel launches go to: the capture's while record_graph runs, else the legacy
// default stream (nullptr).
CUstream launch_stream();

// One kernel launch: the function, its sizes and its arguments' values (what a graph's kernel node holds).
struct KernelLaunch {
  CUfunction fn = nullptr;
  unsigned grid[3] = {1, 1, 1}, block[3] = {1, 1, 1}, shared = 0;
  std::vector<CUdeviceptr> ptrs;  // buffers, then
  std::vector<int32_t> ints;      // variables, then
  std::vector<CUtensorMap> maps;  // tensor maps, in parameter order
  // cuLaunchKernel's kernelParams: a pointer to each value (valid while this launch lives).
  std::vector<void*> params();
  bool same_as(const KernelLaunch& o) const;
};
// While a graph takes new arguments (LaunchGraph::update), the launches this thread's programs make are written
// here instead of run; null otherwise.
std::vector<KernelLaunch>* launch_log();

// Records the launches `record` makes on this thread in `ctx` (current on this thread) as a graph; nullptr when
// the driver has no graph entry points. Throws tg::Error naming `device` when the capture fails.
std::unique_ptr<LaunchGraph> record_graph(CUcontext ctx, const std::string& device,
                                          const std::function<void()>& record);

}  // namespace tg::cu
