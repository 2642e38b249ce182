#pragma once
// The memory behind BUFFER nodes (engine-owned, keyed by node, never stored in the node): made from the node's
// device, size and dtype the first time it is asked for (the scheduler makes BUFFER nodes as pure IR:
// schedule/realized.h), or given at the node's creation for external memory. Entries die with their node.
#include <memory>
#include <string>

#include "runtime/buffer.h"
#include "schedule/realized.h"
#include "uop/uop.h"

namespace tg {

// The Buffer behind a BUFFER node (made, not yet allocated, on first use); throws tg::Error for another node.
std::shared_ptr<Buffer> buffer_of(const UOp* buffer_uop);
// A new BUFFER node on `device` whose Buffer is `size` elements of writable external memory of that device at
// `data` (Tensor::from_blob), kept alive by `owner`.
UOpPtr new_external_buffer_uop(const std::string& device, int64_t size, DType dtype, void* data,
                               std::shared_ptr<const void> owner);
// A new BUFFER node on `device` (host memory: HOST, CPU) whose Buffer reads `size` elements of external memory at
// `data` (a file mapping) in place, kept alive by `owner` (Buffer::read_only_view: a write copies it first, on
// HOST it is an error).
UOpPtr new_read_only_buffer_uop(const std::string& device, int64_t size, DType dtype, const void* data,
                                std::shared_ptr<const void> owner);

}  // namespace tg
