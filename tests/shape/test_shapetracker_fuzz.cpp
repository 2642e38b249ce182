// ShapeTracker against brute force: a tensor is an explicit array holding, for every position, the buffer
// index it reads (or -1 where padding hides it). Random chains of movement ops run on both; then the
// (index, valid) UOps of the tracker, evaluated at every position, must give the array.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <numeric>
#include <random>

#include "../uop/uop_eval.h"
#include "shape/indexing.h"
#include "shape/shapetracker.h"

using namespace tg;
using tg::testing::UOpEvaluator;

namespace {

struct Ref {
  Shape shape;
  std::vector<int64_t> idx;  // row-major over shape
};

Shape unravel(const Shape& shape, int64_t pos) {
  Shape out(shape.size());
  for (size_t i = shape.size(); i-- > 0;) out[i] = pos % shape[i], pos /= shape[i];
  return out;
}
int64_t ravel(const Shape& shape, const Shape& c) {
  int64_t p = 0;
  for (size_t i = 0; i < shape.size(); i++) p = p * shape[i] + c[i];
  return p;
}

// New array of `shape` where each position reads old coordinates given by `from` (nullopt: padding).
template <class F>
Ref remap(const Ref& r, const Shape& shape, F from) {
  Ref out{shape, std::vector<int64_t>(size_t(prod(shape)))};
  for (int64_t p = 0; p < prod(shape); p++) {
    std::optional<Shape> c = from(unravel(shape, p));
    out.idx[size_t(p)] = c ? r.idx[size_t(ravel(r.shape, *c))] : -1;
  }
  return out;
}

// One movement op, applied to both sides.
struct Op {
  enum Kind { Reshape, Permute, Expand, Pad, Shrink, Flip } kind;
  Shape shape;                // Reshape, Expand
  std::vector<int64_t> axes;  // Permute
  Mask arg;                   // Pad (before, after), Shrink [b, e)
  std::vector<bool> flip;     // Flip

  ShapeTracker apply(const ShapeTracker& st) const {
    switch (kind) {
      case Reshape:
        return st.reshape(shape);
      case Permute:
        return st.permute(axes);
      case Expand:
        return st.expand(shape);
      case Pad:
        return st.pad(arg);
      case Shrink:
        return st.shrink(arg);
      default:
        return st.flip(flip);
    }
  }

  Ref apply(const Ref& r) const {
    size_t n = r.shape.size();
    switch (kind) {
      case Reshape:
        return Ref{shape, r.idx};
      case Permute: {
        Shape sh;
        for (int64_t a : axes) sh.push_back(r.shape[size_t(a)]);
        return remap(r, sh, [&](const Shape& c) -> std::optional<Shape> {
          Shape o(n);
          for (size_t i = 0; i < n; i++) o[size_t(axes[i])] = c[i];
          return o;
        });
      }
      case Expand:
        return remap(r, shape, [&](const Shape& c) -> std::optional<Shape> {
          Shape o = c;
          for (size_t i = 0; i < n; i++)
            if (r.shape[i] == 1) o[i] = 0;
          return o;
        });
      case Pad: {
        Shape sh;
        for (size_t i = 0; i < n; i++) sh.push_back(r.shape[i] + arg[i].first + arg[i].second);
        return remap(r, sh, [&](const Shape& c) -> std::optional<Shape> {
          Shape o(n);
          for (size_t i = 0; i < n; i++) {
            o[i] = c[i] - arg[i].first;
            if (o[i] < 0 || o[i] >= r.shape[i]) return std::nullopt;
          }
          return o;
        });
      }
      case Shrink: {
        Shape sh;
        for (auto [b, e] : arg) sh.push_back(e - b);
        return remap(r, sh, [&](const Shape& c) -> std::optional<Shape> {
          Shape o(n);
          for (size_t i = 0; i < n; i++) o[i] = c[i] + arg[i].first;
          return o;
        });
      }
      default:
        return remap(r, r.shape, [&](const Shape& c) -> std::optional<Shape> {
          Shape o = c;
          for (size_t i = 0; i < n; i++)
            if (flip[i]) o[i] = r.shape[i] - 1 - c[i];
          return o;
        });
    }
  }
};

class Gen {
 public:
  explicit Gen(unsigned seed) : rng_(seed) {}
  int pick(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }

  Shape start_shape() {
    Shape s(size_t(pick(1, 4)));
    for (auto& d : s) d = pick(0, 12) == 0 ? 0 : pick(1, 5);
    return s;
  }

