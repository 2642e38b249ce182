// Symbolic simplification: targeted rewrites, and a randomized check that simplify never changes the value
// of an integer expression over every assignment of its bounded variables.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <functional>
#include <random>

#include "uop/symbolic.h"
#include "uop_eval.h"

using namespace tg;
using tg::testing::UOpEvaluator;

namespace {
UOpPtr var(const char* name, int64_t lo, int64_t hi) {
  return UOp::make(Ops::DEFINE_VAR, dtypes::int32, {}, NamedRange{name, lo, hi});
}
UOpPtr ci(int64_t v) { return UOp::const_int(v, dtypes::int32); }
UOpPtr cb(bool v) { return UOp::const_int(v, dtypes::bool_); }
UOpPtr cf(double v) { return UOp::const_(dtypes::float32, v); }
UOpPtr fvar() { return UOp::make(Ops::DEFINE_GLOBAL, dtypes::float32, {}, int64_t(0)); }
size_t nodes(const UOpPtr& u) { return toposort(u).size(); }

// Every assignment of vars (in their ranges) gives the same value before and after simplify.
void expect_same_values(const UOpPtr& a, const UOpPtr& b, const std::vector<UOpPtr>& vars) {
  UOpEvaluator ev({a, b}, vars);
  std::vector<int64_t> vals;
  for (auto& v : vars) vals.push_back(v->get<NamedRange>().min);
  while (true) {
    ev.run(vals);
    ASSERT_EQ(ev.value(0).i, ev.value(1).i) << a->repr() << "\nsimplified to\n" << b->repr();
    size_t k = 0;
    for (; k < vars.size(); k++) {
      if (++vals[k] <= vars[k]->get<NamedRange>().max) break;
      vals[k] = vars[k]->get<NamedRange>().min;
    }
    if (k == vars.size()) break;
  }
}
}  // namespace

TEST(Symbolic, ConstantFolding) {
  EXPECT_EQ(simplify(ci(3) + ci(4)), ci(7));
  EXPECT_EQ(simplify(idiv(ci(-7), 2)), ci(-3));
  EXPECT_EQ(simplify(mod(ci(-7), 2)), ci(-1));
  EXPECT_EQ(simplify(lt(ci(3), 4)), cb(true));
  EXPECT_EQ(simplify(UOp::alu(Ops::ADD, {cf(0.1), cf(0.2)})), cf(double(0.1f + 0.2f)));
  EXPECT_EQ(simplify(ci(300)->cast(dtypes::uint8)), UOp::const_int(44, dtypes::uint8));
  EXPECT_EQ(simplify(cf(2.7)->cast(dtypes::int32)), ci(2));
  EXPECT_EQ(simplify((ci(300)->cast(dtypes::uint8)) + UOp::const_int(1, dtypes::uint8)),
            UOp::const_int(45, dtypes::uint8));
  EXPECT_EQ(simplify(UOp::alu(Ops::SQRT, {cf(4)})), cf(2));
  EXPECT_EQ(simplify(where(cb(false), ci(1), ci(2))), ci(2));
  EXPECT_EQ(simplify(UOp::alu(Ops::MAX, {ci(-3), ci(5)})), ci(5));
}

TEST(Symbolic, Identities) {
  auto x = var("x", 0, 15);
  EXPECT_EQ(simplify(x + 0), x);
  EXPECT_EQ(simplify(ci(0) + x), x);
  EXPECT_EQ(simplify(x * 1), x);
  EXPECT_EQ(simplify(x * 0), ci(0));
  EXPECT_EQ(simplify(idiv(x, 1)), x);
  EXPECT_EQ(simplify(mod(x, 1)), ci(0));
  EXPECT_EQ(simplify(-(-x)), x);
  EXPECT_EQ(simplify(UOp::alu(Ops::NEG, {UOp::alu(Ops::NEG, {x})})), x);
  EXPECT_EQ(simplify(x - x), ci(0));
  EXPECT_EQ(simplify(UOp::make(Ops::CAST, dtypes::int32, {x})), x);
  EXPECT_EQ(simplify(maximum(x, x)), x);
  EXPECT_EQ(simplify(maximum(x, ci(-1))), x);
}

