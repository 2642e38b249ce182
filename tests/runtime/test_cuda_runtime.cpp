// The CUDA runtime (ops_cuda.cpp, cuda_driver.cpp, nvrtc.cpp). Three groups, each skipping with a message
// when this machine lacks what it needs:
//   CudaAbsent   machines without a GPU (CI): the device is absent, with a reason, and CPU is the default.
//   Nvrtc        machines with the CUDA toolkit (no GPU needed): hand-written and rendered kernels compile.
//   CudaGpu      machines with an NVIDIA GPU: memory, copies, launches, errors, tensors, DEBUG lines.
// Built as its own binary, labelled `cuda` (ctest -L cuda).
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <random>
#include <thread>

#include "codegen/kernel.h"
#include "codegen/opt/heuristic.h"
#include "codegen/linearize.h"
#include "codegen/lowerer.h"
#include "renderer/cuda.h"
#include "runtime/buffer.h"
#include "runtime/cuda_driver.h"
#include "runtime/device.h"
#include "runtime/devices.h"
#include "runtime/nvrtc.h"
#include "schedule/schedule.h"
#include "tg/context.h"
#include "tg/error.h"
#include "tg/jit.h"
#include "tg/tg.h"

using namespace tg;

namespace {

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// Sets an environment variable for one scope.
class ScopedEnv {
 public:
  ScopedEnv(const char* key, const std::string& value) : key_(key) {
    if (const char* old = std::getenv(key)) old_ = old, had_ = true;
    setenv(key, value.c_str(), 1);
  }
  ~ScopedEnv() {
    if (had_)
      setenv(key_, old_.c_str(), 1);
    else
      unsetenv(key_);
  }

 private:
  const char* key_;
  std::string old_;
  bool had_ = false;
};

#define SKIP_WITHOUT_GPU()                                                                      \
  do {                                                                                          \
    std::string why_;                                                                           \
    if (cuda_device_count(&why_) == 0) GTEST_SKIP() << "no CUDA GPU on this machine: " << why_; \
    if (!nvrtc_available(&why_)) GTEST_SKIP() << "a GPU but no NVRTC: " << why_;                \
  } while (0)

#define SKIP_WITHOUT_NVRTC()                                                                          \
  do {                                                                                                \
    std::string why_;                                                                                 \
    if (!nvrtc_available(&why_)) GTEST_SKIP() << "no NVRTC (CUDA toolkit) on this machine: " << why_; \
  } while (0)

// A hand-written kernel: out[i] = a[i] * k + 1 for i < n, one thread an element.
const char* kScaleSrc = R"(extern "C" __global__ void scale(float* out, const float* a, int n, int k) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = a[i] * k + 1.0f;
}
)";

ProgramSpec scale_spec(int64_t blocks, int64_t threads) {
  ProgramSpec spec;
  spec.name = spec.display_name = "scale";
  spec.src = kScaleSrc;
  spec.global_size = {blocks, 1, 1};
  spec.local_size = {threads, 1, 1};
  spec.n_bufs = 2;
  for (const char* v : {"n", "k"})
    spec.vars.push_back(UOp::make(Ops::DEFINE_VAR, dtypes::int32, {}, NamedRange{v, 0, 1 << 30}));
  return spec;
}

// The rendered CUDA source of every kernel in t's schedule (scheduled for the default device; only the
// renderer matters here).
std::vector<std::pair<std::string, std::string>> rendered_kernels(const Tensor& t, const CUDARenderer& cuda) {
  std::vector<std::pair<std::string, std::string>> out;
  for (auto& item : create_schedule({t.uop()}).items) {
    if (item.ast->op != Ops::SINK) continue;
    Kernel k(item.ast, cuda);
    hand_coded_optimizations(k);
    out.emplace_back(k.name(), cuda.render(k.name(), linearize_kernel(lower_kernel(k))));
  }
  return out;
}

}  // namespace

// ---- no GPU ----

