// Interval arithmetic for integer and bool nodes. Unknown or overflowing cases fall back to the dtype's range.
#include "uop/bounds.h"

#include <algorithm>
#include <limits>

#include "uop/uop.h"

namespace tg {
namespace {

using I = std::pair<int64_t, int64_t>;
constexpr int64_t kBig = int64_t(1) << 62;  // beyond this we stop trusting products and sums

I dtype_range(DType dt) {
  if (dt.is_bool()) return {0, 1};
  if (!dt.is_int()) return {-kBig, kBig};
  return {int64_t(std::max(dt.min(), double(-kBig))), int64_t(std::min(dt.max(), double(kBig)))};
}

bool safe(int64_t v) { return v > -kBig && v < kBig; }

I clamp_to(I r, DType dt) {
  I d = dtype_range(dt);
  if (!safe(r.first) || !safe(r.second) || r.first < d.first || r.second > d.second) return d;
  return r;
}

// The operands' ranges.
I src_range(const UOp& u, size_t i) { return {u.src[i]->vmin, u.src[i]->vmax}; }

// Leaves: constants, loops, launch indices and variables.
I leaf_bounds(const UOp& u) {
  const DType dt = u.dtype;
  auto s = [&](size_t i) { return src_range(u, i); };
  switch (u.op) {
    case Ops::CONST: {
      int64_t v = u.const_int_value();
      if (dt.scalar == Scalar::UInt64 && v < 0) return dtype_range(dt);  // bit pattern of a value >= 2^63
      return {v, v};
    }
    case Ops::RANGE: {  // RANGE(start, end): start .. end-1; RANGE(end): 0 .. end-1
      if (u.src.size() == 1) return clamp_to({0, std::max<int64_t>(0, s(0).second - 1)}, dt);
      if (u.src.size() != 2) return dtype_range(dt);
      I a = s(0), b = s(1);
      return clamp_to({a.first, std::max(a.first, b.second - 1)}, dt);
    }
    case Ops::SPECIAL: {
      const auto* sp = std::get_if<SpecialArg>(&u.arg);
      if (!sp) return dtype_range(dt);
      return {0, std::max<int64_t>(0, sp->size - 1)};
    }
    case Ops::BIND:  // a bound variable: a kernel compiled for it serves its whole range, so the range is its bound
      return s(0);
    case Ops::DEFINE_VAR: {
      auto& n = u.get<NamedRange>();
      return {n.min, n.max};
    }
    default:
      return dtype_range(dt);
  }
}

// Integer arithmetic, with C's truncating division and remainder.
I arithmetic_bounds(const UOp& u) {
  const DType dt = u.dtype;
  auto s = [&](size_t i) { return src_range(u, i); };
  switch (u.op) {
    case Ops::ADD: {
      I a = s(0), b = s(1);
      if (!safe(a.first) || !safe(a.second) || !safe(b.first) || !safe(b.second)) return dtype_range(dt);
      return clamp_to({a.first + b.first, a.second + b.second}, dt);
    }
    case Ops::SUB: {
      I a = s(0), b = s(1);
      if (!safe(a.first) || !safe(a.second) || !safe(b.first) || !safe(b.second)) return dtype_range(dt);
      return clamp_to({a.first - b.second, a.second - b.first}, dt);
    }
    case Ops::MUL: {
      I a = s(0), b = s(1);
      auto lim = int64_t(1) << 31;
      auto big = [&](I r) { return r.first < -lim || r.first > lim || r.second < -lim || r.second > lim; };
      if (big(a) || big(b)) return dtype_range(dt);
      int64_t c[4] = {a.first * b.first, a.first * b.second, a.second * b.first, a.second * b.second};
      return clamp_to({*std::min_element(c, c + 4), *std::max_element(c, c + 4)}, dt);
    }
    case Ops::IDIV: {  // C semantics: truncation toward zero
      I a = s(0), b = s(1);
      if (!safe(a.first) || !safe(a.second)) return dtype_range(dt);
      if (b.first == b.second && b.first != 0) {
        int64_t d = b.first;
        int64_t x = a.first / d, y = a.second / d;
        return clamp_to({std::min(x, y), std::max(x, y)}, dt);
      }
      if (b.first > 0 && a.first >= 0) return clamp_to({a.first / b.second, a.second / b.first}, dt);
      return dtype_range(dt);
    }
    case Ops::MOD: {  // C semantics: the result has the dividend's sign and |result| < |divisor|
      I a = s(0), b = s(1);
      if (!safe(b.first) || !safe(b.second) || (b.first <= 0 && b.second >= 0)) return dtype_range(dt);
      int64_t m = std::max(std::abs(b.first), std::abs(b.second)) - 1;
      return clamp_to({a.first >= 0 ? 0 : std::max(a.first, -m), a.second <= 0 ? 0 : std::min(a.second, m)}, dt);
    }
    case Ops::MAX: {
      I a = s(0), b = s(1);
      return {std::max(a.first, b.first), std::max(a.second, b.second)};
    }
    case Ops::NEG: {
      I a = s(0);
      if (!safe(a.first) || !safe(a.second)) return dtype_range(dt);
      return clamp_to({-a.second, -a.first}, dt);
    }
    default:
      return dtype_range(dt);
  }
}

// Comparisons, bitwise and/or, select and casts.
I logic_bounds(const UOp& u) {
  const DType dt = u.dtype;
  auto s = [&](size_t i) { return src_range(u, i); };
  switch (u.op) {
    case Ops::CMPLT: {
      I a = s(0), b = s(1);
      if (a.second < b.first) return {1, 1};
      if (a.first >= b.second) return {0, 0};
      return {0, 1};
    }
    case Ops::CMPNE: {
      I a = s(0), b = s(1);
      if (a.second < b.first || b.second < a.first) return {1, 1};
      if (a.first == a.second && b.first == b.second && a.first == b.first) return {0, 0};
      return {0, 1};
    }
    case Ops::AND:
      if (dt.is_bool()) return {u.src[0]->vmin & u.src[1]->vmin, u.src[0]->vmax & u.src[1]->vmax};
      if (s(0).first >= 0 && s(1).first >= 0) return {0, std::min(s(0).second, s(1).second)};
      return dtype_range(dt);
    case Ops::OR:
      if (dt.is_bool()) return {u.src[0]->vmin | u.src[1]->vmin, u.src[0]->vmax | u.src[1]->vmax};
      return dtype_range(dt);
    case Ops::WHERE: {
      I c = s(0), a = s(1), b = s(2);
      if (c.first == 1) return a;
      if (c.second == 0) return b;
      return {std::min(a.first, b.first), std::max(a.second, b.second)};
    }
    case Ops::CAST: {
      const UOp& x = *u.src[0];
      if (x.dtype.is_int() || x.dtype.is_bool()) return clamp_to({x.vmin, x.vmax}, dt);
      return dtype_range(dt);
    }
    default:
      return dtype_range(dt);
  }
}

}  // namespace

std::pair<int64_t, int64_t> compute_bounds(const UOp& u) {
  const DType dt = u.dtype;
  if (dt.ptr || dt.count != 1 || !(dt.is_int() || dt.is_bool())) return dtype_range(dt.scalar_type());
  switch (u.op) {
    case Ops::CONST: case Ops::RANGE: case Ops::SPECIAL: case Ops::BIND: case Ops::DEFINE_VAR:
      return leaf_bounds(u);
    case Ops::ADD: case Ops::SUB: case Ops::MUL: case Ops::IDIV: case Ops::MOD: case Ops::MAX: case Ops::NEG:
      return arithmetic_bounds(u);
    case Ops::CMPLT: case Ops::CMPNE: case Ops::AND: case Ops::OR: case Ops::WHERE: case Ops::CAST:
      return logic_bounds(u);
    default:
      return dtype_range(dt);
  }
}

}  // namespace tg
