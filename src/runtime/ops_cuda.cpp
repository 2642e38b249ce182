// Device "CUDA" ("CUDA:1" ...): an NVIDIA GPU through the driver API (cuda_driver.h) and NVRTC (nvrtc.h), both
// loaded at run time. Kernels are rendered by CUDARenderer, compiled to cubin for the GPU's compute capability,
// loaded as modules and launched on the context's default stream, so launches and copies run in queue order.
//
// Threads: the driver keeps a "current context" per thread, so every entry point makes the device's primary
// context current first (cuCtxSetCurrent is a thread-local write in the driver; cheap).
//
// Errors: every failing driver call becomes a tg::Error naming the device, the operation and the driver's
// message. A kernel that faults (illegal address ...) leaves the context in an error state the driver never
// clears: the device is then marked unusable and says so on every later use, while the rest of the process
// (CPU devices, other GPUs) goes on working.
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <vector>

#include "renderer/cuda.h"
#include "runtime/cuda_driver.h"
#include "runtime/cuda_graph.h"
#include "runtime/cuda_tensor_maps.h"
#include "runtime/devices.h"
#include "runtime/lru_allocator.h"
#include "runtime/nvrtc.h"
#include "tg/context.h"
#include "tg/error.h"

namespace tg {
namespace {

using namespace cu;

// What the allocator, the programs and the device of one GPU share.
class CudaContext {
 public:
  CudaContext(int ordinal, std::string name) : ordinal_(ordinal), name_(std::move(name)) {
    const Driver& d = driver();  // throws with the reason (no libcuda, cuInit failed ...)
    std::string why;
    int n = device_count(&why);
    if (ordinal < 0 || ordinal >= n)
      throw Error("CUDA: cannot open " + name_ + ": this machine has " + std::to_string(n) + " CUDA GPU" +
                  (n == 1 ? "" : "s") + (why.empty() ? "" : " (" + why + ")"));
    check(d.cuDeviceGet(&dev_, ordinal), "cuDeviceGet");
    check(d.cuDevicePrimaryCtxRetain(&ctx_, dev_), "cuDevicePrimaryCtxRetain");
    limits_.threads = attribute(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
    for (int i = 0; i < 3; i++) {
      limits_.block[i] = attribute(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X + i);
      limits_.grid[i] = attribute(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X + i);
    }
  }
  // Never runs in practice (devices live until exit); the primary context is shared with any other CUDA user
  // in the process, so it is released, never destroyed.
  ~CudaContext() { driver().cuDevicePrimaryCtxRelease(dev_); }

  // Launch limits, read once: threads a block, and per dimension the block and grid sizes.
  struct Limits {
    int64_t threads = 0, block[3] = {}, grid[3] = {};
  };
  const Limits& limits() const { return limits_; }
  const std::string& name() const { return name_; }
  int ordinal() const { return ordinal_; }
  CUdevice device() const { return dev_; }
  CUcontext context() const { return ctx_; }
  const Driver& d() const { return driver(); }
  bool broken() const { return broken_.load(); }

  int attribute(int attr) const {
    int v = 0;
    check(d().cuDeviceGetAttribute(&v, attr, dev_), "cuDeviceGetAttribute");
    return v;
  }

  // Make this GPU's context current on the calling thread; throws when an earlier fault broke the device.
  void enter() const {
    if (broken_.load()) {
      std::lock_guard<std::mutex> lock(mu_);
      throw Error(name_ + " is unusable after an earlier error (" + broken_why_ +
                  "): the driver keeps a faulted context in its error state; restart the process to use this GPU");
    }
    check(d().cuCtxSetCurrent(ctx_), "cuCtxSetCurrent");
  }

  // Throws tg::Error("<device>: <what>: <driver message>") unless r is success. A sticky error marks the
  // device unusable first.
  void check(CUresult r, const std::string& what) const {
    if (r == CUDA_SUCCESS) return;
    std::string msg = name_ + ": " + what + ": " + error_text(r);
    if (is_sticky(r)) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (broken_why_.empty()) broken_why_ = what + ": " + error_text(r);
      }
      broken_.store(true);
      msg += " (a kernel faulted; " + name_ + " cannot be used again in this process)";
    }
    throw Error(msg);
  }