TEST(CudaAbsent, DeviceThrowsWithReasonAndDefaultIsCpu) {
  std::string why;
  if (cuda_device_count(&why) > 0) GTEST_SKIP() << "this machine has a GPU";
  EXPECT_FALSE(why.empty()) << "no GPU must come with a reason";
  try {
    get_device("CUDA");
    FAIL() << "opened CUDA without a GPU";
  } catch (const Error& e) {
    EXPECT_TRUE(has(e.what(), "CUDA")) << e.what();
    EXPECT_TRUE(has(e.what(), why)) << e.what() << " should say why: " << why;
  }
  EXPECT_THROW(Tensor::ones({4}, {.device = "CUDA"}).realize(), Error);
  ScopedEnv dev("DEV", "");
  EXPECT_EQ(default_device(), "CPU");
  // "CUDA" is still a name (an error comes when it is used); CUDA:1 names a GPU that is not here.
  EXPECT_EQ(canonical_device("cuda"), "CUDA");
  EXPECT_EQ(canonical_device("CUDA:0"), "CUDA");
  try {
    canonical_device("CUDA:1");
    FAIL() << "CUDA:1 accepted with no GPU";
  } catch (const Error& e) {
    EXPECT_TRUE(has(e.what(), "0 CUDA devices")) << e.what();
  }
}

TEST(CudaAbsent, DeviceNamesKeepTheirRules) {
  EXPECT_EQ(canonical_device("cpu:0"), "CPU");
  EXPECT_EQ(canonical_device("interp"), "INTERP");
  EXPECT_EQ(canonical_device("CPU:1"), "CPU:1");  // (several CPU devices, for sharded tensors)
  EXPECT_THROW(canonical_device("CPU:64"), Error);
  EXPECT_THROW(canonical_device("INTERP:1"), Error);
  EXPECT_THROW(canonical_device("CUDA:x"), Error);
  EXPECT_THROW(canonical_device("CUDA:-1"), Error);
  int n = cuda_device_count();
  EXPECT_THROW(canonical_device("CUDA:" + std::to_string(std::max(n, 1))), Error);
  try {
    get_device("TPU");
    FAIL();
  } catch (const Error& e) {
    EXPECT_TRUE(has(e.what(), "CUDA")) << "the known list names CUDA: " << e.what();
  }
}

// tinygrad's copy line, checked between two host devices: "copy       16,  INTERP <- CPU    ".
TEST(CudaAbsent, CopyDebugLineHasTinygradsFormat) {
  Tensor a = Tensor(std::vector<float>{1, 2, 3, 4}, {4}, {.device = "CPU"}).realize();
  testing::internal::CaptureStdout();
  {
    Context ctx({{"DEBUG", 2}});
    Tensor b = a.to("INTERP").realize();
  }
  std::string out = testing::internal::GetCapturedStdout();
  EXPECT_TRUE(has(out, "copy       16,  INTERP <- CPU    ")) << out;
  EXPECT_TRUE(has(out, "*** INTERP")) << out;
}

// ---- NVRTC (toolkit, no GPU needed) ----

TEST(Nvrtc, CompilesHandWrittenKernelToCubin) {
  SKIP_WITHOUT_NVRTC();
  auto cc = make_nvrtc_compiler("sm_90");
  std::string bin = cc->compile(kScaleSrc);
  ASSERT_GE(bin.size(), 4u);
  EXPECT_EQ(bin.substr(0, 4),
            "\x7f"
            "ELF")
      << "a cubin is an ELF image";
  std::string key = cc->cache_key();
  EXPECT_TRUE(has(key, "nvrtc " + nvrtc_version())) << key;
  EXPECT_TRUE(has(key, "sm_90")) << key;
  EXPECT_NE(key, make_nvrtc_compiler("sm_80")->cache_key());
  EXPECT_THROW(make_nvrtc_compiler("gfx90a"), Error);
}

TEST(Nvrtc, FindsToolkitHeaders) {
  SKIP_WITHOUT_NVRTC();
  if (cuda_include_dirs().empty()) GTEST_SKIP() << "NVRTC is here but no folder with cuda_fp16.h";
  std::string src =
      "#include <cuda_fp16.h>\n#include <cuda_bf16.h>\n"
      "extern \"C\" __global__ void h(half* o, const __nv_bfloat16* a) {\n"
      "  o[threadIdx.x] = __float2half(__bfloat162float(a[threadIdx.x]) * 2.0f);\n}\n";
  EXPECT_FALSE(make_nvrtc_compiler("sm_90")->compile(src).empty());
}

