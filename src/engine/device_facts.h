#pragma once
// What the front end (tensor/, nn/) may ask about devices and spread values, answered by the engine from the runtime,
// the device's renderer and the multi pass, so that nothing above the engine reaches those stages itself.
#include <optional>
#include <string>

#include "runtime/device.h"  // (SharedMemory)
#include "tg/dtype.h"
#include "uop/uop.h"

namespace tg {

// How other code may address the device's buffers (DLPack, numpy, file mappings read in place); nullopt where the
// device's memory is its own.
std::optional<SharedMemory> device_shared_memory(const std::string& device);
// Returns once everything queued on the device has finished.
void synchronize_device(const std::string& device);
// Whether codegen puts products of `dtype` on the device's tensor cores with operands staged through shared memory
// (float32's tf32 cores only where ALLOW_TF32 permits them).
bool has_staged_tensor_cores(const std::string& device, DType dtype);
// The axis a value spread over a device set is split along, read off the multi pass; -1 where every device holds
// all of it (replicated) or it is not spread.
int64_t shard_axis_of(const UOpPtr& value);

}  // namespace tg
