// The runtime: device registry, buffers, the LRU allocator, the compile cache, the CPU compiler and
// program loader, and the NULL and HOST devices.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <thread>

#include "runtime/buffer.h"
#include "runtime/device.h"
#include "runtime/devices.h"
#include "runtime/nvrtc.h"
#include "runtime/lru_allocator.h"
#include "tg/context.h"
#include "tg/counters.h"
#include "tg/error.h"

using namespace tg;
namespace fs = std::filesystem;

namespace {

// Sets an environment variable for one scope.
class ScopedEnv {
 public:
  ScopedEnv(const char* key, const std::string& value) : key_(key) {
    if (const char* old = std::getenv(key)) old_ = old, had_ = true;
    setenv(key, value.c_str(), 1);
  }
  ~ScopedEnv() {
    if (had_) setenv(key_, old_.c_str(), 1);
    else unsetenv(key_);
  }

 private:
  const char* key_;
  std::string old_;
  bool had_ = false;
};

// A fresh, private compile cache directory for one test.
class TempCache {
 public:
  TempCache() {
    std::string tmpl = (fs::temp_directory_path() / "tg_cache_test_XXXXXX").string();
    dir_ = mkdtemp(tmpl.data());
    env_ = std::make_unique<ScopedEnv>("CACHEDB_DIR", dir_.string());
  }
  ~TempCache() {
    env_.reset();
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  std::vector<fs::path> files() const {
    std::vector<fs::path> out;
    for (auto& e : fs::recursive_directory_iterator(dir_))
      if (e.is_regular_file()) out.push_back(e.path());
    return out;
  }

 private:
  fs::path dir_;
  std::unique_ptr<ScopedEnv> env_;
};

// A kernel written by hand in the CPU's calling convention: out[i] = in[i] * k for n elements.
std::string scale_source(const std::string& name, int k) {
  return "void " + name + "(int* restrict data0, const int* restrict data1, int n) {\n"
         "  for (int i = 0; i < n; i++) data0[i] = data1[i] * " + std::to_string(k) + ";\n"
         "}\n"
         "void " + name + "_entry(void** bufs, const long long* vars) {\n"
         "  " + name + "((int*)bufs[0], (const int*)bufs[1], (int)vars[0]);\n"
         "}\n";
}

ProgramSpec scale_spec(const std::string& name) {
  ProgramSpec spec;
  spec.name = name;
  spec.n_bufs = 2;
  spec.vars = {UOp::make(Ops::DEFINE_VAR, dtypes::int32, {}, NamedRange{"n", 0, 1024})};
  return spec;
}

// Runs a scale kernel binary on 4 ints and returns the output.
std::vector<int> run_scale(const std::string& name, const std::string& binary) {
  Device& cpu = get_device("CPU");
  auto prog = cpu.load(scale_spec(name), binary);
  Buffer out("CPU", 4, dtypes::int32), in("CPU", 4, dtypes::int32);
  std::vector<int> x{1, 2, 3, 4}, y(4);
  in.copyin(x.data(), 16);
  out.ensure_allocated();
  double t = prog->run({out.ptr(), in.ptr()}, {4}, true);
  EXPECT_GE(t, 0.0);
  out.copyout(y.data(), 16);
  return y;
}

// A unique marker so a test's source is never already in some cache.
std::string unique_tag() {
  static std::atomic<int> n{0};
  return "/* " + std::to_string(getpid()) + "." + std::to_string(n++) + "." +
         std::to_string(std::chrono::steady_clock::now().time_since_epoch().count()) + " */\n";
}

}  // namespace

// ---- devices ----

TEST(Device, CanonicalNames) {
  EXPECT_EQ(canonical_device("cpu"), "CPU");
  EXPECT_EQ(canonical_device("CPU:0"), "CPU");
  EXPECT_EQ(canonical_device("null"), "NULL");
  EXPECT_EQ(&get_device("cpu"), &get_device("CPU:0"));
  EXPECT_EQ(get_device("Cpu").name(), "CPU");
  EXPECT_EQ(canonical_device("cpu:1"), "CPU:1");  // several CPU devices (sharded tensors), each its own device
  EXPECT_NE(&get_device("CPU:1"), &get_device("CPU"));
  EXPECT_EQ(get_device("CPU:1").name(), "CPU:1");
  EXPECT_THROW(canonical_device("CPU:64"), Error);
  EXPECT_THROW(canonical_device("INTERP:1"), Error);
  EXPECT_EQ(get_device("interp").name(), "INTERP");  // the registry links the interpreter in
}

TEST(Device, UnknownNameListsKnownDevices) {
  try {
    get_device("FROBNICATOR");
    FAIL() << "no error for an unknown device";
  } catch (const Error& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("FROBNICATOR"), std::string::npos) << msg;
    EXPECT_NE(msg.find("CPU"), std::string::npos) << msg;
    EXPECT_NE(msg.find("NULL"), std::string::npos) << msg;
  }
  EXPECT_THROW(Buffer("nope", 4, dtypes::float32), Error);
}