TEST(Nvrtc, CompileErrorShowsLogAndOffendingLine) {
  SKIP_WITHOUT_NVRTC();
  std::string src =
      "extern \"C\" __global__ void bad(float* o) {\n  int i = threadIdx.x;\n"
      "  o[i] = undefined_thing + 1;\n}\n";
  try {
    make_nvrtc_compiler("sm_90")->compile(src);
    FAIL() << "compiled a kernel with an undefined name";
  } catch (const Error& e) {
    std::string msg = e.what();
    EXPECT_TRUE(has(msg, "CUDA compile failed")) << msg;
    EXPECT_TRUE(has(msg, "undefined_thing")) << "NVRTC's log: " << msg;
    EXPECT_TRUE(has(msg, "kernel.cu(3)")) << msg;
    EXPECT_TRUE(has(msg, "  3 |   o[i] = undefined_thing + 1;")) << "the offending line: " << msg;
  }
}

// ptxas's verdicts (here: too much shared memory for a block) are compile errors too, with the log.
TEST(Nvrtc, AssemblerErrorsAreCompileErrors) {
  SKIP_WITHOUT_NVRTC();
  std::string src =
      "extern \"C\" __global__ void big_shared(float* o) {\n  __shared__ float s[1 << 20];\n"
      "  s[threadIdx.x] = 1; __syncthreads(); o[threadIdx.x] = s[1023 - threadIdx.x];\n}\n";
  try {
    make_nvrtc_compiler("sm_90")->compile(src);
    FAIL() << "4 MiB of shared memory accepted";
  } catch (const Error& e) {
    EXPECT_TRUE(has(e.what(), "CUDA compile failed")) << e.what();
    EXPECT_TRUE(has(e.what(), "shared")) << e.what();
  }
}

// What the CUDA renderer writes for real graphs compiles: the contract between renderer and runtime,
// checked on machines without a GPU.
TEST(Nvrtc, RenderedKernelsCompile) {
  SKIP_WITHOUT_NVRTC();
  if (cuda_include_dirs().empty()) GTEST_SKIP() << "no CUDA headers (cuda_fp16.h) for rendered kernels";
  CUDARenderer cuda("sm_90");
  auto cc = make_nvrtc_compiler("sm_90");
  Tensor a = Tensor::empty({64, 64}), b = Tensor::empty({64, 64});
  Tensor h = Tensor::empty({32, 16}, {.dtype = dtypes::float16});
  Tensor bf = Tensor::empty({32, 16}, {.dtype = dtypes::bfloat16});
  Tensor i = Tensor::empty({100}, {.dtype = dtypes::int32});
  std::vector<Tensor> graphs = {
      (a + b) * 2,
      (a * b).sum(1),
      a.matmul(b),
      (a.exp2() + b.log2()).sqrt().max(0),
      (h * 2 + 1).sum(1),
      (bf.cast(dtypes::float32) + 1).cast(dtypes::bfloat16),
      (i.idiv(Tensor::full({100}, 3, {.dtype = dtypes::int32})) + i.mod(i + 7)).cast(dtypes::float32)};
  int compiled = 0;
  for (auto& g : graphs)
    for (auto& [name, src] : rendered_kernels(g, cuda)) {
      try {
        EXPECT_FALSE(cc->compile(src).empty()) << name;
        compiled++;
      } catch (const Error& e) {
        ADD_FAILURE() << name << ": " << e.what();
      }
    }
  EXPECT_GE(compiled, int(graphs.size()));
}

// ---- on a GPU ----

TEST(CudaGpu, DeviceNamesAndDefault) {
  SKIP_WITHOUT_GPU();
  int n = cuda_device_count();
  EXPECT_EQ(canonical_device("cuda:0"), "CUDA");
  EXPECT_EQ(&get_device("CUDA"), &get_device("cuda:0"));
  EXPECT_EQ(get_device("CUDA").name(), "CUDA");
  if (n > 1) {
    EXPECT_EQ(get_device("CUDA:1").name(), "CUDA:1");
  }
  EXPECT_THROW(canonical_device("CUDA:" + std::to_string(n)), Error);
  ScopedEnv dev("DEV", "");
  EXPECT_EQ(default_device(), "CUDA");
  EXPECT_EQ(get_device("CUDA").renderer().device(), "CUDA");
}