  // A random op valid on `shape` that keeps the element count small.
  Op op(const Shape& shape) {
    for (;;) {
      Op o = candidate(shape);
      Shape next = o.apply(Ref{shape, std::vector<int64_t>(size_t(prod(shape)), 0)}).shape;
      if (prod(next) <= kMaxElems && next.size() <= 6) return o;
    }
  }

 private:
  static constexpr int64_t kMaxElems = 360;

  Shape random_factorization(int64_t n) {
    Shape s;
    if (n == 0) {
      s.assign(size_t(pick(1, 4)), 0);
      for (auto& d : s) d = pick(0, 3);
      s[size_t(pick(0, int(s.size()) - 1))] = 0;
      return s;
    }
    int rank = pick(1, 4);
    for (int i = 0; i < rank - 1; i++) {
      std::vector<int64_t> divs;
      for (int64_t d = 1; d <= n; d++)
        if (n % d == 0) divs.push_back(d);
      int64_t d = divs[size_t(pick(0, int(divs.size()) - 1))];
      s.push_back(d);
      n /= d;
    }
    s.push_back(n);
    std::shuffle(s.begin(), s.end(), rng_);
    return s;
  }

  Shape reshape_target(const Shape& shape) {
    Shape s = shape;
    switch (pick(0, 4)) {
      case 0: {  // split one dim
        size_t d = size_t(pick(0, int(s.size()) - 1));
        std::vector<int64_t> divs;
        for (int64_t f = 1; f <= s[d]; f++)
          if (s[d] % f == 0) divs.push_back(f);
        if (s[d] == 0) break;
        int64_t f = divs[size_t(pick(0, int(divs.size()) - 1))];
        s[d] /= f;
        s.insert(s.begin() + int64_t(d), f);
        return s;
      }
      case 1:  // merge two adjacent dims
        if (s.size() < 2) break;
        {
          size_t d = size_t(pick(0, int(s.size()) - 2));
          s[d] *= s[d + 1];
          s.erase(s.begin() + int64_t(d) + 1);
        }
        return s;
      case 2:  // add a size-1 dim
        s.insert(s.begin() + pick(0, int(s.size())), 1);
        return s;
      case 3:  // drop a size-1 dim
        for (size_t i = 0; i < s.size(); i++)
          if (s[i] == 1 && s.size() > 1) {
            s.erase(s.begin() + int64_t(i));
            return s;
          }
        break;
      default:
        break;
    }
    return random_factorization(prod(shape));
  }

  Op candidate(const Shape& shape) {
    size_t n = shape.size();
    Op o{};
    switch (pick(0, 5)) {
      case 0:
        o.kind = Op::Reshape;
        o.shape = reshape_target(shape);
        return o;
      case 1:
        o.kind = Op::Permute;
        o.axes.resize(n);
        std::iota(o.axes.begin(), o.axes.end(), 0);
        std::shuffle(o.axes.begin(), o.axes.end(), rng_);
        return o;
      case 2:
        o.kind = Op::Expand;
        o.shape = shape;
        for (auto& d : o.shape)
          if (d == 1 && pick(0, 1)) d = pick(2, 4);
        return o;
      case 3:
        o.kind = Op::Pad;
        for (size_t i = 0; i < n; i++)
          o.arg.push_back(pick(0, 1) ? std::pair<int64_t, int64_t>{pick(0, 2), pick(0, 2)}
                                     : std::pair<int64_t, int64_t>{0, 0});
        return o;
      case 4:
        o.kind = Op::Shrink;
        for (int64_t s : shape) {
          int64_t b = pick(0, int(s)), e = pick(int(b), int(s));
          if (e == b && s > 0 && pick(0, 7) != 0) {  // mostly non-empty
            b = std::min<int64_t>(b, s - 1);
            e = b + 1 + pick(0, int(s - b - 1));
          }
          o.arg.push_back({b, e});
        }
        return o;
      default:
        o.kind = Op::Flip;
        for (size_t i = 0; i < n; i++) o.flip.push_back(pick(0, 1));
        return o;
    }
  }