TEST(Device, DefaultDeviceFollowsDEV) {
  {
    ScopedEnv dev("DEV", "null");
    EXPECT_EQ(default_device(), "NULL");
  }
  {
    ScopedEnv dev("DEV", "");
    // the best device present: CUDA where a GPU (and NVRTC) is, else the CPU
    std::string why;
    bool gpu = tg::cuda_device_count(&why) > 0 && tg::nvrtc_available(&why);
    EXPECT_EQ(default_device(), gpu ? "CUDA" : "CPU") << why;
  }
  ScopedEnv dev("DEV", "TPU9000");
  EXPECT_THROW(default_device(), Error);
}

TEST(Device, OpenedOncePerProcessEvenFromManyThreads) {
  std::vector<Device*> seen(8);
  std::vector<std::thread> ts;
  for (size_t i = 0; i < seen.size(); i++) ts.emplace_back([&, i] { seen[i] = &get_device(i % 2 ? "cpu" : "CPU:0"); });
  for (auto& t : ts) t.join();
  for (Device* d : seen) EXPECT_EQ(d, seen[0]);
}

TEST(Device, DebugAnnouncesTheFirstOpenOnly) {
  Context ctx({{"DEBUG", 1}});
  testing::internal::CaptureStderr();
  get_device("HOST");
  get_device("host");
  std::string err = testing::internal::GetCapturedStderr();
  // HOST may already be open from an earlier test; if not, exactly one line, with our pid.
  std::string line = "opened device HOST from pid:" + std::to_string(getpid()) + "\n";
  EXPECT_TRUE(err.empty() || err == line) << err;
}

TEST(Device, NullRunsNothing) {
  Device& null = get_device("NULL");
  EXPECT_FALSE(null.executes());
  EXPECT_EQ(null.renderer().device(), "CPU");  // renders C like the CPU, so codegen is exercised
  EXPECT_EQ(null.compiler().compile("this is not C"), "");
  Buffer b("NULL", 1 << 20, dtypes::float32);  // 4 MB that are never really allocated
  std::vector<float> host(1 << 20, 1.0f);
  b.copyin(host.data(), host.size() * 4);
  EXPECT_NE(b.ptr(), nullptr);
  auto prog = null.load(scale_spec("E_null"), "");
  EXPECT_EQ(prog->run({b.ptr()}, {}, true), 0.0);
  b.copyout(host.data(), host.size() * 4);  // moves nothing: the host data is untouched
  EXPECT_EQ(host[0], 1.0f);
}

TEST(Device, NullRendersCudaUnderEmulate) {
  // EMULATE=CUDA (read when the device opens): GPU kernels of any size rendered, none run
  {
    ScopedEnv emulate("EMULATE", "CUDA");
    auto null = make_null_device();
    EXPECT_EQ(null->renderer().device(), "CUDA");
    EXPECT_TRUE(null->renderer().has_local());
    EXPECT_FALSE(null->executes());
  }
  {
    ScopedEnv emulate("EMULATE", "METAL9");
    EXPECT_THROW(make_null_device(), Error);
  }
  ScopedEnv emulate("EMULATE", "");
  EXPECT_EQ(make_null_device()->renderer().device(), "CPU");
}

