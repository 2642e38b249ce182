#pragma once
// The scheduler: from the tensors to realize, find the buffers that must exist, group the rest into
// kernels (an elementwise chain is one kernel; a reduce with the elementwise work before and after it is
// one kernel), and emit a toposorted list of ScheduleItems.
#include <atomic>
#include <memory>
#include <utility>
#include <vector>

#include "uop/uop.h"

namespace tg {

// ast is SINK(STORE(DEFINE_GLOBAL 0, VIEW, value), ...) (a STORE per output) with LOAD(DEFINE_GLOBAL i, VIEW) and CONST(VIEW) leaves,
// or a COPY node (bufs[0] <- bufs[1]). bufs: outputs first, then inputs, in DEFINE_GLOBAL order, as BUFFER
// nodes: the engine binds them to memory when it runs the item (engine/buffers.h), so a schedule can be run
// again on other memory.
// A variable's value for one run of a kernel (its AST holds the DEFINE_VAR, unbound).
struct VarValue {
  NamedRange var;
  int64_t value;
};

struct ScheduleItem {
  UOpPtr ast;
  std::vector<UOpPtr> bufs;    // the buffers the kernel (or copy) writes, then those it reads
  size_t outputs = 1;          // bufs[0 .. outputs) are written: more than one in a multi-reduce kernel
  std::vector<VarValue> vars;  // the values of the variables the kernel reads
};

struct Schedule {
  std::vector<ScheduleItem> items;
  std::vector<UOpPtr> roots;  // what each root becomes: a VIEW of a realized BUFFER (or a CONST view)
  // Every node this schedule realizes, with the VIEW(BUFFER) that holds its value (tinygrad's "becomes" map).
  std::vector<std::pair<UOpPtr, UOpPtr>> becomes;
  bool cached = false;  // made from the schedule cache's copy of a graph of the same structure
  // Shared by every schedule made from one cache entry (null when not cached): how many times in a row the
  // engine's memory planner walked a graph of this structure and shared nothing, so it can stop walking them.
  std::shared_ptr<std::atomic<int>> fruitless_plans;
};

// The schedule cache's counts since the process started (create_schedule calls that found their structure, that
// scheduled it, that could not use the cache) and its size now.
struct ScheduleCacheStats {
  int64_t hits = 0, misses = 0, bypassed = 0;
  size_t entries = 0;
};
ScheduleCacheStats schedule_cache_stats();

// Schedules the graphs of `roots`. A graph of the same structure as one scheduled before (other buffers, other
// variable values) takes the earlier schedule from a cache (schedule/schedule_cache.cpp; SCACHE=0 turns it off).
Schedule create_schedule(const std::vector<UOpPtr>& roots);
// Records what a schedule about to run realizes (schedule/realized.h), so later graphs read it instead of
// computing it again: each node's view and the buffers its kernel read. Every buffer a kernel writes has new
// contents: values realized from its old ones by earlier schedules, and by kernels of this one that run before
// the write (an optimizer's reads before its ASSIGNs), go out of make()'s reach. A realized ASSIGN is a write that
// happened: a later one that spells the same node must run again.
void record_realized(const Schedule& sched);
// The scheduler proper, over a SINK whose realized nodes are already views of their buffers. Records nothing:
// what it realizes is in the result's `becomes`.
Schedule schedule_graph(const UOpPtr& sink);

}  // namespace tg