TEST(CudaGpu, AllocCopyRoundTrip) {
  SKIP_WITHOUT_GPU();
  Allocator& al = get_device("CUDA").allocator();
  std::mt19937 rng(1);
  // Small copies go straight through the driver, large ones through pinned staging chunks (odd sizes
  // leave a partial last chunk).
  for (size_t bytes : {size_t(1), size_t(4096), size_t(3) << 20, (size_t(40) << 20) + 12}) {
    std::vector<uint8_t> in(bytes), out(bytes, 0), out2(bytes, 0);
    for (auto& x : in) x = uint8_t(rng());
    void* d = al.alloc(bytes);
    void* d2 = al.alloc(bytes);
    ASSERT_NE(d, nullptr);
    al.copyin(d, in.data(), bytes);
    al.copyout(out.data(), d, bytes);
    EXPECT_EQ(in, out) << bytes << " bytes";
    ASSERT_TRUE(al.transfer(d2, d, bytes, get_device("CUDA"))) << "same-GPU copies are device-to-device";
    al.copyout(out2.data(), d2, bytes);
    EXPECT_EQ(in, out2) << bytes << " bytes, device to device";
    al.free(d, bytes);
    al.free(d2, bytes);
  }
  EXPECT_FALSE(al.transfer(nullptr, nullptr, 4, get_device("CPU"))) << "from the CPU goes through the host";
}

TEST(CudaGpu, LaunchHandWrittenKernel) {
  SKIP_WITHOUT_GPU();
  Device& dev = get_device("CUDA");
  const int n = 1000;
  ProgramSpec spec = scale_spec((n + 255) / 256, 256);
  auto prog = dev.load(spec, dev.compiler().compile_cached(spec.src));
  Buffer a("CUDA", n, dtypes::float32), out("CUDA", n, dtypes::float32);
  std::vector<float> host(n), result(n);
  std::iota(host.begin(), host.end(), 0.0f);
  a.copyin(host.data(), n * 4);
  out.ensure_allocated();
  double t = prog->run({out.ptr(), a.ptr()}, {n, 3}, true);
  EXPECT_GT(t, 0.0);
  EXPECT_LT(t, 1.0);
  out.copyout(result.data(), n * 4);
  for (int i = 0; i < n; i++) ASSERT_EQ(result[i], host[i] * 3 + 1) << i;
  EXPECT_EQ(prog->run({out.ptr(), a.ptr()}, {n, 5}, false), 0.0) << "no wait, no time";
  out.copyout(result.data(), n * 4);
  EXPECT_EQ(result[n - 1], host[n - 1] * 5 + 1);
  EXPECT_THROW(prog->run({out.ptr()}, {n, 3}, true), Error) << "wrong buffer count";
  EXPECT_THROW(prog->run({out.ptr(), a.ptr()}, {int64_t(1) << 40, 3}, true), Error) << "var beyond int32";
}

TEST(CudaGpu, BadLaunchesAreErrorsNotCrashes) {
  SKIP_WITHOUT_GPU();
  Device& dev = get_device("CUDA");
  ProgramSpec spec = scale_spec(1, 2048);
  try {
    dev.load(spec, dev.compiler().compile_cached(spec.src));
    FAIL() << "2048 threads a block accepted";
  } catch (const Error& e) {
    EXPECT_TRUE(has(e.what(), "scale")) << e.what();
    EXPECT_TRUE(has(e.what(), "1024")) << "the GPU's limit: " << e.what();
  }
  ProgramSpec wide = scale_spec(int64_t(1) << 20, 32);
  wide.global_size = {1, int64_t(1) << 20, 1};  // grid y is limited to 65535
  EXPECT_THROW(dev.load(wide, dev.compiler().compile_cached(wide.src)), Error);
  ProgramSpec missing = scale_spec(1, 32);
  missing.name = "not_there";
  try {
    dev.load(missing, dev.compiler().compile_cached(missing.src));
    FAIL() << "loaded a kernel that is not in the module";
  } catch (const Error& e) {
    EXPECT_TRUE(has(e.what(), "not_there")) << e.what();
    EXPECT_TRUE(has(e.what(), "CUDA_ERROR_NOT_FOUND")) << "the driver's error name: " << e.what();
  }
  try {
    dev.load(scale_spec(1, 32), "this is not a cubin");
    FAIL() << "loaded garbage";
  } catch (const Error& e) {
    EXPECT_TRUE(has(e.what(), "CUDA_ERROR_")) << e.what();
  }
  // After all of that the device still works.
  Tensor t = Tensor(std::vector<float>{1, 2, 3}, {3}, {.device = "CUDA"}) * 2;
  EXPECT_EQ(t.tolist<float>(), (std::vector<float>{2, 4, 6}));
}