TEST(Device, HostHoldsDataButRunsNoKernels) {
  Device& host = get_device("HOST");
  Buffer b("HOST", 3, dtypes::int32);
  std::vector<int> x{7, 8, 9}, y(3);
  b.copyin(x.data(), 12);
  b.copyout(y.data(), 12);
  EXPECT_EQ(y, x);
  try {
    host.compiler().compile("void f(void) {}");
    FAIL() << "HOST compiled a kernel";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("HOST cannot run kernels"), std::string::npos) << e.what();
  }
  EXPECT_THROW(host.renderer().render("E_1", {}), Error);
  EXPECT_THROW(host.load(scale_spec("E_1"), ""), Error);
}

// ---- buffers and allocators ----

TEST(Buffer, CopyRoundTripAndLazyAllocation) {
  Buffer b("CPU", 5, dtypes::float64);
  EXPECT_FALSE(b.allocated());
  EXPECT_EQ(b.nbytes(), 40u);
  std::vector<double> x{1.5, -2, 3e100, 0, 7}, y(5);
  b.copyin(x.data(), 40);
  EXPECT_TRUE(b.allocated());
  EXPECT_EQ(reinterpret_cast<uintptr_t>(b.ptr()) % 64, 0u);  // aligned for any vector load
  b.copyout(y.data(), 40);
  EXPECT_EQ(x, y);
  EXPECT_THROW(b.copyin(x.data(), 32), Error);
  EXPECT_THROW(b.copyout(y.data(), 48), Error);
  Buffer never("CPU", 2, dtypes::int8);
  char c[2];
  EXPECT_THROW(never.copyout(c, 2), Error);
  Buffer empty("CPU", 0, dtypes::float32);
  EXPECT_TRUE(empty.allocated());
  empty.copyin(nullptr, 0);
  EXPECT_THROW(Buffer("CPU", -1, dtypes::float32), Error);
  EXPECT_THROW(Buffer("CPU", 1, dtypes::void_), Error);
}

TEST(Buffer, MemUsedCountsLiveBuffers) {
  int64_t before = GlobalCounters::mem_used;
  {
    Buffer a("CPU", 1000, dtypes::float32), b("HOST", 10, dtypes::int64);
    EXPECT_EQ(GlobalCounters::mem_used, before);  // nothing allocated yet
    a.ensure_allocated();
    b.ensure_allocated();
    EXPECT_EQ(GlobalCounters::mem_used, before + 4000 + 80);
  }
  EXPECT_EQ(GlobalCounters::mem_used, before);
}

namespace {
// Counts calls (into stats that outlive it) and can be told to fail above a byte budget.
struct AllocStats {
  size_t allocs = 0, frees = 0, live = 0, budget = SIZE_MAX;
};
class CountingAllocator : public Allocator {
 public:
  explicit CountingAllocator(AllocStats* s) : s_(s) {}
  void* alloc(size_t bytes) override {
    if (s_->live + bytes > s_->budget) return nullptr;
    s_->allocs++;
    s_->live += bytes;
    return std::malloc(bytes ? bytes : 1);
  }
  void free(void* p, size_t bytes) override {
    s_->frees++;
    s_->live -= bytes;
    std::free(p);
  }
  void copyin(void* d, const void* s, size_t n) override { std::memcpy(d, s, n); }
  void copyout(void* d, const void* s, size_t n) override { std::memcpy(d, s, n); }

 private:
  AllocStats* s_;
};
}  // namespace

TEST(RuntimeLRU, ReusesFreedBlocksOfTheSameSize) {
  AllocStats stats, *raw = &stats;
  auto owned = std::make_unique<CountingAllocator>(raw);
  int64_t before = GlobalCounters::mem_used;
  {
    LRUAllocator lru(std::move(owned));
    void* a = lru.alloc(256);
    EXPECT_EQ(GlobalCounters::mem_used, before + 256);
    lru.free(a, 256);
    EXPECT_EQ(GlobalCounters::mem_used, before);  // cached blocks are not "used"
    EXPECT_EQ(lru.cached_bytes(), 256u);
    void* b = lru.alloc(256);
    EXPECT_EQ(a, b);
    EXPECT_EQ(raw->allocs, 1u);
    void* c = lru.alloc(128);  // another size: a new block
    EXPECT_EQ(raw->allocs, 2u);
    lru.free(b, 256);
    lru.free(c, 128);
    lru.free_cache();
    EXPECT_EQ(raw->frees, 2u);
    EXPECT_EQ(lru.cached_bytes(), 0u);
    lru.free(lru.alloc(64), 64);
  }  // the destructor returns the last cached block
  EXPECT_EQ(raw->live, 0u);
  EXPECT_EQ(GlobalCounters::mem_used, before);
}

