#pragma once
// CStyleRenderer: every C-like backend (C for the CPU, CUDA, OpenCL, Metal) from one statement walker
// (renderer/cstyle_walk.h) and, per language, three tables: a Dialect (its spellings as data: launch indices,
// vector lanes and constructors, math functions, qualifiers), the op spellings (code_for_op_, shared) and the
// language's expression rules (rules_: an op's spelling where the shared one does not fit, tried first). What
// differs too much to be a table is one of the ten hooks below (types, casts, memory access, the function around
// the body, and the matrix units only CUDA has: renderer/matrix_syntax.h).
//
// Names follow tinygrad: buffers data0.., loops ridx0.., accumulators acc0.., loads val0.., other values
// alu0.. / cast0.. / gep0.. (one counter per prefix, in order of appearance).
#include <array>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "renderer/program_walk.h"
#include "renderer/renderer.h"

namespace tg {

class MatrixSyntax;

class CStyleRenderer : public Renderer {
 public:
  std::string render(const std::string& name, const std::vector<UOpPtr>& uops) const override;
  bool supports(Ops op) const override;
  CStyleRenderer(const CStyleRenderer&) = delete;  // (the tables' rules capture `this`)
  CStyleRenderer& operator=(const CStyleRenderer&) = delete;

  using Param = KernelParam;  // (renderer/program_walk.h)

  // What the kernel needs ahead of its function, collected while its body is rendered.
  struct Prelude {
    std::vector<std::pair<std::string, std::string>> helpers;  // (name, definition), in first-use order
    std::vector<DType> vector_types;                           // vector dtypes that appear
    bool inf = false, nan = false;                             // INFINITY / NAN are used
    bool half = false, bf16 = false;                           // float16 / bfloat16 values appear
    int64_t local_threads = 1;                                 // threads of a workgroup (product of lidx sizes)
    // Adds a helper once; `definition` is only built when the helper is new.
    void need(const std::string& name, const std::function<std::string()>& definition);
    void need_vector_type(DType dt);  // a vector type the prelude defines (once)
  };

  // How a C dialect spells what every dialect has. The defaults are the CPU's C.
  struct Dialect {
    std::string kernel_prefix;                       // before `void name(`: "__kernel ", "kernel "
    std::string buffer_qualifier;                    // before a buffer parameter's type: "__global "
    std::string restrict_ = "restrict";              // a buffer parameter's no-alias qualifier
    std::string helper_qualifier = "static inline";  // how helper functions are declared
    std::string int64_suffix = "ll";                 // OpenCL C and Metal, whose `long` is 64 bits, reserve `long long`
    // A math function: math_prefix + its name ("exp2", "trunc"), + "f" on float32 values where float_suffix.
    std::string math_prefix = "__builtin_";
    bool math_float_suffix = true;
    // GPU launch indices per axis (GROUP, LOCAL, GLOBAL), '%' standing for the dim's name in launch_dims (empty:
    // no launch grid), and whether the CPU's CORE index is a kernel parameter (after the variables) instead.
    std::array<std::string, 3> launch_index{};
    std::string launch_dims = "xyz";
    bool core_id_param = false;
    std::string barrier;  // a workgroup barrier's statement (empty: no workgroups)
    // Lane i of a vector: vec[i] where lane_names is empty, else vec + lane_prefix + lane_names[i].
    std::string lane_prefix, lane_names;
    // VECTORIZE: vector_open + type + vector_mid + elements (their outer parentheses stripped where
    // strip_vector_elems) + vector_close: "((float4){a,b,c,d})".
    std::string vector_open = "((", vector_mid = "){", vector_close = "})";
    bool strip_vector_elems = false;
    std::map<Scalar, std::string> buffer_types;  // buffer element types other than the value's type_name
  };

  // An op's spelling in one language, on rendered operands; nullopt leaves it to the shared spelling.
  using ExprRule =
      std::function<std::optional<std::string>(const UOp& u, const std::vector<std::string>& a, Prelude& pre)>;

 protected:
  friend class CStyleWalk;  // the walker behind render() (renderer/cstyle_walk.h) prints through the tables and hooks
  explicit CStyleRenderer(Dialect dialect);

