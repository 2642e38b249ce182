#pragma once
// The UOp interpreter: executes a linearized kernel (the node kinds of codegen/program.h) directly, one
// scalar at a time, with C semantics from uop/exec_alu.h. It is the reference every compiled backend is
// checked against, so it is strict: a program is checked by codegen's verify_program when it is loaded (sources
// before users, loops and IFs properly nested, values used only where C scoping would see them, dtypes), and
// every memory access is bounds checked at run time. A codegen bug becomes a tg::Error here, never corrupt memory.
//
// GPU semantics: SPECIAL ids come from the launch grid (spec.global_size workgroups of spec.local_size
// threads). Each thread is a context of its own (program counter and values); the threads of one workgroup
// run one after another up to each BARRIER, and all of them pass it together, so global-memory exchange
// across a barrier behaves as on a GPU. SPECIAL core_id (a CPU kernel split across threads) is a workgroup
// id along dim 0: the threads run one after another. DEFINE_LOCAL is a workgroup's shared memory (filled
// with all-ones bits as each workgroup starts, so reading a slot nobody wrote is visible). Not yet: vector
// dtypes (VECTORIZE, GEP, vector LOAD/STORE) and WMMA.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "codegen/program.h"
#include "uop/uop.h"

namespace tg {

// A buffer as the interpreter sees it: host memory and its size in bytes (what bounds checks use).
struct InterpBuffer {
  void* ptr = nullptr;
  size_t bytes = 0;
};

class Interpreter {
 public:
  // Validates spec.uops and precomputes the program's structure; throws tg::Error naming the kernel and
  // the offending node when the program is malformed or uses a node kind the interpreter lacks.
  explicit Interpreter(const ProgramSpec& spec);
  ~Interpreter();
  Interpreter(const Interpreter&) = delete;
  Interpreter& operator=(const Interpreter&) = delete;

  // One launch. bufs in parameter order (DEFINE_GLOBAL arg), vars in spec.vars order. Throws tg::Error on
  // an out-of-bounds access, a variable outside its declared range or a barrier not reached by every
  // thread of a workgroup. Safe to call from several host threads at once (all run state is local).
  void run(const std::vector<InterpBuffer>& bufs, const std::vector<int64_t>& vars) const;

  const std::string& name() const;
  // Whether a node kind can appear in a program the interpreter runs (what its renderer "supports").
  static bool executes(Ops op);

  struct Plan;

 private:
  std::unique_ptr<const Plan> plan_;
};

// A readable listing of a linearized kernel, one line per node (position, op, dtype, source positions,
// arg), in the spirit of tinygrad's print_uops. The INTERP device's "source code".
// Defined in ops_interp.cpp, beside the renderer that prints it.
std::string uops_listing(const std::vector<UOpPtr>& uops);

}  // namespace tg
