// The LLVM runtime (ops_llvm.cpp, llvm_api.cpp): hand-written LLVM IR kernels compiled in-process, linked by the JIT
// and run; kernels sharing a name, code shared between programs of one source, calls into the process (libm, the
// support functions) and the errors. Every test skips, saying why, where the LLVM device does not open (built
// without LLVM, no libLLVM).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "codegen/program.h"
#include "runtime/device.h"
#include "runtime/devices.h"
#include "runtime/llvm_api.h"
#include "tg/error.h"

using namespace tg;

namespace {

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

#define SKIP_WITHOUT_LLVM()                                                             \
  do {                                                                                  \
    std::string why_;                                                                   \
    if (llvm_device_count(&why_) == 0) GTEST_SKIP() << "no LLVM device here: " << why_; \
  } while (0)

// The IR below is written with typed pointers ("float*", LLVM <= 14's spelling); LLVM >= 15 reads "ptr" only, and
// its bitcasts of ptr to ptr are no-ops, so replacing every pointer type gives the same kernel there.
std::string ir(std::string src) {
  if (!llvm::opaque_pointers()) return src;
  for (const char* typed : {"float**", "i8**", "float*", "i16*", "i64*", "i8*"})
    for (size_t at; (at = src.find(typed)) != std::string::npos;) src.replace(at, std::string(typed).size(), "ptr");
  return src;
}

// The entry ABI of every kernel: bufs[i] is buffer i, vars[i] variable i. `body` reads the buffers %b0.. (float*)
// and the variable %n (vars[0]) and ends with `ret void`.
std::string kernel(const std::string& name, int n_bufs, const std::string& body, const std::string& decls = "") {
  std::string s = decls + "define void @" + name + "_entry(i8** %bufs, i64* %vars) {\nentry:\n";
  for (int i = 0; i < n_bufs; i++) {
    const std::string k = std::to_string(i);
    s += "  %p" + k + " = getelementptr i8*, i8** %bufs, i64 " + k + "\n  %r" + k + " = load i8*, i8** %p" + k +
         "\n  %b" + k + " = bitcast i8* %r" + k + " to float*\n";
  }
  s += "  %n = load i64, i64* %vars\n" + body + "}\n";
  return ir(s);
}

// out[i] = a[i] <op> b[i] for i < n: a loop the optimizer vectorizes.
std::string binary_kernel(const std::string& name, const std::string& op) {
  return kernel(name, 3, R"(  %empty = icmp sle i64 %n, 0
  br i1 %empty, label %done, label %loop
loop:
  %i = phi i64 [ 0, %entry ], [ %next, %loop ]
  %pa = getelementptr float, float* %b1, i64 %i
  %pb = getelementptr float, float* %b2, i64 %i
  %x = load float, float* %pa
  %y = load float, float* %pb
  %z = )" + op + R"( float %x, %y
  %po = getelementptr float, float* %b0, i64 %i
  store float %z, float* %po
  %next = add i64 %i, 1
  %more = icmp slt i64 %next, %n
  br i1 %more, label %loop, label %done
done:
  ret void
)");
}

// Every kernel here takes one variable, n (vars[0]), used or not.
ProgramSpec spec_of(const std::string& name, const std::string& src, int n_bufs) {
  ProgramSpec spec;
  spec.name = spec.display_name = name;
  spec.src = src;
  spec.n_bufs = n_bufs;
  spec.vars = {UOp::make(Ops::DEFINE_VAR, dtypes::int32, {}, NamedRange{"n", 0, 1 << 20})};
  return spec;
}

// A buffer of the device's allocator holding `init`, freed with the scope.
struct DeviceFloats {
  Device& dev;
  size_t n;
  void* p;
  DeviceFloats(Device& d, std::vector<float> init) : dev(d), n(init.size()), p(d.allocator().alloc(n * 4)) {
    dev.allocator().copyin(p, init.data(), n * 4);
  }
  ~DeviceFloats() { dev.allocator().free(p, n * 4); }
  std::vector<float> get() const {
    std::vector<float> out(n);
    dev.allocator().copyout(out.data(), p, n * 4);
    return out;
  }
  DeviceFloats(const DeviceFloats&) = delete;
  DeviceFloats& operator=(const DeviceFloats&) = delete;
};

std::unique_ptr<Program> build(Device& dev, const ProgramSpec& spec) {
  return dev.load(spec, dev.compiler().compile(spec.src));
}

// Runs a 3-buffer kernel on a = 0..n-1, b = 10 and returns out.
std::vector<float> run_binary(Program& prog, Device& dev, int n = 37) {
  std::vector<float> a(n), b(n, 10.0f);
  for (int i = 0; i < n; i++) a[i] = float(i);
  DeviceFloats out(dev, std::vector<float>(n, -1.0f)), da(dev, a), db(dev, b);
  EXPECT_GE(prog.run({out.p, da.p, db.p}, {n}, true), 0.0);
  return out.get();
}

}  // namespace