 private:
  int ordinal_;
  std::string name_;
  CUdevice dev_ = 0;
  CUcontext ctx_ = nullptr;
  Limits limits_;
  mutable std::atomic<bool> broken_{false};
  mutable std::mutex mu_;
  mutable std::string broken_why_;
};

CUdeviceptr dptr(const void* p) { return CUdeviceptr(reinterpret_cast<uintptr_t>(p)); }

// ---- memory ----

class CudaDevice;
const CudaContext* cuda_context_of(Device& dev);

// cuMemAlloc'd device memory. Copies to the GPU of 1 MiB and more go through two pinned (page-locked)
// staging buffers: the host memcpy of one chunk overlaps the DMA of the other, and copyin returns as soon as
// the source is read, without waiting for the DMA (256 MiB on H100/H200 VMs: 7.7-9.5 GB/s against 6.6-8.4
// for the driver's pageable copy). Smaller copies, and all copies back to the host, use the driver's
// synchronous pageable copies.
class CudaAllocator : public Allocator {
 public:
  explicit CudaAllocator(std::shared_ptr<const CudaContext> ctx) : ctx_ptr_(std::move(ctx)), ctx_(*ctx_ptr_) {}
  ~CudaAllocator() override {
    for (auto& s : staging_) {
      if (s.event) ctx_.d().cuEventDestroy(s.event);
      if (s.host) ctx_.d().cuMemFreeHost(s.host);
    }
  }

  void* alloc(size_t bytes) override {
    ctx_.enter();
    CUdeviceptr p = 0;
    // The LRU wrapper catches the first failure, empties its cache of freed blocks and tries once more.
    ctx_.check(ctx_.d().cuMemAlloc(&p, std::max<size_t>(bytes, 1)), "alloc of " + std::to_string(bytes) + " bytes");
    return reinterpret_cast<void*>(uintptr_t(p));
  }

  void free(void* ptr, size_t) override {
    // Runs in destructors: never throws. A broken context's memory is gone with it anyway.
    if (!ptr || ctx_.broken()) return;
    if (ctx_.d().cuCtxSetCurrent(ctx_.context()) == CUDA_SUCCESS) ctx_.d().cuMemFree(dptr(ptr));
  }

  void copyin(void* dst, const void* src, size_t bytes) override {
    if (bytes == 0) return;
    ctx_.enter();
    if (bytes < kStagingMin || !ensure_staging()) {
      ctx_.check(ctx_.d().cuMemcpyHtoD(dptr(dst), src, bytes), "copyin of " + std::to_string(bytes) + " bytes");
      return;
    }
    std::lock_guard<std::mutex> lock(staging_mu_);
    for (size_t off = 0, i = 0; off < bytes; off += kChunk, i ^= 1) {
      Staging& s = staging_[i];
      size_t n = std::min(kChunk, bytes - off);
      ctx_.check(ctx_.d().cuEventSynchronize(s.event), "copyin: wait for staging buffer");  // its last DMA is done
      std::memcpy(s.host, static_cast<const char*>(src) + off, n);
      ctx_.check(ctx_.d().cuMemcpyHtoDAsync(dptr(dst) + off, s.host, n, nullptr), "copyin (async chunk)");
      ctx_.check(ctx_.d().cuEventRecord(s.event, nullptr), "copyin: cuEventRecord");
    }
    // No wait: the source was already read into staging memory, and later work queues behind the DMA.
  }

  // The driver's pageable copy: measured faster than staging for this direction (256 MiB, H100 and H200 VMs:
  // 10-15 GB/s against 7-8.5 through pinned chunks, where the host memcpy out of staging is the bottleneck).
  void copyout(void* dst, const void* src, size_t bytes) override {
    if (bytes == 0) return;
    ctx_.enter();
    // Waits for the queued kernels that write src; a kernel that faulted reports here.
    ctx_.check(ctx_.d().cuMemcpyDtoH(dst, dptr(src), bytes), "copyout of " + std::to_string(bytes) + " bytes");
  }

