// Linear forms and the integer rules built on them: like-term combining, division and modulo by constants,
// comparisons with constants. C semantics: IDIV and MOD truncate toward zero, so every rule that reasons
// with floor division first checks that the numerator cannot be negative.
#include "uop/symbolic_linear.h"

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <numeric>
#include <unordered_map>

#include "uop/exec_alu.h"

namespace tg {
namespace {

constexpr int64_t kLimit = int64_t(1) << 62;  // coefficients beyond this are not trusted
constexpr int kMaxNodes = 256;                // linearize gives up on larger sums (keeps rewriting linear)

bool small(int64_t v) { return v > -kLimit && v < kLimit; }

std::optional<int64_t> mul_checked(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r) || !small(r)) return std::nullopt;
  return r;
}
std::optional<int64_t> add_checked(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r) || !small(r)) return std::nullopt;
  return r;
}

int64_t floor_div(int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); }
int64_t ceil_div(int64_t a, int64_t b) { return -floor_div(-a, b); }
int64_t floor_mod(int64_t a, int64_t b) { return a - floor_div(a, b) * b; }

UOpPtr cst(int64_t v, DType dt) { return UOp::make(Ops::CONST, dt, {}, v); }

// Wrap a coefficient to the dtype, as the arithmetic does: sums of wrapped terms wrap the same way.
int64_t wrap(int64_t v, DType dt) { return truncate_num(Num{v, 0}, dt).i; }

// Interval of coef * [lo, hi], or nullopt when it may overflow.
std::optional<std::pair<int64_t, int64_t>> scaled(const UOp& t, int64_t coef) {
  auto a = mul_checked(t.vmin, coef), b = mul_checked(t.vmax, coef);
  if (!a || !b) return std::nullopt;
  return std::pair{std::min(*a, *b), std::max(*a, *b)};
}

}  // namespace

bool is_signed_int_scalar(DType dt) { return dt.count == 1 && !dt.ptr && dt.is_int() && !dt.is_unsigned(); }

std::pair<int64_t, int64_t> Linear::range() const {
  int64_t lo = c, hi = c;
  for (auto& t : terms) {
    auto r = scaled(*t.x, t.coef);
    auto l2 = r ? add_checked(lo, r->first) : std::nullopt, h2 = r ? add_checked(hi, r->second) : std::nullopt;
    if (!l2 || !h2) return {-kLimit, kLimit};
    lo = *l2, hi = *h2;
  }
  return {lo, hi};
}

int64_t Linear::coef_gcd() const {
  int64_t g = 0;
  for (auto& t : terms) g = std::gcd(g, std::abs(t.coef));
  return g;
}

std::optional<Linear> linearize(const UOpPtr& u) {
  Linear l;
  DType dt = u->dtype;
  std::vector<std::pair<const UOpPtr*, int64_t>> stack{{&u, 1}};
  int visited = 0;
  while (!stack.empty()) {
    auto [p, coef] = stack.back();
    stack.pop_back();
    const UOpPtr& n = *p;
    if (++visited > kMaxNodes) return std::nullopt;
    bool same = n->dtype == dt;
    if (n->op == Ops::CONST && same) {
      auto v = mul_checked(n->const_int_value(), coef);
      auto s = v ? add_checked(l.c, *v) : std::nullopt;
      if (!s) return std::nullopt;
      l.c = *s;
    } else if (n->op == Ops::ADD && same) {
      stack.push_back({&n->src[1], coef});
      stack.push_back({&n->src[0], coef});
    } else if (n->op == Ops::SUB && same) {
      stack.push_back({&n->src[1], -coef});
      stack.push_back({&n->src[0], coef});
    } else if (n->op == Ops::NEG && same) {
      stack.push_back({&n->src[0], -coef});
    } else if (n->op == Ops::MUL && same && (n->src[1]->op == Ops::CONST || n->src[0]->op == Ops::CONST)) {
      int side = n->src[1]->op == Ops::CONST ? 1 : 0;
      auto v = mul_checked(coef, n->src[side]->const_int_value());
      if (!v) return std::nullopt;
      stack.push_back({&n->src[1 - side], *v});
    } else {
      auto it = std::find_if(l.terms.begin(), l.terms.end(), [&](const LinearTerm& t) { return t.x == n; });
      if (it == l.terms.end()) {
        l.terms.push_back({n, coef});
      } else {
        auto s = add_checked(it->coef, coef);
        if (!s) return std::nullopt;
        it->coef = *s;
      }
    }
  }
  std::erase_if(l.terms, [](const LinearTerm& t) { return t.coef == 0; });
  return l;
}

