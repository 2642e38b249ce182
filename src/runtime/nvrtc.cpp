// NVRTC loaded at run time, and the CUDA device's Compiler: rendered CUDA C++ -> cubin (or PTX when the GPU
// is newer than this NVRTC knows), through the on-disk compile cache.
#include "runtime/nvrtc.h"

#include <dlfcn.h>

#include <algorithm>
#include <filesystem>
#include <initializer_list>
#include <mutex>
#include <optional>
#include <regex>
#include <set>
#include <sstream>

#include "helpers/env.h"
#include "runtime/devices.h"
#include "runtime/shared_library.h"
#include "tg/error.h"

namespace tg {
namespace {

namespace fs = std::filesystem;

// ---- the library (ABI-compatible declarations of the few NVRTC entry points used) ----

using nvrtcResult = int;
using nvrtcProgram = struct _nvrtcProgram*;
constexpr nvrtcResult NVRTC_SUCCESS = 0;

struct Nvrtc {
  const char* (*nvrtcGetErrorString)(nvrtcResult);
  nvrtcResult (*nvrtcVersion)(int*, int*);
  nvrtcResult (*nvrtcCreateProgram)(nvrtcProgram*, const char*, const char*, int, const char* const*,
                                    const char* const*);
  nvrtcResult (*nvrtcDestroyProgram)(nvrtcProgram*);
  nvrtcResult (*nvrtcCompileProgram)(nvrtcProgram, int, const char* const*);
  nvrtcResult (*nvrtcGetProgramLogSize)(nvrtcProgram, size_t*);
  nvrtcResult (*nvrtcGetProgramLog)(nvrtcProgram, char*);
  nvrtcResult (*nvrtcGetPTXSize)(nvrtcProgram, size_t*);
  nvrtcResult (*nvrtcGetPTX)(nvrtcProgram, char*);
  nvrtcResult (*nvrtcGetCUBINSize)(nvrtcProgram, size_t*);
  nvrtcResult (*nvrtcGetCUBIN)(nvrtcProgram, char*);
  // Optional (CUDA 11.2+): which sm_XX this NVRTC can emit.
  nvrtcResult (*nvrtcGetNumSupportedArchs)(int*);
  nvrtcResult (*nvrtcGetSupportedArchs)(int*);
};

struct LoadedNvrtc {
  Nvrtc f{};
  bool ok = false;
  std::string why, version, library;
  std::vector<int> archs;
};

// Where to look, in order: the plain name (the toolkit's development link, found through the loader path),
// then each soname NVIDIA has shipped, then the toolkit folders the loader may not know about.
std::vector<std::string> candidate_libraries() {
  std::vector<std::string> names = {"libnvrtc.so"};
  for (const char* v : {"13", "12", "11.2", "11.1", "11.0"}) names.push_back(std::string("libnvrtc.so.") + v);
  for (const char* env : {"CUDA_PATH", "CUDA_HOME"})
    if (std::string root = getenv_str(env); !root.empty())
      for (const char* sub : {"lib64", "lib"}) names.push_back((fs::path(root) / sub / "libnvrtc.so").string());
  names.push_back("/usr/local/cuda/lib64/libnvrtc.so");
  return names;
}

LoadedNvrtc load() {
  LoadedNvrtc L;
  std::string why;
  const std::optional<SharedLibrary> lib = SharedLibrary::open(candidate_libraries(), &why);
  if (!lib) {
    L.why = "cannot load libnvrtc (the CUDA toolkit's run-time compiler; install the toolkit or set CUDA_PATH): " + why;
    return L;
  }
  Nvrtc& f = L.f;
  std::string missing;
  const bool all =
      lib->bind(f.nvrtcGetErrorString, "nvrtcGetErrorString", &missing) &&
      lib->bind(f.nvrtcVersion, "nvrtcVersion", &missing) &&
      lib->bind(f.nvrtcCreateProgram, "nvrtcCreateProgram", &missing) &&
      lib->bind(f.nvrtcDestroyProgram, "nvrtcDestroyProgram", &missing) &&
      lib->bind(f.nvrtcCompileProgram, "nvrtcCompileProgram", &missing) &&
      lib->bind(f.nvrtcGetProgramLogSize, "nvrtcGetProgramLogSize", &missing) &&
      lib->bind(f.nvrtcGetProgramLog, "nvrtcGetProgramLog", &missing) &&
      lib->bind(f.nvrtcGetPTXSize, "nvrtcGetPTXSize", &missing) && lib->bind(f.nvrtcGetPTX, "nvrtcGetPTX", &missing) &&
      lib->bind(f.nvrtcGetCUBINSize, "nvrtcGetCUBINSize", &missing) &&
      lib->bind(f.nvrtcGetCUBIN, "nvrtcGetCUBIN", &missing);
  if (!all) {
    L.why = "libnvrtc has no " + missing + " (NVRTC older than CUDA 11.1)";
    return L;
  }
  // optional (CUDA 11.2+): the architectures it compiles for
  std::string optional;
  lib->bind(f.nvrtcGetNumSupportedArchs, "nvrtcGetNumSupportedArchs", &optional);
  lib->bind(f.nvrtcGetSupportedArchs, "nvrtcGetSupportedArchs", &optional);
  int major = 0, minor = 0;
  if (f.nvrtcVersion(&major, &minor) != NVRTC_SUCCESS) {
    L.why = "nvrtcVersion failed";
    return L;
  }
  L.version = std::to_string(major) + "." + std::to_string(minor);
  int n = 0;
  if (f.nvrtcGetNumSupportedArchs && f.nvrtcGetSupportedArchs && f.nvrtcGetNumSupportedArchs(&n) == NVRTC_SUCCESS &&
      n > 0) {
    L.archs.resize(size_t(n));
    if (f.nvrtcGetSupportedArchs(L.archs.data()) != NVRTC_SUCCESS) L.archs.clear();
  }
  // The library's own path: the toolkit's include folder is usually beside it (include dir lookup).
  Dl_info info;
  if (dladdr(reinterpret_cast<void*>(f.nvrtcVersion), &info) && info.dli_fname) L.library = info.dli_fname;
  L.ok = true;
  return L;
}

const LoadedNvrtc& loaded() {
  static const LoadedNvrtc L = load();
  return L;
}

const Nvrtc& nvrtc() {
  const LoadedNvrtc& L = loaded();
  if (!L.ok) throw Error("CUDA compiler: " + L.why);
  return L.f;
}

std::string nvrtc_error(nvrtcResult r) {
  const char* s = loaded().f.nvrtcGetErrorString ? loaded().f.nvrtcGetErrorString(r) : nullptr;
  return s ? s : "NVRTC error " + std::to_string(r);
}

bool has_fp16_header(const fs::path& dir) {
  std::error_code ec;
  return !dir.empty() && fs::exists(dir / "cuda_fp16.h", ec);
}

// "sm_90" -> 90; -1 when it is not of that form.
int arch_number(const std::string& arch) {
  if (arch.rfind("sm_", 0) != 0 || arch.size() < 5) return -1;
  int n = 0;
  for (size_t i = 3; i < arch.size(); i++) {
    if (arch[i] < '0' || arch[i] > '9') return i + 1 == arch.size() && n > 0 ? n : -1;  // sm_90a
    n = n * 10 + (arch[i] - '0');
  }
  return n;
}

// Compiles one source per call; NVRTC programs are independent, so calls from several threads are fine.
class NvrtcCompiler : public Compiler {
 public:
  explicit NvrtcCompiler(std::string arch) : arch_(std::move(arch)) {
    nvrtc();  // throws with the reason when there is no NVRTC
    int want = arch_number(arch_);
    if (want < 0) throw Error("CUDA compiler: architecture '" + arch_ + "' is not of the form sm_XY (e.g. sm_90)");
    const std::vector<int>& archs = loaded().archs;
    std::string target = arch_;
    if (!archs.empty() && want < archs.front())
      throw Error("CUDA compiler: NVRTC " + loaded().version + " cannot build for " + arch_ +
                  " (oldest it supports: sm_" + std::to_string(archs.front()) + ")");
    // A GPU newer than this NVRTC: emit PTX for the newest architecture it knows, which the driver compiles
    // for the GPU when the module loads.
    if (!archs.empty() && want > archs.back()) {
      ptx_ = true;
      target = "compute_" + std::to_string(archs.back());
    }
    options_ = {"--gpu-architecture=" + target, "-default-device"};
    std::vector<std::string> inc = cuda_include_dirs();
    if (!inc.empty()) options_.push_back("-I" + inc.front());
  }