TEST(RuntimeLRU, EmptiesTheCacheWhenMemoryRunsOut) {
  AllocStats stats, *raw = &stats;
  auto owned = std::make_unique<CountingAllocator>(raw);
  raw->budget = 1000;
  LRUAllocator lru(std::move(owned));
  lru.free(lru.alloc(600), 600);  // cached, still counted against the budget
  void* p = lru.alloc(700);       // fails once, succeeds after the cache is released
  EXPECT_NE(p, nullptr);
  EXPECT_EQ(lru.cached_bytes(), 0u);
  EXPECT_THROW(lru.alloc(500), Error);  // truly out of memory
  lru.free(p, 700);
}

// ---- compile cache ----

TEST(RuntimeCompileCache, SecondCompileIsAHit) {
  TempCache cache;
  Compiler& cc = get_device("CPU").compiler();
  std::string src = unique_tag() + scale_source("E_scale3", 3);
  int64_t n0 = Compiler::compiles();
  std::string bin1 = cc.compile_cached(src);
  EXPECT_EQ(Compiler::compiles(), n0 + 1);
  std::string bin2 = cc.compile_cached(src);
  EXPECT_EQ(Compiler::compiles(), n0 + 1);
  EXPECT_EQ(bin1, bin2);
  EXPECT_EQ(cache.files().size(), 1u);
  EXPECT_EQ(run_scale("E_scale3", bin2), (std::vector<int>{3, 6, 9, 12}));
  // A different source is a different entry.
  cc.compile_cached(unique_tag() + scale_source("E_scale3", 3));
  EXPECT_EQ(Compiler::compiles(), n0 + 2);
}

TEST(RuntimeCompileCache, CacheLevelZeroAlwaysCompiles) {
  TempCache cache;
  Context ctx({{"CACHELEVEL", 0}});
  Compiler& cc = get_device("CPU").compiler();
  std::string src = unique_tag() + scale_source("E_scale2", 2);
  int64_t n0 = Compiler::compiles();
  cc.compile_cached(src);
  cc.compile_cached(src);
  EXPECT_EQ(Compiler::compiles(), n0 + 2);
  EXPECT_TRUE(cache.files().empty());
}

