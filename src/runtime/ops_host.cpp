// Device "HOST": plain host memory that tensors are created from (Tensor from a std::vector, from a file)
// before they move to a compute device. It holds data only; asking it to run a kernel is an error.
#include "runtime/devices.h"
#include "runtime/lru_allocator.h"
#include "tg/error.h"

namespace tg {
namespace {

const char* kNoKernels = "HOST cannot run kernels: it only holds data; move the tensor to a compute device (CPU ...)";

class HostCompiler : public Compiler {
 public:
  std::string compile(const std::string&) override { throw Error(std::string("compile: ") + kNoKernels); }
  std::string cache_key() const override { return "HOST"; }
};

class HostRenderer : public Renderer {
 public:
  std::string render(const std::string& name, const std::vector<UOpPtr>&) const override {
    throw Error("render " + name + ": " + kNoKernels);
  }
  std::string device() const override { return "HOST"; }
};

class HostDevice : public Device {
 public:
  HostDevice() {
    name_ = "HOST";
    allocator_ = std::make_unique<LRUAllocator>(make_malloc_allocator());
    compiler_ = std::make_unique<HostCompiler>();
    renderer_ = std::make_unique<HostRenderer>();
  }
  std::unique_ptr<Program> load(const ProgramSpec& spec, const std::string&) override {
    throw Error("load " + spec.name + ": " + kNoKernels);
  }
};

}  // namespace

std::unique_ptr<Device> make_host_device() { return std::make_unique<HostDevice>(); }

}  // namespace tg
