// Device "CL" ("CL:1" ...): an OpenCL device through the ICD loader (opencl_api.h), loaded at run time. Devices are
// numbered over every platform in platform order. Kernels are rendered by OpenCLRenderer as OpenCL C, built by the
// driver for this one device (clBuildProgram), cached as the driver's program binary, and launched on one in-order
// command queue, so launches and copies run in queue order, as on CUDA's default stream.
//
// Buffers are cl_mem handles, not addresses: the void* the engine hands around is the handle itself, so nothing may
// offset or dereference it (the device table marks CL's memory private for that reason).
//
// Errors: every failing call becomes a tg::Error naming the device, the operation and the error's name.
#include <algorithm>
#include <cstdio>
#include <memory>
#include <mutex>
#include <vector>

#include "renderer/opencl.h"
#include "runtime/devices.h"
#include "runtime/lru_allocator.h"
#include "runtime/opencl_api.h"
#include "tg/context.h"
#include "tg/error.h"

namespace tg {
namespace {

using namespace cl;

// What the allocator, the compiler, the programs and the device of one OpenCL device share: its context and the
// one queue everything is enqueued on.
class ClContext {
 public:
  ClContext(int index, std::string name) : name_(std::move(name)), a_(api()) {  // api() throws: no loader
    std::string why;
    const std::vector<DeviceRef>& devs = devices(&why);
    const int n = int(devs.size());
    if (index < 0 || index >= n)
      throw Error("CL: cannot open " + name_ + ": this machine has " + std::to_string(n) + " OpenCL device" +
                  (n == 1 ? "" : "s") + (why.empty() ? "" : " (" + why + ")"));
    platform_ = devs[size_t(index)].platform;
    device_ = devs[size_t(index)].device;
    const cl_context_properties props[] = {CL_CONTEXT_PLATFORM, reinterpret_cast<cl_context_properties>(platform_), 0};
    cl_int err = CL_SUCCESS;
    context_ = a_.clCreateContext(props, 1, &device_, nullptr, nullptr, &err);
    check(err, "clCreateContext");
    // Profiling on: Program::run(wait=true) times a kernel by its event's START and END.
    queue_ = a_.clCreateCommandQueue(context_, device_, CL_QUEUE_PROFILING_ENABLE, &err);
    if (err != CL_SUCCESS) a_.clReleaseContext(context_);  // the destructor does not run for a throwing constructor
    check(err, "clCreateCommandQueue");
    try {
      read_info();
    } catch (const Error&) {
      release();
      throw;
    }
  }
  // Never runs in practice (devices live until exit).
  ~ClContext() { release(); }
  ClContext(const ClContext&) = delete;
  ClContext& operator=(const ClContext&) = delete;

  // Launch and memory limits, read once.
  struct Limits {
    int64_t work_group = 0;       // work items a work group
    int64_t item[3] = {1, 1, 1};  // work items a work group, per dimension
    int64_t local_mem = 0;        // bytes of __local memory a work group
    int64_t max_alloc = 0;        // bytes of one buffer
  };
  const Limits& limits() const { return limits_; }
  const std::string& name() const { return name_; }
  const Api& a() const { return a_; }
  cl_device_id device() const { return device_; }
  cl_context context() const { return context_; }
  cl_command_queue queue() const { return queue_; }
  const std::string& device_name() const { return device_name_; }
  const std::string& platform_name() const { return platform_name_; }
  const std::string& driver_version() const { return driver_version_; }
  const std::string& device_version() const { return device_version_; }

  // Throws tg::Error("<device>: <what>: <error name>") unless r is CL_SUCCESS.
  void check(cl_int r, const std::string& what) const {
    if (r != CL_SUCCESS) throw Error(name_ + ": " + what + ": " + error_name(r));
  }

 private:
  void release() {
    a_.clReleaseCommandQueue(queue_);
    a_.clReleaseContext(context_);
  }

  std::string device_string(cl_uint param) const {
    size_t size = 0;
    check(a_.clGetDeviceInfo(device_, param, 0, nullptr, &size), "clGetDeviceInfo");
    std::string s(size, '\0');
    check(a_.clGetDeviceInfo(device_, param, size, s.data(), nullptr), "clGetDeviceInfo");
    while (!s.empty() && s.back() == '\0') s.pop_back();
    return s;
  }
  template <typename T>
  T device_value(cl_uint param) const {
    T v{};
    check(a_.clGetDeviceInfo(device_, param, sizeof(v), &v, nullptr), "clGetDeviceInfo");
    return v;
  }

