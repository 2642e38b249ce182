// Named passes (uop/pass_log.h): what graph_rewrite and ScopedPass record, and typed rule contexts.
#include <gtest/gtest.h>

#include "../common/kernel_source.h"
#include "codegen/kernel.h"
#include "codegen/opt/heuristic.h"
#include "codegen/linearize.h"
#include "codegen/lowerer.h"
#include "renderer/c.h"
#include "tg/tg.h"
#include "uop/pass_log.h"
#include "uop/pattern.h"

using namespace tg;  // NOLINT

namespace {

// x + 0 -> x, counting the folds in a typed context
struct FoldCount {
  int folds = 0;
};

const TypedMatcher<FoldCount>& pm_fold_add_zero() {
  static const TypedMatcher<FoldCount> pm({
      {UPat::var("x") + UPat::cvar("c"),
       [](const Captures& m, FoldCount& ctx) -> UOpPtr {
         if (m["c"]->const_value() != 0) return nullptr;
         ctx.folds++;
         return m["x"];
       }},
  });
  return pm;
}

}  // namespace

TEST(PassLog, NamedRewriteRecordsItsRewritesNodesAndDepth) {
  UOpPtr x = UOp::make(Ops::DEFINE_VAR, dtypes::int32, {}, NamedRange{"x", 0, 9});
  UOpPtr e = (x + 0) * (x + 0) + 0;
  FoldCount ctx;
  PassLog log;
  UOpPtr out;
  {
    ScopedPass outer("outer");
    out = graph_rewrite("fold_add_zero", e, pm_fold_add_zero(), ctx);
    outer.set(-1, 7);
  }
  EXPECT_EQ(out, x * x);
  EXPECT_EQ(ctx.folds, 2) << "x + 0 is one node (interned): folded once, and the outer + 0";
  ASSERT_EQ(log.records().size(), 2u);
  EXPECT_EQ(log.records()[0].name, "outer");
  EXPECT_EQ(log.records()[0].depth, 0);
  EXPECT_EQ(log.records()[0].nodes, 7);
  EXPECT_EQ(log.records()[1].name, "fold_add_zero");
  EXPECT_EQ(log.records()[1].depth, 1);
  EXPECT_EQ(log.records()[1].rewrites, 2);
  EXPECT_EQ(log.records()[1].nodes, 2) << "x and x * x";
  EXPECT_NE(log.str().find("fold_add_zero"), std::string::npos) << log.str();
}

TEST(PassLog, NothingIsRecordedWithoutAnOpenLog) {
  ASSERT_EQ(PassLog::current(), nullptr);
  UOpPtr x = UOp::make(Ops::DEFINE_VAR, dtypes::int32, {}, NamedRange{"x", 0, 9});
  FoldCount ctx;
  EXPECT_EQ(graph_rewrite("fold_add_zero", x + 0, pm_fold_add_zero(), ctx), x);
  {
    PassLog inner;
    EXPECT_EQ(PassLog::current(), &inner);
  }
  EXPECT_EQ(PassLog::current(), nullptr);
}

TEST(PassLog, AKernelListsItsPasses) {
  Tensor a = Tensor::empty({64, 64}), b = Tensor::empty({64, 64});
  ClangRenderer c;
  Kernel k(tgtest::last_ast((a * b).sum(1)), c);
  hand_coded_optimizations(k);
  PassLog log;
  linearize_kernel(lower_kernel(k));
  std::vector<std::string> names;
  for (const PassRecord& r : log.records()) names.push_back(r.name);
  // (prefetch: the C renderer's kernels stream 64 x 64 floats row tile by row tile)
  EXPECT_EQ(names, (std::vector<std::string>{"exact_products", "decompositions", "lower", "reduce_ranges", "expand",
                                             "symbolic", "prefetch", "reduce_to_acc", "linearize"}));
  std::vector<int> depths;
  for (const PassRecord& r : log.records()) depths.push_back(r.depth);
  EXPECT_EQ(depths, (std::vector<int>{0, 0, 0, 1, 1, 1, 1, 0, 0}));  // lower's passes nest in it
  EXPECT_GE(log.records()[7].rewrites, 1);                           // the sum's REDUCE becomes an accumulator
  for (const PassRecord& r : log.records()) EXPECT_GT(r.nodes, 0) << r.name;
  EXPECT_EQ(log.records()[3].rewrites, 1);  // the sum's REDUCE_AXIS gets its range
  EXPECT_GT(log.records()[4].rewrites, 3);  // loads, the product, the reduce, the store, the sink
}