  // ---- the hooks ----
  // The type of a value of `dt` (in registers): "float", "unsigned char", "float4" ...
  virtual std::string type_name(DType dt) const;
  virtual std::string render_cast(DType to, DType from, const std::string& x, Prelude& pre) const;
  virtual std::string render_bitcast(DType to, DType from, const std::string& x, Prelude& pre) const;
  // The expression that reads buf[idx] as a value of dt (dt.count > 1: a vector load).
  virtual std::string render_load(const std::string& buf, const std::string& idx, DType dt, Prelude& pre) const;
  // The statement that writes value (of dt) to buf[idx], without the trailing newline.
  virtual std::string render_store(const std::string& buf, const std::string& idx, const std::string& value, DType dt,
                                   Prelude& pre) const;
  // A workgroup's shared buffer of `size` elements of dt at byte `offset` of the kernel's shared memory (see
  // shared_bytes in renderer.h), as a declaration without the `;`. The default throws: no shared memory.
  virtual std::string render_define_local(const std::string& name, DType dt, int64_t size, int64_t offset,
                                          Prelude& pre) const;
  // The function's head: "void name(float* restrict data0, const float* restrict data1, int n) {\n", and any lines
  // the body starts with.
  virtual std::string kernel_head(const std::string& name, const std::vector<Param>& params, const Prelude& pre) const;
  // Definitions the kernel needs ahead of it (typedefs, helpers, INFINITY ...): by default the helpers.
  virtual std::string prefix(const Prelude& pre) const;
  // Anything after the kernel function (the CPU's entry trampoline).
  virtual std::string epilogue(const std::string& name, const std::vector<Param>& params) const { return ""; }
  // Tensor cores, asynchronous copies and the like (renderer/matrix_syntax.h); none by default.
  virtual const MatrixSyntax* matrix_syntax() const { return nullptr; }

  // ---- the tables ----
  Dialect dialect_;
  // The shared op spellings: operands come rendered and parenthesized where needed; dt is the result dtype (for
  // comparisons, the operands').
  using OpSpelling = std::function<std::string(const std::vector<std::string>& a, DType dt)>;
  std::array<OpSpelling, kNumOps> code_for_op_{};
  // The language's own rules (ALU ops, VECTORIZE, GEP), tried before the shared spelling; set in its constructor.
  std::array<ExprRule, kNumOps> rules_{};

  // ---- spellings from the tables ----
  std::string buffer_type_name(DType dt) const;  // the element type of a buffer of dt (a DEFINE_GLOBAL's pointee)
  std::string math_fn(const char* name, DType dt) const;  // "exp2" -> "__builtin_exp2f" (C), "exp2f" (CUDA) ...
  std::string param_decl(const Param& p) const;           // one parameter of the default kernel_head
  std::string render_const(const UOp& u, Prelude& pre) const;
  // A float constant of dtype dt (finite, inf or NaN), exact: printed with enough digits to round-trip.
  std::string float_literal(double v, DType dt, Prelude& pre) const;
  // An ALU op: the language's rule if it has one for the op, else the shared spelling, with integer IDIV/MOD and
  // shifts through helpers that never trap (exec_alu's semantics), narrow integer results wrapped back into
  // their range and 16-bit float results rounded back into their format.
  std::string render_alu(const UOp& u, const std::vector<std::string>& operands, Prelude& pre) const;
  std::string render_vectorize(const UOp& u, const std::vector<std::string>& elems, Prelude& pre) const;
  std::string render_gep(const UOp& u, const std::string& vec, Prelude& pre) const;
  std::string lane(const std::string& vec, int64_t i) const;  // lane i of a vector, as the dialect spells it
  std::string render_special(const SpecialArg& s) const;
  std::string render_barrier() const;
  // How many times operand i appears in the op's spelling: an operand that appears twice is given a
  // variable rather than inlined, so nested ops cannot blow up the source exponentially.
  int operand_uses(const UOp& u, size_t i) const;

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
  static std::map<Scalar, std::string> gpu_buffer_types();

 public:
  // Shared helpers for subclasses and the walker.
  static std::string strip_parens(const std::string& s);  // "(a+b)" -> "a+b", "(a)+(b)" unchanged
  static bool is_narrow_int(DType dt);                    // bool, 8- and 16-bit ints: C computes them as int
};

}  // namespace tg