TEST(CudaGpu, TensorsRunOnTheGpu) {
  SKIP_WITHOUT_GPU();
  std::vector<float> x(64 * 64), y(64 * 64);
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-1, 1);
  for (auto& v : x) v = u(rng);
  for (auto& v : y) v = u(rng);
  auto run = [&](const std::string& dev) {
    Tensor a(x, {64, 64}, {.device = dev}), b(y, {64, 64}, {.device = dev});
    return std::vector<std::vector<float>>{((a + b) * 2).tolist<float>(), (a * b).sum(1).tolist<float>(),
                                           a.matmul(b).tolist<float>(), a.exp2().max(1).tolist<float>()};
  };
  auto gpu = run("CUDA"), cpu = run("CPU");
  for (size_t k = 0; k < gpu.size(); k++) {
    ASSERT_EQ(gpu[k].size(), cpu[k].size());
    for (size_t i = 0; i < gpu[k].size(); i++)
      ASSERT_NEAR(gpu[k][i], cpu[k][i], 1e-4f) << "result " << k << " [" << i << "]";
  }
  // .to() both ways, and a tensor made on the CPU moved to the GPU.
  Tensor c = Tensor(std::vector<float>{1, 2, 3, 4}, {4}, {.device = "CPU"});
  EXPECT_EQ((c.to("CUDA") + 1).to("CPU").tolist<float>(), (std::vector<float>{2, 3, 4, 5}));
  EXPECT_EQ((c.to("CUDA") + 1).device(), "CUDA");
}

TEST(CudaGpu, DebugLinesForCopyAndKernel) {
  SKIP_WITHOUT_GPU();
  Tensor c = Tensor(std::vector<float>{1, 2, 3, 4}, {4}, {.device = "CPU"}).realize();
  testing::internal::CaptureStdout();
  {
    Context ctx({{"DEBUG", 2}});
    (c.to("CUDA") * 3).realize();
  }
  std::string out = testing::internal::GetCapturedStdout();
  std::printf("%s", out.c_str());
  EXPECT_TRUE(has(out, "copy       16,    CUDA <- CPU    ")) << out;
  EXPECT_TRUE(has(out, "*** CUDA ")) << out;
  EXPECT_TRUE(has(out, " tm ")) << "kernels and copies are timed: " << out;
}