  void read_info() {
    size_t size = 0;
    check(a_.clGetPlatformInfo(platform_, CL_PLATFORM_NAME, 0, nullptr, &size), "clGetPlatformInfo");
    platform_name_.assign(size, '\0');
    check(a_.clGetPlatformInfo(platform_, CL_PLATFORM_NAME, size, platform_name_.data(), nullptr), "clGetPlatformInfo");
    while (!platform_name_.empty() && platform_name_.back() == '\0') platform_name_.pop_back();
    device_name_ = device_string(CL_DEVICE_NAME);
    driver_version_ = device_string(CL_DRIVER_VERSION);
    device_version_ = device_string(CL_DEVICE_VERSION);
    limits_.work_group = int64_t(device_value<size_t>(CL_DEVICE_MAX_WORK_GROUP_SIZE));
    limits_.local_mem = int64_t(device_value<cl_ulong>(CL_DEVICE_LOCAL_MEM_SIZE));
    limits_.max_alloc = int64_t(device_value<cl_ulong>(CL_DEVICE_MAX_MEM_ALLOC_SIZE));
    // A device has at least 3 dimensions, except custom devices (then the others allow only size 1).
    std::vector<size_t> items(std::max<cl_uint>(device_value<cl_uint>(CL_DEVICE_MAX_WORK_ITEM_DIMENSIONS), 1));
    check(a_.clGetDeviceInfo(device_, CL_DEVICE_MAX_WORK_ITEM_SIZES, items.size() * sizeof(size_t), items.data(),
                             nullptr),
          "clGetDeviceInfo");
    for (size_t i = 0; i < 3 && i < items.size(); i++) limits_.item[i] = int64_t(items[i]);
  }

  std::string name_;
  const Api& a_;
  cl_platform_id platform_ = nullptr;
  cl_device_id device_ = nullptr;
  cl_context context_ = nullptr;
  cl_command_queue queue_ = nullptr;
  Limits limits_;
  std::string device_name_, platform_name_, driver_version_, device_version_;
};

cl_mem mem(const void* p) { return reinterpret_cast<cl_mem>(const_cast<void*>(p)); }

const ClContext* cl_context_of(Device& dev);

// ---- memory ----

class ClAllocator : public Allocator {
 public:
  explicit ClAllocator(std::shared_ptr<const ClContext> ctx) : ctx_ptr_(std::move(ctx)), ctx_(*ctx_ptr_) {}

  void* alloc(size_t bytes) override {
    cl_int err = CL_SUCCESS;
    // OpenCL has no empty buffers; a 0-byte tensor still gets a handle of its own.
    cl_mem m = ctx_.a().clCreateBuffer(ctx_.context(), CL_MEM_READ_WRITE, std::max<size_t>(bytes, 1), nullptr, &err);
    if (err != CL_SUCCESS)
      ctx_.check(err, "alloc of " + std::to_string(bytes) + " bytes (clCreateBuffer; one buffer may have up to " +
                          std::to_string(ctx_.limits().max_alloc) + " bytes)");
    return reinterpret_cast<void*>(m);
  }

  // Runs in destructors: never throws. The driver keeps the memory until the queued commands using it are done.
  void free(void* ptr, size_t) override {
    if (ptr) ctx_.a().clReleaseMemObject(mem(ptr));
  }

  void copyin(void* dst, const void* src, size_t bytes) override {
    if (bytes == 0) return;  // a 0-byte copy is CL_INVALID_VALUE
    ctx_.check(ctx_.a().clEnqueueWriteBuffer(ctx_.queue(), mem(dst), CL_TRUE, 0, bytes, src, 0, nullptr, nullptr),
               "copyin of " + std::to_string(bytes) + " bytes (clEnqueueWriteBuffer)");
  }

  // Blocking, so it also waits for the queued kernels that write src.
  void copyout(void* dst, const void* src, size_t bytes) override {
    if (bytes == 0) return;
    ctx_.check(ctx_.a().clEnqueueReadBuffer(ctx_.queue(), mem(src), CL_TRUE, 0, bytes, dst, 0, nullptr, nullptr),
               "copyout of " + std::to_string(bytes) + " bytes (clEnqueueReadBuffer)");
  }

  // Only within this device: another device's cl_mem belongs to another context.
  bool transfer(void* dst, const void* src, size_t bytes, Device& src_dev) override {
    if (cl_context_of(src_dev) != &ctx_) return false;
    if (bytes == 0) return true;
    ctx_.check(ctx_.a().clEnqueueCopyBuffer(ctx_.queue(), mem(src), mem(dst), 0, 0, bytes, 0, nullptr, nullptr),
               "device-to-device copy of " + std::to_string(bytes) + " bytes (clEnqueueCopyBuffer)");
    return true;
  }