TEST(Symbolic, FloatIdentitiesAreIeeeSafe) {
  auto f = fvar();
  EXPECT_EQ(simplify(f * cf(1)), f);
  EXPECT_EQ(simplify(f + cf(-0.0)), f);
  EXPECT_EQ(simplify(UOp::alu(Ops::FDIV, {f, cf(1)})), f);
  EXPECT_EQ(simplify(UOp::alu(Ops::SUB, {f, cf(0.0)})), f);
  // x*0 is NaN for NaN/inf, x+0.0 is +0.0 for x=-0.0, x-(-0.0) is +0.0 for x=-0.0: all stay.
  auto times0 = f * cf(0);
  EXPECT_EQ(simplify(times0), times0);
  auto plus0 = f + cf(0.0);
  EXPECT_EQ(simplify(plus0), plus0);
  auto minus_neg0 = UOp::alu(Ops::SUB, {f, cf(-0.0)});
  EXPECT_EQ(simplify(minus_neg0), minus_neg0);
}

TEST(Symbolic, LikeTermsAndCanonicalOrder) {
  auto x = var("x", 0, 15), y = var("y", 0, 3);
  EXPECT_EQ(simplify(x + x), x * 2);
  EXPECT_EQ(simplify(x * 2 + x * 3), x * 5);
  EXPECT_EQ(simplify((x + 3) + 4), x + 7);
  EXPECT_EQ(simplify(ci(3) + x), x + 3);
  EXPECT_EQ(simplify(y + x * 4), x * 4 + y);
  EXPECT_EQ(simplify((x + 1) * 4), x * 4 + 4);
  EXPECT_EQ(simplify(x * 4 + y - x * 4), y);
  EXPECT_EQ(simplify((x * 2) * 3), x * 6);
  EXPECT_EQ(simplify(ci(4) * x), x * 4);
}

TEST(Symbolic, DivModByRange) {
  auto x = var("x", 0, 15), y = var("y", 0, 3), n = var("n", -3, 3), s = var("s", -5, 5);
  EXPECT_EQ(simplify(idiv(x * 4 + y, 4)), x);
  EXPECT_EQ(simplify(mod(x * 4 + y, 4)), y);
  EXPECT_EQ(simplify(idiv(y, 4)), ci(0));
  EXPECT_EQ(simplify(mod(y, 4)), y);
  EXPECT_EQ(simplify(idiv(n, 4)), ci(0));  // truncation: -3/4 == 0
  EXPECT_EQ(simplify(mod(n, 4)), n);       // and -3%4 == -3
  EXPECT_EQ(simplify(idiv(s * 4, 4)), s);  // exact division holds for every sign
  EXPECT_EQ(simplify(mod(s * 4, 4)), ci(0));
  EXPECT_EQ(simplify(idiv(x * 4 + y + 8, 4)), x + 2);
  EXPECT_EQ(simplify(mod(x * 4 + y + 8, 4)), y);
  EXPECT_EQ(simplify(mod(idiv(x * 4 + y, 2), 2)), idiv(y, 2));
  EXPECT_EQ(simplify(idiv(x * 8 + y * 2, 4)), x * 2 + idiv(y, 2));
  // (x*4+y)//4 must stay when x can be negative and y positive: -4+1 = -3 -> 0, not -1.
  auto kept = simplify(idiv(n * 4 + y, 4));
  EXPECT_NE(kept, n);
  expect_same_values(idiv(n * 4 + y, 4), kept, {n, y});
}

TEST(Symbolic, NestedDivMod) {
  auto x = var("x", 0, 100), s = var("s", -50, 50);
  EXPECT_EQ(simplify(idiv(idiv(x, 4), 2)), idiv(x, 8));
  EXPECT_EQ(simplify(idiv(idiv(s, 4), 2)), idiv(s, 8));
  EXPECT_EQ(simplify(mod(mod(x, 8), 4)), mod(x, 4));
  EXPECT_EQ(simplify(mod(mod(s, 8), 4)), mod(s, 4));
  EXPECT_EQ(simplify(mod(mod(x, 4), 8)), mod(x, 4));
  EXPECT_EQ(simplify(idiv(mod(x, 12), 4)), mod(idiv(x, 4), 3));
  EXPECT_EQ(simplify(idiv(x, 4) * 4 + mod(x, 4)), x);
  EXPECT_EQ(simplify(x - idiv(x, 4) * 4), mod(x, 4));
  EXPECT_EQ(simplify(idiv(x, -4)), idiv(x, 4) * -1);
  EXPECT_EQ(simplify(mod(x, -4)), mod(x, 4));
  expect_same_values(idiv(mod(s, 12), 4), simplify(idiv(mod(s, 12), 4)), {s});
}

