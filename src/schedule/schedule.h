#pragma once
// The scheduler: from the tensors to realize, find the buffers that must exist, group the rest into
// kernels (an elementwise chain is one kernel; a reduce with the elementwise work before and after it is
// one kernel), and emit a toposorted list of ScheduleItems.
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
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

// Why the scheduler gave a node a buffer of its own (bits: a node may have several reasons). VIZ lists them for
// each item of a schedule.
namespace realize_why {
constexpr uint32_t kOutput = 1u << 0;         // a tensor this realize was asked for
constexpr uint32_t kContiguous = 1u << 1;     // .contiguous()
constexpr uint32_t kCopy = 1u << 2;           // a copy from another device (or the host)
constexpr uint32_t kAssign = 1u << 3;         // an assign into an existing buffer
constexpr uint32_t kAllReduce = 1u << 4;      // a collective's result
constexpr uint32_t kReadWhole = 1u << 5;      // a copy or a collective reads it whole
constexpr uint32_t kSharedReduce = 1u << 6;   // a reduce with several users (never computed twice)
constexpr uint32_t kExpanded = 1u << 7;       // read through an expanding view (inline, it would run per copy)
constexpr uint32_t kConstant = 1u << 8;       // a constant output, given a buffer of its full shape
constexpr uint32_t kDepth = 1u << 9;          // it ends a fused chain of kMaxKernelDepth ops
constexpr uint32_t kPadded = 1u << 10;        // under a zero-padding view it would not stay zero (or has a reduce)
constexpr uint32_t kReduceView = 1u << 11;    // a reduce read through a view other than its whole output
constexpr uint32_t kReduceLoops = 1u << 12;   // a reduce over other loops than the kernel's own reduce
constexpr uint32_t kAssignSource = 1u << 13;  // an assign's value, read where the assign's order cannot be kept
}  // namespace realize_why
// The reasons of `why` in words, separated by "; " ("" for none).
std::string realize_why_text(uint32_t why);

struct ScheduleItem {
  UOpPtr ast;
  std::vector<UOpPtr> bufs;    // the buffers the kernel (or copy) writes, then those it reads
  size_t outputs = 1;          // bufs[0 .. outputs) are written: more than one in a multi-reduce kernel
  std::vector<VarValue> vars;  // the values of the variables the kernel reads
  uint32_t why = 0;            // realize_why bits of bufs[0] (0: an item the scheduler did not make)
  uint32_t why_hosted = 0;     // those of the other outputs (reduces this kernel computes for other kernels too)
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