UOpPtr build_linear(const Linear& l, DType dt) {
  std::vector<LinearTerm> terms;
  for (auto& t : l.terms)
    if (int64_t c = wrap(t.coef, dt); c != 0) terms.push_back({t.x, c});
  std::stable_sort(terms.begin(), terms.end(),
                   [](const LinearTerm& a, const LinearTerm& b) { return std::abs(a.coef) > std::abs(b.coef); });
  UOpPtr out;
  for (auto& t : terms) {
    UOpPtr term = t.coef == 1 ? t.x : UOp::make(Ops::MUL, dt, {t.x, cst(t.coef, dt)});
    out = out ? UOp::make(Ops::ADD, dt, {out, term}) : term;
  }
  int64_t c = wrap(l.c, dt);
  if (!out) return cst(c, dt);
  return c == 0 ? out : UOp::make(Ops::ADD, dt, {out, cst(c, dt)});
}

namespace {

// (y//d)*d*m + (y%d)*m -> y*m, and y*m - (y//d)*d*m -> (y%d)*m: undo an unravel that is ravelled again.
// Exact in C: y == (y/d)*d + y%d for every y when d != 0.
bool recombine_divmod(Linear& l, DType dt) {
  for (size_t i = 0; i < l.terms.size(); i++) {
    UOpPtr q = l.terms[i].x;  // copies: the terms are erased below
    if (q->op != Ops::IDIV || q->src[1]->op != Ops::CONST) continue;
    int64_t d = q->src[1]->const_int_value();
    if (d == 0) continue;
    UOpPtr y = q->src[0], dc = q->src[1];
    for (size_t j = 0; j < l.terms.size(); j++) {
      const UOpPtr& r = l.terms[j].x;
      auto m = mul_checked(l.terms[j].coef, d);
      if (!m) continue;
      if (r->op == Ops::MOD && r->src[0] == y && r->src[1] == q->src[1] && l.terms[i].coef == *m) {
        // Both go; y comes in with the mod's coefficient (a later pass linearizes y if it is a sum).
        int64_t coef = l.terms[j].coef;
        l.terms.erase(l.terms.begin() + int64_t(std::max(i, j)));
        l.terms.erase(l.terms.begin() + int64_t(std::min(i, j)));
        l.terms.push_back({y, coef});
        return true;
      }
      if (r == y && l.terms[i].coef == -*m) {
        int64_t coef = l.terms[j].coef;
        l.terms.erase(l.terms.begin() + int64_t(std::max(i, j)));
        l.terms.erase(l.terms.begin() + int64_t(std::min(i, j)));
        l.terms.push_back({UOp::make(Ops::MOD, dt, {y, dc}), coef});
        return true;
      }
    }
  }
  return false;
}

// R % d for R >= 0 when R's range fits in one block [k*d, (k+1)*d): R - k*d. nullptr otherwise.
UOpPtr mod_in_range(Linear r, int64_t d, DType dt) {
  auto [rmin, rmax] = r.range();
  if (rmin < 0 || rmax >= kLimit || floor_div(rmin, d) != floor_div(rmax, d)) return nullptr;
  r.c -= floor_div(rmin, d) * d;
  return build_linear(r, dt);
}

// g*Y + R < c with 0 <= R < g and g | c is Y < c/g; c < g*Y + R with g | c+1 is (c+1)/g - 1 < Y. Tries each
// coefficient as g; `c` has the sum's constant already moved across.
UOpPtr drop_small_terms(const Linear& l, int64_t c, bool const_left, DType dt) {
  for (auto& cand : l.terms) {
    int64_t g = std::abs(cand.coef), bound = const_left ? c + 1 : c;
    if (g <= 1 || floor_mod(bound, g) != 0) continue;
    Linear y, r;
    for (auto& t : l.terms)
      (t.coef % g == 0 ? y.terms.emplace_back(LinearTerm{t.x, t.coef / g}) : r.terms.emplace_back(t));
    auto [rmin, rmax] = r.range();
    if (r.terms.empty() || rmin < 0 || rmax >= g) continue;
    int64_t k = floor_div(bound, g) - (const_left ? 1 : 0);
    UOpPtr lhs = build_linear(y, dt), kc = cst(k, dt);
    return UOp::make(Ops::CMPLT, dtypes::bool_,
                     const_left ? std::vector<UOpPtr>{kc, lhs} : std::vector<UOpPtr>{lhs, kc});
  }
  return nullptr;
}

}  // namespace

namespace {

// Sums already known to be canonical. Rebuilding a sum makes a fresh chain of partial sums, and the rewriter
// visits each of them; without this every visit would linearize its whole chain again (quadratic in the
// number of terms, per sum). Entries hold weak references, so a dead node whose address is reused misses.
class CanonicalSums {
 public:
  bool has(const UOpPtr& u) const {
    auto it = known_.find(u.get());
    return it != known_.end() && it->second.lock() == u;
  }
  // Marks a canonical sum and every partial sum along its left spine (each is canonical too: a prefix of
  // sorted, distinct terms).
  void add(UOpPtr u) {
    if (known_.size() >= prune_at_) prune();
    DType dt = u->dtype;
    while (true) {
      known_[u.get()] = u;
      if (u->op != Ops::ADD || u->src[0]->dtype != dt) break;
      u = u->src[0];
    }
  }

