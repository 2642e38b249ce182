// The OpenCL runtime (ops_cl.cpp, opencl_api.cpp): memory, copies, a hand-written kernel compiled, loaded and run,
// and the errors. Every test that needs a device skips, saying why, where no OpenCL device opens (no ICD loader, no
// platform); PoCL's CPU device is enough to run them all.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "codegen/program.h"
#include "runtime/device.h"
#include "runtime/devices.h"
#include "tg/error.h"

using namespace tg;

namespace {

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

#define SKIP_WITHOUT_CL()                                                                          \
  do {                                                                                             \
    std::string why_;                                                                              \
    if (cl_device_count(&why_) == 0) GTEST_SKIP() << "no OpenCL device on this machine: " << why_; \
  } while (0)

// data0[i] = data1[i] + 1 for i < n, one work item an element.
const char* kAdd1Src =
    R"(__kernel void add1(__global float* restrict data0, __global const float* restrict data1, int n) {
  int i = get_group_id(0) * get_local_size(0) + get_local_id(0);
  if (i < n) data0[i] = data1[i] + 1.0f;
}
)";

ProgramSpec add1_spec(int64_t groups, int64_t local) {
  ProgramSpec spec;
  spec.name = spec.display_name = "add1";
  spec.src = kAdd1Src;
  spec.global_size = {groups, 1, 1};
  spec.local_size = {local, 1, 1};
  spec.n_bufs = 2;
  spec.vars.push_back(UOp::make(Ops::DEFINE_VAR, dtypes::int32, {}, NamedRange{"n", 0, 1 << 30}));
  return spec;
}

// A buffer of the device's allocator, freed with the scope.
struct DeviceBuffer {
  Device& dev;
  size_t bytes;
  void* p;
  DeviceBuffer(Device& d, size_t n) : dev(d), bytes(n), p(d.allocator().alloc(n)) {}
  ~DeviceBuffer() { dev.allocator().free(p, bytes); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
};

}  // namespace

TEST(OpenCL, AbsentDeviceSaysWhy) {
  std::string why;
  if (cl_device_count(&why) > 0) GTEST_SKIP() << "this machine has an OpenCL device";
  EXPECT_FALSE(why.empty()) << "no device must come with a reason";
  try {
    get_device("CL");
    FAIL() << "opened CL without an OpenCL device";
  } catch (const Error& e) {
    EXPECT_TRUE(has(e.what(), "CL")) << e.what();
  }
}

TEST(OpenCL, NoSuchDeviceIndex) {
  try {
    get_device("CL:99");
    FAIL() << "opened CL:99";
  } catch (const Error& e) {
    EXPECT_TRUE(has(e.what(), "CL:99")) << e.what();
  }
}

TEST(OpenCL, CopyinCopyoutRoundTrip) {
  SKIP_WITHOUT_CL();
  Device& dev = get_device("CL");
  EXPECT_EQ(dev.name(), "CL");
  EXPECT_EQ(dev.renderer().device(), "CL");
  EXPECT_FALSE(dev.shared_memory().has_value()) << "cl_mem handles are not memory anyone else may touch";
  std::vector<float> in(1000), out(1000, -1.0f);
  for (size_t i = 0; i < in.size(); i++) in[i] = float(i) * 0.5f;
  DeviceBuffer buf(dev, in.size() * sizeof(float));
  dev.allocator().copyin(buf.p, in.data(), buf.bytes);
  dev.allocator().copyout(out.data(), buf.p, buf.bytes);
  EXPECT_EQ(out, in);
  // A 0-byte buffer is a real handle, and copies of nothing do nothing.
  DeviceBuffer empty(dev, 0);
  EXPECT_NE(empty.p, nullptr);
  dev.allocator().copyin(empty.p, in.data(), 0);
  dev.allocator().copyout(out.data(), empty.p, 0);
}

TEST(OpenCL, TransferWithinTheDevice) {
  SKIP_WITHOUT_CL();
  Device& dev = get_device("CL");
  std::vector<int32_t> in{1, 2, 3, 4, 5, 6, 7}, out(7, 0);
  DeviceBuffer src(dev, in.size() * 4), dst(dev, in.size() * 4);
  dev.allocator().copyin(src.p, in.data(), src.bytes);
  ASSERT_TRUE(dev.allocator().transfer(dst.p, src.p, src.bytes, dev));
  dev.allocator().copyout(out.data(), dst.p, dst.bytes);
  EXPECT_EQ(out, in);
  // Another kind of device's memory is not a cl_mem: the caller copies through the host.
  std::vector<int32_t> host(7, 9);
  EXPECT_FALSE(dev.allocator().transfer(dst.p, host.data(), dst.bytes, get_device("CPU")));
}

