#pragma once
// CStyleRenderer: the part of every C-like backend (C for the CPU, later CUDA and OpenCL) that is the
// same: it walks the linearized kernel (codegen/program.h) and prints one statement per node, inlining
// pure single-use expressions into their user. What differs between backends is behind the virtual hooks
// below: type names, constants, the op spellings table, loads/stores, vector syntax, GPU indices, the
// kernel signature and the helpers a kernel needs ahead of it.
//
// Names follow tinygrad: buffers data0.., loops ridx0.., accumulators acc0.., loads val0.., other values
// alu0.. / cast0.. / gep0.. (one counter per prefix, in order of appearance).
#include <array>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "renderer/renderer.h"

namespace tg {

class CStyleRenderer : public Renderer {
 public:
  std::string render(const std::string& name, const std::vector<UOpPtr>& uops) const override;
  bool supports(Ops op) const override;

  // A kernel parameter: a buffer (DEFINE_GLOBAL), an integer variable (DEFINE_VAR) or a tensor map (TENSOR_MAP).
  struct Param {
    std::string name;
    DType dtype;          // the pointer dtype for buffers
    bool is_buffer;
    bool written;         // some STORE writes the buffer (else it is only loaded: `const`)
    bool is_tensor_map = false;
  };

  // What the kernel needs ahead of its function, collected while its body is rendered.
  struct Prelude {
    std::vector<std::pair<std::string, std::string>> helpers;  // (name, definition), in first-use order
    std::vector<DType> vector_types;                           // vector dtypes that appear
    bool inf = false, nan = false;                             // INFINITY / NAN are used
    bool half = false, bf16 = false;                           // float16 / bfloat16 values appear
    int64_t local_threads = 1;                                 // threads of a workgroup (product of lidx sizes)
    // Adds a helper once; `definition` is only built when the helper is new.
    void need(const std::string& name, const std::function<std::string()>& definition);
  };

 protected:
  friend class CStyleWalk;  // the walker behind render() (renderer/cstyle_walk.h) prints through the hooks below
  CStyleRenderer();

  // ---- types and constants ----
  // The type of a value of `dt` (in registers): "float", "unsigned char", "float4" ...
  virtual std::string type_name(DType dt) const;
  // The element type of a buffer of `dt` (the pointee of a DEFINE_GLOBAL).
  virtual std::string buffer_type_name(DType dt) const { return type_name(dt); }
  // A CONST node, as an expression of its dtype.
  virtual std::string render_const(const UOp& u, Prelude& pre) const;
  // A float constant of dtype dt (finite, inf or NaN), exact: printed with enough digits to round-trip.
  virtual std::string float_literal(double v, DType dt, Prelude& pre) const;
  // The suffix of a 64-bit integer literal ("ll"; OpenCL C and Metal, whose `long` is 64 bits, reserve `long long`).
  virtual std::string int64_suffix() const { return "ll"; }
  // How helper functions are declared ("static inline" in C, "__device__ inline" in CUDA).
  virtual std::string helper_qualifier() const { return "static inline"; }

  // ---- ops ----
  // An ALU op on rendered operands. The default looks the op up in code_for_op_, routes integer IDIV/MOD
  // and shifts with a non-constant right side through helpers that never trap (exec_alu's semantics) and
  // wraps results of narrow integer types back into their range.
  virtual std::string render_alu(const UOp& u, const std::vector<std::string>& operands, Prelude& pre) const;
  virtual std::string render_cast(DType to, DType from, const std::string& x, Prelude& pre) const;
  virtual std::string render_bitcast(DType to, DType from, const std::string& x, Prelude& pre) const;
  // How many times operand i appears in the op's spelling: an operand that appears twice is given a
  // variable rather than inlined, so nested ops cannot blow up the source exponentially.
  virtual int operand_uses(const UOp& u, size_t i) const;

  // ---- memory ----
  // The expression that reads buf[idx] as a value of dt (dt.count > 1: a vector load).
  virtual std::string render_load(const std::string& buf, const std::string& idx, DType dt, Prelude& pre) const;
  // The statement that writes value (of dt) to buf[idx], without the trailing newline.
  virtual std::string render_store(const std::string& buf, const std::string& idx, const std::string& value, DType dt,
                                   Prelude& pre) const;

  // ---- vectors ----
  virtual std::string render_vectorize(DType dt, const std::vector<std::string>& elems, Prelude& pre) const;
  virtual std::string render_gep(const std::string& vec, int64_t i) const;
  // Lane i of a vector of vec_dtype as a value (the default: render_gep(vec, i)).
  virtual std::string render_gep(const std::string& vec, int64_t i, DType vec_dtype) const { return render_gep(vec, i); }
  // Lane i of a 16-bit float vector as the 16-bit value itself (a tensor core's operand: no widening).
  virtual std::string render_raw16_gep(const std::string& vec, int64_t i) const { return render_gep(vec, i); }

