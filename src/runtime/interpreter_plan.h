#pragma once
// The interpreter's decoded program (runtime/interpreter.cpp runs it, interpreter_plan.cpp builds and checks
// it): each node of a linearized kernel as an Instr naming its value slots and jump targets.
#include <array>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "renderer/tensor_map.h"
#include "runtime/interpreter.h"
#include "tg/error.h"
#include "uop/exec_alu.h"

namespace tg {

namespace interp {

constexpr int32_t kNone = -1;
// Instr::buf of an access to shared memory: kLocalBase + the DEFINE_LOCAL's number (globals are 0..4096).
constexpr int32_t kLocalBase = 1 << 20;

// SPECIAL flavours: gidxN is the workgroup id, lidxN the id inside the workgroup, idxN the absolute
// thread id gidxN * local_sizeN + lidxN (for launches that name only global threads).
enum class SpecialKind : uint8_t { kGroup, kLocal, kAbsolute };

// One decoded node. Value slots index the thread's value array; a node of dtype.count lanes would own
// `count` consecutive slots (all scalar today).
struct Instr {
  Ops op = Ops::NOOP;
  DType dtype;          // the node's dtype (element dtype for LOAD, value dtype for STORE)
  DType src_dtype;      // ALU operands / CAST and BITCAST source / DEFINE_ACC init dtype
  int32_t out = kNone;  // slot written; ASSIGN shares its DEFINE_ACC's slot
  std::array<int32_t, 4> src{kNone, kNone, kNone, kNone};  // slots read, in the node's source order
  uint8_t nsrc = 0;
  int32_t target = kNone;  // RANGE: its ENDRANGE; ENDRANGE: its RANGE; IF: its ENDIF
  int32_t buf = kNone;     // LOAD/STORE: buffer parameter number
  int32_t aux = 0;         // DEFINE_VAR: position in vars; SPECIAL: dimension 0..2; CP_ASYNC: source buffer;
                           // WGMMA: B's buffer (buf: A's)
  int32_t count = 0;       // CP_ASYNC: elements copied; LDMATRIX: 8x8 matrices; MBAR_INIT: threads; MBAR_EXPECT:
                           // bytes; TMA_LOAD: its entry in Plan::tma_loads
  bool trans = false;      // LDMATRIX .trans
  SpecialKind special = SpecialKind::kGroup;
  Num imm;                    // CONST value, already in the node's dtype
  std::vector<int32_t> wide;  // WMMA, WGMMA: all its source slots (WMMA: A's, B's, then C's registers); CP_ASYNC:
                              // its 6 values; TMA_LOAD: its 8
};

// Where the threads of a launch stand.
struct Launch {
  std::array<int64_t, 3> global{1, 1, 1};  // workgroups per dimension
  std::array<int64_t, 3> local{1, 1, 1};   // threads per workgroup per dimension
};

inline std::string prefix(const std::string& kernel) { return "INTERP kernel '" + kernel + "': "; }

inline std::string node_str(int32_t pos, const UOp& u) {
  return "uop " + std::to_string(pos) + " (" + op_name(u.op) + " " + u.dtype.repr() + ")";
}

// The value a CONST node stands for, converted from its arg's own type to the node's dtype.
inline Num const_num(const UOp& u) {
  if (auto* b = std::get_if<bool>(&u.arg)) return cast_num(Num{*b, 0}, dtypes::bool_, u.dtype);
  if (auto* i = std::get_if<int64_t>(&u.arg)) return cast_num(Num{*i, 0}, dtypes::int64, u.dtype);
  if (auto* d = std::get_if<double>(&u.arg)) return cast_num(Num{0, *d}, dtypes::float64, u.dtype);
  throw Error("CONST arg is not a bool, int or float: " + u.arg_repr());
}

}  // namespace interp

struct Interpreter::Plan {
  std::string name;
  std::vector<UOpPtr> uops;  // keeps the nodes alive for error messages
  std::vector<interp::Instr> code;
  int32_t n_slots = 0;
  std::vector<DType> buf_dtypes;                  // element dtype per buffer parameter (void where unused)
  std::vector<std::pair<DType, int64_t>> locals;  // per DEFINE_LOCAL: element dtype and size (elements)
  struct TmaLoad {
    TensorMapArg map;  // what it reads through
    int32_t bars;      // Instr::buf of its barriers
  };
  std::vector<TmaLoad> tma_loads;  // per TMA_LOAD (Instr::count)
  size_t n_vars = 0;
  std::vector<std::pair<int64_t, int64_t>> var_bounds;  // per vars position, from its DEFINE_VAR
  std::vector<std::string> var_names;
  interp::Launch launch;
};

namespace interp {
// Decodes and validates spec into plan (throws tg::Error naming the kernel and node on a malformed program).
void build_plan(const ProgramSpec& spec, Interpreter::Plan& plan);
}  // namespace interp

}  // namespace tg
