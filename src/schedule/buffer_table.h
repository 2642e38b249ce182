#pragma once
// Side tables keyed by tensor-graph nodes (never stored in the nodes themselves):
//  - BUFFER node -> the Buffer behind it.
//  - computed node -> VIEW(BUFFER) that holds its realized value (tinygrad's "becomes" map), so a graph
//    built before a realize reuses the result instead of computing it again.
// Entries die with their key node (UOp::destroy_hook).
#include <memory>
#include <string>

#include "runtime/buffer.h"
#include "uop/uop.h"

namespace tg {

// A new BUFFER node (unique) on `device` with a Buffer of `size` elements behind it (not yet allocated).
UOpPtr new_buffer_uop(const std::string& device, int64_t size, DType dtype);
// A new BUFFER node on HOST whose Buffer is `size` elements of external memory at `data` (read-only), kept
// alive by `owner` (e.g. a file mapping) for as long as the node's Buffer lives.
UOpPtr new_external_buffer_uop(int64_t size, DType dtype, const void* data, std::shared_ptr<const void> owner);
// A new BUFFER node on `device` whose Buffer is `size` elements of writable external memory of that device at
// `data` (Tensor::from_blob), kept alive by `owner`.
UOpPtr new_external_buffer_uop(const std::string& device, int64_t size, DType dtype, void* data,
                               std::shared_ptr<const void> owner);
// The Buffer behind a BUFFER node; throws tg::Error if there is none.
std::shared_ptr<Buffer> buffer_of(const UOp* buffer_uop);
// The device named by a BUFFER node.
std::string buffer_device(const UOp* buffer_uop);

void set_realized(const UOpPtr& node, const UOpPtr& view_of_buffer);
UOpPtr realized(const UOp* node);  // nullptr when not realized

}  // namespace tg
