#pragma once
// The C functions LLVM-rendered kernels call (renderer/llvmir.h) for what is too long to write in IR: rounding a
// double to float16/bfloat16 bits exactly as exec_alu does, threefry, and the float16 conversions LLVM itself calls on
// targets without F16C. The JIT defines each name at its address in this process (runtime/ops_llvm.cpp), so they need
// no dynamic symbol table.
#include <utility>
#include <vector>

namespace tg {

// (symbol name, address) of every support function.
const std::vector<std::pair<const char*, void*>>& llvm_support_symbols();

}  // namespace tg
