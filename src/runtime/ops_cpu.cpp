// Device "CPU": kernels are C source compiled by the system compiler into a shared object, which is
// loaded into this process with dlopen and called through its `<name>_entry` trampoline.
#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <mutex>
#include <sstream>

#include "helpers/env.h"
#include "renderer/c.h"
#include "renderer/cpu_isa.h"
#include "runtime/cpu_launch.h"
#include "runtime/devices.h"
#include "runtime/lru_allocator.h"
#include "runtime/source_lines.h"
#include "tg/error.h"

extern char** environ;

namespace tg {
namespace {

namespace fs = std::filesystem;

// ---- memory ----

class MallocAllocator : public Allocator {
 public:
  // 64 bytes: a cache line, and enough for any vector load the C renderer emits.
  void* alloc(size_t bytes) override {
    void* p = nullptr;
    size_t rounded = (std::max<size_t>(bytes, 1) + 63) / 64 * 64;
    if (posix_memalign(&p, 64, rounded) != 0) return nullptr;
    return p;
  }
  void free(void* ptr, size_t) override { std::free(ptr); }
  void copyin(void* dst, const void* src, size_t bytes) override { std::memcpy(dst, src, bytes); }
  void copyout(void* dst, const void* src, size_t bytes) override { std::memcpy(dst, src, bytes); }
};

// A CPU device's memory: another CPU device's buffers are in the same address space, so a copy between them is
// one memcpy (tinygrad's CPU devices share memory the same way).
class CpuAllocator : public MallocAllocator {
 public:
  bool transfer(void* dst, const void* src, size_t bytes, Device& src_dev) override {
    if (device_kind(src_dev.name()).first != "CPU") return false;
    std::memcpy(dst, src, bytes);
    return true;
  }
};

// ---- compiling ----

std::vector<std::string> split_words(const std::string& s) {
  std::istringstream in(s);
  std::vector<std::string> words;
  for (std::string w; in >> w;) words.push_back(w);
  return words;
}

bool on_path(const std::string& exe) {
  std::istringstream path(getenv_str("PATH"));
  for (std::string dir; std::getline(path, dir, ':');)
    if (!dir.empty() && access((fs::path(dir) / exe).c_str(), X_OK) == 0) return true;
  return false;
}

// Run argv with stdin from /dev/null and stdout+stderr into `log`; returns the exit status (or -1 when it
// could not start). posix_spawn, not system(): no shell quoting, and safe in a threaded process.
int run_process(const std::vector<std::string>& argv, const fs::path& log) {
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  std::vector<char*> args;
  for (auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid;
  int rc = posix_spawnp(&pid, args[0], &fa, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) return -1;
  int status = 0;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// A private directory for one compile, removed when done. Its name carries our pid (tg_cc_<pid>_XXXXXX) so
// that the folder of a process killed mid-compile can be recognised and removed later (clean_stale_dirs).
struct TempDir {
  fs::path path;
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / ("tg_cc_" + std::to_string(getpid()) + "_XXXXXX")).string();
    if (!mkdtemp(tmpl.data())) throw Error("CPU compiler: cannot create a temp directory in " + tmpl);
    path = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

// The compiler's message, plus the source lines it complains about (numbered), so the error is readable
// without digging up the generated file.
std::string explain_failure(const std::string& cmd, int rc, const std::string& log, const std::string& src) {
  return "CPU compile failed (" + cmd + (rc < 0 ? " could not be started" : " exited " + std::to_string(rc)) +
         "):\n" + log + quote_source_lines(log, src, "kernel.c");
}

// Removes tg_cc_<pid>_* folders in the temp directory whose process is gone (killed during a compile).
void clean_stale_dirs() {
  std::error_code ec;
  for (fs::directory_iterator it(fs::temp_directory_path(ec), ec), end; !ec && it != end; it.increment(ec)) {
    std::string name = it->path().filename().string();
    if (name.rfind("tg_cc_", 0) != 0) continue;
    char* rest = nullptr;
    long pid = std::strtol(name.c_str() + 6, &rest, 10);
    if (pid <= 0 || !rest || *rest != '_') continue;  // not ours, or the old name without a pid
    if (::kill(pid_t(pid), 0) != 0 && errno == ESRCH) {
      std::error_code rm;
      fs::remove_all(it->path(), rm);
    }
  }
}

class ClangCompiler : public Compiler {
 public:
  explicit ClangCompiler(std::string cc) {
    clean_stale_dirs();
    if (cc.empty()) cc = getenv_str("CC");
    if (cc.empty()) cc = on_path("clang") ? "clang" : "gcc";
    cmd_ = split_words(cc);
    if (cmd_.empty()) throw Error("CPU compiler: empty compiler command");
  }

  // Two steps: the compiler makes an object file (-c), then the compiler's own linker makes the shared object.
  // `cc -shared` does the same through the compiler driver, which costs more than the compile of a small
  // kernel: clang 14 took 169 ms a kernel that way against 93 ms for -c and 5 ms for ld (this 2-core box).
  std::string compile(const std::string& src) override {
    TempDir tmp;
    fs::path c_file = tmp.path / "kernel.c", o_file = tmp.path / "kernel.o", so_file = tmp.path / "kernel.so",
             log = tmp.path / "log.txt";
    {
      std::ofstream out(c_file, std::ios::binary);
      out << src;
      if (!out) throw Error("CPU compiler: cannot write " + c_file.string());
    }
    const Linker& ld = linker();
    std::vector<std::string> argv = cmd_;
    argv.insert(argv.end(), flags_.begin(), flags_.end());
    if (ld.direct) {
      argv.insert(argv.end(), {"-c", "-x", "c", c_file.string(), "-o", o_file.string()});
    } else {
      argv.insert(argv.end(), {"-shared", "-x", "c", c_file.string(), "-o", so_file.string(), "-lm"});
    }
    int rc = run_process(argv, log);
    if (rc != 0) throw Error(explain_failure(joined(), rc, slurp(log), src));
    if (ld.direct) {
      std::vector<std::string> link = {ld.path, "-shared", o_file.string(), "-o", so_file.string()};
      if (!ld.libm.empty()) link.push_back(ld.libm);
      rc = run_process(link, log);
      if (rc != 0) throw Error("CPU compiler: linking the kernel failed (" + ld.path + " exited " +
                               std::to_string(rc) + "):\n" + slurp(log));
    }
    std::string bin = slurp(so_file);
    if (bin.empty()) throw Error("CPU compile produced no output (" + joined() + "):\n" + slurp(log));
    return bin;
  }

  // The compiler's identity, not just its name: a cached binary from another compiler version, another CPU
  // (-march=native) or another CPU_ISA level (its -march is among the flags) must not be reused.
  std::string cache_key() const override {
    std::call_once(key_once_, [this] {
      std::string version;
      try {
        TempDir tmp;
        std::vector<std::string> argv = cmd_;
        argv.push_back("--version");
        if (run_process(argv, tmp.path / "v.txt") == 0) version = slurp(tmp.path / "v.txt");
      } catch (const Error&) {
      }
      version = version.substr(0, version.find('\n'));
      key_ = "CPU|" + joined() + "|" + version + "|" + cpu_model();
      for (auto& f : flags_) key_ += " " + f;
    });
    return key_;
  }

 private:
  // -ffp-contract=on: a*b+c written in one statement (an accumulator update, a matmul's sum) becomes one fused
  // multiply-add (one rounding), as tinygrad's clang backend allows; it doubles the arithmetic of a matmul's
  // register tile (off, sgemm 1024^3 ran at 61-82 GFLOPS on a 2-core AVX-512 box). Not `fast`: that may also
  // fuse across the rounding of a 16-bit float result (tg_rh(a*b) + c: DtypeOps.HalfAddMulMatchFloatReference
  // was off by up to 4 half ulps on the H100 host's Xeon with it); `on` fuses only within one statement, and
  // measured the same sgemm and conv speed here (218 / 172 GFLOPS, 2 threads). The
  // interpreter rounds a*b first, so the two agree within a rounding per fused product; sums, products and
  // quotients alone stay bit-exact (tests/codegen/test_opts.cpp).
  // -fno-math-errno: sqrt and friends become instructions; no -ffast-math, so NaN/inf behave per IEEE.
  // -fwrapv: integer overflow wraps (the IR's semantics) instead of being undefined.
  // The instruction set comes from CPU_ISA (renderer/cpu_isa.h): -march=native by default, or a named level's
  // -march, which tests the narrower paths on any machine; the flags are part of the cache key.
  static std::vector<std::string> compile_flags() {
    std::vector<std::string> f = {"-O2", "-fPIC", "-ffp-contract=on", "-fno-math-errno", "-fwrapv",
                                  "-Werror=implicit-function-declaration"};
    const CpuIsa& isa = cpu_isa();
    f.insert(f.begin() + 1, isa.cc_flags.begin(), isa.cc_flags.end());
    return f;
  }
  const std::vector<std::string> flags_ = compile_flags();

  static std::string cpu_model() {
    std::ifstream in("/proc/cpuinfo");
    for (std::string line; std::getline(in, line);)
      if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 1);
    return "";
  }
  std::string joined() const {
    std::string s;
    for (auto& w : cmd_) s += (s.empty() ? "" : " ") + w;
    return s;
  }

  // The linker the compiler driver would run, and libm for kernels that call it (found once, by asking the
  // driver). `direct` is false where it cannot be found: then the driver links (`-shared`), as before.
  struct Linker {
    bool direct = false;
    std::string path, libm;
  };
  const Linker& linker() {
    std::call_once(linker_once_, [this] {
      linker_.path = ask_driver("-print-prog-name=ld");
      linker_.libm = ask_driver("-print-file-name=libm.so");
      if (!fs::path(linker_.libm).is_absolute()) linker_.libm.clear();  // not found: the process's libm serves
      linker_.direct = !linker_.path.empty() && (fs::path(linker_.path).is_absolute()
                                                     ? access(linker_.path.c_str(), X_OK) == 0
                                                     : on_path(linker_.path));
    });
    return linker_;
  }
  // The first line the compiler driver prints for `flag`, or "" when it fails.
  std::string ask_driver(const std::string& flag) const {
    try {
      TempDir tmp;
      std::vector<std::string> argv = cmd_;
      argv.push_back(flag);
      if (run_process(argv, tmp.path / "out.txt") != 0) return "";
      std::string out = slurp(tmp.path / "out.txt");
      return out.substr(0, out.find('\n'));
    } catch (const Error&) {
      return "";
    }
  }

  std::vector<std::string> cmd_;
  std::once_flag linker_once_;
  Linker linker_;
  mutable std::once_flag key_once_;
  mutable std::string key_;
};

// ---- running ----

class CPUProgram : public Program {
 public:
  CPUProgram(const ProgramSpec& spec, const std::string& binary) : runner_("CPU", spec), name_(spec.name) {
    if (binary.empty()) throw Error("CPU: empty binary for kernel " + name_ + " (was it compiled for NULL?)");
    handle_ = open_library(binary);
    auto entry = reinterpret_cast<CpuEntryFn>(dlsym(handle_, (name_ + "_entry").c_str()));
    if (!entry) {
      std::string why = dlerror_str();
      dlclose(handle_);
      close_fd();
      throw Error("CPU: kernel binary has no symbol " + name_ + "_entry (" + why + ")");
    }
    runner_.set_entry(entry);
  }
  ~CPUProgram() override {
    dlclose(handle_);
    close_fd();
  }

  double run(const std::vector<void*>& bufs, const std::vector<int64_t>& vars, bool wait) override {
    return runner_.run(bufs, vars, wait);
  }

 private:
  static std::string dlerror_str() {
    const char* e = dlerror();
    return e ? e : "unknown dlerror";
  }

  // glibc's dlopen treats two opens of the same path as the same library, so every load needs a name no
  // loaded library has: a memfd's /proc path is unique while the fd stays open (we hold it until unload);
  // the temp-file fallback uses a per-process counter.
  void* open_library(const std::string& binary) {
    std::string path;
    fd_ = memfd_create(("tg_" + name_).c_str(), MFD_CLOEXEC);
    if (fd_ >= 0 && write_all(fd_, binary)) {
      path = "/proc/self/fd/" + std::to_string(fd_);
    } else {
      close_fd();
      static std::atomic<uint64_t> counter{0};
      path = (fs::temp_directory_path() /
              ("tg_" + std::to_string(getpid()) + "_" + std::to_string(counter++) + "_" + name_ + ".so"))
                 .string();
      std::ofstream out(path, std::ios::binary);
      out.write(binary.data(), std::streamsize(binary.size()));
      if (!out) throw Error("CPU: cannot write kernel library " + path);
    }
    void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (fd_ < 0) std::remove(path.c_str());  // the mapping stays valid after unlink
    if (!h) {
      std::string why = dlerror_str();
      close_fd();
      throw Error("CPU: cannot load kernel " + name_ + ": " + why);
    }
    return h;
  }
  static bool write_all(int fd, const std::string& data) {
    size_t done = 0;
    while (done < data.size()) {
      ssize_t n = write(fd, data.data() + done, data.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return false;
      done += size_t(n);
    }
    return true;
  }
  void close_fd() {
    if (fd_ >= 0) close(fd_);
    fd_ = -1;
  }

  CpuEntryRunner runner_;
  std::string name_;
  int fd_ = -1;
  void* handle_ = nullptr;
};

class CPUDevice : public Device {
 public:
  explicit CPUDevice(int index) {
    name_ = index == 0 ? "CPU" : "CPU:" + std::to_string(index);
    allocator_ = std::make_unique<LRUAllocator>(std::make_unique<CpuAllocator>());
    compiler_ = std::make_unique<ClangCompiler>("");
    renderer_ = std::make_unique<ClangRenderer>();
  }
  std::unique_ptr<Program> load(const ProgramSpec& spec, const std::string& binary) override {
    return std::make_unique<CPUProgram>(spec, binary);
  }
};

}  // namespace

std::unique_ptr<Allocator> make_malloc_allocator() { return std::make_unique<MallocAllocator>(); }
std::unique_ptr<Compiler> make_cpu_compiler(const std::string& cc) { return std::make_unique<ClangCompiler>(cc); }
std::unique_ptr<Device> make_cpu_device(int index) { return std::make_unique<CPUDevice>(index); }

}  // namespace tg