  bool transfer(void* dst, const void* src, size_t bytes, Device& src_dev) override {
    const CudaContext* from = cuda_context_of(src_dev);
    if (!from) return false;
    if (bytes == 0) return true;
    ctx_.enter();
    if (from == &ctx_) {
      ctx_.check(ctx_.d().cuMemcpyDtoDAsync(dptr(dst), dptr(src), bytes, nullptr), "device-to-device copy");
      return true;
    }
    enable_peer_access(*from);
    // The two GPUs' default streams do not order against each other: the copy waits for the source's queued
    // work, and the source's later work (which may overwrite or free src) waits for the copy. An event is
    // recorded in its own context's stream; a stream may wait on another context's event.
    const Driver& d = ctx_.d();
    std::string what = "peer copy " + from->name() + " -> " + ctx_.name();
    Event src_done(*from, what), copy_done(ctx_, what);
    from->enter();
    from->check(d.cuEventRecord(src_done.e, nullptr), what + ": cuEventRecord");
    ctx_.enter();
    ctx_.check(d.cuStreamWaitEvent(nullptr, src_done.e, 0), what + ": cuStreamWaitEvent");
    ctx_.check(d.cuMemcpyPeerAsync(dptr(dst), ctx_.context(), dptr(src), from->context(), bytes, nullptr), what);
    ctx_.check(d.cuEventRecord(copy_done.e, nullptr), what + ": cuEventRecord");
    from->enter();
    from->check(d.cuStreamWaitEvent(nullptr, copy_done.e, 0), what + ": cuStreamWaitEvent");
    return true;  // destroying a pending event is fine: the driver frees it once it completes
  }

 private:
  static constexpr size_t kStagingMin = size_t(1) << 20;
  static constexpr size_t kChunk = size_t(8) << 20;
  struct Staging {
    void* host = nullptr;
    CUevent event = nullptr;
  };
  // A synchronization-only event of one context, destroyed with the scope.
  struct Event {
    CUevent e = nullptr;
    Event(const CudaContext& c, const std::string& what) {
      c.enter();
      c.check(c.d().cuEventCreate(&e, CU_EVENT_DISABLE_TIMING), what + ": cuEventCreate");
    }
    ~Event() { driver().cuEventDestroy(e); }
    Event(const Event&) = delete;
    Event& operator=(const Event&) = delete;
  };

  // Pinned memory is allocated on first need; false (plain copies) when the driver refuses it.
  bool ensure_staging() {
    std::lock_guard<std::mutex> lock(staging_mu_);
    if (staging_state_ == 0) {
      staging_state_ = -1;
      for (auto& s : staging_)
        if (ctx_.d().cuMemHostAlloc(&s.host, kChunk, CU_MEMHOSTALLOC_PORTABLE) != CUDA_SUCCESS ||
            ctx_.d().cuEventCreate(&s.event, CU_EVENT_DISABLE_TIMING) != CUDA_SUCCESS)
          return false;
      // A fresh event counts as complete, so the first cuEventSynchronize on it returns at once.
      staging_state_ = 1;
    }
    return staging_state_ == 1;
  }

  // Direct GPU-to-GPU reads when the hardware allows (NVLink/PCIe P2P); otherwise cuMemcpyPeer stages
  // through the host by itself. Asked once per source GPU; the current context is this one.
  void enable_peer_access(const CudaContext& from) {
    std::lock_guard<std::mutex> lock(peer_mu_);
    if (std::find(peer_checked_.begin(), peer_checked_.end(), from.ordinal()) != peer_checked_.end()) return;
    peer_checked_.push_back(from.ordinal());
    int can = 0;
    if (ctx_.d().cuDeviceCanAccessPeer(&can, ctx_.device(), from.device()) == CUDA_SUCCESS && can) {
      CUresult r = ctx_.d().cuCtxEnablePeerAccess(from.context(), 0);
      if (r != CUDA_SUCCESS && r != CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED && DEBUG >= 1)
        std::fprintf(stderr, "%s: peer access from %s not enabled (%s); copies go through the host\n",
                     ctx_.name().c_str(), from.name().c_str(), error_text(r).c_str());
    }
  }

