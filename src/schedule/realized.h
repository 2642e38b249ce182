#pragma once
// Side tables of the tensor graph the scheduler keeps (never stored in the nodes themselves):
//  - BUFFER nodes: made here as pure IR (a unique id, the element count, the dtype and a DEVICE source); the
//    memory behind one belongs to the engine (engine/buffers.h), which makes it when a schedule item runs.
//  - computed node -> VIEW(BUFFER) that holds its realized value (tinygrad's "becomes" map), so a graph built
//    before a realize reuses the result instead of computing it again.
//  - BUFFER node -> the realized nodes computed from its contents (to forget them when it is overwritten).
// Entries die with their key node (UOp::add_destroy_hook).
#include <cstdint>
#include <span>
#include <string>

#include "uop/uop.h"

namespace tg {

// A new BUFFER node (unique) of `size` elements of `dtype` on `device`.
UOpPtr new_buffer_uop(const std::string& device, int64_t size, DType dtype);
// The device named by a BUFFER node.
std::string buffer_device(const UOp* buffer_uop);
// The BUFFER a realized value's (nested) VIEW reads, or nullptr (a view of a constant).
const UOp* buffer_under(const UOp* view);

// A realized node stands for the value it was computed from: once a buffer it read is overwritten (an ASSIGN),
// a graph built afterwards that spells the same node means the new contents. set_realized records the node's
// view and the buffers its value was computed from (`reads`); buffers_overwritten takes each node that read one
// of `buffers` and still lives out of UOp::make's reach (UOp::unintern): its holders keep it and its value (as
// tinygrad's graphs keep a realized buffer), a graph built afterwards gets a new node and computes it again.
void set_realized(const UOpPtr& node, const UOpPtr& view_of_buffer, std::span<const UOpPtr> reads = {});
UOpPtr realized(const UOp* node);  // nullptr when not realized
void buffers_overwritten(std::span<const UOpPtr> buffers);

}  // namespace tg
