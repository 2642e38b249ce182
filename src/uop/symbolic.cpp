// The symbolic rules. Integer rules are exact for C semantics (wrapping arithmetic, truncating division);
// float rules only where IEEE gives the same bits (x*1, x+(-0.0), x-(+0.0), x/1), never x*0 or x+0.
#include "uop/symbolic.h"

#include <cmath>

#include "tg/error.h"
#include "uop/exec_alu.h"
#include "uop/symbolic_linear.h"

namespace tg {
namespace {

using Rule = std::pair<UPat, RewriteFn>;

bool scalar(DType dt) { return dt.count == 1 && !dt.ptr; }
bool int_or_bool(DType dt) { return scalar(dt) && (dt.is_int() || dt.is_bool()); }
bool sint(const UOpPtr& u) { return is_signed_int_scalar(u->dtype); }
UOpPtr int_const(int64_t v, DType dt) { return UOp::const_int(v, dt); }
UOpPtr bool_const(bool v) { return UOp::make(Ops::CONST, dtypes::bool_, {}, v); }
bool is_const(const UOpPtr& u, double v) { return u->op == Ops::CONST && u->const_value() == v; }

// ---- constant folding through exec_alu, so folded values equal what the device computes ----
Num num_of(const UOp& c) {
  Num n;
  if (auto* b = std::get_if<bool>(&c.arg))
    n.i = *b, n.f = *b;
  else if (auto* i = std::get_if<int64_t>(&c.arg))
    n.i = *i, n.f = double(*i);
  else if (auto* d = std::get_if<double>(&c.arg))
    n.f = *d, n.i = std::isfinite(*d) && std::abs(*d) < 0x1p62 ? int64_t(*d) : 0;
  return truncate_num(n, c.dtype.scalar_type());
}

UOpPtr const_of(Num n, DType dt) {
  if (dt.is_bool()) return bool_const(n.i != 0);
  if (dt.is_int()) return UOp::make(Ops::CONST, dt, {}, n.i);
  return UOp::make(Ops::CONST, dt, {}, n.f);
}

UOpPtr fold_constants(const UOpPtr& u) {
  if (!scalar(u->dtype) || u->src.empty()) return nullptr;
  std::vector<Num> vals;
  for (auto& s : u->src) {
    if (s->op != Ops::CONST || !scalar(s->dtype)) return nullptr;
    vals.push_back(num_of(*s));
  }
  DType src_dt = u->op == Ops::WHERE ? u->src[1]->dtype : u->src[0]->dtype;
  try {
    return const_of(exec_alu(u->op, u->dtype, src_dt, vals), u->dtype);
  } catch (const Error&) {
    return nullptr;  // not an op exec_alu defines for these dtypes: leave it to the device
  }
}

std::vector<Ops> foldable_ops() {
  std::vector<Ops> ops{Ops::CAST, Ops::BITCAST};
  for (int i = 0; i < kNumOps; i++)
    if (is_alu(Ops(i))) ops.push_back(Ops(i));
  return ops;
}

// A node whose range is one value is that value (comparisons decided by range land here).
UOpPtr fold_by_range(const UOpPtr& u) {
  if (!int_or_bool(u->dtype) || u->vmin != u->vmax) return nullptr;
  return u->dtype.is_bool() ? bool_const(u->vmin != 0) : int_const(u->vmin, u->dtype);
}

// Commutative ops keep a constant on the right, so patterns need to look on one side only.
UOpPtr const_to_right(const UOpPtr& u) {
  if (u->src.size() != 2 || u->src[0]->op != Ops::CONST || u->src[1]->op == Ops::CONST) return nullptr;
  return UOp::make(u->op, u->dtype, {u->src[1], u->src[0]}, u->arg);
}

RewriteFn fn(UOpPtr (*f)(const Captures&)) {
  return [f](const Captures& m, void*) { return f(m); };
}

const UPat x = UPat::var("x"), y = UPat::var("y"), c = UPat::cvar("c"), u = UPat::var("u");
UPat bin(Ops op, const UPat& a, const UPat& b) { return UPat::op(op, {a, b}); }
UPat un(Ops op, const UPat& a) { return UPat::op(op, {a}); }

// ---- right-hand sides; `m` holds the captures x, y, c (a CONST) and u (the matched node) ----
using M = const Captures&;
DType xdt(M m) { return m["x"]->dtype; }
bool neg_zero(M m) { return is_const(m["c"], 0) && std::signbit(m["c"]->const_value()); }
UOpPtr x_(M m) { return m["x"]; }
UOpPtr x_unless_float(M m) { return xdt(m).is_float() ? nullptr : m["x"]; }
UOpPtr x_if_bool(M m) { return xdt(m).is_bool() ? m["x"] : nullptr; }
UOpPtr zero_unless_float(M m) { return int_or_bool(xdt(m)) ? int_const(0, xdt(m)) : nullptr; }
UOpPtr zero_if_int(M m) { return int_or_bool(xdt(m)) ? int_const(0, xdt(m)) : nullptr; }
UOpPtr false_if_int(M m) { return int_or_bool(xdt(m)) ? bool_const(false) : nullptr; }
UOpPtr float_plus_neg_zero(M m) { return xdt(m).is_float() && neg_zero(m) ? m["x"] : nullptr; }
UOpPtr minus_pos_zero(M m) { return is_const(m["c"], 0) && !neg_zero(m) ? m["x"] : nullptr; }
UOpPtr same_dtype_x(M m) { return m["u"]->dtype == xdt(m) ? m["x"] : nullptr; }
UOpPtr where_const(M m) { return m["c"]->const_value() != 0 ? m["x"] : m["y"]; }
UOpPtr where_bool_c(M m) { return m["u"]->dtype.is_bool() ? m["c"] : nullptr; }
UOpPtr gated_load_const(M m) {  // the gate decided: a plain load, or the alternative
  if (m["c"]->const_value() == 0) return m["y"];
  return UOp::make(Ops::LOAD, m["u"]->dtype, {m["b"], m["i"]}, m["u"]->arg);
}
UOpPtr and_const(M m) {  // x & 0 -> 0, x & all-ones -> x
  if (!int_or_bool(xdt(m))) return nullptr;
  int64_t v = m["c"]->const_int_value();
  if (v == 0) return int_const(0, xdt(m));
  return v == (xdt(m).is_bool() ? 1 : -1) ? m["x"] : nullptr;
}
UOpPtr or_const(M m) {  // x | 0 -> x, bool x | true -> true
  if (m["c"]->const_int_value() == 0) return m["x"];
  return xdt(m) == dtypes::bool_ ? bool_const(true) : nullptr;
}
UOpPtr max_by_range(M m) {
  const UOpPtr &a = m["x"], &b = m["y"];
  if (!int_or_bool(a->dtype)) return nullptr;
  return a->vmin >= b->vmax ? a : b->vmin >= a->vmax ? b : nullptr;
}
UOpPtr fold(M m) { return fold_constants(m["u"]); }
UOpPtr range_const(M m) { return is_alu(m["u"]->op) ? fold_by_range(m["u"]) : nullptr; }
UOpPtr swap_const(M m) { return const_to_right(m["u"]); }
UOpPtr sum(M m) { return sint(m["u"]) ? canonicalize_sum(m["u"]) : nullptr; }
UOpPtr div_c(M m) { return sint(m["x"]) ? fold_idiv(m["x"], m["c"]->const_int_value()) : nullptr; }
UOpPtr mod_c(M m) { return sint(m["x"]) ? fold_mod(m["x"], m["c"]->const_int_value()) : nullptr; }
UOpPtr lt_c(M m) {
  return sint(m["x"]) ? fold_cmp_const(Ops::CMPLT, m["x"], m["c"]->const_int_value(), false) : nullptr;
}
UOpPtr c_lt(M m) {
  return sint(m["x"]) ? fold_cmp_const(Ops::CMPLT, m["x"], m["c"]->const_int_value(), true) : nullptr;
}
UOpPtr ne_c(M m) {
  return sint(m["x"]) ? fold_cmp_const(Ops::CMPNE, m["x"], m["c"]->const_int_value(), false) : nullptr;
}

// clang-format off
std::vector<Rule> folding_rules() {
  auto alu = UPat::ops_of(foldable_ops(), "u");
  return {
      {alu, fn(fold)},         // every source CONST: compute it with exec_alu
      {alu, fn(range_const)},  // an int/bool ALU node whose range is one value
  };
}

std::vector<Rule> identity_rules() {
  return {
      // x+0 (ints); x+(-0.0) and x-(+0.0) (floats: -0.0+0.0 is +0.0, so x+0.0 stays)
      {x + UPat::cnst(0), fn(x_unless_float)},
      {x + c, fn(float_plus_neg_zero)},
      {bin(Ops::SUB, x, c), fn(minus_pos_zero)},
      // x*1 (every dtype), x*0 (ints and bools: NaN*0 is NaN)
      {x * UPat::cnst(1), fn(x_)},
      {x * UPat::cnst(0), fn(zero_unless_float)},
      // x/1, x//1, x%1
      {bin(Ops::FDIV, x, UPat::cnst(1)), fn(x_)},
      {bin(Ops::IDIV, x, UPat::cnst(1)), fn(x_unless_float)},
      {bin(Ops::MOD, x, UPat::cnst(1)), fn(zero_unless_float)},
      // double negation, max(x,x), max decided by range
      {un(Ops::NEG, un(Ops::NEG, x)), fn(x_)},
      {bin(Ops::MAX, x, x), fn(x_)},
      {bin(Ops::MAX, x, y), fn(max_by_range)},
      // casts that change nothing
      {un(Ops::CAST, x).named("u"), fn(same_dtype_x)},
      {un(Ops::BITCAST, x).named("u"), fn(same_dtype_x)},
  };
}

std::vector<Rule> logic_rules() {
  return {
      // WHERE: decided condition, equal branches, bool select
      {UPat::op(Ops::WHERE, {c, x, y}), fn(where_const)},
      {UPat::op(Ops::WHERE, {UPat::var("c"), x, x}), fn(x_)},
      {UPat::op(Ops::WHERE, {UPat::var("c"), UPat::cnst(1), UPat::cnst(0)}, "u"), fn(where_bool_c)},
      // a gated LOAD whose gate is a constant (one side of a cat, unrolled)
      {UPat::op(Ops::LOAD, {UPat::var("b"), UPat::var("i"), c, y}, "u"), fn(gated_load_const)},
      // AND / OR / XOR with constants and with themselves (ints and bools)
      {bin(Ops::AND, x, x), fn(x_)},
      {bin(Ops::OR, x, x), fn(x_)},
      {bin(Ops::XOR, x, x), fn(zero_if_int)},
      {bin(Ops::AND, x, c), fn(and_const)},
      {bin(Ops::OR, x, c), fn(or_const)},
      {bin(Ops::XOR, x, UPat::cnst(0)), fn(x_)},
      // bool x != false -> x; (x != true) != true -> x
      {bin(Ops::CMPNE, x, UPat::cnst(0)), fn(x_if_bool)},
      {bin(Ops::CMPNE, bin(Ops::CMPNE, x, UPat::cnst(1)), UPat::cnst(1)), fn(x_if_bool)},
      // x<x and x!=x are false for ints and bools
      {bin(Ops::CMPLT, x, x), fn(false_if_int)},
      {bin(Ops::CMPNE, x, x), fn(false_if_int)},
  };
}

std::vector<Rule> canonical_rules() {
  return {
      // constants to the right of commutative ops
      {UPat::ops_of({Ops::ADD, Ops::MUL, Ops::MAX, Ops::AND, Ops::OR, Ops::XOR, Ops::CMPNE}, "u"), fn(swap_const)},
      // signed int sums: like terms combined, constants collected last, terms by |coefficient|
      {UPat::ops_of({Ops::ADD, Ops::SUB, Ops::NEG}, "u"), fn(sum)},
      {bin(Ops::MUL, x, c).named("u"), fn(sum)},
  };
}

std::vector<Rule> divmod_rules() {
  return {
      // x // c and x % c: ranges, nested div/mod, common factors, multiples of c pulled out
      {bin(Ops::IDIV, x, c), fn(div_c)},
      {bin(Ops::MOD, x, c), fn(mod_c)},
  };
}

std::vector<Rule> compare_rules() {
  return {
      // x+k < c -> x < c-k, g*x < c -> x < ceil(c/g), y//d < c -> y < c*d; the same for c < x and x != c
      {bin(Ops::CMPLT, x, c), fn(lt_c)},
      {bin(Ops::CMPLT, c, x), fn(c_lt)},
      {bin(Ops::CMPNE, x, c), fn(ne_c)},
  };
}
// clang-format on

PatternMatcher build() {
  std::vector<Rule> rules;
  for (auto group :
       {folding_rules(), identity_rules(), logic_rules(), canonical_rules(), divmod_rules(), compare_rules()})
    rules.insert(rules.end(), group.begin(), group.end());
  return PatternMatcher(std::move(rules));
}

}  // namespace

const PatternMatcher& symbolic() {
  static const PatternMatcher pm = build();
  return pm;
}

UOpPtr simplify(const UOpPtr& u) { return graph_rewrite(u, symbolic()); }

}  // namespace tg
