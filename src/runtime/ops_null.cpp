// Device "NULL": the whole pipeline up to the runtime (schedule, codegen, render) with nothing executed.
// Useful to measure host overhead and to test scheduling on machines without the real device. EMULATE=CUDA
// (CL, METAL) renders CUDA (OpenCL, Metal) source instead of C (DEBUG=4 prints it), so the GPU kernels of
// full-size shapes can be read and compiled (ptxas ...) on a machine without the GPU, where the interpreter would
// take hours to run them.
#include <cstdlib>

#include "helpers/env.h"
#include "renderer/c.h"
#include "renderer/emulate.h"
#include "tg/error.h"
#include "runtime/devices.h"
#include "runtime/lru_allocator.h"

namespace tg {
namespace {

// Hands out distinct, non-null addresses (one real byte each) so code that keys on buffer pointers still
// works, but never the memory a buffer's size asks for. Copies move nothing.
class NullAllocator : public Allocator {
 public:
  void* alloc(size_t) override { return std::malloc(1); }
  void free(void* ptr, size_t) override { std::free(ptr); }
  void copyin(void*, const void*, size_t) override {}
  void copyout(void*, const void*, size_t) override {}
};

class NullCompiler : public Compiler {
 public:
  std::string compile(const std::string&) override { return ""; }
  std::string cache_key() const override { return "NULL"; }
};

class NullProgram : public Program {
 public:
  double run(const std::vector<void*>&, const std::vector<int64_t>&, bool) override { return 0.0; }
};

class NullDevice : public Device {
 public:
  NullDevice() {
    name_ = "NULL";
    allocator_ = std::make_unique<LRUAllocator>(std::make_unique<NullAllocator>());
    compiler_ = std::make_unique<NullCompiler>();
    renderer_ = emulated_renderer(getenv_str("EMULATE"), "NULL");
    if (!renderer_) renderer_ = std::make_unique<ClangRenderer>();
  }
  std::unique_ptr<Program> load(const ProgramSpec&, const std::string&) override {
    return std::make_unique<NullProgram>();
  }
  bool executes() const override { return false; }
};

}  // namespace

std::unique_ptr<Device> make_null_device() { return std::make_unique<NullDevice>(); }

}  // namespace tg