  std::string compile(const std::string& src) override {
    const Nvrtc& f = nvrtc();
    nvrtcProgram prog = nullptr;
    if (nvrtcResult r = f.nvrtcCreateProgram(&prog, src.c_str(), "kernel.cu", 0, nullptr, nullptr); r != NVRTC_SUCCESS)
      throw Error("CUDA compile: nvrtcCreateProgram failed: " + nvrtc_error(r));
    // Destroyed on every path out, the throwing ones included.
    struct Guard {
      const Nvrtc& f;
      nvrtcProgram& p;
      ~Guard() { f.nvrtcDestroyProgram(&p); }
    } guard{f, prog};
    std::vector<const char*> opts;
    for (auto& o : options_) opts.push_back(o.c_str());
    nvrtcResult r = f.nvrtcCompileProgram(prog, int(opts.size()), opts.data());
    std::string log;
    size_t log_size = 0;
    if (f.nvrtcGetProgramLogSize(prog, &log_size) == NVRTC_SUCCESS && log_size > 1) {
      log.resize(log_size);
      if (f.nvrtcGetProgramLog(prog, log.data()) != NVRTC_SUCCESS) log.clear();
      while (!log.empty() && (log.back() == '\0' || log.back() == '\n')) log.pop_back();
    }
    if (r != NVRTC_SUCCESS) throw Error(explain_failure(nvrtc_error(r), log, src));
    size_t size = 0;
    std::string bin;
    if (ptx_) {
      if (f.nvrtcGetPTXSize(prog, &size) != NVRTC_SUCCESS || size == 0) throw Error("CUDA compile: no PTX produced");
      bin.resize(size);
      if (f.nvrtcGetPTX(prog, bin.data()) != NVRTC_SUCCESS) throw Error("CUDA compile: nvrtcGetPTX failed");
      // cuModuleLoadData reads PTX up to its NUL: keep exactly one, at the end (std::string adds its own).
      while (!bin.empty() && bin.back() == '\0') bin.pop_back();
    } else {
      if (f.nvrtcGetCUBINSize(prog, &size) != NVRTC_SUCCESS || size == 0)
        throw Error("CUDA compile: no cubin produced for " + arch_);
      bin.resize(size);
      if (f.nvrtcGetCUBIN(prog, bin.data()) != NVRTC_SUCCESS) throw Error("CUDA compile: nvrtcGetCUBIN failed");
    }
    return bin;
  }