 private:
  std::shared_ptr<const ClContext> ctx_ptr_;  // keeps the context alive as long as its memory
  const ClContext& ctx_;
};

// ---- compiling ----

// A cl_program released with the scope.
struct ProgramHandle {
  const Api& a;
  cl_program p = nullptr;
  ~ProgramHandle() {
    if (p) a.clReleaseProgram(p);
  }
};

std::string build_log(const ClContext& ctx, cl_program p) {
  size_t size = 0;
  if (ctx.a().clGetProgramBuildInfo(p, ctx.device(), CL_PROGRAM_BUILD_LOG, 0, nullptr, &size) != CL_SUCCESS)
    return "(no build log)";
  std::string log(size, '\0');
  if (ctx.a().clGetProgramBuildInfo(p, ctx.device(), CL_PROGRAM_BUILD_LOG, size, log.data(), nullptr) != CL_SUCCESS)
    return "(no build log)";
  while (!log.empty() && (log.back() == '\0' || log.back() == '\n')) log.pop_back();
  return log;
}

// OpenCL C -> the driver's program binary for this one device (clBuildProgram).
class ClCompiler : public Compiler {
 public:
  explicit ClCompiler(std::shared_ptr<const ClContext> ctx) : ctx_ptr_(std::move(ctx)), ctx_(*ctx_ptr_) {}

  std::string compile(const std::string& src) override {
    const Api& a = ctx_.a();
    const char* text = src.c_str();
    const size_t length = src.size();
    cl_int err = CL_SUCCESS;
    ProgramHandle prog{a, a.clCreateProgramWithSource(ctx_.context(), 1, &text, &length, &err)};
    ctx_.check(err, "compile: clCreateProgramWithSource");
    const cl_device_id dev = ctx_.device();
    if (cl_int r = a.clBuildProgram(prog.p, 1, &dev, OpenCLRenderer::build_options(), nullptr, nullptr);
        r != CL_SUCCESS)
      throw Error(ctx_.name() + ": compile failed: clBuildProgram: " + error_name(r) + " (" + ctx_.device_name() +
                  ", options \"" + OpenCLRenderer::build_options() + "\")\n" + build_log(ctx_, prog.p) +
                  "\n---- source ----\n" + src);
    // One device, so one binary.
    size_t size = 0;
    ctx_.check(a.clGetProgramInfo(prog.p, CL_PROGRAM_BINARY_SIZES, sizeof(size), &size, nullptr),
               "compile: clGetProgramInfo(CL_PROGRAM_BINARY_SIZES)");
    if (size == 0) throw Error(ctx_.name() + ": compile: the driver returned an empty program binary");
    std::string bin(size, '\0');
    unsigned char* out = reinterpret_cast<unsigned char*>(bin.data());
    ctx_.check(a.clGetProgramInfo(prog.p, CL_PROGRAM_BINARIES, sizeof(out), &out, nullptr),
               "compile: clGetProgramInfo(CL_PROGRAM_BINARIES)");
    return bin;
  }

  // A binary is the driver's, for one device: the disk cache must never hand it to another device or driver.
  std::string cache_key() const override {
    return "opencl " + ctx_.platform_name() + "|" + ctx_.device_name() + "|" + ctx_.driver_version() + "|" +
           OpenCLRenderer::build_options();
  }

