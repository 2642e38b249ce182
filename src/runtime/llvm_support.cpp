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

}  // namespace

const std::vector<std::pair<const char*, void*>>& llvm_support_symbols() {
  static const std::vector<std::pair<const char*, void*>> symbols = {
      {"tg_llvm_d2h", reinterpret_cast<void*>(&tg_llvm_d2h)},
      {"tg_llvm_d2bf", reinterpret_cast<void*>(&tg_llvm_d2bf)},
      {"tg_llvm_threefry", reinterpret_cast<void*>(&tg_llvm_threefry)},
  };
  return symbols;
}

}  // namespace tg