TEST(LLVMJit, DeviceDescribesItself) {
  SKIP_WITHOUT_LLVM();
  Device& dev = get_device("llvm");
  EXPECT_EQ(dev.name(), "LLVM");
  EXPECT_EQ(dev.renderer().device(), "LLVM");
  EXPECT_GE(llvm::built_major(), 13);
  const std::string key = dev.compiler().cache_key();
  EXPECT_EQ(key.rfind("LLVM|" + std::to_string(llvm::built_major()) + "|", 0), 0u) << key;
  EXPECT_TRUE(has(key, "loop-vectorize")) << "the passes are part of the key: " << key;
  ASSERT_TRUE(dev.shared_memory().has_value());
  EXPECT_TRUE(dev.shared_memory()->host());
  EXPECT_EQ(canonical_device("LLVM:0"), "LLVM");
}

TEST(LLVMJit, AbsentDeviceSaysWhy) {
  std::string why;
  if (llvm_device_count(&why) > 0) GTEST_SKIP() << "this build has a working LLVM";
  EXPECT_FALSE(why.empty());
  try {
    get_device("LLVM");
    FAIL() << "the LLVM device opened without LLVM";
  } catch (const Error& e) {
    EXPECT_TRUE(has(e.what(), why)) << e.what();
  }
}

TEST(LLVMJit, HandWrittenKernelComputes) {
  SKIP_WITHOUT_LLVM();
  Device& dev = get_device("LLVM");
  const std::string src = binary_kernel("E_37", "fadd");
  auto prog = build(dev, spec_of("E_37", src, 3));
  std::vector<float> out = run_binary(*prog, dev);
  for (int i = 0; i < 37; i++) EXPECT_EQ(out[i], float(i) + 10.0f) << i;
  // Without waiting: 0 back, and the result is there (the CPU's threads are done when run returns).
  DeviceFloats o(dev, {0, 0}), a(dev, {1, 2}), b(dev, {3, 4});
  EXPECT_EQ(prog->run({o.p, a.p, b.p}, {2}, false), 0.0);
  EXPECT_EQ(o.get(), (std::vector<float>{4, 6}));
  // Wrong argument counts and a missing buffer are errors naming the device and the kernel.
  try {
    prog->run({o.p, a.p}, {2}, true);
    FAIL() << "two buffers for three ran";
  } catch (const Error& e) {
    EXPECT_TRUE(has(e.what(), "LLVM: kernel E_37")) << e.what();
  }
  EXPECT_THROW(prog->run({o.p, a.p, nullptr}, {2}, true), Error);
  EXPECT_THROW(prog->run({o.p, a.p, b.p}, {}, true), Error);
}

TEST(LLVMJit, KernelsSharingANameKeepTheirOwnCode) {
  SKIP_WITHOUT_LLVM();
  Device& dev = get_device("LLVM");
  const std::string add = binary_kernel("E_4_4", "fadd"), mul = binary_kernel("E_4_4", "fmul");
  EXPECT_NE(llvm::entry_symbol(add), llvm::entry_symbol(mul));
  auto p_add = build(dev, spec_of("E_4_4", add, 3));
  auto p_mul = build(dev, spec_of("E_4_4", mul, 3));
  std::vector<float> sum = run_binary(*p_add, dev, 16), prod = run_binary(*p_mul, dev, 16);
  for (int i = 0; i < 16; i++) {
    EXPECT_EQ(sum[i], float(i) + 10.0f) << i;
    EXPECT_EQ(prod[i], float(i) * 10.0f) << i;
  }
}

