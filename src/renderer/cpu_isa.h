#pragma once
// The instruction set the CPU and LLVM devices write kernels for: this CPU's own (`native`, the default) or a lower
// level chosen with CPU_ISA, so one machine runs the narrower paths too:
//   CPU_ISA=avx512   x86-64-v4 (AVX-512 F/BW/CD/DQ/VL, 64-byte vectors, no VNNI)
//   CPU_ISA=avx2     x86-64-v3 (AVX2, FMA, F16C, 32-byte vectors)
//   CPU_ISA=sse4     x86-64-v2 (SSE4.2, 16-byte vectors)
//   CPU_ISA=generic  the architecture's baseline (x86-64: SSE2; aarch64: armv8-a NEON), 16-byte vectors
// Read once a process (kernels already compiled would not match another level). The level names its compiler flags,
// so the compile cache and BEAM's cache, keyed by the compiler's identity, keep the levels apart.
#include <string>
#include <vector>

namespace tg {

struct CpuIsa {
  std::string level;         // "native", "avx512", "avx2", "sse4" or "generic"
  int vector_bytes = 16;     // the widest vectors kernels are written with
  int vector_registers = 16;  // how many of them (AVX-512 and aarch64: 32): a register tile's accumulators must fit
  bool fma = false;          // fused multiply-add instructions
  bool vnni = false;         // int8 dot products (vpdpbusd: AVX512-VNNI or AVX-VNNI)
  bool avx2 = false;         // 256-bit integer vectors (vpmaddwd on 8 lanes)
  std::vector<std::string> cc_flags;  // for the C compiler: {"-march=x86-64-v3"}, {"-march=native", ...}
  std::string llvm_cpu;               // for LLVM's target machine; "" = the host's CPU and features
  std::string llvm_features;
  int vector_floats() const { return vector_bytes / 4; }
  // One line: "avx2 (x86-64-v3: 32-byte vectors, FMA)"; benchmarks print it beside their figures.
  std::string describe() const;
};

// The level CPU_ISA chose (native when unset). Throws tg::Error naming the value and the levels this CPU runs when
// CPU_ISA is unknown or needs instructions this CPU lacks (never a SIGILL later).
const CpuIsa& cpu_isa();

// The levels this CPU can run, best first ("native" first).
std::vector<std::string> cpu_isa_levels();

// The level for a name, checked against this CPU (what cpu_isa() does with CPU_ISA).
CpuIsa cpu_isa_for(const std::string& level);

}  // namespace tg
