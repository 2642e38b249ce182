// The support functions of LLVM-rendered kernels (see llvm_support.h): thin C wrappers over exec_alu, so the JIT's
// kernels round and hash exactly as the interpreter does.
#include "runtime/llvm_support.h"

#include <cstdint>

#include "uop/exec_alu.h"

namespace tg {
namespace {

extern "C" uint16_t tg_llvm_d2h(double x) { return double_to_half_bits(x); }
extern "C" uint16_t tg_llvm_d2bf(double x) { return double_to_bf16_bits(x); }
extern "C" uint64_t tg_llvm_threefry(uint64_t x, uint64_t key) {
  Num r = exec_alu(Ops::THREEFRY, dtypes::uint64, dtypes::uint64, {Num{int64_t(x), 0}, Num{int64_t(key), 0}});
  return uint64_t(r.i);
}

// Float16 conversions LLVM calls where the target has no instruction for them (x86-64 below F16C: CPU_ISA=sse4 or
// generic) and no runtime library is linked into the JIT: LLVM 14 passes the half as its 16 bits in an integer
// register; from LLVM 15 on x86 it is a _Float16 in an SSE register. Exact conversions (one rounding, to nearest even;
// __truncdfhf2 is tg_llvm_d2h).
extern "C" float tg_llvm_h2f(uint16_t h) { return float(half_bits_to_double(h)); }
extern "C" uint16_t tg_llvm_f2h(float x) { return double_to_half_bits(double(x)); }
#if !(defined(TG_LLVM_MAJOR) && TG_LLVM_MAJOR < 15) && defined(__FLT16_MAX__) && \
    (defined(__x86_64__) || defined(__i386__))
#define TG_LLVM_HALF_IN_SSE 1
extern "C" float tg_llvm_extendhfsf2(_Float16 h) {
  uint16_t bits;
  __builtin_memcpy(&bits, &h, 2);
  return tg_llvm_h2f(bits);
}
extern "C" _Float16 tg_llvm_truncsfhf2(float x) {
  const uint16_t bits = tg_llvm_f2h(x);
  _Float16 h;
  __builtin_memcpy(&h, &bits, 2);
  return h;
}
extern "C" _Float16 tg_llvm_truncdfhf2(double x) {
  const uint16_t bits = double_to_half_bits(x);
  _Float16 h;
  __builtin_memcpy(&h, &bits, 2);
  return h;
}
#endif

}  // namespace

const std::vector<std::pair<const char*, void*>>& llvm_support_symbols() {
  static const std::vector<std::pair<const char*, void*>> symbols = {
      {"tg_llvm_d2h", reinterpret_cast<void*>(&tg_llvm_d2h)},
      {"tg_llvm_d2bf", reinterpret_cast<void*>(&tg_llvm_d2bf)},
      {"tg_llvm_threefry", reinterpret_cast<void*>(&tg_llvm_threefry)},
      {"__gnu_h2f_ieee", reinterpret_cast<void*>(&tg_llvm_h2f)},
      {"__gnu_f2h_ieee", reinterpret_cast<void*>(&tg_llvm_f2h)},
#if !defined(TG_LLVM_HALF_IN_SSE)
      {"__extendhfsf2", reinterpret_cast<void*>(&tg_llvm_h2f)},
      {"__truncsfhf2", reinterpret_cast<void*>(&tg_llvm_f2h)},
      {"__truncdfhf2", reinterpret_cast<void*>(&tg_llvm_d2h)},
#else
      {"__extendhfsf2", reinterpret_cast<void*>(&tg_llvm_extendhfsf2)},
      {"__truncsfhf2", reinterpret_cast<void*>(&tg_llvm_truncsfhf2)},
      {"__truncdfhf2", reinterpret_cast<void*>(&tg_llvm_truncdfhf2)},
#endif
  };
  return symbols;
}

}  // namespace tg