  std::mt19937 rng_;
};

// Compare a tracker with the reference at every position. Returns the number of positions checked.
int64_t check(const ShapeTracker& st, const Ref& ref, const std::string& what) {
  EXPECT_EQ(st.shape(), ref.shape) << what;
  if (st.shape() != ref.shape || prod(ref.shape) == 0) return 0;
  std::vector<UOpPtr> vars;
  for (size_t i = 0; i < ref.shape.size(); i++)
    vars.push_back(
        UOp::make(Ops::DEFINE_VAR, dtypes::int32, {}, NamedRange{"i" + std::to_string(i), 0, ref.shape[i] - 1}));
  auto [idx, valid] = to_indexed_uops(st, vars);
  UOpEvaluator ev({idx, valid}, vars);
  for (int64_t p = 0; p < prod(ref.shape); p++) {
    ev.run(unravel(ref.shape, p));
    int64_t want = ref.idx[size_t(p)];
    bool ok = want < 0 ? ev.value(1).i == 0 : ev.value(1).i == 1 && ev.value(0).i == want;
    if (!ok) {
      ADD_FAILURE() << what << "\nat position " << p << " want " << want << ", got valid=" << ev.value(1).i
                    << " index=" << ev.value(0).i << "\n"
                    << st.repr() << "\nindex " << idx->repr() << "\nvalid " << valid->repr();
      return -1;
    }
  }
  return prod(ref.shape);
}

int64_t ref_real_size(const Ref& r) {
  int64_t m = -1;
  for (int64_t v : r.idx) m = std::max(m, v);
  return m + 1;
}

std::string describe(const std::vector<Op>& ops, const Shape& start) {
  static const char* names[] = {"reshape", "permute", "expand", "pad", "shrink", "flip"};
  std::string s = "start (";
  for (int64_t d : start) s += std::to_string(d) + ",";
  s += ")";
  for (auto& o : ops) s += std::string(" -> ") + names[o.kind];
  return s;
}

int env_int(const char* name, int dflt) { return std::getenv(name) ? std::atoi(std::getenv(name)) : dflt; }

}  // namespace

// Chains of 1-8 ops from random small shapes: every position agrees, and real_size matches.
TEST(Shape, FuzzMovementChainsMatchBruteForce) {
  Gen g(unsigned(env_int("TG_FUZZ_SEED", 7)));
  int chains = env_int("TG_FUZZ_ITERS", 3000);
  int64_t positions = 0, multi_view = 0;
  for (int it = 0; it < chains; it++) {
    Shape start = g.start_shape();
    Ref ref{start, std::vector<int64_t>(size_t(prod(start)))};
    std::iota(ref.idx.begin(), ref.idx.end(), 0);
    ShapeTracker st = ShapeTracker::from_shape(start);
    std::vector<Op> ops;
    for (int k = g.pick(1, 8); k > 0; k--) {
      ops.push_back(g.op(ref.shape));
      ref = ops.back().apply(ref);
      st = ops.back().apply(st);
    }
    std::string what = describe(ops, start);
    int64_t n = check(st, ref, what);
    if (n < 0) return;
    positions += n;
    multi_view += st.views.size() > 1;
    int64_t want = ref_real_size(ref);
    if (st.views.size() == 1 || prod(ref.shape) == 0)
      EXPECT_EQ(st.real_size(), prod(ref.shape) == 0 ? 0 : want) << what;
    else
      EXPECT_GE(st.real_size(), want) << what;
    EXPECT_LE(st.real_size(), prod(start)) << what;
    // simplify merges views but never changes what they read
    ShapeTracker s = st.simplify();
    EXPECT_LE(s.views.size(), st.views.size());
    if (check(s, ref, what + " (simplified)") < 0) return;
  }
  EXPECT_GT(positions, 50000);
  EXPECT_GT(multi_view, 100);  // the chains do reach stacked views
}

// st1 + st2 (views concatenated, then merged where exact) reads what running both chains reads.
TEST(Shape, FuzzComposedTrackersMatchBruteForce) {
  Gen g(unsigned(env_int("TG_FUZZ_SEED", 11)));
  int chains = env_int("TG_FUZZ_ITERS", 2000);
  int64_t merged = 0;
  for (int it = 0; it < chains; it++) {
    Shape start = g.start_shape();
    Ref ref{start, std::vector<int64_t>(size_t(prod(start)))};
    std::iota(ref.idx.begin(), ref.idx.end(), 0);
    ShapeTracker a = ShapeTracker::from_shape(start);
    std::vector<Op> ops;
    for (int k = g.pick(1, 4); k > 0; k--) {
      ops.push_back(g.op(ref.shape));
      ref = ops.back().apply(ref);
      a = ops.back().apply(a);
    }
    ShapeTracker b = ShapeTracker::from_shape(ref.shape);
    for (int k = g.pick(1, 4); k > 0; k--) {
      ops.push_back(g.op(ref.shape));
      ref = ops.back().apply(ref);
      b = ops.back().apply(b);
    }
    ShapeTracker ab = a + b;
    merged += ab.views.size() < a.views.size() + b.views.size();
    if (check(ab, ref, describe(ops, start) + " (composed)") < 0) return;
  }
  EXPECT_GT(merged, chains / 2);
}
