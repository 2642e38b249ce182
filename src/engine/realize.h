#pragma once
// The realize loop: schedule, lower each item through the method cache, run, and count.
#include <memory>
#include <string>
#include <vector>

#include "codegen/program.h"
#include "runtime/buffer.h"
#include "runtime/device.h"
#include "schedule/schedule.h"

namespace tg {

// A compiled kernel for one device, shared by every ScheduleItem with the same AST.
struct CompiledRunner {
  ProgramSpec spec;
  std::unique_ptr<Program> program;
  std::string device;
  int viz_context = -1;  // (VIZ) the trace's context of its codegen (uop/viz_trace.h)
};

// The method cache: (device, ast) -> CompiledRunner, compiling on a miss.
CompiledRunner& get_runner(const std::string& device, const UOpPtr& ast);
// Copies src's bytes into dst (the same size), directly between the devices where dst's allocator can (true),
// else through host memory (false). Does not wait for a GPU copy to finish.
bool copy_buffer(Buffer& dst, Buffer& src);
// Whether every kernel and copy is waited for and timed (DEBUG>=2 prints the times, PROFILE=1 only adds them up).
bool timing_each_item();
// The values of a kernel's variables (spec.vars, in parameter order) from an item's bindings; a variable without
// a value or outside its range is a tg::Error.
std::vector<int64_t> var_values(const ProgramSpec& spec, const std::vector<VarValue>& vars);
// Run one ScheduleItem (a kernel or a copy), with DEBUG=2 output and GlobalCounters; `runner`, when given, is the
// kernel's (from find_runners), else the method cache is asked.
void run_schedule_item(const ScheduleItem& item, CompiledRunner* runner = nullptr);
// Realize the graphs of `roots`; returns what each root becomes (a view of its buffer). released[i]: how many more
// references to roots[i] the caller drops once this returns (the tensors it swaps to the results); given, the
// intermediates no one can reach afterwards share memory (NO_MEMORY_PLANNER=1: not).
std::vector<UOpPtr> run_realize(const std::vector<UOpPtr>& roots, const std::vector<int>& released = {});

}  // namespace tg
