#pragma once
// Side tables of the tensor graph the scheduler keeps (never stored in the nodes themselves):
//  - BUFFER nodes: made here as pure IR (a unique id, the element count, the dtype and a DEVICE source); the
//    memory behind one belongs to the engine (engine/buffers.h), which makes it when a schedule item runs.
//  - computed node -> VIEW(BUFFER) that holds its realized value (tinygrad's "becomes" map), so a graph built
//    before a realize reuses the result instead of computing it again.
// Entries die with their key node (UOp::add_destroy_hook).
#include <cstdint>
#include <string>

#include "uop/uop.h"

namespace tg {

// A new BUFFER node (unique) of `size` elements of `dtype` on `device`.
UOpPtr new_buffer_uop(const std::string& device, int64_t size, DType dtype);
// The device named by a BUFFER node.
std::string buffer_device(const UOp* buffer_uop);

void set_realized(const UOpPtr& node, const UOpPtr& view_of_buffer);
UOpPtr realized(const UOp* node);  // nullptr when not realized

}  // namespace tg