 private:
  void prune() {
    std::erase_if(known_, [](const auto& kv) { return kv.second.expired(); });
    prune_at_ = std::max<size_t>(1 << 14, 2 * known_.size());
  }
  std::unordered_map<const UOp*, std::weak_ptr<const UOp>> known_;
  size_t prune_at_ = 1 << 14;
};

CanonicalSums& canonical_sums() {
  thread_local CanonicalSums sums;
  return sums;
}

}  // namespace

UOpPtr canonicalize_sum(const UOpPtr& u) {
  if (canonical_sums().has(u)) return nullptr;
  auto l = linearize(u);
  if (!l) return nullptr;
  bool recombined = recombine_divmod(*l, u->dtype);
  UOpPtr out = build_linear(*l, u->dtype);
  if (!recombined) canonical_sums().add(out);  // recombining may leave a sum term to flatten next time
  return out == u ? nullptr : out;
}

UOpPtr fold_idiv(const UOpPtr& x, int64_t d) {
  DType dt = x->dtype;
  if (d == 0) return nullptr;
  if (d == 1) return x;
  if (d < 0) {  // trunc(x / -d) == -trunc(x / d)
    if (d == std::numeric_limits<int64_t>::min()) return nullptr;
    return UOp::make(Ops::MUL, dt, {UOp::make(Ops::IDIV, dt, {x, cst(-d, dt)}), cst(-1, dt)});
  }
  if (-d < x->vmin && x->vmax < d) return cst(0, dt);
  // (y // a) // d -> y // (a*d) for positive a: true for truncation as well as floor.
  if (x->op == Ops::IDIV && x->src[1]->op == Ops::CONST && x->src[1]->const_int_value() > 0) {
    if (auto ad = mul_checked(x->src[1]->const_int_value(), d); ad && wrap(*ad, dt) == *ad)
      return UOp::make(Ops::IDIV, dt, {x->src[0], cst(*ad, dt)});
  }
  // (y % (d*m)) // d -> (y // d) % m: both sides are odd in y, and agree for y >= 0.
  if (x->op == Ops::MOD && x->src[1]->op == Ops::CONST) {
    int64_t a = x->src[1]->const_int_value();
    if (a > 0 && a % d == 0)
      return UOp::make(Ops::MOD, dt, {UOp::make(Ops::IDIV, dt, {x->src[0], cst(d, dt)}), cst(a / d, dt)});
  }
  auto l = linearize(x);
  if (!l) return nullptr;
  // A common factor of the divisor and every coefficient cancels exactly (truncation included).
  int64_t g = std::gcd(std::gcd(l->coef_gcd(), std::abs(l->c)), d);
  if (g > 1) {
    Linear s = *l;
    for (auto& t : s.terms) t.coef /= g;
    s.c /= g;
    return UOp::make(Ops::IDIV, dt, {build_linear(s, dt), cst(d / g, dt)});
  }
  if (x->vmin < 0) return nullptr;  // below: floor reasoning, valid since x >= 0
  // x = d*Q + R, with Q the terms whose coefficients d divides (and the constant's quotient).
  Linear q, r;
  for (auto& t : l->terms)
    (t.coef % d == 0 ? q.terms.emplace_back(LinearTerm{t.x, t.coef / d}) : r.terms.emplace_back(t));
  q.c = floor_div(l->c, d);
  r.c = floor_mod(l->c, d);
  auto [rmin, rmax] = r.range();
  if (rmin <= -kLimit || rmax >= kLimit) return nullptr;
  if (floor_div(rmin, d) == floor_div(rmax, d)) {  // R // d is one value
    q.c += floor_div(rmin, d);
    return build_linear(q, dt);
  }
  // Pull Q out: x // d = Q + R // d, with R shifted by a multiple of d so that it is not negative.
  int64_t k = rmin < 0 ? ceil_div(-rmin, d) : 0;
  q.c -= k;
  r.c += k * d;
  if (q.terms.empty() && q.c == 0) return nullptr;
  UOpPtr rest = UOp::make(Ops::IDIV, dt, {build_linear(r, dt), cst(d, dt)});
  q.terms.push_back({rest, 1});
  return build_linear(q, dt);
}

