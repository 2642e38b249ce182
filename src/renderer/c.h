#pragma once
// ClangRenderer: C for the CPU device (compiled by clang or gcc, loaded with dlopen). Beyond the C-style
// base it adds `restrict`/`const` buffer parameters, an entry trampoline the runtime calls through one
// fixed signature, GCC/Clang vector types, and float16/bfloat16 emulation:
//
//   void r_2(int* restrict data0, const int* restrict data1, const int* restrict data2) { ... }
//   void r_2_entry(void** bufs, const long long* vars) { r_2((int*)bufs[0], ...); }
//
// A kernel split across threads (OptOps.THREAD) takes `int core_id` after its variables; the runtime
// calls the entry once per thread with vars[n_vars] = the thread's index.
//
// Vectors: float32/float64 loads, stores, + - * / NEG and MAX (through a helper) on GCC/Clang vector types
// (float4, float16 ...).
//
// float16/bfloat16 values are held in float variables and rounded back to their format after every op
// (exactly what exec_alu computes); buffers hold the 16-bit patterns. Conversions use _Float16 where the
// compiler has it (gcc 12), and bit manipulation otherwise (clang 14 on x86-64).
#include "renderer/cstyle.h"

namespace tg {

class ClangRenderer : public CStyleRenderer {
 public:
  ClangRenderer();
  std::string device() const override { return "CPU"; }
  bool supports(Ops op) const override { return op != Ops::WMMA && CStyleRenderer::supports(op); }
  bool vectorizes(Ops op, DType scalar) const override { return cpu_vectorizes(op, scalar); }
  bool vectorizes_cast(DType from, DType to) const override { return cpu_vectorizes_cast(from, to); }
  // The CPU's vector choices, shared with the LLVM renderer (renderer/llvmir.h) so both get the same kernels.
  static bool cpu_vectorizes(Ops op, DType scalar);
  static bool cpu_vectorizes_cast(DType from, DType to);
  bool prefetches() const override { return true; }
  int threads() const override { return cpu_threads(); }
  // THREADS (env or tg::Context) if set, else the host's hardware threads. THREADS=1 turns threading off.
  static int cpu_threads();

 protected:
  std::string type_name(DType dt) const override;
  std::string render_cast(DType to, DType from, const std::string& x, Prelude& pre) const override;
  std::string render_bitcast(DType to, DType from, const std::string& x, Prelude& pre) const override;
  std::string render_load(const std::string& buf, const std::string& idx, DType dt, Prelude& pre) const override;
  std::string render_store(const std::string& buf, const std::string& idx, const std::string& value, DType dt,
                           Prelude& pre) const override;
  std::string prefix(const Prelude& pre) const override;
  std::string epilogue(const std::string& name, const std::vector<Param>& params) const override;
};

}  // namespace tg
