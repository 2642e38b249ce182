#pragma once
// Integer linear forms for the symbolic rules: a node seen as C + sum(coef_k * term_k), where the terms are
// the non-ADD leaves (MUL by a constant, SUB and NEG are looked through). Division and modulo folding and
// like-term combining work on this form.
#include <cstdint>
#include <optional>
#include <vector>

#include "uop/uop.h"

namespace tg {

struct LinearTerm {
  UOpPtr x;
  int64_t coef;
};

struct Linear {
  std::vector<LinearTerm> terms;  // distinct terms, in order of first appearance
  int64_t c = 0;

  // Interval of the value from the terms' own ranges (looser than the node's when terms are correlated).
  std::pair<int64_t, int64_t> range() const;
  int64_t coef_gcd() const;  // gcd of the |coefs| (0 when there are none)
};

// Signed integer scalar: the dtypes the linear rules apply to.
bool is_signed_int_scalar(DType dt);
// The linear form of u (a signed int scalar), or nullopt when it is too large or its constants overflow.
std::optional<Linear> linearize(const UOpPtr& u);
// The canonical node for a linear form: terms by |coef| descending (stable), constant last.
UOpPtr build_linear(const Linear& l, DType dt);

// Rewrites on signed int nodes, each nullptr when nothing applies.
UOpPtr canonicalize_sum(const UOpPtr& u);      // ADD / SUB / NEG / MUL-by-const into canonical form
UOpPtr fold_idiv(const UOpPtr& x, int64_t d);  // x // d
UOpPtr fold_mod(const UOpPtr& x, int64_t d);   // x % d
UOpPtr fold_cmp_const(Ops op, const UOpPtr& x, int64_t c, bool const_left);  // x<c, c<x, x!=c

}  // namespace tg
