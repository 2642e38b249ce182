#pragma once
// TinyJit's replays (tensor/jit.cpp): a captured batch (engine/capture.h) bound to memory once. Each kernel's
// runner and buffer pointers are resolved when the plan is made and the inputs' places noted, so a replay only
// swaps the new inputs' pointers in and launches. Where the device records launch graphs (CUDA) and the batch
// allows it (no kernel writes an input, JIT < 2), the first untimed replay records each run of consecutive kernels
// of one device between copies and collectives as one graph (a run's kernels are grouped by device first: they
// cannot depend on each other across devices), and every replay copies the new inputs into the captured
// ones, then launches the graphs (and runs the copies between them): one call per run of kernels. A replay that is
// timed or printed per kernel (DEBUG>=2, PROFILE) runs the items one by one, as eager code does.
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/capture.h"
#include "engine/memory_planner.h"
#include "engine/realize.h"
#include "runtime/buffer.h"
#include "runtime/device.h"
#include "schedule/schedule.h"

namespace tg {

// What a replay runs: kernels in runs between copies and collectives (a graph per device each), and the
// rendezvous of its collectives (consecutive ones are one group).
struct ReplayShape {
  size_t kernels = 0, runs = 0, copies = 0, collectives = 0, groups = 0;
};

class ReplayPlan {
 public:
  // `inputs`: the BUFFER nodes the batch read its inputs from when it was captured; `outputs`: those of the
  // results the caller sees; `host_inputs`: values each replay computes again first (capture.h). The plan is the
  // only holder of `items`: their intermediates share memory (engine/memory_planner.h; JIT_PLAN=0: they keep
  // their own).
  // `variables`: the names of the variables whose values each replay gives (the rest keep the capture's values).
  ReplayPlan(std::vector<ScheduleItem> items, std::vector<UOpPtr> inputs, const std::vector<UOpPtr>& outputs,
             std::vector<HostInput> host_inputs = {}, std::vector<std::string> variables = {});
  // Runs the batch on new inputs (their BUFFER nodes, in the captured order; the same shapes and dtypes) and the
  // variables' new values (in the order of `variables`; each checked against its range).
  void run(const std::vector<UOpPtr>& inputs, const std::vector<int64_t>& variables = {});
  size_t size() const { return items_.size(); }
  ReplayShape shape() const;  // (printed at DEBUG>=2 when the plan is made)
  bool graphed() const { return !graphs_.empty(); }
  const MemoryPlanStats& memory() const { return memory_; }

 private:
  struct Exec {
    CompiledRunner* runner = nullptr;  // null for a copy
    std::vector<std::shared_ptr<Buffer>> bufs;
    std::vector<void*> ptrs;
    std::vector<int64_t> vars;  // the kernel's variables' values at capture (ProgramSpec::vars order)
  };
  struct VarSlot {
    size_t exec, position, variable;  // exec's vars[position] is the replay's variable `variable`
    int64_t min, max;
  };
  struct InputSlot {
    size_t exec, buf, input;
  };
  std::vector<ScheduleItem> items_;
  std::vector<UOpPtr> inputs_;
  std::vector<UOpPtr> written_;  // BUFFER nodes the items write (each replay overwrites them)
  std::vector<HostInput> host_inputs_;
  std::vector<std::shared_ptr<Buffer>> input_bufs_;  // the captured inputs' memory
  std::vector<Exec> execs_;
  std::vector<InputSlot> slots_;
  // (exec, buf) of the buffers that were read-only views of a file at capture: a write after it gives them memory of
  // their own (Buffer::ensure_writable), which each replay then reads
  std::vector<std::pair<size_t, size_t>> movable_;
  std::vector<std::string> variables_;
  std::vector<VarSlot> var_slots_;
  bool graphable_ = true;
  bool graph_tried_ = false;
  // per exec: the graph of the run of kernels it starts (the others of the run: null, skipped), empty when none
  std::vector<std::unique_ptr<LaunchGraph>> graphs_;
  std::vector<size_t> graph_end_;                  // per exec starting a graph: one past its run's last kernel
  std::vector<int64_t> values_, graph_values_;     // the variables' values: this replay's, and the graphs'

  int64_t kernels_ = 0, ops_ = 0, mem_ = 0;  // per replay, for GlobalCounters (copies count themselves)
  MemoryPlanStats memory_;

  std::unordered_map<const UOp*, UOpPtr> rebind(const std::vector<UOpPtr>& inputs) const;
  void count_kernels() const;
  void refresh_host_inputs();
  void refresh_moved_buffers();
  void run_items(const std::vector<UOpPtr>& inputs);
  void set_variables(const std::vector<int64_t>& values);
  void run_bound(const std::vector<UOpPtr>& inputs);
  size_t non_kernels_end(size_t x) const;
  void record_graphs();
  void update_graphs();
  void launch_run(size_t begin, size_t end);
  void run_graphs(const std::vector<UOpPtr>& inputs);
};

}  // namespace tg