TEST(CudaGpu, LargeCopiesAndKernelTiming) {
  SKIP_WITHOUT_GPU();
  // Figures for the notes, not assertions on time: 256 MiB in and out, and an elementwise kernel on it.
  const int64_t n = int64_t(64) << 20;
  std::vector<float> host(size_t(n), 0.f), back(size_t(n), 0.f);
  for (int64_t i = 0; i < n; i++) host[size_t(i)] = float(i % 1000);
  Buffer b("CUDA", n, dtypes::float32);
  Device& dev = get_device("CUDA");
  auto secs = [](auto t0) { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
  b.copyin(host.data(), size_t(n) * 4);  // warm-up (staging buffers, page faults)
  dev.synchronize();
  auto t0 = std::chrono::steady_clock::now();
  b.copyin(host.data(), size_t(n) * 4);
  dev.synchronize();
  double tin = secs(t0);
  t0 = std::chrono::steady_clock::now();
  b.copyout(back.data(), size_t(n) * 4);
  double tout = secs(t0);
  EXPECT_EQ(host, back);
  ProgramSpec spec = scale_spec(n / 256, 256);
  auto prog = dev.load(spec, dev.compiler().compile_cached(spec.src));
  Buffer o("CUDA", n, dtypes::float32);
  o.ensure_allocated();
  prog->run({o.ptr(), b.ptr()}, {n, 2}, true);
  std::vector<double> times;
  for (int i = 0; i < 10; i++) times.push_back(prog->run({o.ptr(), b.ptr()}, {n, 2}, true));
  std::sort(times.begin(), times.end());
  double gb = double(n) * 4 / 1e9;
  // The driver's own pageable copies of the same data, for comparison with the staged path.
  const cu::Driver& d = cu::driver();
  t0 = std::chrono::steady_clock::now();
  ASSERT_EQ(d.cuMemcpyHtoD(cu::CUdeviceptr(uintptr_t(b.ptr())), host.data(), size_t(n) * 4), cu::CUDA_SUCCESS);
  dev.synchronize();
  double tin_pageable = secs(t0);
  t0 = std::chrono::steady_clock::now();
  ASSERT_EQ(d.cuMemcpyDtoH(back.data(), cu::CUdeviceptr(uintptr_t(b.ptr())), size_t(n) * 4), cu::CUDA_SUCCESS);
  double tout_pageable = secs(t0);
  std::printf(
      "[figures] 256 MiB: copyin %.2f GB/s, copyout %.2f GB/s (driver's pageable copies: %.2f, %.2f GB/s); "
      "scale kernel %.1f us = %.0f GB/s (median of 10)\n",
      gb / tin, gb / tout, gb / tin_pageable, gb / tout_pageable, times[5] * 1e6, 2 * gb / times[5]);
  o.copyout(back.data(), size_t(n) * 4);
  EXPECT_EQ(back[999], 999.f * 2 + 1);
}

TEST(CudaGpu, PeerCopyBetweenGpus) {
  SKIP_WITHOUT_GPU();
  if (cuda_device_count() < 2) GTEST_SKIP() << "needs two GPUs (CUDA:0 and CUDA:1)";
  std::vector<float> x(1 << 20);
  std::iota(x.begin(), x.end(), 0.f);
  Tensor a = Tensor(x, {int64_t(x.size())}, {.device = "CUDA"}).realize();
  testing::internal::CaptureStdout();
  std::vector<float> y;
  {
    Context ctx({{"DEBUG", 2}});
    y = (a.to("CUDA:1") + 1).to("CPU").tolist<float>();
  }
  std::string out = testing::internal::GetCapturedStdout();
  std::printf("%s", out.c_str());
  EXPECT_TRUE(has(out, "xfer    4.19M,  CUDA:1 <- CUDA   ")) << out;
  ASSERT_EQ(y.size(), x.size());
  for (size_t i = 0; i < x.size(); i++) ASSERT_EQ(y[i], x[i] + 1) << i;
  // Back the other way, and the allocators directly (a partial last 8 MiB chunk does not matter here).
  Tensor back = (a.to("CUDA:1") * 2).to("CUDA");
  EXPECT_EQ(back.device(), "CUDA");
  EXPECT_EQ(back.tolist<float>()[12345], 12345.f * 2);
  Allocator &al0 = get_device("CUDA").allocator(), &al1 = get_device("CUDA:1").allocator();
  size_t bytes = (size_t(24) << 20) + 4;
  std::vector<uint8_t> in(bytes), out0(bytes);
  for (size_t i = 0; i < bytes; i++) in[i] = uint8_t(i * 7 + 3);
  void* p0 = al0.alloc(bytes);
  void* p1 = al1.alloc(bytes);
  al0.copyin(p0, in.data(), bytes);
  ASSERT_TRUE(al1.transfer(p1, p0, bytes, get_device("CUDA")));
  al0.copyin(p0, std::vector<uint8_t>(bytes, 0).data(), bytes);  // ordered after the copy has read p0
  ASSERT_TRUE(al0.transfer(p0, p1, bytes, get_device("CUDA:1")));
  al0.copyout(out0.data(), p0, bytes);
  EXPECT_TRUE(in == out0) << "CUDA -> CUDA:1 -> CUDA round trip";
  al0.free(p0, bytes);
  al1.free(p1, bytes);
}

// The driver's current context is per thread: a thread that never touched the GPU must still be able to use it.
TEST(CudaGpu, WorksFromAnotherThread) {
  SKIP_WITHOUT_GPU();
  Tensor a = Tensor(std::vector<float>{1, 2, 3}, {3}, {.device = "CUDA"}).realize();
  std::vector<float> got;
  std::string error;
  std::thread t([&] {
    try {
      got = (a * 10).tolist<float>();
    } catch (const std::exception& e) {
      error = e.what();
    }
  });
  t.join();
  EXPECT_EQ(error, "");
  EXPECT_EQ(got, (std::vector<float>{10, 20, 30}));
}

// A kernel that faults poisons its context for good (the driver's rule). The error must say what happened,
// later uses of that GPU must fail with a clear message instead of crashing, and the rest of the process
// must keep working. Runs in a fresh child process (a death test) so the broken GPU stays there. (gtest's
// POSIX regex: `.` matches newlines too.)
TEST(CudaGpu, FaultingKernelLeavesTheProcessUsable) {
  SKIP_WITHOUT_GPU();
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        Device& dev = get_device("CUDA");
        ProgramSpec spec;
        spec.name = "fault";
        spec.src = "extern \"C\" __global__ void fault(float* o) { *(volatile float*)(16) = o[0]; }\n";
        spec.n_bufs = 1;
        auto prog = dev.load(spec, dev.compiler().compile_cached(spec.src));
        Buffer o("CUDA", 4, dtypes::float32);
        o.ensure_allocated();
        try {
          prog->run({o.ptr()}, {}, true);
          std::fprintf(stderr, "no error\n");
        } catch (const Error& e) {
          std::fprintf(stderr, "first: %s\n", e.what());
        }
        try {
          Buffer again("CUDA", 4, dtypes::float32);
          again.ensure_allocated();
          std::fprintf(stderr, "second: no error\n");
        } catch (const Error& e) {
          std::fprintf(stderr, "second: %s\n", e.what());
        }
        float v = (Tensor(std::vector<float>{1, 2}, {2}, {.device = "CPU"}) + 1).sum().item<float>();
        std::fprintf(stderr, "cpu: %g\n", v);
        std::exit(0);
      },
      testing::ExitedWithCode(0),
      "first: CUDA: kernel fault failed: CUDA_ERROR_ILLEGAL_ADDRESS.*second: CUDA is unusable after an earlier "
      "error.*cpu: 5");
}