  // ---- launch indices ----
  // A SPECIAL that is a kernel parameter (the CPU's core_id) rather than a computed index; such
  // parameters come last in the signature, after the DEFINE_VARs.
  virtual bool special_is_param(const SpecialArg& s) const { return false; }
  // GPU launch (the base has none: both throw).
  virtual std::string render_special(const SpecialArg& s) const;
  virtual std::string render_barrier() const;
  // A tensor core op (renderer/tensor_core.h): operands are A's, B's, then C's registers; raw[k] says operand k
  // is a 16-bit value as loaded (else a float register holding one); packed[p], when not empty, is the 32-bit
  // register (from an LDMATRIX) that holds operands 2p and 2p + 1 together. The default throws: no tensor cores.
  virtual std::string render_wmma(const UOp& u, const std::vector<std::string>& operands, const std::vector<bool>& raw,
                                  const std::vector<std::string>& packed, Prelude& pre) const;
  // Shared-memory staging (codegen/program.h): the statements of an asynchronous copy of n elements of dt (only
  // where `gate` holds, zeros where `valid` is false; either "" when always true), a commit, a wait for at most n groups in flight; an LDMATRIX into a new variable `name` (declaration included);
  // lane i of it as a float value, and its 32-bit register q. The defaults throw: no such hardware.
  virtual std::string render_cp_async(const std::string& dst, const std::string& dst_idx, const std::string& src,
                                      const std::string& src_idx, const std::string& gate, const std::string& valid,
                                      int64_t n, DType dt) const;
  virtual std::string render_async_commit() const;
  virtual std::string render_async_wait(int64_t n) const;
  virtual std::string render_ldmatrix(const std::string& name, const std::string& local, const std::string& idx,
                                      const UOp& u) const;
  virtual std::string render_ldmatrix_lane(const std::string& name, int64_t i, DType dt) const;
  // A WGMMA (codegen/program.h) into a new array `name` of its lanes (declaration included; operands: A's buffer,
  // A idx, B's buffer, B idx, the ordering source, C's lanes), or `in_place` on the array `name` that already holds
  // C (renderer/wgmma_arrays.h), as statements separated by newlines; and the wait after a loop whose WGMMAs were
  // left in flight (WgmmaArg::defer). The defaults throw: no such hardware.
  virtual std::string render_wgmma(const UOp& u, const std::string& name, const std::vector<std::string>& operands,
                                   bool in_place, Prelude& pre) const;
  virtual std::string render_wgmma_drain(const std::string& name, int lanes) const;
  // Bulk tensor copies and their barriers (TMA_LOAD, MBAR_INIT, MBAR_EXPECT, MBAR_WAIT of codegen/program.h) on
  // rendered operands, as a statement. The default throws: no such hardware.
  virtual std::string render_bulk_copy(const UOp& u, const std::vector<std::string>& operands, Prelude& pre) const;
  virtual std::string render_ldmatrix_reg(const std::string& name, int64_t q) const;
  // A workgroup's shared buffer of `size` elements of dt at byte `offset` of the kernel's shared memory (see
  // shared_bytes in renderer.h), as a declaration without the `;`.
  virtual std::string render_define_local(const std::string& name, DType dt, int64_t size, int64_t offset,
                                          Prelude& pre) const;

  // ---- the function around the body ----
  // "void name(float* restrict data0, const float* restrict data1, int n)" by default.
  virtual std::string kernel_signature(const std::string& name, const std::vector<Param>& params,
                                       const Prelude& pre) const;
  virtual std::string param_decl(const Param& p) const;  // one parameter of the signature
  // Lines at the top of the body, before any of the kernel's own (none by default).
  virtual std::string kernel_prologue() const { return ""; }
  // Definitions the kernel needs ahead of it (typedefs, helpers, INFINITY ...).
  virtual std::string prefix(const Prelude& pre) const;
  // Anything after the kernel function (the CPU's entry trampoline).
  virtual std::string epilogue(const std::string& name, const std::vector<Param>& params) const { return ""; }

  // The op spellings table: operands come rendered and parenthesized where needed; dt is the result dtype
  // (for comparisons, the operands'). Subclasses change entries in their constructor.
  using OpSpelling = std::function<std::string(const std::vector<std::string>& a, DType dt)>;
  std::array<OpSpelling, kNumOps> code_for_op_{};

  // float16/bfloat16 in the C-like backends: buffers hold the 16-bit format, values live in float registers
  // and are rounded back to their format after every op that can leave it (exactly what exec_alu computes).
  static bool is_half(DType dt) { return dt.scalar == Scalar::Float16; }
  static bool is_bf16(DType dt) { return dt.scalar == Scalar::BFloat16; }
  static bool is_16bit_float(DType dt) { return is_half(dt) || is_bf16(dt); }
  // Whether a 16-bit result of `op` may fall between two values of its format (and so is rounded again).
  static bool rounds_16bit(Ops op);
  // Whether converting `from` to the 16-bit `to` goes through double: through float it could round twice
  // (double is exact for all but 64-bit integers, whose double rounding is harmless at 16-bit precision).
  static bool needs_double_path(DType from, DType to);

  // OpenCL C's and Metal's scalar spellings: char, uchar, ushort, uint, long, ulong (`long` is 64 bits there and
  // `long long` reserved), float registers for 16-bit floats; the C names otherwise.
  std::string gpu_scalar_name(DType scalar) const;
  // Their buffers: half for float16, bfloat16's bits as ushort, bool as bytes (a kernel takes no pointer to bool).
  std::string gpu_buffer_type_name(DType dt) const;

  // Shared helpers for subclasses.
  static std::string strip_parens(const std::string& s);  // "(a+b)" -> "a+b", "(a)+(b)" unchanged
  static bool is_narrow_int(DType dt);                    // bool, 8- and 16-bit ints: C computes them as int
  // A math function by its GCC builtin name: "__builtin_exp2f" / "__builtin_exp2" (CUDA drops the prefix).
  virtual std::string math_fn(const char* base, DType dt) const;
};

}  // namespace tg
