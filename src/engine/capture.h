#pragma once
// The engine's side of TinyJit: record the items a call runs, and run them again on other memory.
//
// While a ScheduleCapture is alive on a thread, every ScheduleItem that thread runs (kernels and copies) is
// appended to it, with its BUFFER nodes as they were. replay() runs such a list again with some BUFFER nodes
// rebound to others (new inputs): no scheduling, no codegen, one method-cache lookup per kernel.
#include <cstdint>
#include <functional>
#include <unordered_map>
#include <vector>

#include "schedule/schedule.h"

namespace tg {

// A value the host computed during a captured call that each replay must compute again (the key of a random
// draw): before a replay's items run, `bytes()` is written into `host`, a HOST buffer the items copy to the device.
struct HostInput {
  UOpPtr host;
  std::function<std::vector<uint8_t>()> bytes;
};

class ScheduleCapture {
 public:
  ScheduleCapture();   // starts recording on this thread (one at a time: a nested capture is a tg::Error)
  ~ScheduleCapture();  // stops
  ScheduleCapture(const ScheduleCapture&) = delete;
  ScheduleCapture& operator=(const ScheduleCapture&) = delete;
  std::vector<ScheduleItem> items;
  std::vector<HostInput> host_inputs;  // in the order the call made them (a replay recomputes them in that order)

  static ScheduleCapture* active();  // this thread's, or nullptr
};

// Whether this thread is capturing or replaying a TinyJit's items (JITBEAM applies to the kernels it compiles).
bool in_jit();
// While alive, this thread counts as replaying (binding a replay plan compiles the kernels a replay runs).
class ReplayScope {
 public:
  ReplayScope();
  ~ReplayScope();
  ReplayScope(const ReplayScope&) = delete;
  ReplayScope& operator=(const ReplayScope&) = delete;
};

// Runs `items` in order, each BUFFER node found in `rebind` replaced by its value.
void replay(const std::vector<ScheduleItem>& items, const std::unordered_map<const UOp*, UOpPtr>& rebind);

}  // namespace tg