  std::shared_ptr<const CudaContext> ctx_ptr_;  // keeps the context alive as long as its memory
  const CudaContext& ctx_;
  std::mutex staging_mu_, peer_mu_;
  int staging_state_ = 0;  // 0 not tried, 1 ready, -1 unavailable
  Staging staging_[2];
  std::vector<int> peer_checked_;
};

// ---- running ----

class CudaProgram : public Program {
 public:
  // dependent: the kernel's source waits for its predecessor (CUDARenderer::kernel_prologue), so inside a graph it
  // may be launched as a programmatic dependent of it.
  CudaProgram(std::shared_ptr<const CudaContext> ctx_ptr, const ProgramSpec& spec, const std::string& binary,
              bool dependent)
      : ctx_ptr_(std::move(ctx_ptr)),
        ctx_(*ctx_ptr_),
        dependent_(dependent),
        name_(spec.name),
        n_bufs_(size_t(spec.n_bufs)),
        n_vars_(spec.vars.size()),
        tensor_maps_(spec.name, spec.uops) {
    if (spec.global_size.size() != 3 || spec.local_size.size() != 3)
      throw Error(ctx_.name() + ": kernel " + name_ + ": launch sizes must have 3 dimensions, got global " +
                  format_dims(spec.global_size) + " local " + format_dims(spec.local_size));
    // The GPU's limits, checked here so the error names the kernel and its sizes (the driver would only say
    // CUDA_ERROR_INVALID_VALUE at launch).
    const CudaContext::Limits& lim = ctx_.limits();
    int64_t threads = 1;
    for (int i = 0; i < 3; i++) {
      if (spec.global_size[i] < 1 || spec.global_size[i] > lim.grid[i] || spec.local_size[i] < 1 ||
          spec.local_size[i] > lim.block[i])
        throw Error(ctx_.name() + ": kernel " + name_ + ": launch sizes global " + format_dims(spec.global_size) +
                    " local " + format_dims(spec.local_size) + " are outside this GPU's limits (global up to " +
                    format_dims({lim.grid[0], lim.grid[1], lim.grid[2]}) + ", local up to " +
                    format_dims({lim.block[0], lim.block[1], lim.block[2]}) + ", " + std::to_string(lim.threads) +
                    " threads a block)");
      grid_[i] = unsigned(spec.global_size[i]);
      block_[i] = unsigned(spec.local_size[i]);
      threads *= spec.local_size[i];
    }
    if (threads > lim.threads)
      throw Error(ctx_.name() + ": kernel " + name_ + " asks for " + std::to_string(threads) + " threads a block " +
                  format_dims(spec.local_size) + "; this GPU allows at most " + std::to_string(lim.threads));
    if (binary.empty())
      throw Error(ctx_.name() + ": empty binary for kernel " + name_ + " (was it compiled for NULL?)");
    ctx_.enter();
    // c_str(): PTX must end in a NUL; a cubin is an ELF image and ignores it.
    ctx_.check(ctx_.d().cuModuleLoadData(&module_, binary.c_str()), "cannot load the module of kernel " + name_);
    if (CUresult r = ctx_.d().cuModuleGetFunction(&fn_, module_, name_.c_str()); r != CUDA_SUCCESS) {
      ctx_.d().cuModuleUnload(module_);
      ctx_.check(r, "kernel " + name_ + " is not in its compiled module (expected extern \"C\" __global__ void " +
                        name_ + "(...))");
    }
    // the kernel's locals, in dynamic shared memory (renderer/cuda.cpp); past 48 KiB a launch must opt in
    const int64_t shared = shared_bytes(spec.uops);
    if (shared > 48 * 1024) {
      if (CUresult r = ctx_.d().cuFuncSetAttribute(fn_, cu::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, int(shared));
          r != CUDA_SUCCESS) {
        ctx_.d().cuModuleUnload(module_);
        ctx_.check(r, "kernel " + name_ + " needs " + std::to_string(shared) + " bytes of shared memory");
      }
    }
    shared_ = unsigned(shared);
  }
  ~CudaProgram() override {
    if (ctx_.broken() || ctx_.d().cuCtxSetCurrent(ctx_.context()) != CUDA_SUCCESS) return;
    if (start_) ctx_.d().cuEventDestroy(start_);
    if (end_) ctx_.d().cuEventDestroy(end_);
    ctx_.d().cuModuleUnload(module_);
  }

