#pragma once
// LLVMRenderer: LLVM IR (text) for the CPU, compiled in-process by LLVM's JIT (device "LLVM", runtime/ops_llvm.cpp)
// instead of a C compiler process. Each kernel is two functions:
//
//   define internal void @r_2(i32* noalias %data0, i32* noalias %data1, i32 %n) { ... }    (the body)
//   define void @r_2_entry(i8** %bufs, i64* %vars) { ... call @r_2(...) }                  (the fixed entry)
//
// The entry has the C device's trampoline signature (renderer/c.h): buffers in order, then the variables, then a
// threaded kernel's core_id as vars[n_vars]; the runtime calls either through one function type.
//
// Values follow the C renderer's conventions so both agree with exec_alu bit for bit: float16/bfloat16 values live
// in float registers and are rounded back to their format after every op that can leave it; buffers hold the 16-bit
// patterns; bool buffers hold bytes. Integer division by 0 or -1, shifts out of range and float-to-int conversions
// out of range are defined as exec_alu defines them (selects, no branches); accumulators and loop counters live in
// allocas that the optimizer's mem2reg turns into registers. A few helpers too long to write inline (double to
// 16-bit floats, threefry) are external C functions of the library (runtime/llvm_support.h) the JIT links by address.
//
// LLVM 14 (Debian 12) spells pointers typed ("float*"); LLVM 15 on reads opaque "ptr": the constructor chooses.
#include <string>
#include <vector>

#include "renderer/renderer.h"

namespace tg {

class LLVMRenderer : public Renderer {
 public:
  explicit LLVMRenderer(bool opaque_pointers) : opaque_pointers_(opaque_pointers) {}
  std::string render(const std::string& name, const std::vector<UOpPtr>& uops) const override;
  std::string device() const override { return "LLVM"; }
  bool supports(Ops op) const override;
  bool vectorizes(Ops op, DType scalar) const override;
  bool vectorizes_cast(DType from, DType to) const override;
  bool prefetches() const override { return true; }
  int threads() const override;  // as the C device's: THREADS, else the machine's
  bool opaque_pointers() const { return opaque_pointers_; }

 private:
  bool opaque_pointers_;
};

}  // namespace tg