UOpPtr fold_mod(const UOpPtr& x, int64_t d) {
  DType dt = x->dtype;
  if (d == 0) return nullptr;
  if (d == 1 || d == -1) return cst(0, dt);
  if (d < 0) {  // the sign of a C remainder follows the dividend only
    if (d == std::numeric_limits<int64_t>::min()) return nullptr;
    return UOp::make(Ops::MOD, dt, {x, cst(-d, dt)});
  }
  if (-d < x->vmin && x->vmax < d) return x;
  // (y % a) % d -> y % d when d divides a (any sign of y).
  if (x->op == Ops::MOD && x->src[1]->op == Ops::CONST) {
    int64_t a = x->src[1]->const_int_value();
    if (a > 0 && a % d == 0) return UOp::make(Ops::MOD, dt, {x->src[0], cst(d, dt)});
  }
  auto l = linearize(x);
  if (!l) return nullptr;
  int64_t g = std::gcd(std::gcd(l->coef_gcd(), std::abs(l->c)), d);
  if (g == d) return cst(0, dt);  // d divides x exactly
  if (g > 1) {                    // (g*y) % (g*e) == g * (y % e), truncation included
    Linear s = *l;
    for (auto& t : s.terms) t.coef /= g;
    s.c /= g;
    return UOp::make(Ops::MUL, dt, {UOp::make(Ops::MOD, dt, {build_linear(s, dt), cst(d / g, dt)}), cst(g, dt)});
  }
  if (x->vmin < 0) return nullptr;  // below: floor reasoning, valid since x >= 0
  // Drop multiples of d and reduce the constant modulo d: the remainder R is the same numerator fold_idiv
  // leaves behind, so x//d and x%d keep sharing it.
  Linear r;
  for (auto& t : l->terms)
    if (t.coef % d != 0) r.terms.push_back(t);
  r.c = floor_mod(l->c, d);
  if (auto folded = mod_in_range(r, d, dt)) return folded;
  // Reducing the other coefficients modulo d as well may bring R inside [0, d), where the mod vanishes.
  Linear reduced = r;
  for (auto& t : reduced.terms) t.coef = floor_mod(t.coef, d);
  if (auto folded = mod_in_range(reduced, d, dt)) return folded;
  auto [rmin, rmax] = r.range();
  if (rmin <= -kLimit || rmax >= kLimit) return nullptr;
  if (rmin < 0) r.c += ceil_div(-rmin, d) * d;  // keep the numerator non-negative: trunc == floor
  UOpPtr out = UOp::make(Ops::MOD, dt, {build_linear(r, dt), cst(d, dt)});
  return out;
}

UOpPtr fold_cmp_const(Ops op, const UOpPtr& x, int64_t c, bool const_left) {
  DType dt = x->dtype;
  // y//d < c <=> y < c*d for d > 0 and c >= 1, and c < y//d <=> (c+1)*d-1 < y for c >= 0: with truncation,
  // a negative y//d (or a y in (-d, d)) lands on the same side of the bound as y itself.
  if (op == Ops::CMPLT && x->op == Ops::IDIV && x->src[1]->op == Ops::CONST && x->src[1]->const_int_value() > 0) {
    int64_t d = x->src[1]->const_int_value();
    if (!const_left && c >= 1) {
      if (auto b = mul_checked(c, d); b && wrap(*b, dt) == *b)
        return UOp::make(Ops::CMPLT, dtypes::bool_, {x->src[0], cst(*b, dt)});
    } else if (const_left && c >= 0) {
      auto b = mul_checked(c + 1, d);
      if (b && wrap(*b - 1, dt) == *b - 1) return UOp::make(Ops::CMPLT, dtypes::bool_, {cst(*b - 1, dt), x->src[0]});
    }
  }
  auto l = linearize(x);
  if (!l || l->terms.empty()) return nullptr;
  // Move the constant across: x + k < c -> x < c - k; then divide by the coefficients' gcd.
  auto moved = add_checked(c, -l->c);
  if (!moved) return nullptr;
  int64_t cc = *moved, g = l->coef_gcd();
  Linear y = *l;
  y.c = 0;
  if (g > 1)
    for (auto& t : y.terms) t.coef /= g;
  if (op == Ops::CMPLT)
    if (UOpPtr folded = drop_small_terms(*l, cc, const_left, dt)) return folded;
  if (l->c == 0 && g <= 1) return nullptr;
  int64_t bound;
  if (op == Ops::CMPNE) {
    if (floor_mod(cc, g) != 0) return UOp::make(Ops::CONST, dtypes::bool_, {}, true);
    bound = cc / g;
  } else {
    bound = const_left ? floor_div(cc, g) : ceil_div(cc, g);  // c < g*y <=> floor(c/g) < y
  }
  if (wrap(bound, dt) != bound) return nullptr;
  UOpPtr lhs = build_linear(y, dt), k = cst(bound, dt);
  return UOp::make(op, dtypes::bool_, const_left ? std::vector<UOpPtr>{k, lhs} : std::vector<UOpPtr>{lhs, k});
}

}  // namespace tg
