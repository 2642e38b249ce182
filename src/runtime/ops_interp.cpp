// Device "INTERP": runs linearized kernels through the UOp interpreter (runtime/interpreter.h) on host
// memory, like tinygrad's PYTHON device. Its "source" is a listing of the uops, its "compiler" is the
// identity, and its programs execute spec.uops directly, so every compiled backend can be checked against
// it on the same kernels.
#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <unordered_map>

#include "helpers/env.h"
#include "renderer/emulate.h"
#include "runtime/devices.h"
#include "runtime/interpreter.h"
#include "runtime/lru_allocator.h"
#include "tg/error.h"

namespace tg {
namespace {

// Host memory that remembers the size of every live block: Program::run receives bare pointers, and the
// interpreter's bounds checks need to know how far each buffer reaches.
class InterpAllocator : public Allocator {
 public:
  InterpAllocator() : inner_(make_malloc_allocator()) {}

  void* alloc(size_t bytes) override {
    void* p = inner_->alloc(bytes);
    std::lock_guard<std::mutex> lock(mu_);
    live_[reinterpret_cast<uintptr_t>(p)] = bytes;
    return p;
  }
  void free(void* ptr, size_t bytes) override {
    if (!ptr) return;
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = live_.find(reinterpret_cast<uintptr_t>(ptr));
      if (it == live_.end()) {
        // Not ours (or freed twice). Freeing it would corrupt the heap, and this may run in a destructor
        // where throwing terminates: say so and keep going.
        std::fprintf(stderr, "INTERP: free of a pointer this device did not allocate (%zu bytes), ignored\n", bytes);
        return;
      }
      live_.erase(it);
    }
    inner_->free(ptr, bytes);
  }
  void copyin(void* dst, const void* host_src, size_t bytes) override {
    if (bytes) std::memcpy(dst, host_src, bytes);
  }
  void copyout(void* host_dst, const void* src, size_t bytes) override {
    if (bytes) std::memcpy(host_dst, src, bytes);
  }

  // The block holding `ptr`, from `ptr` to the block's end (offset views into a block work too); nullopt
  // when `ptr` is not memory of this device.
  std::optional<InterpBuffer> find(void* ptr) const {
    auto p = reinterpret_cast<uintptr_t>(ptr);
    std::lock_guard<std::mutex> lock(mu_);
    auto it = live_.upper_bound(p);
    if (it == live_.begin()) return std::nullopt;
    --it;
    if (p - it->first > it->second) return std::nullopt;
    return InterpBuffer{ptr, it->second - (p - it->first)};
  }

 private:
  std::unique_ptr<Allocator> inner_;
  mutable std::mutex mu_;
  std::map<uintptr_t, size_t> live_;  // block start -> bytes asked for
};

class InterpCompiler : public Compiler {
 public:
  std::string compile(const std::string& src) override { return src; }
  std::string cache_key() const override { return "INTERP"; }
};

// Nothing is rendered to run, but DEBUG=4 prints the "source": a readable listing of the kernel.
//
// EMULATE=CUDA (read when the device opens, as tinygrad's EMULATE_CUDA) makes codegen treat INTERP as a
// GPU (EMULATE=CL, EMULATE=METAL: those GPUs; renderer/emulate.h): kernels get its launch grid and
// workgroups (SPECIAL gidx/lidx) and opts, and every kernel is also
// rendered in that GPU's language (so a renderer error shows up here), while the interpreter runs the uops with GPU
// semantics. That is how the GPU lowering path is tested on machines without a GPU.
class InterpRenderer : public Renderer {
 public:
  InterpRenderer() {
    gpu_ = emulated_renderer(getenv_str("EMULATE"), "INTERP");
  }
  std::string render(const std::string& name, const std::vector<UOpPtr>& uops) const override {
    std::string listing = "// INTERP kernel " + name + "\n" + uops_listing(uops);
    if (!gpu_) return listing;
    // A kernel the emulated GPU cannot hold (float64 on Metal) is run, not rendered: its programs would fail there.
    for (const UOpPtr& u : uops)
      if (!gpu_->supports_dtype(u->dtype))
        return "// (not rendered for " + gpu_->device() + ": it has no " + u->dtype.scalar_type().repr() + ")\n" + listing;
    return gpu_->render(name, uops) + listing;
  }
  bool has_local() const override { return gpu_ && gpu_->has_local(); }  // (EMULATE=LLVM: a CPU's kernels)
  int64_t max_local_size() const override { return gpu_ ? gpu_->max_local_size() : 1; }
  // The interpreter emulates the GPU's tensor cores (renderer/tensor_core.h), warp by warp.
  const std::vector<TensorCore>& tensor_cores() const override {
    return gpu_ ? gpu_->tensor_cores() : Renderer::tensor_cores();
  }
  // ... and its shared-memory staging (CP_ASYNC copies at once, LDMATRIX warp by warp).
  bool async_copies() const override { return gpu_ && gpu_->async_copies(); }
  int64_t shared_memory() const override { return gpu_ ? gpu_->shared_memory() : 0; }
  // ... and Hopper's warpgroup tensor cores (WGMMA, warpgroup by warpgroup).
  bool wgmma() const override { return gpu_ && gpu_->wgmma(); }
  // ... and the bulk tensor copies that stage their operands (TMA_LOAD copies at once, barriers count the bytes).
  bool tma() const override { return gpu_ && gpu_->tma(); }
  // Ops outside program.h's list (THREEFRY ...) must be decomposed by codegen before they reach us.
  bool supports(Ops op) const override { return Interpreter::executes(op); }
  std::string device() const override { return "INTERP"; }