 private:
  std::shared_ptr<const ClContext> ctx_ptr_;
  const ClContext& ctx_;
};

// ---- running ----

// A cl_event released with the scope.
struct EventHandle {
  const Api& a;
  cl_event e = nullptr;
  ~EventHandle() {
    if (e) a.clReleaseEvent(e);
  }
};

class ClProgram : public Program {
 public:
  ClProgram(std::shared_ptr<const ClContext> ctx_ptr, const ProgramSpec& spec, const std::string& binary)
      : ctx_ptr_(std::move(ctx_ptr)),
        ctx_(*ctx_ptr_),
        name_(spec.name),
        n_bufs_(size_t(spec.n_bufs)),
        n_vars_(spec.vars.size()) {
    check_sizes(spec);
    if (binary.empty())
      throw Error(ctx_.name() + ": empty binary for kernel " + name_ + " (was it compiled for NULL?)");
    const Api& a = ctx_.a();
    const cl_device_id dev = ctx_.device();
    const size_t length = binary.size();
    const unsigned char* bytes = reinterpret_cast<const unsigned char*>(binary.data());
    cl_int status = CL_SUCCESS, err = CL_SUCCESS;
    ProgramHandle prog{a, a.clCreateProgramWithBinary(ctx_.context(), 1, &dev, &length, &bytes, &status, &err)};
    ctx_.check(err != CL_SUCCESS ? err : status, "kernel " + name_ + ": clCreateProgramWithBinary");
    if (cl_int r = a.clBuildProgram(prog.p, 1, &dev, OpenCLRenderer::build_options(), nullptr, nullptr);
        r != CL_SUCCESS)
      throw Error(ctx_.name() + ": kernel " + name_ + ": clBuildProgram of its binary: " + error_name(r) + "\n" +
                  build_log(ctx_, prog.p));
    kernel_ = a.clCreateKernel(prog.p, name_.c_str(), &err);
    ctx_.check(err, "kernel " + name_ + " is not in its compiled program (expected __kernel void " + name_ +
                        "(...)): clCreateKernel");
    program_ = prog.p;
    prog.p = nullptr;  // kept until the program goes
  }
  ~ClProgram() override {
    ctx_.a().clReleaseKernel(kernel_);
    ctx_.a().clReleaseProgram(program_);
  }

  double run(const std::vector<void*>& bufs, const std::vector<int64_t>& vars, bool wait) override {
    if (bufs.size() != n_bufs_ || vars.size() != n_vars_)
      throw Error(ctx_.name() + ": kernel " + name_ + " takes " + std::to_string(n_bufs_) + " buffers and " +
                  std::to_string(n_vars_) + " vars, got " + std::to_string(bufs.size()) + " and " +
                  std::to_string(vars.size()));
    const Api& a = ctx_.a();
    EventHandle done{a};
    {
      // Arguments are set on the kernel object itself and captured at enqueue: one launch at a time per program.
      std::lock_guard<std::mutex> lock(mu_);
      set_args(bufs, vars);
      if (cl_int r = a.clEnqueueNDRangeKernel(ctx_.queue(), kernel_, 3, nullptr, global_, local_, 0, nullptr,
                                              wait ? &done.e : nullptr);
          r != CL_SUCCESS)
        ctx_.check(r, "launch of " + name_ + " (global " +
                          format_dims({int64_t(global_[0]), int64_t(global_[1]), int64_t(global_[2])}) +
                          " work items, local " +
                          format_dims({int64_t(local_[0]), int64_t(local_[1]), int64_t(local_[2])}) + ")");
    }
    if (!wait) return 0.0;
    ctx_.check(a.clWaitForEvents(1, &done.e), "kernel " + name_ + " failed");
    cl_ulong start = 0, end = 0;
    ctx_.check(a.clGetEventProfilingInfo(done.e, CL_PROFILING_COMMAND_START, sizeof(start), &start, nullptr),
               "kernel " + name_ + ": clGetEventProfilingInfo");
    ctx_.check(a.clGetEventProfilingInfo(done.e, CL_PROFILING_COMMAND_END, sizeof(end), &end, nullptr),
               "kernel " + name_ + ": clGetEventProfilingInfo");
    return end > start ? double(end - start) * 1e-9 : 0.0;
  }

 private:
  // The device's limits, checked here so the error names the kernel and its sizes (the driver would only say
  // CL_INVALID_WORK_GROUP_SIZE at launch). OpenCL counts work items where our spec counts groups (CUDA's grid).
  void check_sizes(const ProgramSpec& spec) {
    const std::string sizes = "global " + format_dims(spec.global_size) + " local " + format_dims(spec.local_size);
    if (spec.global_size.size() != 3 || spec.local_size.size() != 3)
      throw Error(ctx_.name() + ": kernel " + name_ + ": launch sizes must have 3 dimensions, got " + sizes);
    const ClContext::Limits& lim = ctx_.limits();
    int64_t items = 1;
    for (int i = 0; i < 3; i++) {
      if (spec.global_size[i] < 1 || spec.global_size[i] > (int64_t(1) << 31) || spec.local_size[i] < 1 ||
          spec.local_size[i] > lim.item[i])
        throw Error(ctx_.name() + ": kernel " + name_ + ": launch sizes " + sizes + " are outside " +
                    ctx_.device_name() + "'s limits (local up to " +
                    format_dims({lim.item[0], lim.item[1], lim.item[2]}) + ", " + std::to_string(lim.work_group) +
                    " work items a group; global groups 1 to 2^31)");
      items *= spec.local_size[i];
      global_[i] = size_t(spec.global_size[i] * spec.local_size[i]);
      local_[i] = size_t(spec.local_size[i]);
    }
    if (items > lim.work_group)
      throw Error(ctx_.name() + ": kernel " + name_ + " asks for " + std::to_string(items) + " work items a group " +
                  format_dims(spec.local_size) + "; " + ctx_.device_name() + " allows at most " +
                  std::to_string(lim.work_group));
  }

