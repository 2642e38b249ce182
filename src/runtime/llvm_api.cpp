// Loading LLVM's C API (libLLVM-<major>.so) at run time, and the host's target with it. See llvm_api.h.
#include "runtime/llvm_api.h"

#include <cstdint>
#include <cstdio>

#if defined(TG_HAVE_LLVM)
#include <cstdlib>
#include <mutex>
#include <optional>
#include <vector>

#include "runtime/shared_library.h"
#include "tg/error.h"
#endif

namespace tg::llvm {

int built_major() {
#if defined(TG_HAVE_LLVM)
  return TG_LLVM_MAJOR;
#else
  return 0;
#endif
}

std::string entry_symbol(const std::string& src) {
  uint64_t h = 14695981039346656037ull;  // FNV-1a, 64 bits
  for (unsigned char c : src) h = (h ^ c) * 1099511628211ull;
  char hex[17];
  std::snprintf(hex, sizeof(hex), "%016llx", static_cast<unsigned long long>(h));
  return std::string("tg_") + hex;
}

#if defined(TG_HAVE_LLVM)
namespace {

// The outcome of the one attempt per process to load the library and the native target.
struct Loaded {
  Api api;
  bool ok = false;
  std::string why;  // why api() throws
};

#define TG_STR2(x) #x
#define TG_STR(x) TG_STR2(x)

// LLVM_LIBRARY (env) when set: that file only ("none": no LLVM device, as CI's sanitizer stage wants). Else the
// file CMake found first; then the sonames the dynamic linker may know (a library moved since the build).
std::vector<std::string> candidates() {
  if (const char* env = std::getenv("LLVM_LIBRARY"); env && *env) return {env};
  const std::string major = TG_STR(TG_LLVM_MAJOR);
  return {TG_LLVM_LIBRARY, "libLLVM-" + major + ".so.1", "libLLVM-" + major + ".so", "libLLVM.so"};
}

// LLVMGetVersion exists from LLVM 16 on: where it does, the library must be the major these headers describe (the
// C API is stable in name, not always in meaning: LLVMParseIRInContext's ownership of its buffer, for one).
bool same_major(const SharedLibrary& lib, std::string* why) {
  using GetVersion = void (*)(unsigned*, unsigned*, unsigned*);
  auto get = reinterpret_cast<GetVersion>(lib.symbol("LLVMGetVersion"));
  if (!get) return true;
  unsigned major = 0, minor = 0, patch = 0;
  get(&major, &minor, &patch);
  if (int(major) == TG_LLVM_MAJOR) return true;
  *why = "is LLVM " + std::to_string(major) + ", this library was built for LLVM " + std::to_string(TG_LLVM_MAJOR);
  return false;
}

bool resolve_all(const SharedLibrary& lib, Api& a, std::string* missing) {
#define TG_LLVM_RESOLVE(name) \
  if (!lib.bind(a.name, #name, missing)) return false;
  TG_LLVM_FUNCTIONS(TG_LLVM_RESOLVE)
#undef TG_LLVM_RESOLVE
  return true;
}

// LLVMInitializeNativeTarget() and LLVMInitializeNativeAsmPrinter() are static inline in llvm-c/Target.h: what
// they call, for this architecture (the asm parser too, for IR with inline assembly).
bool init_native_target(const SharedLibrary& lib, std::string* why) {
#if defined(__x86_64__) || defined(__i386__)
  const std::string arch = "X86";
#elif defined(__aarch64__)
  const std::string arch = "AArch64";
#else
  const std::string arch;
#endif
  if (arch.empty()) {
    *why = "has no target this build knows for this architecture";
    return false;
  }
  for (const char* part : {"TargetInfo", "Target", "TargetMC", "AsmPrinter", "AsmParser"}) {
    const std::string name = "LLVMInitialize" + arch + part;
    auto init = reinterpret_cast<void (*)()>(lib.symbol(name.c_str()));
    if (!init) {
      *why = "has no " + name + " (built without the " + arch + " target?)";
      return false;
    }
    init();
  }
  return true;
}

void load(Loaded& L) {
  std::string why;
  const std::optional<SharedLibrary> lib = SharedLibrary::open(candidates(), &why, same_major);
  if (!lib) {
    L.why = "cannot load libLLVM (is libllvm" + std::to_string(TG_LLVM_MAJOR) + " installed?): " + why;
    return;
  }
  const std::string& opened = lib->name();
  // The library stays loaded for the rest of the process: its code backs every kernel the JIT made.
  std::string missing;
  if (!resolve_all(*lib, L.api, &missing)) {
    L.why = opened + " has no " + missing;
    return;
  }
  if (!init_native_target(*lib, &why)) {
    L.why = opened + " " + why;
    return;
  }
  L.api.library = opened;
  L.ok = true;
}

const Loaded& loaded() {
  static std::once_flag once;
  static Loaded storage;
  std::call_once(once, [] { load(storage); });
  return storage;
}

}  // namespace

const Api& api() {
  const Loaded& L = loaded();
  if (!L.ok) throw Error("LLVM: " + L.why);
  return L.api;
}

std::string unavailable_reason() {
  try {
    return loaded().why;
  } catch (const std::exception& e) {  // (only bad_alloc could get here)
    return e.what();
  }
}

std::string take_error(LLVMErrorRef err) {
  if (!err) return "";
  const Api& a = api();
  char* msg = a.LLVMGetErrorMessage(err);  // (consumes err)
  std::string s = msg ? msg : "unknown LLVM error";
  a.LLVMDisposeErrorMessage(msg);
  return s;
}

std::string take_message(char* msg) {
  if (!msg) return "";
  std::string s = msg;
  api().LLVMDisposeMessage(msg);
  return s;
}

#else

std::string unavailable_reason() { return "built without LLVM (CMake found no LLVM >= 13 development files)"; }

#endif  // TG_HAVE_LLVM

}  // namespace tg::llvm
