// CPU_ISA: the instruction set level of CPU kernels, checked against this CPU once (renderer/cpu_isa.h).
#include "renderer/cpu_isa.h"

#include <mutex>
#include <optional>

#include "helpers/env.h"
#include "tg/error.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

namespace tg {

namespace {

#if defined(__x86_64__) || defined(__i386__)
// CPUID leaf 7's feature bits (subleaf 0 ECX bit 11: AVX512-VNNI; subleaf 1 EAX bit 4: AVX-VNNI).
bool cpuid7(unsigned subleaf, int reg, unsigned bit) {
  unsigned r[4] = {0, 0, 0, 0};
  if (!__get_cpuid_count(7, subleaf, &r[0], &r[1], &r[2], &r[3])) return false;
  return (r[reg] >> bit) & 1u;
}
// (__builtin_cpu_supports also checks that the OS saves the registers: XGETBV)
bool has(const char* feature) {
  const std::string f = feature;
  if (f == "avx512f") return __builtin_cpu_supports("avx512f");
  if (f == "avx512bw") return __builtin_cpu_supports("avx512bw");
  if (f == "avx512cd") return __builtin_cpu_supports("avx512cd");
  if (f == "avx512dq") return __builtin_cpu_supports("avx512dq");
  if (f == "avx512vl") return __builtin_cpu_supports("avx512vl");
  if (f == "avx512vnni") return __builtin_cpu_supports("avx512f") && cpuid7(0, 2, 11);
  if (f == "avxvnni") return __builtin_cpu_supports("avx2") && cpuid7(1, 0, 4);
  if (f == "avx2") return __builtin_cpu_supports("avx2");
  if (f == "avx") return __builtin_cpu_supports("avx");
  if (f == "fma") return __builtin_cpu_supports("fma");
  if (f == "f16c") {  // (CPUID leaf 1, ECX bit 29: clang 16's __builtin_cpu_supports does not know "f16c")
    unsigned r[4] = {0, 0, 0, 0};
    return __builtin_cpu_supports("avx") && __get_cpuid(1, &r[0], &r[1], &r[2], &r[3]) && ((r[2] >> 29) & 1u);
  }
  if (f == "bmi") return __builtin_cpu_supports("bmi");
  if (f == "bmi2") return __builtin_cpu_supports("bmi2");
  if (f == "sse4.2") return __builtin_cpu_supports("sse4.2");
  if (f == "sse4.1") return __builtin_cpu_supports("sse4.1");
  if (f == "ssse3") return __builtin_cpu_supports("ssse3");
  if (f == "popcnt") return __builtin_cpu_supports("popcnt");
  return false;
}

// A level of x86-64: what it needs of the CPU, and what it gives the kernels.
struct X86Level {
  const char* name;
  const char* march;  // -march= and LLVM's CPU name
  std::vector<const char*> needs;
  int vector_bytes;
  bool fma, avx2;
};
const std::vector<X86Level>& x86_levels() {
  static const std::vector<X86Level> levels = {
      {"avx512", "x86-64-v4", {"avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl", "avx2", "fma"}, 64, true, true},
      {"avx2", "x86-64-v3", {"avx2", "avx", "fma", "f16c", "bmi", "bmi2"}, 32, true, true},
      {"sse4", "x86-64-v2", {"sse4.2", "sse4.1", "ssse3", "popcnt"}, 16, false, false},
      {"generic", "x86-64", {}, 16, false, false},
  };
  return levels;
}

std::vector<std::string> missing(const X86Level& l) {
  std::vector<std::string> out;
  for (const char* f : l.needs)
    if (!has(f)) out.push_back(f);
  return out;
}

CpuIsa native() {
  CpuIsa isa;
  isa.level = "native";
  isa.vector_bytes = has("avx512f") ? 64 : has("avx") ? 32 : 16;
  isa.vector_registers = has("avx512f") ? 32 : 16;
  isa.fma = has("fma");
  isa.avx2 = has("avx2");
  isa.vnni = has("avx512vnni") || has("avxvnni");
  isa.cc_flags = {"-march=native"};
  // The renderer writes 16-float vectors; without this clang and gcc legalize them as two 256-bit halves on AVX-512
  // CPUs (their default for -march of recent Xeons), doubling the instructions of every vectorized loop.
  if (isa.vector_bytes == 64) isa.cc_flags.push_back("-mprefer-vector-width=512");
  return isa;
}

CpuIsa level(const X86Level& l) {
  CpuIsa isa;
  isa.level = l.name;
  isa.vector_bytes = l.vector_bytes;
  isa.vector_registers = l.vector_bytes == 64 ? 32 : 16;
  isa.fma = l.fma;
  isa.avx2 = l.avx2;
  isa.cc_flags = {std::string("-march=") + l.march, "-mtune=generic"};
  if (l.vector_bytes == 64) isa.cc_flags.push_back("-mprefer-vector-width=512");
  isa.llvm_cpu = l.march;
  return isa;
}

std::optional<CpuIsa> find_level(const std::string& name, std::string& why) {
  for (const X86Level& l : x86_levels()) {
    if (name != l.name) continue;
    std::vector<std::string> lacks = missing(l);
    if (lacks.empty()) return level(l);
    why = "this CPU lacks";
    for (auto& f : lacks) why += " " + f;
    return std::nullopt;
  }
  why = "unknown level";
  return std::nullopt;
}

std::vector<std::string> lower_levels() {
  std::vector<std::string> out;
  for (const X86Level& l : x86_levels())
    if (missing(l).empty()) out.push_back(l.name);
  return out;
}

#elif defined(__aarch64__)

CpuIsa native() {
  CpuIsa isa;
  isa.level = "native";
  isa.fma = true;
  isa.vector_registers = 32;
  isa.cc_flags = {"-mcpu=native"};
  return isa;
}

std::optional<CpuIsa> find_level(const std::string& name, std::string& why) {
  if (name != "generic") {
    why = "unknown level";
    return std::nullopt;
  }
  CpuIsa isa;  // armv8-a: NEON's 16-byte vectors and fused multiply-adds are part of the baseline
  isa.level = "generic";
  isa.fma = true;
  isa.vector_registers = 32;
  isa.cc_flags = {"-march=armv8-a"};
  isa.llvm_cpu = "generic";
  return isa;
}

std::vector<std::string> lower_levels() { return {"generic"}; }

#else

CpuIsa native() {
  CpuIsa isa;
  isa.level = "native";
  isa.cc_flags = {"-march=native"};
  return isa;
}

std::optional<CpuIsa> find_level(const std::string&, std::string& why) {
  why = "this architecture has no named levels";
  return std::nullopt;
}

std::vector<std::string> lower_levels() { return {}; }

#endif

std::string joined(const std::vector<std::string>& v) {
  std::string s;
  for (auto& x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
}

}  // namespace

std::vector<std::string> cpu_isa_levels() {
  std::vector<std::string> out = {"native"};
  for (auto& l : lower_levels()) out.push_back(l);
  return out;
}

CpuIsa cpu_isa_for(const std::string& name) {
  if (name.empty() || name == "native") return native();
  std::string why;
  if (std::optional<CpuIsa> isa = find_level(name, why)) return *isa;
  throw Error("CPU_ISA=" + name + ": " + why + "; this CPU runs " + joined(cpu_isa_levels()) +
              " (levels: native, avx512, avx2, sse4, generic)");
}

const CpuIsa& cpu_isa() {
  static std::once_flag once;
  static CpuIsa isa;
  std::call_once(once, [] { isa = cpu_isa_for(getenv_str("CPU_ISA")); });  // (a throw leaves it unset: asked again)
  return isa;
}

std::string CpuIsa::describe() const {
  std::string s = level + " (";
  if (!cc_flags.empty()) s += cc_flags[0].substr(cc_flags[0].find('=') + 1) + ": ";
  s += std::to_string(vector_bytes) + "-byte vectors";
  if (fma) s += ", FMA";
  if (vnni) s += ", VNNI";
  return s + ")";
}

}  // namespace tg