TEST(LLVMJit, ProgramsOfOneSourceShareCodeUntilTheLastGoes) {
  SKIP_WITHOUT_LLVM();
  Device& dev = get_device("LLVM");
  const std::string src = binary_kernel("E_shared", "fsub");
  const ProgramSpec spec = spec_of("E_shared", src, 3);
  const std::string binary = dev.compiler().compile(src);
  auto first = dev.load(spec, binary);
  auto second = dev.load(spec, binary);
  first.reset();  // the code stays: the second program still holds it
  std::vector<float> out = run_binary(*second, dev, 8);
  for (int i = 0; i < 8; i++) EXPECT_EQ(out[i], float(i) - 10.0f) << i;
  second.reset();  // unloaded now; loading it again links it again
  auto third = dev.load(spec, binary);
  out = run_binary(*third, dev, 8);
  EXPECT_EQ(out[7], -3.0f);
}

TEST(LLVMJit, SyntaxErrorGivesLLVMsDiagnostic) {
  SKIP_WITHOUT_LLVM();
  Device& dev = get_device("LLVM");
  const std::string src =
      ir("define void @bad_entry(i8** %bufs, i64* %vars) {\nentry:\n  %x = frobnicate float 1.0\n  ret void\n}\n");
  try {
    dev.compiler().compile(src);
    FAIL() << "broken IR compiled";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_TRUE(has(msg, "kernel.ll:3:")) << msg;                        // LLVM's position of the error
    EXPECT_TRUE(has(msg, "error: expected instruction opcode")) << msg;  // and its words
    EXPECT_TRUE(has(msg, "3 |   %x = frobnicate float 1.0")) << msg;
  }
  // Valid syntax, invalid module: the verifier's message.
  const std::string unverified =
      ir("define void @v_entry(i8** %bufs, i64* %vars) {\nentry:\n  br label %next\nnext:\n  %y = add i64 %y, 1\n"
         "  ret void\n}\n");
  try {
    dev.compiler().compile(unverified);
    FAIL() << "a module the verifier rejects compiled";
  } catch (const Error& e) {
    EXPECT_TRUE(has(e.what(), "verifying")) << e.what();
  }
  // No entry at all.
  EXPECT_THROW(dev.compiler().compile("define void @f() {\n  ret void\n}\n"), Error);
}

TEST(LLVMJit, SupportFunctionsResolve) {
  SKIP_WITHOUT_LLVM();
  Device& dev = get_device("LLVM");
  const std::string src = kernel("half_of_one", 1, R"(  %h = call i16 @tg_llvm_d2h(double 1.0)
  %hb = call i16 @tg_llvm_d2bf(double 1.0)
  %o = bitcast float* %b0 to i16*
  store i16 %h, i16* %o
  %o1 = getelementptr i16, i16* %o, i64 1
  store i16 %hb, i16* %o1
  ret void
)",
                                 "declare i16 @tg_llvm_d2h(double)\ndeclare i16 @tg_llvm_d2bf(double)\n");
  auto prog = build(dev, spec_of("half_of_one", src, 1));
  DeviceFloats out(dev, {0.0f});
  prog->run({out.p}, {0}, true);
  uint16_t bits[2];
  dev.allocator().copyout(bits, out.p, 4);
  EXPECT_EQ(bits[0], 0x3C00);
  EXPECT_EQ(bits[1], 0x3F80);
}

TEST(LLVMJit, LibmResolvesFromTheProcess) {
  SKIP_WITHOUT_LLVM();
  Device& dev = get_device("LLVM");
  // exp2f called by name, and the intrinsic that LLVM lowers to the same call; fmodf as the C device's MOD would.
  const std::string src = kernel("mathy", 2, R"(  %x0 = load float, float* %b1
  %e0 = call float @exp2f(float %x0)
  store float %e0, float* %b0
  %q1 = getelementptr float, float* %b1, i64 1
  %x1 = load float, float* %q1
  %e1 = call float @llvm.exp2.f32(float %x1)
  %o1 = getelementptr float, float* %b0, i64 1
  store float %e1, float* %o1
  %m = call float @fmodf(float %x1, float %x0)
  %o2 = getelementptr float, float* %b0, i64 2
  store float %m, float* %o2
  ret void
)",
                                 "declare float @exp2f(float)\ndeclare float @llvm.exp2.f32(float)\n"
                                 "declare float @fmodf(float, float)\n");
  auto prog = build(dev, spec_of("mathy", src, 2));
  DeviceFloats out(dev, {0, 0, 0}), in(dev, {2.5f, 7.25f});
  prog->run({out.p, in.p}, {0}, true);
  std::vector<float> got = out.get();
  EXPECT_FLOAT_EQ(got[0], std::exp2(2.5f));
  EXPECT_FLOAT_EQ(got[1], std::exp2(7.25f));
  EXPECT_FLOAT_EQ(got[2], std::fmod(7.25f, 2.5f));
}