// TinyJit on a GPU: from the first replay on, the captured kernels run as one CUDA graph, on new inputs each call
// (copied into the captured ones), with the values eager code gives; JIT=2 replays without a graph, the same values.
TEST(CudaGpu, JitReplaysAsOneGraph) {
  SKIP_WITHOUT_GPU();
  for (long mode : {1L, 2L}) {
    tg::Context ctx({{"JIT", mode}});
    Tensor w = Tensor::randn({64, 32}, {.device = "CUDA"});
    w.realize();
    tg::TinyJit step([&](const std::vector<Tensor>& in) {
      return std::vector<Tensor>{(in[0].matmul(w).relu() + in[1]).sum(1)};
    });
    for (int call = 0; call < 5; call++) {
      Tensor x = Tensor::randn({8, 64}, {.device = "CUDA"}), y = Tensor::randn({8, 32}, {.device = "CUDA"});
      x.realize();
      y.realize();
      const std::vector<float> want = (x.matmul(w).relu() + y).sum(1).tolist<float>();
      const std::vector<float> got = step({x, y})[0].tolist<float>();
      ASSERT_EQ(got.size(), want.size());
      for (size_t i = 0; i < got.size(); i++) ASSERT_NEAR(got[i], want[i], 1e-3f) << "JIT=" << mode << " call " << call;
    }
    EXPECT_EQ(step.graphed(), mode == 1) << "JIT=" << mode;
  }
}

// A graph whose kernels take a variable (a decode step's start_pos: a symbolic shrink and an argument) gets each
// replay's value in its kernel nodes: the values match eager code at every value, repeated or not, and the
// replays stay one graph.
TEST(CudaGpu, JitGraphTakesEachReplaysVariable) {
  SKIP_WITHOUT_GPU();
  tg::Variable pos("pos", 1, 64);
  Tensor x = Tensor::randn({64, 16}, {.device = "CUDA"});
  Tensor w = Tensor::randn({16, 16}, {.device = "CUDA"});
  Tensor::realize_all({x, w});
  auto f = [&](const Tensor& p) {
    const tg::sint n = *p.bound_variable();
    Tensor rows = x.shrink({{0, n}, {0, 16}});  // (n, 16): a kernel over a symbolic number of rows
    return (rows.matmul(w).relu().sum(0) + p.cast(tg::dtypes::float32)).contiguous();
  };
  tg::TinyJit step([&](const std::vector<Tensor>& in) { return std::vector<Tensor>{f(in[0])}; });
  for (int64_t k : {5, 9, 1, 64, 9, 9, 33, 2}) {
    const std::vector<float> want = f(Tensor(pos.bind(k))).tolist<float>();
    const std::vector<float> got = step({Tensor(pos.bind(k))})[0].tolist<float>();
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); i++) ASSERT_NEAR(got[i], want[i], 1e-3f) << "pos " << k << " at " << i;
  }
  EXPECT_TRUE(step.graphed());
}