TEST(RuntimeCompileCache, DamagedEntriesAreRecompiledNeverTrusted) {
  TempCache cache;
  Compiler& cc = get_device("CPU").compiler();
  std::string src = unique_tag() + scale_source("E_scale5", 5);
  cc.compile_cached(src);
  ASSERT_EQ(cache.files().size(), 1u);
  fs::path entry = cache.files()[0];
  std::string good;
  {
    std::ifstream in(entry, std::ios::binary);
    good.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  auto write = [&](const std::string& data) { std::ofstream(entry, std::ios::binary | std::ios::trunc) << data; };
  std::string flipped = good;
  flipped[flipped.size() - 100] ^= 0x5a;  // a byte inside the binary
  std::string huge_len = good;
  std::memset(huge_len.data() + 8, 0xff, 8);  // a key length far past the end of the file
  for (const std::string& bad : {good.substr(0, good.size() / 2), std::string(), std::string("garbage"), flipped,
                                 huge_len, good.substr(0, 20)}) {
    write(bad);
    int64_t n0 = Compiler::compiles();
    std::string bin = cc.compile_cached(src);
    EXPECT_EQ(Compiler::compiles(), n0 + 1) << "a damaged entry of " << bad.size() << " bytes was used";
    EXPECT_EQ(run_scale("E_scale5", bin), (std::vector<int>{5, 10, 15, 20}));
  }
  // The entry was rewritten whole: the next lookup hits again.
  int64_t n0 = Compiler::compiles();
  cc.compile_cached(src);
  EXPECT_EQ(Compiler::compiles(), n0);
}

TEST(RuntimeCompileCache, KeyedByCompilerToo) {
  TempCache cache;
  auto gcc = make_cpu_compiler("gcc"), clang = make_cpu_compiler("clang");
  EXPECT_NE(gcc->cache_key(), clang->cache_key());
  std::string src = unique_tag() + scale_source("E_scale7", 7);
  int64_t n0 = Compiler::compiles();
  gcc->compile_cached(src);
  clang->compile_cached(src);
  EXPECT_EQ(Compiler::compiles(), n0 + 2);
  EXPECT_EQ(cache.files().size(), 2u);
}

TEST(RuntimeCompileCache, ConcurrentWritersLeaveAWholeEntry) {
  TempCache cache;
  Compiler& cc = get_device("CPU").compiler();
  std::string src = unique_tag() + scale_source("E_scale4", 4);
  std::vector<std::string> bins(4);
  std::vector<std::thread> ts;
  for (size_t i = 0; i < bins.size(); i++) ts.emplace_back([&, i] { bins[i] = cc.compile_cached(src); });
  for (auto& t : ts) t.join();
  for (auto& b : bins) EXPECT_EQ(run_scale("E_scale4", b), (std::vector<int>{4, 8, 12, 16}));
  EXPECT_EQ(cache.files().size(), 1u);  // no temp files left behind
  int64_t n0 = Compiler::compiles();
  cc.compile_cached(src);
  EXPECT_EQ(Compiler::compiles(), n0);
}

// An entry path taken by a directory or a FIFO is a miss, never an exception or a hang (a FIFO opened
// for reading would wait for a writer forever).
TEST(RuntimeCompileCache, DirectoryOrFifoAtAnEntryIsAMiss) {
  TempCache cache;
  Compiler& cc = get_device("CPU").compiler();
  std::string src = unique_tag() + scale_source("E_scale6", 6);
  cc.compile_cached(src);
  ASSERT_EQ(cache.files().size(), 1u);
  fs::path entry = cache.files()[0];
  for (bool fifo : {false, true}) {
    fs::remove_all(entry);
    if (fifo)
      ASSERT_EQ(mkfifo(entry.c_str(), 0600), 0);
    else
      fs::create_directory(entry);
    int64_t n0 = Compiler::compiles();
    std::string bin;
    EXPECT_NO_THROW(bin = cc.compile_cached(src)) << (fifo ? "fifo" : "directory");
    EXPECT_EQ(Compiler::compiles(), n0 + 1);
    EXPECT_EQ(run_scale("E_scale6", bin), (std::vector<int>{6, 12, 18, 24}));
    // A FIFO is replaced by the new entry (rename works over any non-directory); a directory stays.
    EXPECT_TRUE(fifo ? fs::is_regular_file(entry) : fs::is_directory(entry));
  }
}

// A pid that no longer runs: a child that has exited and been reaped.
static pid_t dead_pid() {
  pid_t pid = fork();
  if (pid == 0) _exit(0);
  int status = 0;
  waitpid(pid, &status, 0);
  return pid;
}

// A process killed between writing `<entry>.tmp.<pid>.<n>` and renaming it leaves the temp file; the next
// process removes it (and keeps a live writer's).
TEST(RuntimeCompileCache, StaleTempFilesOfDeadProcessesAreRemoved) {
  TempCache cache;
  fs::path dir = fs::path(std::getenv("CACHEDB_DIR")) / "compile";
  fs::create_directories(dir);
  fs::path stale = dir / ("0123.bin.tmp." + std::to_string(dead_pid()) + ".0");
  fs::path live = dir / ("4567.bin.tmp." + std::to_string(getpid()) + ".0");
  std::ofstream(stale) << "partial";
  std::ofstream(live) << "partial";
  get_device("CPU").compiler().compile_cached(unique_tag() + scale_source("E_scale8", 8));
  EXPECT_FALSE(fs::exists(stale));
  EXPECT_TRUE(fs::exists(live));
}

// A process killed during a compile leaves its tg_cc_<pid>_* folder in $TMPDIR; opening a CPU compiler
// removes those of dead processes.
TEST(RuntimeCPU, StaleCompileFoldersOfDeadProcessesAreRemoved) {
  std::string tmpl = (fs::temp_directory_path() / "tg_tmpdir_test_XXXXXX").string();
  ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
  fs::path tmp = tmpl;
  ScopedEnv env("TMPDIR", tmp.string());
  fs::path stale = tmp / ("tg_cc_" + std::to_string(dead_pid()) + "_abc123");
  fs::path live = tmp / ("tg_cc_" + std::to_string(getpid()) + "_abc123");
  fs::create_directories(stale / "sub");
  std::ofstream(stale / "kernel.c") << "int x;";
  fs::create_directories(live);
  auto cc = make_cpu_compiler("");
  EXPECT_FALSE(fs::exists(stale));
  EXPECT_TRUE(fs::exists(live));
  EXPECT_FALSE(cc->compile(scale_source("E_scale9", 9)).empty());
  std::vector<fs::path> left;
  for (auto& e : fs::directory_iterator(tmp)) left.push_back(e.path());
  EXPECT_EQ(left, std::vector<fs::path>{live});  // the compile's own folder is gone again
  fs::remove_all(tmp);
}

// ---- CPU compiler and programs ----

TEST(RuntimeCPU, CompileErrorNamesTheProblemAndTheLine) {
  std::string src = "void E_bad(int* restrict data0) {\n  data0[0] = undeclared_thing + 1;\n}\n";
  try {
    get_device("CPU").compiler().compile(src);
    FAIL() << "bad C compiled";
  } catch (const Error& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("CPU compile failed"), std::string::npos) << msg;
    EXPECT_NE(msg.find("undeclared_thing"), std::string::npos) << msg;
    EXPECT_NE(msg.find("2 |   data0[0] = undeclared_thing + 1;"), std::string::npos) << msg;
  }
}

