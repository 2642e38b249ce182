// LLVMWalk's values (see llvmir_walk.h): constants, ALU ops, casts and bitcasts in LLVM IR, each defined where
// LLVM leaves it undefined (division by 0, shifts past the width, float to int out of range) exactly as exec_alu
// defines it, and 16-bit floats computed in float and rounded back after every op, as the C renderer does.
#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstring>

#include "renderer/llvmir_walk.h"
#include "tg/error.h"
#include "uop/exec_alu.h"

namespace tg {
namespace {

bool is_16bit_float(DType dt) { return dt.scalar == Scalar::Float16 || dt.scalar == Scalar::BFloat16; }
bool int_like(DType dt) { return dt.is_int() || dt.is_bool(); }
int bits_of(DType dt) { return dt.scalar_type().itemsize() * 8; }

// Ops whose 16-bit result may fall between two values of its format (rounded again); the others are exact.
bool rounds_16bit(Ops op) {
  switch (op) {
    case Ops::CMPLT:
    case Ops::CMPNE:
    case Ops::MAX:
    case Ops::WHERE:
    case Ops::NEG:
    case Ops::TRUNC:
      return false;
    default:
      return true;
  }
}

// Whether converting `from` to the 16-bit `to` goes through double (one rounding): through float it could round
// twice (double is exact for all but 64-bit integers, whose double rounding is harmless at 16-bit precision).
bool needs_double_path(DType from, DType to) {
  if (from.scalar == Scalar::Float64) return true;
  if (!from.is_int()) return false;
  return to.scalar == Scalar::BFloat16 ? from.itemsize() >= 4 : from.itemsize() >= 8;
}

DType with_scalar(DType scalar, DType like) { return scalar.vec(like.count); }

}  // namespace

// ---- types and literals ----

std::string LLVMWalk::scalar_type(DType dt) {
  switch (dt.scalar) {
    case Scalar::Bool:
      return "i1";
    case Scalar::Int8:
    case Scalar::UInt8:
      return "i8";
    case Scalar::Int16:
    case Scalar::UInt16:
      return "i16";
    case Scalar::Int32:
    case Scalar::UInt32:
      return "i32";
    case Scalar::Int64:
    case Scalar::UInt64:
      return "i64";
    case Scalar::Float16:
    case Scalar::BFloat16:
    case Scalar::Float32:
      return "float";
    case Scalar::Float64:
      return "double";
    default:
      throw Error("render: no LLVM type for " + dt.repr());
  }
}

std::string LLVMWalk::type(DType dt) {
  if (dt.ptr) throw Error("render: a pointer " + dt.repr() + " used as a value on LLVM");
  const std::string s = scalar_type(dt);
  return dt.count > 1 ? "<" + std::to_string(dt.count) + " x " + s + ">" : s;
}

std::string LLVMWalk::buffer_type(DType dt) {
  if (dt.is_bool()) return "i8";  // (a C _Bool: one byte)
  if (dt.scalar == Scalar::Float16) return "half";
  if (dt.scalar == Scalar::BFloat16) return "i16";
  return scalar_type(dt);
}

std::string LLVMWalk::splat(DType dt, const std::string& lit) {
  if (dt.count == 1) return lit;
  const std::string s = scalar_type(dt);
  std::string v = "<";
  for (int k = 0; k < dt.count; k++) v += (k ? ", " : "") + s + " " + lit;
  return v + ">";
}

std::string LLVMWalk::int_literal(int64_t v, DType dt) {
  if (dt.is_bool()) return v ? "true" : "false";
  const int bits = bits_of(dt);
  if (bits < 64) v = int64_t(uint64_t(v) << (64 - bits)) >> (64 - bits);  // wrapped, then read signed
  return std::to_string(v);
}

// LLVM reads float and double constants as the hex of a double; every float is one exactly.
std::string LLVMWalk::float_literal(double v) {
  uint64_t bits;
  std::memcpy(&bits, &v, 8);
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%016" PRIX64, bits);
  return buf;
}

void LLVMWalk::constant(size_t i, const UOp& u) {
  const DType dt = u.dtype;
  if (dt.count > 1) throw Error(where(i) + ": vector CONST " + dt.repr() + " (expected VECTORIZE of scalars)");
  if (dt.is_float()) {
    double v = u.const_value();
    if (dt.scalar == Scalar::Float16) v = half_bits_to_double(double_to_half_bits(v));
    if (dt.scalar == Scalar::BFloat16) v = bf16_bits_to_double(double_to_bf16_bits(v));
    if (dt.scalar == Scalar::Float32) v = double(float(v));
    r_[i] = float_literal(v);
  } else if (int_like(dt)) {
    r_[i] = int_literal(truncate_num(Num{u.const_int_value(), 0}, dt).i, dt);
  } else {
    throw Error(where(i) + ": CONST of " + dt.repr());
  }
}

// ---- expressions ----

// Products of float32/float64 (scalars or vectors) read only by a sum of the same type.
bool LLVMWalk::defers_mul(size_t i, const UOp& u) const {
  if (u.op != Ops::MUL || (u.dtype.scalar != Scalar::Float32 && u.dtype.scalar != Scalar::Float64)) return false;
  const UOp& user = *uops_[user_[i]];
  return uses_[i] == 1 && user.op == Ops::ADD && user.dtype == u.dtype;
}

std::string LLVMWalk::fused_add(const UOp& u, const std::vector<std::string>& a) {
  for (size_t k = 0; k < 2; k++) {
    auto it = deferred_mul_.find(pos_.at(u.src[k].get()));
    if (it == deferred_mul_.end()) continue;
    const auto [x, y] = it->second;
    deferred_mul_.erase(it);
    std::string other = a[1 - k];
    if (auto o = deferred_mul_.find(pos_.at(u.src[1 - k].get())); o != deferred_mul_.end()) {  // a*b + c*d
      other = float_op(Ops::MUL, u.dtype, {o->second.first, o->second.second});
      deferred_mul_.erase(o);
    }
    return intrinsic("fmuladd", u.dtype, {x, y, other});
  }
  return "";
}

void LLVMWalk::expression(size_t i, const UOp& u) {
  std::vector<std::string> a;
  for (size_t k = 0; k < u.src.size(); k++) a.push_back(operand(u, k));
  if (defers_mul(i, u)) {
    deferred_mul_[i] = {a[0], a[1]};
    return;
  }
  if (u.op == Ops::VECTORIZE) {
    if (u.dtype.count != int(a.size())) throw Error(where(i) + ": VECTORIZE of " + std::to_string(a.size()) + " lanes");
    const DType s = u.dtype.scalar_type();
    if (std::all_of(u.src.begin(), u.src.end(), [&](const UOpPtr& x) { return x == u.src[0]; })) {  // a splat
      const std::string one = def("vec", "insertelement " + type(u.dtype) + " undef, " + type(s) + " " + a[0] + ", i32 0");
      r_[i] = def("vec", "shufflevector " + type(u.dtype) + " " + one + ", " + type(u.dtype) + " undef, <" +
                             std::to_string(u.dtype.count) + " x i32> zeroinitializer");
      return;
    }
    std::string v = "undef";
    for (size_t k = 0; k < a.size(); k++)
      v = def("vec",
              "insertelement " + type(u.dtype) + " " + v + ", " + type(s) + " " + a[k] + ", i32 " + std::to_string(k));
    r_[i] = v;
  } else if (u.op == Ops::GEP) {
    if (u.dtype.count != 1) throw Error(where(i) + ": GEP of several lanes");
    r_[i] = def("gep",
                "extractelement " + type(u.src[0]->dtype) + " " + a[0] + ", i32 " + std::to_string(u.get<int64_t>()));
  } else if (u.op == Ops::CAST) {
    r_[i] = cast(u.dtype, u.src.at(0)->dtype, a.at(0));
  } else if (u.op == Ops::BITCAST) {
    r_[i] = bitcast(u.dtype, u.src.at(0)->dtype, a.at(0));
  } else {
    r_[i] = alu(u, a);
  }
}

std::string LLVMWalk::alu(const UOp& u, const std::vector<std::string>& a) {
  const DType dt = u.dtype, src_dt = u.op == Ops::WHERE ? u.src.at(1)->dtype : u.src.at(0)->dtype;
  if (u.op == Ops::WHERE)
    return def("alu", "select " + type(u.src[0]->dtype) + " " + a[0] + ", " + type(dt) + " " + a[1] + ", " + type(dt) +
                          " " + a[2]);
  if (is_comparison(u.op)) {
    const std::string T = type(src_dt);
    if (src_dt.is_float())
      return def("alu", std::string(u.op == Ops::CMPLT ? "fcmp olt " : "fcmp une ") + T + " " + a[0] + ", " + a[1]);
    const char* lt = src_dt.is_unsigned() || src_dt.is_bool() ? "icmp ult " : "icmp slt ";
    return def("alu", std::string(u.op == Ops::CMPLT ? lt : "icmp ne ") + T + " " + a[0] + ", " + a[1]);
  }
  if (dt.is_float()) return float_alu(u, dt, a);
  if (dt.is_bool() && u.op != Ops::AND && u.op != Ops::OR && u.op != Ops::XOR) return bool_alu(u, a);
  return int_alu(u, dt, a);
}

// Bool arithmetic as exec_alu does it: in 64 bits, then `!= 0`.
std::string LLVMWalk::bool_alu(const UOp& u, const std::vector<std::string>& a) {
  const DType wide = with_scalar(dtypes::uint64, u.dtype);
  std::vector<std::string> w;
  for (const std::string& x : a) w.push_back(def("alu", "zext " + type(u.dtype) + " " + x + " to " + type(wide)));
  const std::string r = int_alu(u, wide, w);
  return def("alu", "icmp ne " + type(wide) + " " + r + ", " + splat(wide, "0"));
}

std::string LLVMWalk::int_alu(const UOp& u, DType dt, const std::vector<std::string>& a) {
  const std::string T = type(dt), zero = splat(dt, "0");
  const bool sgn = !dt.is_unsigned() && !dt.is_bool();
  auto bin = [&](const char* inst) { return def("alu", std::string(inst) + " " + T + " " + a[0] + ", " + a[1]); };
  switch (u.op) {
    case Ops::ADD:
      return bin("add");
    case Ops::SUB:
      return bin("sub");
    case Ops::MUL:
      return bin("mul");
    case Ops::AND:
      return bin("and");
    case Ops::OR:
      return bin("or");
    case Ops::XOR:
      return bin("xor");
    case Ops::NEG:
      return def("alu", "sub " + T + " " + zero + ", " + a[0]);
    case Ops::TRUNC:
      return a[0];
    case Ops::MAX: {
      const std::string lt = def("alu", std::string(sgn ? "icmp slt " : "icmp ult ") + T + " " + a[0] + ", " + a[1]);
      return def("alu", "select " + type(with_scalar(dtypes::bool_, dt)) + " " + lt + ", " + T + " " + a[1] + ", " + T +
                            " " + a[0]);
    }
    case Ops::MULACC: {
      const std::string p = bin("mul");
      return def("alu", "add " + T + " " + p + ", " + a[2]);
    }
    case Ops::IDIV:
    case Ops::MOD:
      return safe_div(u.op, dt, a[0], a[1], *u.src.back());
    case Ops::SHL:
    case Ops::SHR:
      return shift(u.op, dt, a[0], a[1], *u.src.back());
    case Ops::DOT4:
      return dot4(dt, a[0], a[1], a[2]);
    case Ops::THREEFRY:
      if (dt.count != 1 || bits_of(dt) != 64) throw Error("render: THREEFRY on " + dt.repr() + " (expected uint64)");
      declares_.insert("declare i64 @tg_llvm_threefry(i64, i64)");
      return def("alu", "call i64 @tg_llvm_threefry(i64 " + a[0] + ", i64 " + a[1] + ")");
    case Ops::RECIP:
    case Ops::FDIV:
    case Ops::EXP2:
    case Ops::LOG2:
    case Ops::SIN:
    case Ops::SQRT: {
      // float math on integers (never emitted by codegen, defined by exec_alu): in double, converted back
      const DType f64 = with_scalar(dtypes::float64, dt);
      std::vector<std::string> d;
      for (const std::string& x : a) d.push_back(cast(f64, dt, x));
      return cast(dt, f64, float_op(u.op, f64, d));
    }
    default:
      throw Error(std::string("render: ") + op_name(u.op) + " on " + dt.repr() + " is not supported on LLVM");
  }
}

// exec_alu's division: by 0 gives 0, INT_MIN / -1 wraps, x % -1 is 0 (LLVM's sdiv/srem are undefined there); a
// constant divisor other than 0 and -1 (all of index math) divides directly.
std::string LLVMWalk::safe_div(Ops op, DType dt, const std::string& a, const std::string& b, const UOp& rhs) {
  const std::string T = type(dt), B = type(with_scalar(dtypes::bool_, dt)), zero = splat(dt, "0");
  const bool sgn = !dt.is_unsigned() && !dt.is_bool();
  const char* inst = op == Ops::IDIV ? (sgn ? "sdiv" : "udiv") : (sgn ? "srem" : "urem");
  if (rhs.is_const()) {
    const int64_t v = truncate_num(Num{rhs.const_int_value(), 0}, dt.scalar_type()).i;
    if (v != 0 && !(sgn && v == -1)) return def("alu", std::string(inst) + " " + T + " " + a + ", " + b);
  }
  const std::string is0 = def("alu", "icmp eq " + T + " " + b + ", " + zero);
  std::string bad = is0, is_m1;
  if (sgn) {
    is_m1 = def("alu", "icmp eq " + T + " " + b + ", " + splat(dt, "-1"));
    bad = def("alu", "or " + B + " " + is0 + ", " + is_m1);
  }
  const std::string safe_b =
      def("alu", "select " + B + " " + bad + ", " + T + " " + splat(dt, "1") + ", " + T + " " + b);
  std::string q = def("alu", std::string(inst) + " " + T + " " + a + ", " + safe_b);
  if (op == Ops::MOD) return def("alu", "select " + B + " " + bad + ", " + T + " " + zero + ", " + T + " " + q);
  if (sgn) {
    const std::string neg = def("alu", "sub " + T + " " + zero + ", " + a);
    q = def("alu", "select " + B + " " + is_m1 + ", " + T + " " + neg + ", " + T + " " + q);
  }
  return def("alu", "select " + B + " " + is0 + ", " + T + " " + zero + ", " + T + " " + q);
}

// exec_alu shifts in 64 bits: an amount that is negative or past the width gives 0 (a signed right shift: the sign
// in every bit, which is `a >> (width - 1)`). LLVM's shifts are poison there, so the amount is made safe first.
std::string LLVMWalk::shift(Ops op, DType dt, const std::string& a, const std::string& b, const UOp& rhs) {
  const std::string T = type(dt), B = type(with_scalar(dtypes::bool_, dt)), zero = splat(dt, "0");
  const int w = bits_of(dt);
  const bool sgn = !dt.is_unsigned() && !dt.is_bool();
  const char* inst = op == Ops::SHL ? "shl" : sgn ? "ashr" : "lshr";
  if (rhs.is_const()) {
    const int64_t v = truncate_num(Num{rhs.const_int_value(), 0}, dt.scalar_type()).i;
    if (v >= 0 && v < w) return def("alu", std::string(inst) + " " + T + " " + a + ", " + b);
  }
  const std::string out = def("alu", "icmp uge " + T + " " + b + ", " + splat(dt, std::to_string(w)));
  const std::string amount = def("alu", "select " + B + " " + out + ", " + T + " " + zero + ", " + T + " " + b);
  const std::string r = def("alu", std::string(inst) + " " + T + " " + a + ", " + amount);
  const std::string fill =
      op == Ops::SHR && sgn ? def("alu", "ashr " + T + " " + a + ", " + splat(dt, std::to_string(w - 1))) : zero;
  return def("alu", "select " + B + " " + out + ", " + T + " " + fill + ", " + T + " " + r);
}

// c + sum over the 4 bytes k of unsigned(a_k) * signed(b_k), wrapping (exec_alu's DOT4), on ints or int vectors.
std::string LLVMWalk::dot4(DType dt, const std::string& a, const std::string& b, const std::string& c) {
  const std::string T = type(dt);
  std::string s = c;
  for (int k = 0; k < 32; k += 8) {
    const std::string ua = def("dot", "lshr " + T + " " + a + ", " + splat(dt, std::to_string(k)));
    const std::string ub = def("dot", "and " + T + " " + ua + ", " + splat(dt, "255"));
    const std::string sb = def("dot", "shl " + T + " " + b + ", " + splat(dt, std::to_string(24 - k)));
    const std::string sv = def("dot", "ashr " + T + " " + sb + ", " + splat(dt, "24"));
    const std::string p = def("dot", "mul " + T + " " + ub + ", " + sv);
    s = def("dot", "add " + T + " " + s + ", " + p);
  }
  return s;
}

std::string LLVMWalk::intrinsic(const std::string& base, DType dt, const std::vector<std::string>& args) {
  const std::string T = type(dt);
  const std::string suffix =
      (dt.count > 1 ? "v" + std::to_string(dt.count) : "") + (T.find("double") != std::string::npos ? "f64" : "f32");
  const std::string fn = "@llvm." + base + "." + suffix;
  std::string params, call;
  for (const std::string& x : args)
    params += (params.empty() ? "" : ", ") + T, call += (call.empty() ? "" : ", ") + T + " " + x;
  declares_.insert("declare " + T + " " + fn + "(" + params + ")");
  return def("alu", "call " + T + " " + fn + "(" + call + ")");
}

std::string LLVMWalk::float_alu(const UOp& u, DType dt, const std::vector<std::string>& a) {
  if (u.op == Ops::ADD && !deferred_mul_.empty())
    if (std::string fused = fused_add(u, a); !fused.empty()) return fused;
  if (u.op == Ops::MULACC && dt.count == 1) {
    // exec_alu rounds a*b+c once, from double: exact product, one sum, one rounding (float64: product, then sum)
    if (dt.scalar == Scalar::Float64) {
      const std::string p = def("alu", "fmul double " + a[0] + ", " + a[1]);
      return def("alu", "fadd double " + p + ", " + a[2]);
    }
    std::vector<std::string> d;
    for (const std::string& x : a) d.push_back(def("alu", "fpext float " + x + " to double"));
    const std::string p = def("alu", "fmul double " + d[0] + ", " + d[1]),
                      s = def("alu", "fadd double " + p + ", " + d[2]);
    return is_16bit_float(dt) ? from_double16(dt, s) : def("alu", "fptrunc double " + s + " to float");
  }
  if (u.op == Ops::IDIV && dt.scalar != Scalar::Float64) {
    // trunc of the exact quotient: a float quotient may already round up to the next integer
    const DType f64 = with_scalar(dtypes::float64, dt);
    const std::string q = float_op(Ops::IDIV, f64, {cast(f64, dt, a[0]), cast(f64, dt, a[1])});
    return is_16bit_float(dt) ? from_double16(dt, q) : def("alu", "fptrunc " + type(f64) + " " + q + " to " + type(dt));
  }
  const std::string r = float_op(u.op, dt, a);
  return is_16bit_float(dt) && rounds_16bit(u.op) ? round16(dt, r) : r;
}

// One float op in the register type of dt (float for 16-bit formats). No `contract`: a product fuses into the sum
// only as llvm.fmuladd (fused_add), where C's -ffp-contract=on fuses it, so both devices round the same way.
std::string LLVMWalk::float_op(Ops op, DType dt, const std::vector<std::string>& a) {
  const std::string T = type(dt), fl = " ";
  switch (op) {
    case Ops::ADD:
      return def("alu", "fadd" + fl + T + " " + a[0] + ", " + a[1]);
    case Ops::SUB:
      return def("alu", "fsub" + fl + T + " " + a[0] + ", " + a[1]);
    case Ops::MUL:
      return def("alu", "fmul" + fl + T + " " + a[0] + ", " + a[1]);
    case Ops::FDIV:
      return def("alu", "fdiv " + T + " " + a[0] + ", " + a[1]);
    case Ops::RECIP:
      return def("alu", "fdiv " + T + " " + splat(dt, float_literal(1.0)) + ", " + a[0]);
    case Ops::MOD:
      return def("alu", "frem " + T + " " + a[0] + ", " + a[1]);
    case Ops::NEG:
      return def("alu", "fneg " + T + " " + a[0]);
    case Ops::IDIV:
      return intrinsic("trunc", dt, {def("alu", "fdiv " + T + " " + a[0] + ", " + a[1])});
    case Ops::MAX: {
      // `a<b || b!=b ? b : a`: a NaN in either operand wins, as exec_alu's MAX
      const std::string B = type(with_scalar(dtypes::bool_, dt));
      const std::string lt = def("alu", "fcmp olt " + T + " " + a[0] + ", " + a[1]);
      const std::string nan = def("alu", "fcmp uno " + T + " " + a[1] + ", " + a[1]);
      const std::string take_b = def("alu", "or " + B + " " + lt + ", " + nan);
      return def("alu", "select " + B + " " + take_b + ", " + T + " " + a[1] + ", " + T + " " + a[0]);
    }
    case Ops::EXP2:  // (vectors: a polynomial, as the C device's; libm's exp2f would be a call per lane)
      if (dt.count > 1 && dt.scalar == Scalar::Float32)
        return call_helper("tg_exp2_v" + std::to_string(dt.count), T, T + " " + a[0]);
      return intrinsic("exp2", dt, a);
    case Ops::LOG2:
      return intrinsic("log2", dt, a);
    case Ops::SIN:
      return intrinsic("sin", dt, a);
    case Ops::SQRT:
      return intrinsic("sqrt", dt, a);
    case Ops::TRUNC:
      return intrinsic("trunc", dt, a);
    default:
      throw Error(std::string("render: ") + op_name(op) + " on " + dt.repr() + " is not supported on LLVM");
  }
}

// ---- 16-bit floats ----

std::string LLVMWalk::round16(DType dt, const std::string& x) {
  if (dt.count > 1)
    throw Error("render: LLVM vectors of " + dt.scalar_type().repr() + " in arithmetic (devectorize them)");
  if (dt.scalar == Scalar::Float16)
    return def("alu", "fpext half " + def("alu", "fptrunc float " + x + " to half") + " to float");
  return call_helper("tg_rbf", "float", "float " + x);
}

std::string LLVMWalk::from_double16(DType dt, const std::string& x) {
  if (dt.count > 1) throw Error("render: LLVM vector conversion to " + dt.repr());
  const char* fn = dt.scalar == Scalar::Float16 ? "tg_llvm_d2h" : "tg_llvm_d2bf";
  declares_.insert(std::string("declare i16 @") + fn + "(double)");
  return float16_from_bits(dt, def("alu", std::string("call i16 @") + fn + "(double " + x + ")"));
}

std::string LLVMWalk::bits16(DType from, const std::string& x) {
  if (from.count > 1) throw Error("render: LLVM vector store or bitcast of " + from.repr());
  if (from.scalar == Scalar::Float16)
    return def("alu", "bitcast half " + def("alu", "fptrunc float " + x + " to half") + " to i16");
  return call_helper("tg_f2bf", "i16", "float " + x);
}

std::string LLVMWalk::float16_from_bits(DType to, const std::string& bits) {
  const std::string n = std::to_string(to.count);
  auto vt = [&](const char* s) { return to.count > 1 ? "<" + n + " x " + s + ">" : std::string(s); };
  if (to.scalar == Scalar::Float16)
    return def("alu", "fpext " + vt("half") + " " +
                          def("alu", "bitcast " + vt("i16") + " " + bits + " to " + vt("half")) + " to " + vt("float"));
  const std::string w = def("alu", "zext " + vt("i16") + " " + bits + " to " + vt("i32"));
  const std::string hi = def("alu", "shl " + vt("i32") + " " + w + ", " + splat(dtypes::int32.vec(to.count), "16"));
  return def("alu", "bitcast " + vt("i32") + " " + hi + " to " + vt("float"));
}

// ---- casts ----

std::string LLVMWalk::cast(DType to, DType from, const std::string& x) {
  if (to == from) return x;
  if (to.count != from.count) throw Error("render: CAST between lane counts " + from.repr() + " -> " + to.repr());
  if (is_16bit_float(to)) {
    if (needs_double_path(from, to)) return from_double16(to, cast(with_scalar(dtypes::float64, to), from, x));
    return round16(to, cast(with_scalar(dtypes::float32, to), from, x));
  }
  if (is_16bit_float(from)) from = with_scalar(dtypes::float32, from);  // a float in registers already
  if (to == from) return x;
  const std::string F = type(from), T = type(to);
  if (to.is_bool())
    return from.is_float() ? def("cast", "fcmp une " + F + " " + x + ", " + splat(from, float_literal(0.0)))
                           : def("cast", "icmp ne " + F + " " + x + ", " + splat(from, "0"));
  if (from.is_bool()) return def("cast", std::string(to.is_float() ? "uitofp " : "zext ") + F + " " + x + " to " + T);
  if (from.is_int() && to.is_int()) {
    const int fb = bits_of(from), tb = bits_of(to);
    if (fb == tb) return x;
    return def("cast", std::string(tb < fb              ? "trunc "
                                   : from.is_unsigned() ? "zext "
                                                        : "sext ") +
                           F + " " + x + " to " + T);
  }
  if (from.is_int())
    return def("cast", std::string(from.is_unsigned() ? "uitofp " : "sitofp ") + F + " " + x + " to " + T);
  if (to.is_int()) {
    if (from.count > 1) throw Error("render: LLVM vector CAST " + from.repr() + " -> " + to.repr());
    const std::string d = from.scalar == Scalar::Float64 ? x : def("cast", "fpext float " + x + " to double");
    const std::string i = call_helper("tg_ftoi", "i64", "double " + d);
    return bits_of(to) == 64 ? i : def("cast", "trunc i64 " + i + " to " + T);
  }
  return def("cast", std::string(bits_of(to) > bits_of(from) ? "fpext " : "fptrunc ") + F + " " + x + " to " + T);
}

std::string LLVMWalk::bitcast(DType to, DType from, const std::string& x) {
  if (to.itemsize() != from.itemsize() && !(is_16bit_float(to) && is_16bit_float(from)))
    throw Error("render: BITCAST between sizes (" + from.repr() + " -> " + to.repr() + ")");
  if (is_16bit_float(to) || is_16bit_float(from)) {
    const std::string bits = is_16bit_float(from) ? bits16(from, x) : x;
    return is_16bit_float(to) ? float16_from_bits(to, bits) : bits;
  }
  if (from.is_bool()) return def("cast", "zext " + type(from) + " " + x + " to " + type(to));
  if (to.is_bool()) return def("cast", "icmp ne " + type(from) + " " + x + ", " + splat(from, "0"));
  if (type(to) == type(from)) return x;
  return def("cast", "bitcast " + type(from) + " " + x + " to " + type(to));
}

// ---- helpers defined in the module ----

namespace {

// exp2 on <n x float>, as the C device's vector exp2 (renderer/c.cpp): 2^x = 2^k * 2^f with k = round(x), f in
// [-0.5, 0.5], 2^f by Cephes' exp2f polynomial, 2^k as two factors so subnormal and infinite results round as one
// product would; x clamped to [-150, 128] first, NaN passed through. Within 2 ulp of exp2.
std::string exp2_vector_helper(int n) {
  const std::string N = std::to_string(n), T = "<" + N + " x float>", I = "<" + N + " x i32>", B = "<" + N + " x i1>";
  auto f = [&](double v) { return LLVMWalk::splat(dtypes::float32.vec(n), LLVMWalk::float_literal(double(float(v)))); };
  auto i = [&](int v) { return LLVMWalk::splat(dtypes::int32.vec(n), std::to_string(v)); };
  const double coef[] = {1.535336188319500e-4,
                         1.339887440266574e-3,
                         9.618437357674640e-3,
                         5.550332471162809e-2,
                         2.402264791363012e-1,
                         6.931472028550421e-1,
                         1.0};
  std::string s = "define internal " + T + " @tg_exp2_v" + N + "(" + T + " %x) #1 {\n";
  s += "  %hi = fcmp ogt " + T + " %x, " + f(128) + "\n  %c1 = select " + B + " %hi, " + T + " " + f(128) + ", " + T +
       " %x\n";
  s += "  %lo = fcmp olt " + T + " %c1, " + f(-150) + "\n  %c = select " + B + " %lo, " + T + " " + f(-150) + ", " + T +
       " %c1\n";
  s += "  %n0 = fadd " + T + " %c, " + f(12582912.0) + "\n  %n = fsub " + T + " %n0, " + f(12582912.0) + "\n";
  s += "  %f = fsub " + T + " %c, %n\n";
  std::string p = f(coef[0]);
  for (int k = 1; k < 7; k++) {
    s += "  %m" + std::to_string(k) + " = fmul contract " + T + " " + p + ", %f\n";
    s += "  %p" + std::to_string(k) + " = fadd contract " + T + " %m" + std::to_string(k) + ", " + f(coef[k]) + "\n";
    p = "%p" + std::to_string(k);
  }
  s += "  %k = fptosi " + T + " %n to " + I + "\n  %h = ashr " + I + " %k, " + i(1) + "\n";
  s += "  %e1 = add " + I + " %h, " + i(127) + "\n  %s1 = shl " + I + " %e1, " + i(23) + "\n";
  s += "  %k2 = sub " + I + " %k, %h\n  %e2 = add " + I + " %k2, " + i(127) + "\n  %s2 = shl " + I + " %e2, " + i(23) +
       "\n";
  s += "  %f1 = bitcast " + I + " %s1 to " + T + "\n  %f2 = bitcast " + I + " %s2 to " + T + "\n";
  s += "  %r0 = fmul " + T + " " + p + ", %f1\n  %r = fmul " + T + " %r0, %f2\n";
  s += "  %nan = fcmp uno " + T + " %x, %x\n  %out = select " + B + " %nan, " + T + " %x, " + T + " %r\n";
  return s + "  ret " + T + " %out\n}\n";
}

}  // namespace

std::string LLVMWalk::call_helper(const std::string& helper, const std::string& ret, const std::string& args) {
  helpers_.insert(helper);
  return def("alu", "call " + ret + " @" + helper + "(" + args + ")");
}

// Internal functions, always inlined. tg_ftoi is exec_alu's float -> int: 0 for NaN, inf and |x| >= 2^64, the value
// wrapped to 64 bits otherwise (fptosi alone is poison past int64); the bfloat16 ones are round-to-nearest-even
// by bits (NaN stays a quiet NaN), as the C renderer's.
std::string LLVMWalk::helper_definitions() const {
  std::string s;
  if (helpers_.count("tg_ftoi"))
    s += "declare double @llvm.fabs.f64(double)\n"
         "define internal i64 @tg_ftoi(double %x) #1 {\n"
         "  %ax = call double @llvm.fabs.f64(double %x)\n"
         "  %in = fcmp olt double %ax, 0x43F0000000000000\n"
         "  %big = fcmp oge double %x, 0x43E0000000000000\n"
         "  %neg = fcmp olt double %x, 0xC3E0000000000000\n"
         "  %s = fptosi double %x to i64\n"
         "  %u = fptoui double %x to i64\n"
         "  %nx = fneg double %x\n"
         "  %nu = fptoui double %nx to i64\n"
         "  %n = sub i64 0, %nu\n"
         "  %r1 = select i1 %neg, i64 %n, i64 %s\n"
         "  %r2 = select i1 %big, i64 %u, i64 %r1\n"
         "  %r = select i1 %in, i64 %r2, i64 0\n"
         "  ret i64 %r\n}\n";
  if (helpers_.count("tg_f2bf") || helpers_.count("tg_rbf"))
    s += "define internal i16 @tg_f2bf(float %x) #1 {\n"
         "  %b = bitcast float %x to i32\n"
         "  %m = and i32 %b, 2147483647\n"
         "  %nan = icmp ugt i32 %m, 2139095040\n"
         "  %hi = lshr i32 %b, 16\n"
         "  %q = or i32 %hi, 64\n"
         "  %lsb = and i32 %hi, 1\n"
         "  %bias = add i32 %lsb, 32767\n"
         "  %sum = add i32 %b, %bias\n"
         "  %rounded = lshr i32 %sum, 16\n"
         "  %r = select i1 %nan, i32 %q, i32 %rounded\n"
         "  %t = trunc i32 %r to i16\n"
         "  ret i16 %t\n}\n";
  if (helpers_.count("tg_rbf"))
    s += "define internal float @tg_rbf(float %x) #1 {\n"
         "  %h = call i16 @tg_f2bf(float %x)\n"
         "  %w = zext i16 %h to i32\n"
         "  %s = shl i32 %w, 16\n"
         "  %f = bitcast i32 %s to float\n"
         "  ret float %f\n}\n";
  for (const std::string& h : helpers_)
    if (h.rfind("tg_exp2_v", 0) == 0) s += exp2_vector_helper(std::stoi(h.substr(9)));
  return s;
}

}  // namespace tg