  // NVRTC's version and every option (the architecture and include folder among them): a cubin from another
  // NVRTC or for another GPU must not be reused.
  std::string cache_key() const override {
    std::string key = "CUDA|nvrtc " + loaded().version + "|" + (ptx_ ? "ptx" : "cubin");
    for (auto& o : options_) key += " " + o;
    return key;
  }

 private:
  // NVRTC's verdict and log, then the source lines the log points at (numbered), so the error is readable
  // without the generated file.
  std::string explain_failure(const std::string& verdict, const std::string& log, const std::string& src) const {
    std::vector<std::string> lines;
    std::istringstream in(src);
    for (std::string l; std::getline(in, l);) lines.push_back(l);
    std::string opts;
    for (auto& o : options_) opts += " " + o;
    std::string msg = "CUDA compile failed (NVRTC " + loaded().version + "," + opts + "): " + verdict + "\n" + log;
    static const std::regex where(R"(kernel\.cu\((\d+)\))");
    std::set<int> shown;
    for (auto it = std::sregex_iterator(log.begin(), log.end(), where); it != std::sregex_iterator(); ++it) {
      int n = std::stoi((*it)[1]);
      if (n >= 1 && n <= int(lines.size()) && shown.size() < 10 && shown.insert(n).second)
        msg += "\n  " + std::to_string(n) + " | " + lines[n - 1];
    }
    if (shown.empty() && lines.size() <= 40) msg += "\nsource:\n" + src;
    if (log.find("cannot open source file") != std::string::npos && cuda_include_dirs().empty())
      msg += "\n(no CUDA include folder with cuda_fp16.h was found: set CUDA_PATH to the toolkit's folder)";
    return msg;
  }

  std::string arch_;
  bool ptx_ = false;
  std::vector<std::string> options_;
};

}  // namespace

bool nvrtc_available(std::string* why) {
  const LoadedNvrtc& L = loaded();
  if (why) *why = L.why;
  return L.ok;
}

std::string nvrtc_version() {
  nvrtc();
  return loaded().version;
}

std::vector<int> nvrtc_supported_archs() { return loaded().archs; }

std::vector<std::string> cuda_include_dirs() {
  std::vector<fs::path> tries;
  for (const char* env : {"CUDA_PATH", "CUDA_HOME"})
    if (std::string root = getenv_str(env); !root.empty()) tries.push_back(fs::path(root) / "include");
  // lib/libnvrtc.so.13 or lib64/... or targets/x86_64-linux/lib/...: the headers of the same toolkit.
  if (const std::string& lib = loaded().library; !lib.empty())
    tries.push_back(fs::path(lib).parent_path().parent_path() / "include");
  tries.push_back("/usr/local/cuda/include");
  std::vector<fs::path> versioned;
  std::error_code ec;
  for (auto it = fs::directory_iterator("/usr/local", ec); !ec && it != fs::directory_iterator(); it.increment(ec))
    if (it->path().filename().string().rfind("cuda-", 0) == 0) versioned.push_back(it->path() / "include");
  // Newest first: "cuda-12.10" sorts after "cuda-12.9" when compared number by number.
  auto key = [](const fs::path& p) {
    std::vector<int> v;
    std::string s = p.parent_path().filename().string().substr(5);
    std::istringstream in(s);
    for (std::string part; std::getline(in, part, '.');) v.push_back(std::atoi(part.c_str()));
    return v;
  };
  std::sort(versioned.begin(), versioned.end(), [&](const fs::path& a, const fs::path& b) { return key(a) > key(b); });
  tries.insert(tries.end(), versioned.begin(), versioned.end());
  tries.push_back("/usr/include");
  std::vector<std::string> found;
  for (auto& t : tries) {
    std::string s = fs::weakly_canonical(t, ec).string();
    if (ec) s = t.string();
    if (has_fp16_header(s) && std::find(found.begin(), found.end(), s) == found.end()) found.push_back(s);
  }
  return found;
}

std::unique_ptr<Compiler> make_nvrtc_compiler(const std::string& arch) { return std::make_unique<NvrtcCompiler>(arch); }

}  // namespace tg