TEST(RuntimeCPU, MissingCompilerIsAnError) {
  auto cc = make_cpu_compiler("/nonexistent/cc");
  EXPECT_THROW(cc->compile("void f(void) {}"), Error);
}

TEST(RuntimeCPU, ProgramChecksArgumentsAndUnloads) {
  std::string name = "E_unload_" + std::to_string(getpid());
  std::string bin = get_device("CPU").compiler().compile(scale_source(name, 2));
  auto maps_mention = [&] {
    std::ifstream maps("/proc/self/maps");
    std::string all((std::istreambuf_iterator<char>(maps)), std::istreambuf_iterator<char>());
    return all.find("tg_" + name) != std::string::npos;
  };
  {
    auto prog = get_device("CPU").load(scale_spec(name), bin);
    EXPECT_TRUE(maps_mention());
    Buffer out("CPU", 4, dtypes::int32);
    out.ensure_allocated();
    EXPECT_THROW(prog->run({out.ptr()}, {4}, false), Error);               // one buffer short
    EXPECT_THROW(prog->run({out.ptr(), out.ptr()}, {}, false), Error);     // the var is missing
    EXPECT_THROW(prog->run({out.ptr(), nullptr}, {4}, false), Error);      // unallocated input
  }
  EXPECT_FALSE(maps_mention());
  EXPECT_THROW(get_device("CPU").load(scale_spec(name), "not an ELF file"), Error);
  EXPECT_THROW(get_device("CPU").load(scale_spec("E_other_name"), bin), Error);  // no E_other_name_entry
  EXPECT_EQ(run_scale(name, bin), (std::vector<int>{2, 4, 6, 8}));  // loads again after unloading
}

TEST(RuntimeCPU, ManyProgramsLoadedAtOnceStayDistinct) {
  // Each load gets its own library even when binaries share a kernel name.
  Compiler& cc = get_device("CPU").compiler();
  std::vector<std::unique_ptr<Program>> progs;
  for (int k = 1; k <= 5; k++)
    progs.push_back(get_device("CPU").load(scale_spec("E_same"), cc.compile_cached(scale_source("E_same", k))));
  Buffer out("CPU", 4, dtypes::int32), in("CPU", 4, dtypes::int32);
  std::vector<int> x{1, 2, 3, 4}, y(4);
  in.copyin(x.data(), 16);
  out.ensure_allocated();
  for (int k = 1; k <= 5; k++) {
    progs[size_t(k - 1)]->run({out.ptr(), in.ptr()}, {4}, true);
    out.copyout(y.data(), 16);
    EXPECT_EQ(y[3], 4 * k);
  }
}