TEST(Symbolic, ComparisonsByRange) {
  auto x = var("x", 0, 15);
  EXPECT_EQ(simplify(lt(x, 16)), cb(true));
  EXPECT_EQ(simplify(lt(x, 0)), cb(false));
  EXPECT_EQ(simplify(ge(x, 0)), cb(true));
  EXPECT_EQ(simplify(ne(x, ci(16))), cb(true));
  EXPECT_EQ(simplify(lt(x + 1, 5)), lt(x, 4));
  EXPECT_EQ(simplify(lt(x * 4, 10)), lt(x, 3));
  EXPECT_EQ(simplify(lt(ci(10), x * 4)), lt(ci(2), x));
  EXPECT_EQ(simplify(ne(x * 2, ci(5))), cb(true));
  EXPECT_EQ(simplify(ne(x + 2, ci(5))), ne(x, ci(3)));
  EXPECT_EQ(simplify(lt(x, x)), cb(false));
  // terms whose range stays below the others' coefficient cannot move the comparison
  auto y = var("y", 0, 3);
  EXPECT_EQ(simplify(lt(x * 4 + y, 8)), lt(x, 2));
  EXPECT_EQ(simplify(lt(ci(7), x * 4 + y)), lt(ci(1), x));
  EXPECT_EQ(simplify(lt(idiv(x, 4), 2)), lt(x, 8));
  EXPECT_EQ(simplify(lt(ci(1), idiv(x, 4))), lt(ci(7), x));
  auto kept = lt(x * 4 + y, 9);  // y decides when x == 2
  EXPECT_EQ(simplify(kept), kept);
}

TEST(Symbolic, WhereAndLogic) {
  auto x = var("x", 0, 15), y = var("y", 0, 3);
  auto c = lt(x, 8);
  EXPECT_EQ(simplify(where(cb(true), x, y)), x);
  EXPECT_EQ(simplify(where(c, y, y)), y);
  EXPECT_EQ(simplify(where(c, cb(true), cb(false))), c);
  EXPECT_EQ(simplify(logical_and(c, cb(true))), c);
  EXPECT_EQ(simplify(logical_and(c, cb(false))), cb(false));
  EXPECT_EQ(simplify(UOp::alu(Ops::OR, {c, cb(true)})), cb(true));
  EXPECT_EQ(simplify(UOp::alu(Ops::OR, {c, cb(false)})), c);
  EXPECT_EQ(simplify(logical_and(c, c)), c);
  EXPECT_EQ(simplify(ne(ne(c, cb(true)), cb(true))), c);
  EXPECT_EQ(simplify(where(lt(x, 16), x, y)), x);
}

TEST(Symbolic, SimplifiedIsNoBigger) {
  auto x = var("x", 0, 15), y = var("y", 0, 3), z = var("z", 0, 7);
  std::vector<UOpPtr> cases{x + 0,
                            x * 1,
                            (x + 3) + 4,
                            idiv(x * 4 + y, 4),
                            mod(x * 4 + y, 4),
                            mod(idiv(x * 4 + y, 2), 2),
                            idiv(idiv(x, 4), 2),
                            mod(mod(x, 8), 4),
                            lt(x + 1, 5),
                            idiv(x, 4) * 4 + mod(x, 4),
                            idiv(z * 16 + x, 16) * 16 + mod(z * 16 + x, 16),
                            mod(idiv(z * 16 + x * 4 + y, 4), 4),
                            where(lt(y, 4), x, z)};
  for (auto& u : cases) EXPECT_LE(nodes(simplify(u)), nodes(u)) << u->repr();
}

