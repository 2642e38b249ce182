#pragma once
// A device is {Allocator, Compiler, Program loader, Renderer}. Devices are opened on first use by name
// ("CPU", "CPU:0", "NULL", "INTERP", "CUDA", "CUDA:1"), once per process, and live until exit.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "codegen/program.h"
#include "renderer/renderer.h"

namespace tg {

class Device;

class Allocator {
 public:
  virtual ~Allocator() = default;
  // alloc/free go through an LRU cache of freed blocks keyed by size (see LRUAllocator).
  virtual void* alloc(size_t bytes) = 0;
  virtual void free(void* ptr, size_t bytes) = 0;
  virtual void copyin(void* dst, const void* host_src, size_t bytes) = 0;   // host -> device
  virtual void copyout(void* host_dst, const void* src, size_t bytes) = 0;  // device -> host
  // Optional: copy `bytes` from `src`, memory of `src_dev`, into `dst`, memory of this allocator's device,
  // without a trip through the host (a device-to-device or GPU peer copy). Returns false when it cannot
  // (src_dev is another kind of device): the caller then copies through host memory. The copy may still be
  // in flight on return, ordered before later work on both devices.
  virtual bool transfer(void* dst, const void* src, size_t bytes, Device& src_dev) { return false; }
};

class Compiler {
 public:
  virtual ~Compiler() = default;
  // Source -> binary bytes. Throws tg::Error with the compiler's message on failure.
  virtual std::string compile(const std::string& src) = 0;
  // Identifies the compiler and its flags, for the disk cache key.
  virtual std::string cache_key() const = 0;
  // compile(), through the on-disk cache (CACHELEVEL=0 disables it). Counts real compiles in compiles().
  std::string compile_cached(const std::string& src);
  static int64_t compiles();  // compiler invocations in this process (cache misses)
};

class Program {
 public:
  virtual ~Program() = default;
  // Run once. bufs are device pointers in parameter order, vars the DEFINE_VAR values. With wait=true,
  // block until done and return the run time in seconds (else 0; a GPU may still be running it).
  virtual double run(const std::vector<void*>& bufs, const std::vector<int64_t>& vars, bool wait) = 0;
};

// A batch of kernel launches recorded once (Device::record_graph) and queued again with one call: a CUDA graph.
class LaunchGraph {
 public:
  virtual ~LaunchGraph() = default;
  virtual void launch() = 0;  // queues the batch as its launches were queued (no wait)
  // Records `record`'s launches again (the same kernels and sizes, new arguments: a variable's value) into this
  // graph in place. False where the device cannot: then record a new graph.
  virtual bool update(const std::function<void()>& record) {
    (void)record;
    return false;
  }
};

// Where a device's buffers live, for code outside the library (Tensor::memory, Tensor::from_blob, DLPack): DLPack's
// device type and the device's ordinal. Each backend declares its type in the device table (runtime/device.cpp):
// kDLCPU (1) for host memory any code may read, kDLCUDA (2) ...; none for memory nobody else may touch (NULL
// allocates nothing real, INTERP checks every access against its own allocations).
struct SharedMemory {
  int dlpack_type = 1, ordinal = 0;
  bool host() const { return dlpack_type == kDLPackHost; }
  static constexpr int kDLPackHost = 1;
};

class Device {
 public:
  virtual ~Device() = default;
  const std::string& name() const { return name_; }
  Allocator& allocator() { return *allocator_; }
  Compiler& compiler() { return *compiler_; }
  const Renderer& renderer() const { return *renderer_; }
  // Load a compiled binary (from compiler().compile_cached(spec.src)) as a runnable program.
  virtual std::unique_ptr<Program> load(const ProgramSpec& spec, const std::string& binary) = 0;
  // Wait until every kernel and copy queued on the device is done.
  virtual void synchronize() {}
  // Records the launches `record` makes on this device from this thread (Program::run with wait=false) as one
  // LaunchGraph instead of running them. nullptr where the device has no such thing (record is not called).
  virtual std::unique_ptr<LaunchGraph> record_graph(const std::function<void()>& record) {
    (void)record;
    return nullptr;
  }
  // NULL: schedules and compiles, never runs kernels or moves data.
  virtual bool executes() const { return true; }
  // Where its buffers live for code outside the library (none: its own).
  const std::optional<SharedMemory>& shared_memory() const { return shared_memory_; }

 protected:
  std::string name_;
  std::unique_ptr<Allocator> allocator_;
  std::unique_ptr<Compiler> compiler_;
  std::unique_ptr<Renderer> renderer_;

 private:
  friend Device& get_device(const std::string& name);  // (sets shared_memory_ from the device table)
  std::optional<SharedMemory> shared_memory_;
};


// The device table's SharedMemory for a device name (no device is opened); Device::shared_memory() is the same,
// looked up once when the device opens.
std::optional<SharedMemory> shared_memory_of(const std::string& device);

// Launch sizes as "[4, 1, 1]", for the runtimes' errors.
std::string format_dims(const std::vector<int64_t>& v);

// Open (once) and return a device. Accepts "CPU", "cpu", "CPU:0", "CUDA:1" ...; throws tg::Error for unknown
// names or devices not present on this machine (saying why: no libcuda, no GPU ...). DEBUG>=1 prints
// "opened device CPU from pid:N" on first open.
Device& get_device(const std::string& name);
// Canonical spelling: "cpu" -> "CPU", "CPU:0" -> "CPU", "cuda:0" -> "CUDA", "cuda:1" -> "CUDA:1". Throws
// tg::Error for unknown devices and for CUDA:N with N >= the number of GPUs ("CUDA" and "CUDA:0" are always
// spelled; get_device says why they cannot open).
std::string canonical_device(const std::string& name);
// A canonical device name's kind and instance: "CUDA:3" -> {"CUDA", 3}, "CPU" -> {"CPU", 0}.
std::pair<std::string, int> device_kind(const std::string& canonical);
// DEV from the environment if set, else the best available: "CUDA" when a GPU (and NVRTC) is there, else
// "CPU".
std::string default_device();

}  // namespace tg
