#pragma once
// CUDA graphs by stream capture: the launches a callback makes are recorded on a stream of their own, and the
// graph they form is queued again with one cuGraphLaunch (TinyJit's replays: engine/replay_plan.h).
#include <functional>
#include <memory>
#include <string>

#include "runtime/cuda_driver.h"
#include "runtime/device.h"

namespace tg::cu {

// The stream this thread's kernel launches go to: the capture's while record_graph runs, else the legacy
// default stream (nullptr).
CUstream launch_stream();

// Records the launches `record` makes on this thread in `ctx` (current on this thread) as a graph; nullptr when
// the driver has no graph entry points. Throws tg::Error naming `device` when the capture fails.
std::unique_ptr<LaunchGraph> record_graph(CUcontext ctx, const std::string& device,
                                          const std::function<void()>& record);

}  // namespace tg::cu
