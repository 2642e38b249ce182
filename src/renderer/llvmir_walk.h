#pragma once
// The walker behind LLVMRenderer (private to renderer/): one pass over a linearized kernel that writes LLVM IR
// instructions for each node in order. llvmir.cpp has the kernel's shape (parameters, loops, IFs, memory);
// llvmir_ops.cpp the values (constants, ALU ops, casts), each spelled to agree with exec_alu.
//
// Every node's value is a text operand in r_: a constant ("7", "0x3FF0000000000000") or an SSA name ("%alu3").
// Accumulators (DEFINE_ACC, ASSIGN) and loop counters are allocas; a read of an accumulator loads it where it is
// read (the value may differ from one read to the next), and LLVM's mem2reg makes registers of them.
#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "renderer/llvmir.h"
#include "renderer/program_walk.h"

namespace tg {

class LLVMWalk : ProgramWalk {
 public:
  LLVMWalk(const LLVMRenderer& ren, const std::string& name, const std::vector<UOpPtr>& uops);
  std::string run();

 private:
  const bool opaque_;           // LLVM >= 15 pointers ("ptr")
  std::vector<std::string> r_;  // each node's operand text (an accumulator's: its alloca)
  std::vector<char> is_acc_;    // node reads an accumulator (DEFINE_ACC, ASSIGN)
  // A float product whose one user is a sum is not emitted where it stands: the sum becomes llvm.fmuladd of its
  // operands (rendered here, where the product stood), as C contracts `acc + a*b` within one expression.
  std::unordered_map<size_t, std::pair<std::string, std::string>> deferred_mul_;
  std::string body_, allocas_;
  std::set<std::string> declares_;  // intrinsics and support functions the body calls
  std::set<std::string> helpers_;   // names of the internal helper functions the body calls
  std::string block_;               // the basic block instructions go to now
  struct Open {
    size_t pos;  // the RANGE or IF
    std::string label;
  };
  std::vector<Open> open_;

  // ---- llvmir.cpp: the kernel's shape ----
  std::string fresh(const std::string& prefix) { return "%" + prefix + std::to_string(next_id(prefix)); }
  std::string label(const std::string& prefix) { return prefix + std::to_string(next_id(prefix)); }
  void ins(const std::string& s) { body_ += "  " + s + "\n"; }
  // `%name = <rhs>`, with a fresh name of `prefix`; returns the name.
  std::string def(const std::string& prefix, const std::string& rhs);
  void start_block(const std::string& l);
  void emit(size_t i);
  void define_global(size_t i, const UOp& u);
  void define_var(size_t i, const UOp& u);
  void special(size_t i, const UOp& u);
  void open_range(size_t i, const UOp& u);
  void open_if(size_t i, const UOp& u);
  void close_block(size_t i);
  void define_acc(size_t i, const UOp& u);
  void assign(size_t i, const UOp& u);
  void load(size_t i, const UOp& u);
  void store(size_t i, const UOp& u);
  void prefetch(size_t i, const UOp& u);
  std::string finish();
  std::string entry_function(const std::vector<KernelParam>& params) const;
  std::string param_type(const KernelParam& p) const;  // a buffer's element type, or a variable's type
  // The value of source k of u here: an accumulator is loaded now.
  std::string operand(const UOp& u, size_t k);
  // &buf[idx] as a pointer to `elem` (a vector type for vector accesses).
  std::string address(const UOp& u, const std::string& elem);

  // ---- llvmir_ops.cpp: values ----
 public:
  std::string ptr(const std::string& elem) const { return opaque_ ? "ptr" : elem + "*"; }
  static std::string scalar_type(DType dt);  // in registers: i1, i8 .. i64, float (16-bit floats too), double
  static std::string type(DType dt);         // scalar_type, or "<4 x float>"
  static std::string buffer_type(DType dt);  // a buffer's element: i8 for bool, half, i16 for bfloat16
  // A constant of dt (a vector: the constant in every lane), as an operand.
  static std::string splat(DType dt, const std::string& scalar_literal);
  static std::string int_literal(int64_t v, DType dt);  // wrapped to dt's width, signed spelling
  static std::string float_literal(double v);           // hex: exact for float and double

 private:
  void constant(size_t i, const UOp& u);
  void expression(size_t i, const UOp& u);
  std::string alu(const UOp& u, const std::vector<std::string>& a);
  std::string int_alu(const UOp& u, DType dt, const std::vector<std::string>& a);
  std::string float_alu(const UOp& u, DType dt, const std::vector<std::string>& a);
  std::string float_op(Ops op, DType dt, const std::vector<std::string>& a);  // one op in dt's register type
  bool defers_mul(size_t i, const UOp& u) const;  // whether the MUL at i goes into its user's llvm.fmuladd
  std::string fused_add(const UOp& u, const std::vector<std::string>& a);  // an ADD of a deferred MUL, or ""
  std::string bool_alu(const UOp& u, const std::vector<std::string>& a);
  std::string safe_div(Ops op, DType dt, const std::string& a, const std::string& b, const UOp& rhs);
  std::string shift(Ops op, DType dt, const std::string& a, const std::string& b, const UOp& rhs);
  std::string dot4(DType dt, const std::string& a, const std::string& b, const std::string& c);
  std::string intrinsic(const std::string& base, DType dt, const std::vector<std::string>& args);
  std::string cast(DType to, DType from, const std::string& x);
  std::string bitcast(DType to, DType from, const std::string& x);
  std::string round16(DType dt, const std::string& x);        // a float register rounded to dt's 16-bit format
  std::string from_double16(DType dt, const std::string& x);  // a double rounded once to dt's 16-bit format
  std::string bits16(DType from, const std::string& x);       // a 16-bit float register's bits (i16)
  std::string float16_from_bits(DType to, const std::string& bits);
  std::string call_helper(const std::string& helper, const std::string& ret, const std::string& args);
  std::string helper_definitions() const;
};

}  // namespace tg