  // Buffers (cl_mem), then vars (int), in parameter order. mu_ is held.
  void set_args(const std::vector<void*>& bufs, const std::vector<int64_t>& vars) {
    const Api& a = ctx_.a();
    cl_uint arg = 0;
    for (size_t i = 0; i < bufs.size(); i++, arg++) {
      if (!bufs[i])
        throw Error(ctx_.name() + ": kernel " + name_ + ": buffer " + std::to_string(i) + " is not allocated");
      const cl_mem m = mem(bufs[i]);
      if (cl_int r = a.clSetKernelArg(kernel_, arg, sizeof(cl_mem), &m); r != CL_SUCCESS)
        ctx_.check(r, "kernel " + name_ + ": clSetKernelArg of buffer " + std::to_string(i));
    }
    for (size_t i = 0; i < vars.size(); i++, arg++) {
      if (vars[i] < INT32_MIN || vars[i] > INT32_MAX)
        throw Error(ctx_.name() + ": kernel " + name_ + ": var " + std::to_string(i) + " = " + std::to_string(vars[i]) +
                    " does not fit the kernel's int parameter");
      const cl_int v = cl_int(vars[i]);
      if (cl_int r = a.clSetKernelArg(kernel_, arg, sizeof(cl_int), &v); r != CL_SUCCESS)
        ctx_.check(r, "kernel " + name_ + ": clSetKernelArg of var " + std::to_string(i));
    }
  }

  std::shared_ptr<const ClContext> ctx_ptr_;  // keeps the context alive as long as the program
  const ClContext& ctx_;
  std::string name_;
  size_t n_bufs_, n_vars_;
  size_t global_[3] = {1, 1, 1}, local_[3] = {1, 1, 1};  // in work items
  cl_program program_ = nullptr;
  cl_kernel kernel_ = nullptr;
  std::mutex mu_;
};

class ClDevice : public Device {
 public:
  explicit ClDevice(int index)
      : ctx_ptr_(std::make_shared<ClContext>(index, index == 0 ? "CL" : "CL:" + std::to_string(index))),
        ctx_(*ctx_ptr_) {
    name_ = ctx_.name();
    allocator_ = std::make_unique<LRUAllocator>(std::make_unique<ClAllocator>(ctx_ptr_));
    compiler_ = std::make_unique<ClCompiler>(ctx_ptr_);
    renderer_ =
        std::make_unique<OpenCLRenderer>(OpenCLRenderer::Limits{ctx_.limits().work_group, ctx_.limits().local_mem});
    if (DEBUG >= 2)
      std::fprintf(stderr, "%s: %s (%s), %s, driver %s, %lld work items a group, %lld KiB local memory\n",
                   name_.c_str(), ctx_.device_name().c_str(), ctx_.platform_name().c_str(),
                   ctx_.device_version().c_str(), ctx_.driver_version().c_str(),
                   static_cast<long long>(ctx_.limits().work_group),
                   static_cast<long long>(ctx_.limits().local_mem / 1024));
  }

  std::unique_ptr<Program> load(const ProgramSpec& spec, const std::string& binary) override {
    return std::make_unique<ClProgram>(ctx_ptr_, spec, binary);
  }
  void synchronize() override { ctx_.check(ctx_.a().clFinish(ctx_.queue()), "synchronize (clFinish)"); }
  const ClContext& context() const { return ctx_; }

 private:
  // Shared with the allocator, the compiler and every program: whichever of them goes last releases the context.
  std::shared_ptr<const ClContext> ctx_ptr_;
  const ClContext& ctx_;
};

const ClContext* cl_context_of(Device& dev) {
  auto* d = dynamic_cast<ClDevice*>(&dev);
  return d ? &d->context() : nullptr;
}

}  // namespace

int cl_device_count(std::string* why) { return int(cl::devices(why).size()); }

std::unique_ptr<Device> make_cl_device(int index) { return std::make_unique<ClDevice>(index); }

}  // namespace tg