  double run(const std::vector<void*>& bufs, const std::vector<int64_t>& vars, bool wait) override {
    if (bufs.size() != n_bufs_ || vars.size() != n_vars_)
      throw Error(ctx_.name() + ": kernel " + name_ + " takes " + std::to_string(n_bufs_) + " buffers and " +
                  std::to_string(n_vars_) + " vars, got " + std::to_string(bufs.size()) + " and " +
                  std::to_string(vars.size()));
    // kernelParams: a pointer to each argument's value, buffers (CUdeviceptr), vars (int32), then tensor maps.
    cu::KernelLaunch launch{fn_, {grid_[0], grid_[1], grid_[2]}, {block_[0], block_[1], block_[2]}, shared_, {}, {},
                            {}};
    launch.ptrs.resize(bufs.size());
    launch.ints.resize(vars.size());
    for (size_t i = 0; i < bufs.size(); i++) {
      if (!bufs[i])
        throw Error(ctx_.name() + ": kernel " + name_ + ": buffer " + std::to_string(i) + " is not allocated");
      launch.ptrs[i] = dptr(bufs[i]);
    }
    for (size_t i = 0; i < vars.size(); i++) {
      if (vars[i] < INT32_MIN || vars[i] > INT32_MAX)
        throw Error(ctx_.name() + ": kernel " + name_ + ": var " + std::to_string(i) + " = " + std::to_string(vars[i]) +
                    " does not fit the kernel's int32 parameter");
      launch.ints[i] = int32_t(vars[i]);
    }
    if (tensor_maps_.size()) tensor_maps_.encode(ctx_.d(), launch.ptrs, launch.maps);
    if (std::vector<cu::KernelLaunch>* log = cu::launch_log()) {  // a graph taking new arguments
      if (wait) throw Error(ctx_.name() + ": kernel " + name_ + " cannot be timed while a graph is recorded");
      log->push_back(std::move(launch));
      return 0.0;
    }
    std::vector<void*> params = launch.params();
    ctx_.enter();
    const CUstream stream = launch_stream();  // a graph's capture, or the legacy default stream
    if (wait && stream) throw Error(ctx_.name() + ": kernel " + name_ + " cannot be timed while a graph is recorded");
    std::unique_lock<std::mutex> lock(mu_, std::defer_lock);  // the timing events are per program
    if (wait) {
      lock.lock();
      if (!start_) ctx_.check(ctx_.d().cuEventCreate(&start_, CU_EVENT_DEFAULT), "cuEventCreate");
      if (!end_) ctx_.check(ctx_.d().cuEventCreate(&end_, CU_EVENT_DEFAULT), "cuEventCreate");
      ctx_.check(ctx_.d().cuEventRecord(start_, nullptr), "cuEventRecord");
    }
    CUresult r = stream && dependent_ && ctx_.d().cuLaunchKernelEx
                     ? launch_dependent(stream, params)
                     : ctx_.d().cuLaunchKernel(fn_, grid_[0], grid_[1], grid_[2], block_[0], block_[1], block_[2],
                                               shared_, stream, params.data(), nullptr);
    if (r != CUDA_SUCCESS)
      ctx_.check(r, "launch of " + name_ + " (grid " + format_dims({grid_[0], grid_[1], grid_[2]}) + ", block " +
                        format_dims({block_[0], block_[1], block_[2]}) + ")");
    if (!wait) return 0.0;
    // A fault inside the kernel surfaces at whichever of these calls first sees it.
    ctx_.check(ctx_.d().cuEventRecord(end_, nullptr), "kernel " + name_ + " failed");
    ctx_.check(ctx_.d().cuEventSynchronize(end_), "kernel " + name_ + " failed");
    float ms = 0;
    ctx_.check(ctx_.d().cuEventElapsedTime(&ms, start_, end_), "cuEventElapsedTime");
    return double(ms) * 1e-3;
  }