 private:
  std::unique_ptr<Renderer> gpu_;
};

class InterpProgram : public Program {
 public:
  InterpProgram(const ProgramSpec& spec, const InterpAllocator& memory) : interp_(spec), memory_(memory) {}

  double run(const std::vector<void*>& bufs, const std::vector<int64_t>& vars, bool wait) override {
    auto t0 = std::chrono::steady_clock::now();
    std::vector<InterpBuffer> views;
    views.reserve(bufs.size());
    for (size_t i = 0; i < bufs.size(); i++) {
      if (!bufs[i]) {  // an empty buffer: any access is out of bounds
        views.push_back({});
        continue;
      }
      std::optional<InterpBuffer> v = memory_.find(bufs[i]);
      if (!v)
        throw Error("INTERP kernel '" + interp_.name() + "': buffer " + std::to_string(i) +
                    " is not memory of the INTERP device");
      views.push_back(*v);
    }
    interp_.run(views, vars);
    auto t1 = std::chrono::steady_clock::now();
    return wait ? std::chrono::duration<double>(t1 - t0).count() : 0.0;
  }

 private:
  Interpreter interp_;
  const InterpAllocator& memory_;  // owned by the device, which outlives its programs
};

class InterpDevice : public Device {
 public:
  InterpDevice() {
    name_ = "INTERP";
    auto memory = std::make_unique<InterpAllocator>();
    memory_ = memory.get();
    // Blocks the LRU cache keeps stay registered at their exact size, so lookups stay right.
    allocator_ = std::make_unique<LRUAllocator>(std::move(memory));
    compiler_ = std::make_unique<InterpCompiler>();
    renderer_ = std::make_unique<InterpRenderer>();
  }
  // The binary is only the listing: the program runs the uops themselves.
  std::unique_ptr<Program> load(const ProgramSpec& spec, const std::string&) override {
    return std::make_unique<InterpProgram>(spec, *memory_);
  }
  // Its programs check each access against the blocks this device allocated: no outside memory.

 private:
  const InterpAllocator* memory_;
};

}  // namespace

// Formatted with snprintf, not iostream manipulators: padding through a stream consults the stream's locale
// facets, and with PyTorch 2.x imported first into the same Python process that crashed (seen on the GPU image).
std::string uops_listing(const std::vector<UOpPtr>& uops) {
  std::unordered_map<const UOp*, size_t> pos;
  std::string out;
  for (size_t i = 0; i < uops.size(); i++) {
    const UOp& u = *uops[i];
    pos.emplace(&u, i);
    // Sources by position, constants by value, as tinygrad's print_uops shows them.
    std::string srcs = "[";
    for (size_t k = 0; k < u.src.size(); k++) {
      const UOp& s = *u.src[k];
      auto it = pos.find(&s);
      srcs += k ? ", " : "";
      srcs += s.op == Ops::CONST ? s.arg_repr() : it != pos.end() ? std::to_string(it->second) : "?";
    }
    srcs += "]";
    std::string op = "Ops." + std::string(op_name(u.op)), dt = u.dtype.repr(), arg = u.arg_repr();
    int n = std::snprintf(nullptr, 0, "%4zu %-20s: %-30s %-32s %s\n", i, op.c_str(), dt.c_str(), srcs.c_str(), arg.c_str());
    std::string line(size_t(n) + 1, '\0');
    std::snprintf(line.data(), line.size(), "%4zu %-20s: %-30s %-32s %s\n", i, op.c_str(), dt.c_str(), srcs.c_str(),
                  arg.c_str());
    line.pop_back();
    out += line;
  }
  return out;
}

std::unique_ptr<Device> make_interp_device() { return std::make_unique<InterpDevice>(); }

}  // namespace tg
