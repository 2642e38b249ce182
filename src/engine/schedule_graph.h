#pragma once
// GRAPH=1: the kernels and copies a process ran, as a graphviz graph written when it exits (GRAPHPATH.dot, by
// default /tmp/net.dot, and GRAPHPATH.svg where graphviz's `dot` is installed). Kernels and copies are boxes named as
// DEBUG=2 prints them; a buffer is an edge from the kernel that last wrote it to each kernel that read it; buffers
// no recorded kernel wrote (inputs, weights, constants loaded from the host) are ellipses. GRAPHUOPS=1: each
// kernel's linearized UOps as GRAPHPATH.<kernel>.dot (and .svg), one file per kernel name. (A TinyJit replay runs the
// kernels its capture recorded here; it is not drawn again.)
#include <cstdint>
#include <string>

#include "codegen/program.h"
#include "schedule/schedule.h"

namespace tg {

// Whether GRAPH or GRAPHUOPS is on (nothing is recorded otherwise).
bool schedule_graph_enabled();
// A kernel that ran: item.bufs[0 .. item.outputs) were written, the rest read. `number` is its DEBUG=2 count.
void schedule_graph_kernel(const ProgramSpec& spec, const std::string& device, const ScheduleItem& item,
                           int64_t number);
// A copy between buffers (item.bufs[0] <- item.bufs[1]), named as DEBUG=2 names it.
void schedule_graph_copy(const std::string& name, const ScheduleItem& item, int64_t number);
// Writes GRAPHPATH.dot (and .svg) now with everything recorded so far; also done when the process exits.
// Returns the .dot file's path ("" when GRAPH is off).
std::string schedule_graph_write();

}  // namespace tg