TEST(LLVMJit, UnresolvedCallNamesTheSymbol) {
  SKIP_WITHOUT_LLVM();
  Device& dev = get_device("LLVM");
  const std::string src = kernel("lost", 1, R"(  %v = call float @tg_no_such_function(float 1.0)
  store float %v, float* %b0
  ret void
)",
                                 "declare float @tg_no_such_function(float)\n");
  const std::string binary = dev.compiler().compile(src);  // compiles: the name is only looked for when linking
  try {
    dev.load(spec_of("lost", src, 1), binary);
    FAIL() << "a kernel calling a missing function loaded";
  } catch (const Error& e) {
    EXPECT_TRUE(has(e.what(), "tg_no_such_function")) << e.what();
    EXPECT_TRUE(has(e.what(), "lost")) << e.what();
  }
  // The JIT is still fine afterwards.
  auto ok = build(dev, spec_of("E_after", binary_kernel("E_after", "fadd"), 3));
  EXPECT_EQ(run_binary(*ok, dev, 4)[3], 13.0f);
}

TEST(LLVMJit, ThreadedKernelRunsOncePerThread) {
  SKIP_WITHOUT_LLVM();
  Device& dev = get_device("LLVM");
  // out[core_id] += 1 + core_id: core_id is vars[n_vars] = vars[1].
  const std::string src = kernel("threaded", 1, R"(  %pt = getelementptr i64, i64* %vars, i64 1
  %t = load i64, i64* %pt
  %po = getelementptr float, float* %b0, i64 %t
  %old = load float, float* %po
  %tf = sitofp i64 %t to float
  %inc = fadd float %tf, 1.0
  %new = fadd float %old, %inc
  store float %new, float* %po
  ret void
)");
  ProgramSpec spec = spec_of("threaded", src, 1);
  spec.uops = {UOp::make(Ops::SPECIAL, dtypes::int32, {}, SpecialArg{LaunchAxis::CORE, 0, 4})};
  spec.global_size = {4, 1, 1};
  auto prog = build(dev, spec);
  DeviceFloats out(dev, {0, 0, 0, 0, 0});
  prog->run({out.p}, {0}, true);
  EXPECT_EQ(out.get(), (std::vector<float>{1, 2, 3, 4, 0}));
}

TEST(LLVMJit, CompilesFromSeveralThreads) {
  SKIP_WITHOUT_LLVM();
  Device& dev = get_device("LLVM");
  std::vector<std::string> binaries(4);
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; t++)
    threads.emplace_back([&, t] {
      try {
        binaries[t] = dev.compiler().compile(binary_kernel("E_par" + std::to_string(t), t % 2 ? "fmul" : "fadd"));
      } catch (const std::exception&) {
        failures++;
      }
    });
  for (auto& th : threads) th.join();
  ASSERT_EQ(failures.load(), 0);
  for (int t = 0; t < 4; t++) {
    const std::string name = "E_par" + std::to_string(t);
    auto prog = dev.load(spec_of(name, binary_kernel(name, t % 2 ? "fmul" : "fadd"), 3), binaries[t]);
    EXPECT_EQ(run_binary(*prog, dev, 4)[3], t % 2 ? 30.0f : 13.0f) << t;
  }
}

// No compiler process: a small kernel compiles in a few ms (printed, not asserted: machines differ).
TEST(LLVMJit, CompilesInProcess) {
  SKIP_WITHOUT_LLVM();
  Device& dev = get_device("LLVM");
  dev.compiler().compile(binary_kernel("E_warm", "fadd"));  // (first use: the library's own setup)
  constexpr int kRuns = 5;
  double best = 1e9, total = 0;
  for (int i = 0; i < kRuns; i++) {
    const std::string src = binary_kernel("E_timed" + std::to_string(i), "fadd");
    auto t0 = std::chrono::steady_clock::now();
    const std::string binary = dev.compiler().compile(src);
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_FALSE(binary.empty());
    best = std::min(best, ms);
    total += ms;
  }
  std::printf("[ LLVM     ] compile of a small kernel: best %.2f ms, mean %.2f ms (%d runs)\n", best, total / kRuns,
              kRuns);
}
