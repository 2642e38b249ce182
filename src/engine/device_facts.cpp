// The front end's questions about devices (see device_facts.h).
#include "engine/device_facts.h"

#include "codegen/kernel.h"  // (allow_tf32)
#include "schedule/multi.h"

namespace tg {

std::optional<SharedMemory> device_shared_memory(const std::string& device) { return shared_memory_of(device); }

void synchronize_device(const std::string& device) { get_device(device).synchronize(); }

bool has_staged_tensor_cores(const std::string& device, DType dtype) {
  const Renderer& r = get_device(device).renderer();
  if (!r.async_copies()) return false;
  for (const TensorCore& tc : r.tensor_cores())
    if (tc.in == dtype && (!tc.tf32() || allow_tf32())) return true;
  return false;
}

int64_t shard_axis_of(const UOpPtr& value) {
  UOpPtr u = value;
  if (u->op != Ops::MULTI) u = lower_multi_sink(UOp::make(Ops::SINK, dtypes::void_, {u}))->src.at(0);
  return u->op == Ops::MULTI ? u->get<int64_t>() : -1;
}

}  // namespace tg