// Random integer expressions over bounded variables: simplify must preserve the value everywhere.
// TG_FUZZ_SEED and TG_FUZZ_ITERS run other or longer searches.
TEST(Symbolic, RandomExpressionsKeepTheirValue) {
  std::mt19937 rng(std::getenv("TG_FUZZ_SEED") ? std::atoi(std::getenv("TG_FUZZ_SEED")) : 1234);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  int checked = 0;
  int iters = std::getenv("TG_FUZZ_ITERS") ? std::atoi(std::getenv("TG_FUZZ_ITERS")) : 3000;
  for (int iter = 0; iter < iters; iter++) {
    std::vector<UOpPtr> vars;
    int nv = pick(2, 3);
    for (int i = 0; i < nv; i++) {
      int lo = pick(0, 3) == 0 ? pick(-6, 0) : 0;
      int hi = lo + pick(0, 9);
      vars.push_back(UOp::make(Ops::DEFINE_VAR, dtypes::int32, {}, NamedRange{"v" + std::to_string(i), lo, hi}));
    }
    std::function<UOpPtr(int)> gen = [&](int depth) -> UOpPtr {
      if (depth == 0 || pick(0, 4) == 0) return pick(0, 2) ? vars[size_t(pick(0, nv - 1))] : ci(pick(-5, 8));
      int nonzero = pick(1, 9) * (pick(0, 3) ? 1 : -1);
      switch (pick(0, 9)) {
        case 0:
        case 1:
          return gen(depth - 1) + gen(depth - 1);
        case 2:
          return gen(depth - 1) * gen(depth - 1);
        case 3:
          return gen(depth - 1) * ci(pick(-4, 8));
        case 4:
          return idiv(gen(depth - 1), ci(nonzero));
        case 5:
          return mod(gen(depth - 1), ci(nonzero));
        case 6:
          return gen(depth - 1) - gen(depth - 1);
        case 7:
          return maximum(gen(depth - 1), gen(depth - 1));
        case 8:
          return where(lt(gen(depth - 1), gen(depth - 1)), gen(depth - 1), gen(depth - 1));
        default:
          return pick(0, 1) ? idiv(gen(depth - 1), gen(depth - 1)) : mod(gen(depth - 1), gen(depth - 1));
      }
    };
    UOpPtr e = gen(pick(1, 5));
    int top = pick(0, 7);
    if (top == 0)
      e = lt(e, gen(2));
    else if (top == 3)
      e = lt(ci(pick(-4, 6)), e);
    else if (top == 4)
      e = lt(e, ci(pick(-4, 6)));
    else if (top == 1)
      e = ne(e, ci(pick(-3, 6)));
    else if (top == 2)
      e = logical_and(lt(e, ci(pick(-3, 10))), ge(gen(2), pick(-2, 4)));
    UOpPtr s = simplify(e);
    expect_same_values(e, s, vars);
    if (HasFatalFailure()) return;
    EXPECT_EQ(simplify(s), s) << "not a fixed point: " << e->repr();
    checked++;
  }
  EXPECT_EQ(checked, iters);
}

// Div/mod chains like those unravelling produces: ((a*c1 + b*c2 + k) // d) % m over non-negative vars.
TEST(Symbolic, RandomIndexChainsKeepTheirValue) {
  std::mt19937 rng(std::getenv("TG_FUZZ_SEED") ? std::atoi(std::getenv("TG_FUZZ_SEED")) : 99);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  int iters = std::getenv("TG_FUZZ_ITERS") ? std::atoi(std::getenv("TG_FUZZ_ITERS")) : 2000;
  for (int iter = 0; iter < iters; iter++) {
    auto a = var("a", 0, pick(0, 7)), b = var("b", 0, pick(0, 7)), c = var("c", 0, pick(0, 5));
    UOpPtr e = a * pick(1, 12) + b * pick(1, 6) + c + pick(-3, 5);
    for (int k = pick(1, 3); k > 0; k--) e = pick(0, 1) ? idiv(e, pick(1, 8)) : mod(e, pick(1, 8));
    if (pick(0, 1)) e = e * pick(1, 6) + mod(e, pick(1, 4));
    if (pick(0, 3) == 0) e = pick(0, 1) ? lt(e, pick(-2, 9)) : lt(ci(pick(-2, 9)), e);
    expect_same_values(e, simplify(e), {a, b, c});
    if (HasFatalFailure()) return;
  }
}

// Long sums collapse to one term per variable, and deep chains neither recurse nor go quadratic.
TEST(Symbolic, LongSumsCollapse) {
  std::vector<UOpPtr> vars;
  for (int i = 0; i < 8; i++) vars.push_back(var(("w" + std::to_string(i)).c_str(), 0, 9));
  UOpPtr e = vars[0];
  int64_t coef[8] = {1, 0, 0, 0, 0, 0, 0, 0}, k = 0;
  for (int i = 0; i < 2000; i++) {
    if (i % 3 == 0) {
      e = e + (i % 7), k += i % 7;
    } else {
      e = e + vars[size_t(i % 8)] * (i % 5), coef[i % 8] += i % 5;
    }
  }
  UOpPtr s = simplify(e);
  EXPECT_LE(nodes(s), 4u * 8 + 1);  // per variable: itself, MUL, coefficient, ADD; one constant
  UOpEvaluator ev({s}, vars);
  std::vector<int64_t> vals{1, 2, 3, 4, 5, 6, 7, 8};
  ev.run(vals);
  int64_t want = k;
  for (int i = 0; i < 8; i++) want += coef[i] * vals[size_t(i)];
  EXPECT_EQ(ev.value(0).i, want);
  UOpPtr deep = vars[0];
  for (int i = 0; i < 20000; i++) deep = deep + 1;
  EXPECT_EQ(simplify(deep), vars[0] + 20000);
}