TEST(OpenCL, HandWrittenKernelCompilesLoadsAndRuns) {
  SKIP_WITHOUT_CL();
  Device& dev = get_device("CL");
  ProgramSpec spec = add1_spec(4, 8);  // 32 work items, 30 elements: the guard keeps the last two untouched
  const std::string binary = dev.compiler().compile(spec.src);
  ASSERT_FALSE(binary.empty());
  EXPECT_TRUE(has(dev.compiler().cache_key(), "opencl ")) << dev.compiler().cache_key();
  std::unique_ptr<Program> prog = dev.load(spec, binary);
  std::vector<float> in(32), out(32, -7.0f);
  for (size_t i = 0; i < in.size(); i++) in[i] = float(i);
  DeviceBuffer a(dev, 32 * 4), b(dev, 32 * 4);
  dev.allocator().copyin(b.p, in.data(), b.bytes);
  dev.allocator().copyin(a.p, out.data(), a.bytes);
  double t = prog->run({a.p, b.p}, {30}, true);
  EXPECT_GE(t, 0.0);
  dev.allocator().copyout(out.data(), a.p, a.bytes);
  for (size_t i = 0; i < 30; i++) EXPECT_EQ(out[i], in[i] + 1.0f) << i;
  EXPECT_EQ(out[30], -7.0f);
  EXPECT_EQ(out[31], -7.0f);
  // Without waiting: 0 back, the result there after synchronize.
  EXPECT_EQ(prog->run({a.p, a.p}, {32}, false), 0.0);
  dev.synchronize();
  dev.allocator().copyout(out.data(), a.p, a.bytes);
  EXPECT_EQ(out[0], 2.0f);
  EXPECT_EQ(out[31], -6.0f);
  // Wrong argument counts, a missing buffer and an out-of-range var are errors naming the kernel.
  EXPECT_THROW(prog->run({a.p}, {30}, true), Error);
  EXPECT_THROW(prog->run({a.p, nullptr}, {30}, true), Error);
  try {
    prog->run({a.p, b.p}, {int64_t(1) << 40}, true);
    FAIL() << "a var past int32 ran";
  } catch (const Error& e) {
    EXPECT_TRUE(has(e.what(), "add1")) << e.what();
  }
}

TEST(OpenCL, SyntaxErrorShowsTheBuildLog) {
  SKIP_WITHOUT_CL();
  Device& dev = get_device("CL");
  try {
    dev.compiler().compile("__kernel void broken(__global float* data0) { data0[0] = undeclared_thing; }\n");
    FAIL() << "a syntax error compiled";
  } catch (const Error& e) {
    EXPECT_TRUE(has(e.what(), "CL")) << e.what();
    EXPECT_TRUE(has(e.what(), "CL_BUILD_PROGRAM_FAILURE")) << e.what();
    EXPECT_TRUE(has(e.what(), "undeclared_thing")) << "the build log's complaint: " << e.what();
  }
}

TEST(OpenCL, LocalSizeAboveTheLimitNamesTheKernel) {
  SKIP_WITHOUT_CL();
  Device& dev = get_device("CL");
  ProgramSpec ok = add1_spec(1, 1);
  const std::string binary = dev.compiler().compile(ok.src);
  ProgramSpec too_big = add1_spec(1, dev.renderer().max_local_size() + 1);
  try {
    dev.load(too_big, binary);
    FAIL() << "a launch above the work group limit loaded";
  } catch (const Error& e) {
    EXPECT_TRUE(has(e.what(), "add1")) << e.what();
    EXPECT_TRUE(has(e.what(), "CL")) << e.what();
  }
  ProgramSpec two_dims = ok;
  two_dims.local_size = {1, 1};
  EXPECT_THROW(dev.load(two_dims, binary), Error);
}

TEST(OpenCL, KernelMissingFromItsProgramIsNamed) {
  SKIP_WITHOUT_CL();
  Device& dev = get_device("CL");
  ProgramSpec spec = add1_spec(1, 1);
  const std::string binary = dev.compiler().compile(spec.src);
  spec.name = "not_add1";
  try {
    dev.load(spec, binary);
    FAIL() << "loaded a kernel its program lacks";
  } catch (const Error& e) {
    EXPECT_TRUE(has(e.what(), "not_add1")) << e.what();
  }
}
