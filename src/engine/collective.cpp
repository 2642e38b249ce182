// Collectives for sharded tensors (collective.h): NCCL between CUDA GPUs.
#include "engine/collective.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>

#include "engine/buffers.h"
#include "engine/realize.h"
#include "runtime/device.h"
#include "runtime/nccl.h"
#include "schedule/realized.h"
#include "tg/context.h"
#include "tg/counters.h"
#include "tg/error.h"
#include "uop/device_set.h"

namespace tg {
namespace {

// "CUDA" -> 0, "CUDA:3" -> 3; -1 for any other device.
int cuda_ordinal(const std::string& device) {
  auto [kind, index] = device_kind(device);
  return kind == "CUDA" ? index : -1;
}

bool is_cpu(const std::string& device) { return device_kind(device).first == "CPU"; }

// The CPU devices' collective: their memory is this process's, so the reduce reads every part where it is, in
// device order (every result the same bits), and writes each result.
template <class T>
void host_all_reduce(const std::vector<const void*>& send, const std::vector<void*>& recv, size_t count, Ops op) {
  constexpr size_t kBlock = 4096;  // a block of the sum stays in cache while it is written to every result
  T acc[kBlock];
  for (size_t b = 0; b < count; b += kBlock) {
    const size_t e = std::min(count, b + kBlock);
    const T* first = static_cast<const T*>(send[0]);
    for (size_t k = b; k < e; k++) acc[k - b] = first[k];
    for (size_t j = 1; j < send.size(); j++) {
      const T* in = static_cast<const T*>(send[j]);
      if (op == Ops::ADD)
        for (size_t k = b; k < e; k++) acc[k - b] = T(acc[k - b] + in[k]);
      else if (op == Ops::MUL)
        for (size_t k = b; k < e; k++) acc[k - b] = T(acc[k - b] * in[k]);
      else
        for (size_t k = b; k < e; k++) acc[k - b] = std::max(acc[k - b], in[k]);
    }
    for (void* out : recv) std::memcpy(static_cast<T*>(out) + b, acc, (e - b) * sizeof(T));
  }
}

bool host_reduces(DType dt) {
  return dt == dtypes::float32 || dt == dtypes::float64 || dt == dtypes::int32 || dt == dtypes::int64 ||
         dt == dtypes::uint32 || dt == dtypes::uint64;
}

void host_all_reduce(const std::vector<const void*>& send, const std::vector<void*>& recv, size_t count, DType dt,
                     Ops op) {
  if (dt == dtypes::float32) return host_all_reduce<float>(send, recv, count, op);
  if (dt == dtypes::float64) return host_all_reduce<double>(send, recv, count, op);
  if (dt == dtypes::int32) return host_all_reduce<int32_t>(send, recv, count, op);
  if (dt == dtypes::int64) return host_all_reduce<int64_t>(send, recv, count, op);
  if (dt == dtypes::uint32) return host_all_reduce<uint32_t>(send, recv, count, op);
  if (dt == dtypes::uint64) return host_all_reduce<uint64_t>(send, recv, count, op);
  throw Error(std::string("allreduce: no host reduce of ") + dt.name());
}

}  // namespace

bool has_collective(const std::vector<std::string>& devices, DType dtype) {
  if (devices.size() < 2) return false;
  bool cuda = true, cpu = true;
  for (const std::string& d : devices) {
    cuda = cuda && cuda_ordinal(d) >= 0;
    cpu = cpu && is_cpu(d);
  }
  if (cpu) return host_reduces(dtype);
  return cuda && nccl_supports(dtype, Ops::ADD) && nccl_available();
}

std::vector<ScheduleItem> merge_collectives(std::vector<ScheduleItem> items) {
  std::vector<ScheduleItem> out;
  // (the parts and the op) -> the merged item's index in out
  std::map<std::pair<std::vector<const UOp*>, Ops>, size_t> merged;
  for (ScheduleItem& item : items) {
    if (item.ast->op != Ops::ALLREDUCE) {
      out.push_back(std::move(item));
      continue;
    }
    const auto& arg = item.ast->get<ReduceArg>();
    const size_t n = item.ast->src.size() - 1, rank = size_t(arg.axes.at(0));
    std::vector<const UOp*> parts;
    for (size_t i = 1; i < item.bufs.size(); i++) parts.push_back(item.bufs[i].get());
    auto [it, fresh] = merged.try_emplace({parts, arg.op}, out.size());
    if (fresh) {
      std::vector<std::string> devices;
      for (const UOp* p : parts) devices.push_back(buffer_device(p));
      auto set = UOp::make(Ops::DEVICE, dtypes::void_, {}, device_set_name(devices));
      ScheduleItem m{UOp::make(Ops::ALLREDUCE, item.ast->dtype, {set}, ReduceArg{arg.op, {}}), {}, n, {}};
      for (size_t i = 0; i < n; i++) {  // results, until each device's item is found
        const auto& b = item.bufs[0]->get<BufferArg>();
        m.bufs.push_back(new_buffer_uop(devices[i], b.size, item.bufs[0]->dtype));
      }
      m.bufs.insert(m.bufs.end(), item.bufs.begin() + 1, item.bufs.end());
      out.push_back(std::move(m));
    }
    out[it->second].bufs[rank] = item.bufs[0];
  }
  return out;
}

namespace {

// A merged ALLREDUCE item bound to memory.
struct BoundCollective {
  std::vector<std::string> devices;
  std::vector<int> ordinals;  // CUDA ordinals (-1: not a CUDA GPU)
  std::vector<const void*> send;
  std::vector<void*> recv;
  DType dtype = dtypes::float32;
  size_t bytes = 0;
  Ops op = Ops::ADD;
  bool on_cpus() const { return std::all_of(devices.begin(), devices.end(), is_cpu); }
  bool on_gpus() const {
    return std::all_of(ordinals.begin(), ordinals.end(), [](int o) { return o >= 0; });
  }
};

BoundCollective bind(const ScheduleItem& item) {
  BoundCollective c;
  const size_t n = item.outputs;
  for (size_t i = 0; i < n; i++) {
    std::shared_ptr<Buffer> out = buffer_of(item.bufs[i].get()), in = buffer_of(item.bufs[n + i].get());
    c.devices.push_back(out->device());
    c.ordinals.push_back(cuda_ordinal(out->device()));
    c.recv.push_back(out->ensure_writable());
    c.send.push_back(in->ensure_allocated());
    get_device(out->device());  // (opened, so its context exists before NCCL uses it)
  }
  c.dtype = item.bufs[0]->dtype;
  c.bytes = buffer_of(item.bufs[0].get())->nbytes();
  c.op = item.ast->get<ReduceArg>().op;
  if (!c.on_cpus() && !c.on_gpus())
    throw Error("allreduce over " + device_set_name(c.devices) + ": no collective for these devices");
  return c;
}

void count_and_print(const BoundCollective& c, double et) {
  GlobalCounters::kernel_count++;
  GlobalCounters::global_mem += int64_t(c.bytes * c.devices.size() * 2);
  GlobalCounters::time_sum_s += et;
  if (DEBUG < 2) return;
  std::printf("*** %-7s %4lld allreduce %7.2fM over %-30s tm %9.2fus\n", c.devices[0].c_str(),
              static_cast<long long>(GlobalCounters::kernel_count), double(c.bytes) / 1e6,
              device_set_name(c.devices).c_str(), et * 1e6);
  std::fflush(stdout);
}

}  // namespace

void run_collective(const ScheduleItem& item) { run_collectives({item}); }

void run_collectives(const std::vector<ScheduleItem>& items) {
  std::vector<BoundCollective> bound;
  for (const ScheduleItem& item : items) bound.push_back(bind(item));
  const bool wait = timing_each_item();
  std::vector<NcclAllReduce> group;  // the GPUs' collectives, one NCCL group (one at a time when timed)
  auto flush = [&] {
    if (!group.empty()) nccl_all_reduce(group);
    group.clear();
  };
  for (const BoundCollective& c : bound) {
    auto t0 = std::chrono::steady_clock::now();
    const size_t count = c.bytes / size_t(c.dtype.itemsize());
    if (c.on_cpus())
      host_all_reduce(c.send, c.recv, count, c.dtype, c.op);
    else
      group.push_back({c.ordinals, c.send, c.recv, count, c.dtype, c.op});
    if (wait) {
      flush();
      for (const std::string& d : c.devices) get_device(d).synchronize();
    }
    count_and_print(c, wait ? std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() : 0);
  }
  flush();
}

}  // namespace tg
