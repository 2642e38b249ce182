// UOp interning, printing and graph walks.
#include <gtest/gtest.h>

#include "uop/pattern.h"
#include "uop/uop.h"

using namespace tg;

TEST(UOp, InterningGivesSameObject) {
  auto a = UOp::make(Ops::DEFINE_VAR, dtypes::int32, {}, NamedRange{"a", 0, 10});
  auto x = a + UOp::const_int(3);
  auto y = a + UOp::const_int(3);
  EXPECT_EQ(x.get(), y.get());
  EXPECT_NE((a + UOp::const_int(4)).get(), x.get());
  EXPECT_EQ(x->vmin, 3);
  EXPECT_EQ(x->vmax, 13);
}

TEST(UOp, FloatConstsDistinguishSignedZero) {
  EXPECT_NE(UOp::const_(dtypes::float32, 0.0).get(), UOp::const_(dtypes::float32, -0.0).get());
  EXPECT_EQ(UOp::const_(dtypes::float32, 1.0).get(), UOp::const_(dtypes::float32, 1.0).get());
}

TEST(UOp, DeadNodesLeaveTheTable) {
  const UOp* raw;
  {
    auto v = UOp::make(Ops::DEFINE_VAR, dtypes::int32, {}, NamedRange{"dead", 0, 1});
    raw = v.get();
  }
  auto v2 = UOp::make(Ops::DEFINE_VAR, dtypes::int32, {}, NamedRange{"dead", 0, 1});
  EXPECT_EQ(v2->src.size(), 0u);
  (void)raw;
}

TEST(UOp, PrintsLikeTinygrad) {
  auto c = UOp::const_(dtypes::float32, 1.0);
  auto s = UOp::alu(Ops::ADD, {c, c});
  EXPECT_EQ(s->repr(),
            "UOp(Ops.ADD, dtypes.float, arg=None, src=(\n  x0:=UOp(Ops.CONST, dtypes.float, arg=1.0, src=()),\n  x0,))");
}

TEST(PatternMatcher, RewritesDeepChainWithoutRecursion) {
  auto x = UOp::make(Ops::DEFINE_VAR, dtypes::int32, {}, NamedRange{"x", 0, 100});
  auto zero = UOp::const_int(0);
  UOpPtr chain = x;
  for (int i = 0; i < 200000; i++) chain = chain + zero;
  PatternMatcher pm({{UPat::var("x") + UPat::cnst(0), [](const Captures& m, void*) { return m["x"]; }}});
  auto out = graph_rewrite(chain, pm);
  EXPECT_EQ(out.get(), x.get());
  chain.reset();  // destroying the 200k chain must not recurse either
}

TEST(PatternMatcher, CommutativeAndRepeatedNames) {
  auto x = UOp::make(Ops::DEFINE_VAR, dtypes::int32, {}, NamedRange{"x", 0, 100});
  auto y = UOp::make(Ops::DEFINE_VAR, dtypes::int32, {}, NamedRange{"y", 0, 100});
  PatternMatcher pm({{UPat::var("a") + UPat::var("a"), [](const Captures& m, void*) { return m["a"] * 2; }}});
  EXPECT_EQ(graph_rewrite(x + x, pm).get(), (x * 2).get());
  EXPECT_EQ(graph_rewrite(x + y, pm).get(), (x + y).get());
  PatternMatcher pc({{UPat::cvar("c") + UPat::var("v"), [](const Captures& m, void*) { return m["v"]; }}});
  EXPECT_EQ(graph_rewrite(x + UOp::const_int(5), pc).get(), x.get());
}
