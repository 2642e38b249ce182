// tg::sint (include/tg/sint.h): integer dims stay plain int64 arithmetic; symbolic ones are int32 UOp expressions
// over BIND(DEFINE_VAR) nodes, kept simplified so that equal expressions are the same interned node.
#include "tg/sint.h"

#include <algorithm>
#include <ostream>

#include "tg/error.h"
#include "tg/variable.h"
#include "uop/symbolic.h"
#include "uop/uop.h"

namespace tg {

namespace {

UOpPtr as_uop(const sint& s) {
  if (s.is_symbolic()) return s.uop();
  int64_t v = s.value();
  if (v < INT32_MIN || v > INT32_MAX)
    throw Error("symbolic size: the constant " + std::to_string(v) + " beside a variable is past int32");
  return UOp::const_int(v, dtypes::int32);
}

sint combine(Ops op, const sint& a, const sint& b) { return sint::from_uop(simplify(UOp::alu(op, {as_uop(a), as_uop(b)}))); }

// Python-like printing of an expression: "start_pos", "(start_pos+1)", "(start_pos*4)".
std::string expr_str(const UOp& u) {
  switch (u.op) {
    case Ops::CONST: return std::to_string(u.const_int_value());
    case Ops::DEFINE_VAR: return u.get<NamedRange>().name;
    case Ops::BIND: return expr_str(*u.src[0]);
    case Ops::ADD: return "(" + expr_str(*u.src[0]) + "+" + expr_str(*u.src[1]) + ")";
    case Ops::MUL: return "(" + expr_str(*u.src[0]) + "*" + expr_str(*u.src[1]) + ")";
    case Ops::IDIV: return "(" + expr_str(*u.src[0]) + "//" + expr_str(*u.src[1]) + ")";
    case Ops::MOD: return "(" + expr_str(*u.src[0]) + "%" + expr_str(*u.src[1]) + ")";
    case Ops::MAX: return "max(" + expr_str(*u.src[0]) + ", " + expr_str(*u.src[1]) + ")";
    case Ops::NEG: return "-" + expr_str(*u.src[0]);
    default: return std::string(op_name(u.op)) + "(...)";
  }
}

}  // namespace

sint::sint(const BoundVariable& v) {
  auto var = UOp::make(Ops::DEFINE_VAR, dtypes::int32, {}, NamedRange{v.var.name, v.var.min, v.var.max});
  u_ = UOp::make(Ops::BIND, dtypes::int32, {var}, v.value);
}

sint sint::from_uop(std::shared_ptr<const UOp> u) {
  sint s;
  if (u->op == Ops::CONST) s.v_ = u->const_int_value();
  else s.u_ = std::move(u);
  return s;
}

void sint::throw_symbolic() const {
  throw Error("a symbolic size " + str() + " where a number is needed (this operation takes concrete sizes only)");
}

int64_t sint::vmin() const { return u_ ? u_->vmin : v_; }
int64_t sint::vmax() const { return u_ ? u_->vmax : v_; }

int64_t sint::bound_value() const {
  if (!u_) return v_;
  auto v = simplify(substitute(u_, [](const UOp* n) -> UOpPtr {
    return n->op == Ops::BIND ? UOp::const_int(n->get<int64_t>(), dtypes::int32) : nullptr;
  }));
  if (v->op != Ops::CONST) throw Error("symbolic size " + str() + ": a variable without a value");
  return v->const_int_value();
}

std::string sint::str() const { return u_ ? expr_str(*u_) : std::to_string(v_); }

std::ostream& operator<<(std::ostream& os, const sint& s) { return os << s.str(); }

bool operator==(const std::vector<sint>& a, const std::vector<int64_t>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); i++)
    if (!(a[i] == b[i])) return false;
  return true;
}

sint sint::slow(int op, const sint& a, const sint& b) {
  static const char* names[] = {"+", "-", "*"};
  if (a.is_int() && b.is_int()) throw Error("size arithmetic: " + a.str() + " " + names[op] + " " + b.str() + " overflows int64");
  if (op == 0) return combine(Ops::ADD, a, b);
  if (op == 1) return combine(Ops::ADD, a, combine(Ops::MUL, b, sint(-1)));
  return combine(Ops::MUL, a, b);
}

sint operator/(const sint& a, const sint& b) {
  if (b == 0) throw Error("size arithmetic: division by zero");
  if (a.is_int() && b.is_int()) {  // floor division, as Python's //
    int64_t q = a.v_ / b.v_;
    return (a.v_ % b.v_ != 0 && ((a.v_ < 0) != (b.v_ < 0))) ? q - 1 : q;
  }
  if (a.vmin() < 0 || b.vmin() <= 0)
    throw Error("size arithmetic: " + a.str() + " // " + b.str() + " needs non-negative sizes");
  return combine(Ops::IDIV, a, b);
}
sint operator%(const sint& a, const sint& b) {
  if (b == 0) throw Error("size arithmetic: modulo by zero");
  if (a.is_int() && b.is_int()) {
    int64_t m = a.v_ % b.v_;
    return (m != 0 && ((m < 0) != (b.v_ < 0))) ? m + b.v_ : m;
  }
  if (a.vmin() < 0 || b.vmin() <= 0)
    throw Error("size arithmetic: " + a.str() + " % " + b.str() + " needs non-negative sizes");
  return combine(Ops::MOD, a, b);
}

bool operator<(const sint& a, const sint& b) {
  if (a.is_int() && b.is_int()) return a.v_ < b.v_;
  if (a.vmax() < b.vmin()) return true;
  if (a.vmin() >= b.vmax()) return false;
  sint d = b - a;  // a < b  <=>  b - a > 0, often decided where the two ranges overlap (v < v + 1)
  if (d.vmin() > 0) return true;
  if (d.vmax() <= 0) return false;
  throw Error("symbolic sizes: whether " + a.str() + " < " + b.str() + " depends on the variables' values");
}

sint smax(const sint& a, const sint& b) {
  if (a.is_int() && b.is_int()) return std::max(a.v_, b.v_);
  if (a.vmin() >= b.vmax()) return a;
  if (b.vmin() >= a.vmax()) return b;
  return combine(Ops::MAX, a, b);
}
sint smin(const sint& a, const sint& b) { return -smax(-a, -b); }

std::string to_string(const Shape& s) {
  std::string r = "(";
  for (size_t i = 0; i < s.size(); i++) r += (i ? ", " : "") + s[i].str();
  return r + (s.size() == 1 ? ",)" : ")");
}

}  // namespace tg
