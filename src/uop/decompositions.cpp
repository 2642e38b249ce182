#include "uop/decompositions.h"

#include <cmath>
#include <limits>

#include "tg/error.h"
#include "uop/pattern.h"

namespace tg {
namespace {

// Scalar constants of x's dtype, and the comparisons the rules below are written with.
UOpPtr c(const UOpPtr& x, double v) { return UOp::const_(x->dtype, v); }
UOpPtr alu(Ops op, std::vector<UOpPtr> src) { return UOp::alu(op, std::move(src)); }
UOpPtr lnot(const UOpPtr& b) { return alu(Ops::CMPNE, {b, UOp::const_(b->dtype, 1)}); }
UOpPtr equal(const UOpPtr& x, double v) { return lnot(alu(Ops::CMPNE, {x, c(x, v)})); }
UOpPtr less(const UOpPtr& x, double v) { return alu(Ops::CMPLT, {x, c(x, v)}); }
UOpPtr any(const UOpPtr& a, const UOpPtr& b) { return alu(Ops::OR, {a, b}); }
UOpPtr sel(const UOpPtr& cond, const UOpPtr& a, const UOpPtr& b) { return alu(Ops::WHERE, {cond, a, b}); }
UOpPtr mul(const UOpPtr& a, const UOpPtr& b) { return alu(Ops::MUL, {a, b}); }
UOpPtr non_integral(const UOpPtr& x) { return alu(Ops::CMPNE, {alu(Ops::TRUNC, {x}), x}); }  // +-inf is integral

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// b ** n for an integer n >= 0 by repeated squaring.
UOpPtr int_power(const UOpPtr& b, uint64_t n) {
  if (n == 0) return c(b, 1);
  if (n == 1) return b;
  UOpPtr half = int_power(b, n / 2), sq = mul(half, half);
  return n % 2 ? mul(sq, b) : sq;
}

// b ** e for a constant e = k + 1/2: b^|k| * sqrt(b), inverted for e < 0. + 0.0 turns sqrt(-0.0) = -0.0 into
// +0.0 so 0 ** -0.5 is +inf as in C; -inf gets C's +inf / +0.
UOpPtr half_int_pow(const UOpPtr& b, double e) {
  UOpPtr r = alu(Ops::ADD, {mul(int_power(b, uint64_t(std::abs(e) - 0.5)), alu(Ops::SQRT, {b})), c(b, 0)});
  if (e < 0) r = alu(Ops::RECIP, {r});
  return sel(equal(b, -kInf), c(b, e < 0 ? 0.0 : kInf), r);
}

// |b| ** e = exp2(e * log2|b|); a base with its sign bit set (-0.0 too) gives a minus sign for an odd exponent
// and nan for a non-integer one, except +-0 and +-inf, whose magnitude rule stands (C's pow). x ** 0 = 1,
// 1 ** y = 1 and (-1) ** +-inf = 1, also for a nan on the other side.
UOpPtr general_pow(const UOpPtr& b, const UOpPtr& e) {
  UOpPtr neg = less(b, 0);
  UOpPtr mag = alu(Ops::EXP2, {mul(alu(Ops::LOG2, {sel(neg, alu(Ops::NEG, {b}), b)}), e)});
  UOpPtr half = mul(e, c(e, 0.5));
  UOpPtr non_int = non_integral(e), odd = non_integral(half);
  UOpPtr sign_bit = any(neg, less(alu(Ops::RECIP, {b}), 0));
  UOpPtr zero_or_inf = any(equal(b, 0), any(equal(b, kInf), equal(b, -kInf)));
  UOpPtr adj = sel(non_int, sel(zero_or_inf, c(b, 1), c(b, kNaN)), sel(odd, c(b, -1), c(b, 1)));
  UOpPtr signed_mag = mul(mag, sel(sign_bit, adj, c(b, 1)));
  UOpPtr e_inf = any(equal(e, kInf), equal(e, -kInf));
  UOpPtr one = any(equal(e, 0), any(equal(b, 1), alu(Ops::AND, {equal(b, -1), e_inf})));
  return sel(one, c(b, 1), signed_mag);
}

UOpPtr decompose_pow(const Captures& m, void*) {
  const UOpPtr &b = m["b"], &e = m["e"];
  if (!b->dtype.is_float())
    throw Error("decompositions: POW of " + b->dtype.repr() + " (the tensor front end makes POW for floats only)");
  if (e->op == Ops::CONST) {
    double v = e->const_value();
    if (std::isfinite(v) && std::abs(v) <= 64 && v - 0.5 == std::floor(v - 0.5)) return half_int_pow(b, v);
  }
  return general_pow(b, e);
}

const PatternMatcher& pm_decompositions() {
  static const PatternMatcher pm({
      // POW: exp2/log2 with C's special values (no renderer has a pow of tinygrad's semantics)
      {UPat::op(Ops::POW, {UPat::var("b"), UPat::var("e")}), decompose_pow},
  });
  return pm;
}

}  // namespace

UOpPtr decompositions(const UOpPtr& ast) { return graph_rewrite("decompositions", ast, pm_decompositions()); }

}  // namespace tg
