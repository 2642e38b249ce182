// CStyleRenderer: the C spellings shared by every C-like backend (the statement walker: renderer/cstyle_walk.cpp).
#include "renderer/cstyle.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <limits>
#include <map>
#include <unordered_map>
#include <utility>

#include "renderer/tensor_core.h"
#include "tg/error.h"
#include "uop/exec_alu.h"

namespace tg {
namespace {

bool int_like(DType dt) { return dt.is_int() || dt.is_bool(); }

// An operand that starts with '-' gets parentheses where C would read "--" as a decrement ("(a--1)").
std::string neg_safe(const std::string& s) { return !s.empty() && s[0] == '-' ? "(" + s + ")" : s; }

std::string identifier(const std::string& type) {  // "unsigned char" -> "unsigned_char", for helper names
  std::string s;
  for (char c : type) s += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return s;
}


// The unsigned type of the same width, for negation without signed overflow.
DType unsigned_of(DType dt) {
  switch (dt.scalar) {
    case Scalar::Int8: return dtypes::uint8;
    case Scalar::Int16: return dtypes::uint16;
    case Scalar::Int32: return dtypes::uint32;
    case Scalar::Int64: return dtypes::uint64;
    default: return dt.scalar_type();
  }
}

// A CONST's integer value wrapped into its dtype (a CONST -1 of uint8 means 255).
int64_t const_int(const UOp& u) {
  DType dt = u.dtype.scalar_type();
  return truncate_num(Num{u.const_int_value(), 0}, dt).i;
}

// The bit width C computes a shift of dt in (narrow types are promoted to int).
int promoted_bits(DType dt) { return std::max(32, dt.scalar_type().itemsize() * 8); }

std::string shortest(double v, bool as_float) {
  char buf[64];
  auto r = as_float ? std::to_chars(buf, buf + sizeof(buf), static_cast<float>(v))
                    : std::to_chars(buf, buf + sizeof(buf), v);
  std::string s(buf, r.ptr);
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

}  // namespace

void CStyleRenderer::Prelude::need(const std::string& name, const std::function<std::string()>& definition) {
  for (auto& h : helpers)
    if (h.first == name) return;
  helpers.emplace_back(name, definition());
}

void CStyleRenderer::Prelude::need_vector_type(DType dt) {
  if (std::find(vector_types.begin(), vector_types.end(), dt) == vector_types.end()) vector_types.push_back(dt);
}

CStyleRenderer::CStyleRenderer(Dialect dialect) : dialect_(std::move(dialect)) {
  using V = std::vector<std::string>;
  auto bin = [](const char* sym) {
    return [sym](const V& a, DType) { return "(" + a[0] + sym + a[1] + ")"; };
  };
  auto& t = code_for_op_;
  t[int(Ops::ADD)] = bin("+");
  t[int(Ops::SUB)] = [](const V& a, DType) { return "(" + a[0] + "-" + neg_safe(a[1]) + ")"; };
  t[int(Ops::MUL)] = bin("*");
  t[int(Ops::FDIV)] = bin("/");
  t[int(Ops::CMPLT)] = bin("<");
  t[int(Ops::CMPNE)] = bin("!=");
  t[int(Ops::AND)] = bin("&");
  t[int(Ops::OR)] = bin("|");
  t[int(Ops::XOR)] = bin("^");
  t[int(Ops::SHL)] = bin("<<");
  t[int(Ops::SHR)] = bin(">>");
  // Integer IDIV/MOD reach the table only with a safe constant divisor (see render_alu).
  // Float IDIV is trunc(a/b) of the exact quotient: a float quotient may already round up to the next
  // integer (1/0.33333334f == 3.0f), so narrower floats divide in double.
  t[int(Ops::IDIV)] = [this](const V& a, DType dt) {
    if (!dt.is_float()) return "(" + a[0] + "/" + a[1] + ")";
    const std::string trunc = math_fn("trunc", dtypes::float64);
    if (dt.scalar == Scalar::Float64) return trunc + "(" + a[0] + "/" + a[1] + ")";
    return "((" + type_name(dt) + ")" + trunc + "((double)" + a[0] + "/" + a[1] + "))";
  };
  t[int(Ops::MOD)] = [this](const V& a, DType dt) {
    if (dt.is_float()) return math_fn("fmod", dt) + "(" + a[0] + "," + a[1] + ")";
    return "(" + a[0] + "%" + a[1] + ")";
  };
  // `a<b || b!=b ? b : a`: a NaN in either operand wins, exactly as exec_alu's MAX (so not fmax, which drops
  // NaNs): max reductions and maximum/minimum propagate NaN as torch's, whatever the order.
  t[int(Ops::MAX)] = [](const V& a, DType) {
    return "((" + a[0] + "<" + a[1] + "||" + a[1] + "!=" + a[1] + ")?" + a[1] + ":" + a[0] + ")";
  };
  t[int(Ops::NEG)] = [](const V& a, DType) { return "(-" + neg_safe(a[0]) + ")"; };
  t[int(Ops::RECIP)] = [](const V& a, DType) { return "(1/" + a[0] + ")"; };
  t[int(Ops::WHERE)] = [](const V& a, DType) { return "(" + a[0] + "?" + a[1] + ":" + a[2] + ")"; };
  t[int(Ops::MULACC)] = [](const V& a, DType) { return "((" + a[0] + "*" + a[1] + ")+" + a[2] + ")"; };
  auto fn = [this](const char* base) {
    return [this, base](const V& a, DType dt) { return math_fn(base, dt) + "(" + a[0] + ")"; };
  };
  t[int(Ops::EXP2)] = fn("exp2");
  t[int(Ops::LOG2)] = fn("log2");
  t[int(Ops::SIN)] = fn("sin");
  t[int(Ops::SQRT)] = fn("sqrt");
  t[int(Ops::TRUNC)] = [this](const V& a, DType dt) {
    return int_like(dt) ? a[0] : math_fn("trunc", dt) + "(" + a[0] + ")";
  };
}

std::string CStyleRenderer::math_fn(const char* name, DType dt) const {
  return dialect_.math_prefix + name + (dialect_.math_float_suffix && dt.scalar != Scalar::Float64 ? "f" : "");
}

bool CStyleRenderer::supports(Ops op) const {
  if (op == Ops::THREEFRY || op == Ops::DOT4) return true;  // rendered through a helper
  if (op == Ops::CAST || op == Ops::BITCAST) return true;
  return is_alu(op) && bool(code_for_op_[int(op)]);
}

bool CStyleRenderer::rounds_16bit(Ops op) {
  switch (op) {
    case Ops::CMPLT: case Ops::CMPNE: case Ops::MAX: case Ops::WHERE: case Ops::NEG: case Ops::TRUNC: return false;
    default: return true;
  }
}

bool CStyleRenderer::needs_double_path(DType from, DType to) {
  if (from.scalar == Scalar::Float64) return true;
  if (!from.is_int()) return false;
  return is_bf16(to) ? from.itemsize() >= 4 : from.itemsize() >= 8;
}

bool CStyleRenderer::is_narrow_int(DType dt) {
  return dt.is_bool() || ((dt.is_int()) && dt.scalar_type().itemsize() < 4);
}

std::string CStyleRenderer::strip_parens(const std::string& s) {
  if (s.size() < 2 || s.front() != '(' || s.back() != ')') return s;
  int depth = 0;
  for (size_t i = 0; i < s.size(); i++) {
    depth += s[i] == '(' ? 1 : s[i] == ')' ? -1 : 0;
    if (depth == 0 && i + 1 < s.size()) return s;  // the first '(' closes before the end: "(a)+(b)"
  }
  return s.substr(1, s.size() - 2);
}

// ---- types and constants ----

std::string CStyleRenderer::type_name(DType dt) const {
  if (dt.count > 1) {
    static const std::map<Scalar, const char*> vec_base = {
        {Scalar::Bool, "bool"},     {Scalar::Int8, "char"},    {Scalar::UInt8, "uchar"},   {Scalar::Int16, "short"},
        {Scalar::UInt16, "ushort"}, {Scalar::Int32, "int"},    {Scalar::UInt32, "uint"},   {Scalar::Int64, "long"},
        {Scalar::UInt64, "ulong"},  {Scalar::Float16, "half"}, {Scalar::BFloat16, "bf16"}, {Scalar::Float32, "float"},
        {Scalar::Float64, "double"}};
    return vec_base.at(dt.scalar) + std::to_string(dt.count);
  }
  switch (dt.scalar) {
    case Scalar::Void: return "void";
    case Scalar::Bool: return "bool";
    case Scalar::Int8: return "signed char";
    case Scalar::UInt8: return "unsigned char";
    case Scalar::Int16: return "short";
    case Scalar::UInt16: return "unsigned short";
    case Scalar::Int32: return "int";
    case Scalar::UInt32: return "unsigned int";
    case Scalar::Int64: return "long";
    case Scalar::UInt64: return "unsigned long";
    case Scalar::Float16: return "half";
    case Scalar::BFloat16: return "__bf16";
    case Scalar::Float32: return "float";
    case Scalar::Float64: return "double";
  }
  throw Error("render: no C type for " + dt.repr());
}

std::string CStyleRenderer::gpu_scalar_name(DType dt) const {
  switch (dt.scalar) {
    case Scalar::Int8: return "char";  // signed in both
    case Scalar::UInt8: return "uchar";
    case Scalar::UInt16: return "ushort";
    case Scalar::UInt32: return "uint";
    case Scalar::Int64: return "long";
    case Scalar::UInt64: return "ulong";
    case Scalar::Float16: case Scalar::BFloat16: return "float";  // values in registers; see gpu_buffer_types
    default: return CStyleRenderer::type_name(dt.scalar_type());
  }
}

std::map<Scalar, std::string> CStyleRenderer::gpu_buffer_types() {
  return {{Scalar::Float16, "half"}, {Scalar::BFloat16, "ushort"}, {Scalar::Bool, "uchar"}};
}

std::string CStyleRenderer::buffer_type_name(DType dt) const {
  auto it = dialect_.buffer_types.find(dt.scalar);
  return it != dialect_.buffer_types.end() && dt.count == 1 ? it->second : type_name(dt);
}

std::string CStyleRenderer::float_literal(double v, DType dt, Prelude& pre) const {
  if (std::isnan(v)) {
    pre.nan = true;
    return "NAN";
  }
  if (std::isinf(v)) {
    pre.inf = true;
    return v > 0 ? "INFINITY" : "-INFINITY";
  }
  switch (dt.scalar) {
    case Scalar::Float64: return shortest(v, false);
    case Scalar::Float32: return shortest(v, true) + "f";
    // a 16-bit constant is the float (register) holding its exactly representable rounded value
    case Scalar::Float16: return shortest(half_bits_to_double(double_to_half_bits(v)), true) + "f";
    case Scalar::BFloat16: return shortest(bf16_bits_to_double(double_to_bf16_bits(v)), true) + "f";
    default: throw Error("render: float literal of " + dt.repr());
  }
}

std::string CStyleRenderer::render_const(const UOp& u, Prelude& pre) const {
  DType dt = u.dtype.scalar_type();
  if (u.dtype.count > 1) throw Error("render: vector CONST " + u.dtype.repr() + " (expected VECTORIZE of scalars)");
  if (dt.is_float()) return float_literal(u.const_value(), dt, pre);
  if (dt.is_bool()) return u.const_int_value() ? "1" : "0";
  if (!dt.is_int()) throw Error("render: CONST of " + dt.repr());
  int64_t v = const_int(u);
  switch (dt.scalar) {
    case Scalar::Int64:
      return v == std::numeric_limits<int64_t>::min() ? "(-9223372036854775807" + dialect_.int64_suffix + "-1)"
                                                       : std::to_string(v) + dialect_.int64_suffix;
    case Scalar::UInt64: return std::to_string(static_cast<uint64_t>(v)) + "u" + dialect_.int64_suffix;
    case Scalar::UInt32: return std::to_string(v) + "u";
    case Scalar::Int32: return v == std::numeric_limits<int32_t>::min() ? "(-2147483647-1)" : std::to_string(v);
    default: return std::to_string(v);  // 8/16-bit: an int literal in range, converted where it is used
  }
}

// ---- ops ----

int CStyleRenderer::operand_uses(const UOp& u, size_t i) const { return u.op == Ops::MAX ? (i == 1 ? 3 : 2) : 1; }

namespace {
// DOT4 on one int: unsigned bytes of a times signed bytes of b, added to c (as exec_alu: wrapping, so summed
// unsigned).
std::string dot4_scalar_helper(const std::string& q) {
  return q +
         " int tg_dot4(int a, int b, int c) {\n"
         "  unsigned int s = (unsigned int)c;\n"
         "  for (int k = 0; k < 32; k += 8) s += (unsigned int)((int)(((unsigned int)a >> k) & 255u) * "
         "(int)(signed char)((unsigned int)b >> k));\n"
         "  return (int)s;\n"
         "}";
}

// Threefry-2x32, 20 rounds: the low/high words of x are the counter, of key the key (as exec_alu).
std::string threefry_helper(const std::string& q) {
  return q +
         " unsigned long tg_threefry(unsigned long x, unsigned long key) {\n"
         "  const int rot[2][4] = {{13, 15, 26, 6}, {17, 29, 16, 24}};\n"
         "  unsigned int k0 = (unsigned int)key, k1 = (unsigned int)(key >> 32);\n"
         "  unsigned int ks[3] = {k1, k0 ^ k1 ^ 0x1BD11BDAu, k0};\n"
         "  unsigned int x0 = (unsigned int)x + ks[2], x1 = (unsigned int)(x >> 32) + ks[0];\n"
         "  for (int i = 0; i < 5; i++) {\n"
         "    for (int j = 0; j < 4; j++) {\n"
         "      int k = rot[i % 2][j];\n"
         "      x0 += x1; x1 = ((x1 << k) | (x1 >> (32 - k))) ^ x0;\n"
         "    }\n"
         "    x0 += ks[i % 3]; x1 += ks[(i + 1) % 3] + (unsigned int)(i + 1);\n"
         "  }\n"
         "  return ((unsigned long)x1 << 32) | x0;\n"
         "}";
}

}  // namespace

std::string CStyleRenderer::render_alu(const UOp& u, const std::vector<std::string>& a, Prelude& pre) const {
  Ops op = u.op;
  DType dt = u.dtype;
  DType src_dt = op == Ops::WHERE ? u.src.at(1)->dtype : u.src.at(0)->dtype;
  if (const ExprRule& rule = rules_[int(op)])
    if (std::optional<std::string> e = rule(u, a, pre)) return *e;
  const std::string q = dialect_.helper_qualifier;
  if (int_like(dt) && dt.count == 1) {
    const std::string T = type_name(dt), UT = type_name(unsigned_of(dt)), id = identifier(T);
    const bool sgn = !dt.is_unsigned() && !dt.is_bool();
    const UOp& rhs = *u.src.back();
    // C traps on x/0 and INT_MIN/-1; exec_alu defines them (0, and wrapping). Constant divisors other than
    // 0 and -1 (all of index math) keep the plain operator.
    if (op == Ops::IDIV || op == Ops::MOD) {
      bool plain = rhs.is_const() && const_int(rhs) != 0 && !(sgn && const_int(rhs) == -1);
      if (!plain) {
        std::string name = std::string(op == Ops::IDIV ? "tg_idiv_" : "tg_mod_") + id;
        pre.need(name, [&] {
          std::string body = op == Ops::IDIV
              ? (sgn ? "b == 0 ? 0 : b == -1 ? (" + T + ")(-(" + UT + ")a) : a / b" : "b == 0 ? 0 : a / b")
              : (sgn ? "b == 0 || b == -1 ? 0 : a % b" : "b == 0 ? 0 : a % b");
          return q + " " + T + " " + name + "(" + T + " a, " + T + " b) { return " + body + "; }";
        });
        return name + "(" + a[0] + ", " + a[1] + ")";
      }
    }
    // Shifts by a negative amount or past the width are undefined in C; exec_alu shifts in 64 bits.
    if (op == Ops::SHL || op == Ops::SHR) {
      bool plain = rhs.is_const() && const_int(rhs) >= 0 && const_int(rhs) < promoted_bits(dt);
      if (!plain) {
        std::string name = std::string(op == Ops::SHL ? "tg_shl_" : "tg_shr_") + id;
        pre.need(name, [&] {
          std::string out_of_range = sgn ? "b < 0 || b >= 64" : "b >= 64";
          // (64-bit types as the backend spells them: OpenCL C has no `long long`)
          const std::string I64 = type_name(dtypes::int64), U64 = type_name(dtypes::uint64);
          std::string body = op == Ops::SHL
              ? out_of_range + " ? 0 : (" + T + ")((" + U64 + ")a << b)"
              : sgn ? out_of_range + " ? (a < 0 ? -1 : 0) : (" + T + ")((" + I64 + ")a >> b)"
                    : out_of_range + " ? 0 : (" + T + ")((" + U64 + ")a >> b)";
          return q + " " + T + " " + name + "(" + T + " a, " + T + " b) { return " + body + "; }";
        });
        return name + "(" + a[0] + ", " + a[1] + ")";
      }
    }
    // Float math on integers (never emitted by codegen, but defined by exec_alu): compute in double and
    // convert back, which also keeps RECIP/FDIV by zero from trapping.
    if (op == Ops::RECIP || op == Ops::FDIV || op == Ops::EXP2 || op == Ops::LOG2 || op == Ops::SIN ||
        op == Ops::SQRT) {
      std::vector<std::string> d;
      for (auto& x : a) d.push_back("(double)" + x);
      return render_cast(dt, dtypes::float64, code_for_op_[int(op)](d, dtypes::float64), pre);
    }
    if (op == Ops::DOT4) {
      pre.need("tg_dot4", [&] { return dot4_scalar_helper(q); });
      return "tg_dot4(" + a[0] + ", " + a[1] + ", " + a[2] + ")";
    }
    if (op == Ops::THREEFRY) {
      pre.need("tg_threefry", [&] { return threefry_helper(q); });
      return "tg_threefry(" + a[0] + ", " + a[1] + ")";
    }
  }
  // A signed left shift into or past the sign bit is undefined in C; shift the unsigned bits instead.
  if (op == Ops::SHL && dt.is_int() && !dt.is_unsigned() && dt.count == 1) {
    std::string ut = dt.itemsize() == 8 ? type_name(dtypes::uint64) : type_name(dtypes::uint32);
    return "((" + type_name(dt) + ")((" + ut + ")" + a[0] + "<<" + a[1] + "))";
  }
  const OpSpelling& spell = code_for_op_[int(op)];
  if (!spell) throw Error(std::string("render: ") + op_name(op) + " is not supported by the " + device() + " renderer");
  std::string e = spell(a, is_comparison(op) ? src_dt : dt);
  // C computes bool/char/short in int: put the result back into its type, as a store would.
  bool may_leave_range = op == Ops::ADD || op == Ops::SUB || op == Ops::MUL || op == Ops::NEG || op == Ops::SHL ||
                         op == Ops::MULACC;
  if (is_narrow_int(dt) && dt.count == 1 && may_leave_range) e = "((" + type_name(dt) + ")" + e + ")";
  if (is_16bit_float(dt) && rounds_16bit(op)) return (is_half(dt) ? "tg_rh(" : "tg_rbf(") + strip_parens(e) + ")";
  return e;
}

std::string CStyleRenderer::render_cast(DType to, DType from, const std::string& x, Prelude& pre) const {
  if (to == from) return x;
  if (to.count > 1 || from.count > 1) throw Error("render: vector CAST " + from.repr() + " -> " + to.repr());
  if (from.is_float() && to.is_int()) {
    // C leaves float->int out of range undefined; exec_alu gives 0 for NaN/inf and wraps the rest.
    pre.need("tg_ftoi", [&] {
      const std::string I64 = type_name(dtypes::int64), U64 = type_name(dtypes::uint64);
      return dialect_.helper_qualifier + " " + I64 + " tg_ftoi(double x) {\n"
             "  if (!(x > -0x1p64 && x < 0x1p64)) return 0;\n"
             "  double t = " + math_fn("trunc", dtypes::float64) + "(x);\n"
             "  if (t >= 0x1p63) return (" + I64 + ")(" + U64 + ")t;\n"
             "  if (t < -0x1p63) return (" + I64 + ")((" + U64 + ")0 - (" + U64 + ")(-t));\n"
             "  return (" + I64 + ")t;\n"
             "}";
    });
    return "((" + type_name(to) + ")tg_ftoi(" + x + "))";
  }
  return "((" + type_name(to) + ")(" + x + "))";
}

std::string CStyleRenderer::render_bitcast(DType to, DType from, const std::string& x, Prelude& pre) const {
  if (to.itemsize() != from.itemsize())
    throw Error("render: BITCAST between sizes (" + from.repr() + " -> " + to.repr() + ")");
  // Reading another member of a union is the one type pun C defines.
  return "(((union { " + type_name(from) + " from; " + type_name(to) + " to; }){.from = " + x + "}).to)";
}

// ---- memory and vectors ----

std::string CStyleRenderer::render_load(const std::string& buf, const std::string& idx, DType dt,
                                        Prelude& pre) const {
  if (dt.count > 1) return "(*((" + type_name(dt) + "*)(" + buf + "+" + idx + ")))";
  return buf + "[" + idx + "]";
}

std::string CStyleRenderer::render_store(const std::string& buf, const std::string& idx, const std::string& value,
                                         DType dt, Prelude& pre) const {
  if (dt.count > 1) return "*((" + type_name(dt) + "*)(" + buf + "+" + idx + ")) = " + value + ";";
  return buf + "[" + idx + "] = " + value + ";";
}

std::string CStyleRenderer::render_vectorize(const UOp& u, const std::vector<std::string>& elems, Prelude& pre) const {
  if (const ExprRule& rule = rules_[int(Ops::VECTORIZE)])
    if (std::optional<std::string> e = rule(u, elems, pre)) return *e;
  std::string s = dialect_.vector_open + type_name(u.dtype) + dialect_.vector_mid;
  for (size_t i = 0; i < elems.size(); i++)
    s += (i ? "," : "") + (dialect_.strip_vector_elems ? strip_parens(elems[i]) : elems[i]);
  return s + dialect_.vector_close;
}

std::string CStyleRenderer::render_gep(const UOp& u, const std::string& vec, Prelude& pre) const {
  if (const ExprRule& rule = rules_[int(Ops::GEP)])
    if (std::optional<std::string> e = rule(u, {vec}, pre)) return *e;
  return lane(vec, u.get<int64_t>());
}

std::string CStyleRenderer::lane(const std::string& vec, int64_t i) const {
  const std::string& names = dialect_.lane_names;
  if (names.empty()) return vec + "[" + std::to_string(i) + "]";
  if (i < 0 || i >= int64_t(names.size()))
    throw Error("render: " + device() + " vector lane " + std::to_string(i) + " (its vectors have " +
                std::to_string(names.size()) + " lanes at most)");
  return vec + dialect_.lane_prefix + names[size_t(i)];
}

std::string CStyleRenderer::render_special(const SpecialArg& s) const {
  const std::string& dims = dialect_.launch_dims;
  if (dialect_.launch_index[0].empty())
    throw Error("render: SPECIAL " + s.name() + " (a GPU launch index) on " + device() + ", which has no launch grid");
  if (s.dim < 0 || s.dim >= int(dims.size()) || s.axis == LaunchAxis::CORE)
    throw Error("render: " + device() + " SPECIAL " + s.name() + " (expected a group, local or global index along " +
                dims + ")");
  std::string e = dialect_.launch_index[size_t(s.axis)];
  for (size_t at = e.find('%'); at != std::string::npos; at = e.find('%', at + 1)) e[at] = dims[size_t(s.dim)];
  return e;
}

std::string CStyleRenderer::render_barrier() const {
  if (dialect_.barrier.empty()) throw Error("render: BARRIER on " + device() + ", which has no workgroups");
  return dialect_.barrier;
}

std::string CStyleRenderer::render_define_local(const std::string& name, DType dt, int64_t size, int64_t,
                                                Prelude&) const {
  throw Error("render: DEFINE_LOCAL " + name + " on " + device() + ", which has no shared memory");
}

// ---- the function ----

std::string CStyleRenderer::param_decl(const Param& p) const {
  if (p.is_tensor_map)
    throw Error("render: " + device() + " kernel parameter " + p.name + " is a tensor map (CUDA only)");
  if (!p.is_buffer) return type_name(p.dtype) + " " + p.name;
  return dialect_.buffer_qualifier + (p.written ? "" : "const ") + buffer_type_name(p.dtype.base().scalar_type()) +
         "* " + dialect_.restrict_ + " " + p.name;
}

std::string CStyleRenderer::kernel_head(const std::string& name, const std::vector<Param>& params,
                                        const Prelude&) const {
  std::string s = dialect_.kernel_prefix + "void " + name + "(";
  for (size_t i = 0; i < params.size(); i++) s += (i ? ", " : "") + param_decl(params[i]);
  return s + ") {\n";
}

std::string CStyleRenderer::prefix(const Prelude& pre) const {
  std::string s;
  for (auto& [name, def] : pre.helpers) s += def + "\n";
  return s;
}

}  // namespace tg