 private:
  // A launch into a graph's capture that lets this kernel start while the one before it finishes (its blocks wait
  // in the prologue): a decode step's ~300 small kernels each paid the whole gap between two launches.
  CUresult launch_dependent(CUstream stream, std::vector<void*>& params) {
    CUlaunchAttribute attr{};
    attr.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
    attr.value.programmatic_stream_serialization_allowed = 1;
    CUlaunchConfig config{grid_[0], grid_[1], grid_[2], block_[0], block_[1], block_[2], shared_, stream, &attr, 1};
    return ctx_.d().cuLaunchKernelEx(&config, fn_, params.data(), nullptr);
  }

  std::shared_ptr<const CudaContext> ctx_ptr_;  // keeps the context alive as long as the module
  const CudaContext& ctx_;
  bool dependent_;
  std::string name_;
  size_t n_bufs_, n_vars_;
  CudaTensorMaps tensor_maps_;
  unsigned grid_[3] = {1, 1, 1}, block_[3] = {1, 1, 1};
  unsigned shared_ = 0;  // dynamic shared memory bytes of a launch
  CUmodule module_ = nullptr;
  CUfunction fn_ = nullptr;
  std::mutex mu_;
  CUevent start_ = nullptr, end_ = nullptr;
};

class CudaDevice : public Device {
 public:
  explicit CudaDevice(int ordinal)
      : ctx_ptr_(std::make_shared<CudaContext>(ordinal, ordinal == 0 ? "CUDA" : "CUDA:" + std::to_string(ordinal))),
        ctx_(*ctx_ptr_) {
    name_ = ctx_.name();
    int major = ctx_.attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
    int minor = ctx_.attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
    arch_ = "sm_" + std::to_string(major) + std::to_string(minor);
    std::string why;
    if (!nvrtc_available(&why)) throw Error("CUDA: " + name_ + " has a GPU but cannot compile kernels: " + why);
    // sm_90 builds as sm_90a: the architecture-specific features (wgmma) the renderer uses there
    compiler_ = make_nvrtc_compiler(arch_ == "sm_90" ? "sm_90a" : arch_);
    renderer_ = std::make_unique<CUDARenderer>(arch_);
    allocator_ = std::make_unique<LRUAllocator>(std::make_unique<CudaAllocator>(ctx_ptr_));
    if (DEBUG >= 2) {
      char gpu[256] = {};
      ctx_.d().cuDeviceGetName(gpu, sizeof(gpu) - 1, ctx_.device());
      std::fprintf(stderr, "%s: %s, %s, %d SMs, NVRTC %s\n", name_.c_str(), gpu, arch_.c_str(),
                   ctx_.attribute(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT), nvrtc_version().c_str());
    }
  }

  std::unique_ptr<Program> load(const ProgramSpec& spec, const std::string& binary) override {
    return std::make_unique<CudaProgram>(ctx_ptr_, spec, binary, CUDARenderer::waits_for_predecessor(spec.src));
  }
  void synchronize() override {
    ctx_.enter();
    ctx_.check(ctx_.d().cuCtxSynchronize(), "synchronize");
  }
  std::unique_ptr<LaunchGraph> record_graph(const std::function<void()>& record) override {
    ctx_.enter();
    return cu::record_graph(ctx_.context(), name_, record);
  }
  const CudaContext& context() const { return ctx_; }

 private:
  // Shared with the allocator and every program: whichever of them goes last releases the context.
  std::shared_ptr<const CudaContext> ctx_ptr_;
  const CudaContext& ctx_;
  std::string arch_;
};

const CudaContext* cuda_context_of(Device& dev) {
  auto* cuda = dynamic_cast<CudaDevice*>(&dev);
  return cuda ? &cuda->context() : nullptr;
}

}  // namespace

int cuda_device_count(std::string* why) { return cu::device_count(why); }

std::unique_ptr<Device> make_cuda_device(int ordinal) { return std::make_unique<CudaDevice>(ordinal); }

}  // namespace tg
