#pragma once
// Calling a CPU kernel's entry point, shared by the devices whose kernels run in this process (CPU: C source built
// by the system compiler; LLVM: LLVM IR built by the JIT). Both export one function per kernel with the C
// renderer's trampoline signature (renderer/c.h): the buffers in parameter order, then the variables, then the
// thread index of a kernel split across threads (SPECIAL core_id) as vars[n_vars].
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "codegen/program.h"

namespace tg {

using CpuEntryFn = void (*)(void**, const long long*);

class CpuEntryRunner {
 public:
  // `device` prefixes the errors ("CPU: kernel ..."); the counts and the thread count come from the spec.
  CpuEntryRunner(std::string device, const ProgramSpec& spec);
  void set_entry(CpuEntryFn entry) { entry_ = entry; }
  const std::string& name() const { return name_; }
  // Program::run: checks the arguments, then calls the entry once, or once per thread on the shared pool.
  double run(const std::vector<void*>& bufs, const std::vector<int64_t>& vars, bool wait) const;

 private:
  std::string device_, name_;
  size_t n_bufs_, n_vars_;
  int threads_ = 1;
  CpuEntryFn entry_ = nullptr;
};

}  // namespace tg
