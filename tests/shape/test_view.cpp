// View and ShapeTracker unit tests: canonical form, each movement op, reshape/merge, printing, and the index
// expressions to_indexed_uops gives for the common cases.
#include <gtest/gtest.h>

#include "shape/indexing.h"
#include "tg/tg.h"
#include "shape/shapetracker.h"
#include "uop/symbolic.h"

using namespace tg;

namespace {
UOpPtr var(const char* name, int64_t n) {
  return UOp::make(Ops::DEFINE_VAR, dtypes::int32, {}, NamedRange{name, 0, n - 1});
}
UOpPtr ctrue() { return UOp::const_int(1, dtypes::bool_); }
}  // namespace

TEST(View, CreateIsCanonical) {
  View v = View::create({4, 1, 3});
  EXPECT_EQ(v.strides, (Shape{3, 0, 1}));
  EXPECT_TRUE(v.contiguous);
  EXPECT_EQ(strides_for_shape({2, 1, 5}), (Shape{5, 0, 1}));
  // a full mask is dropped
  View full = View::create({2, 3}, Shape{3, 1}, 0, Mask{{0, 2}, {0, 3}});
  EXPECT_FALSE(full.mask.has_value());
  EXPECT_TRUE(full.contiguous);
  // an empty range anywhere: nothing is valid, one canonical form
  View empty = View::create({2, 3}, Shape{3, 1}, 5, Mask{{0, 2}, {1, 1}});
  EXPECT_EQ(empty.strides, (Shape{0, 0}));
  EXPECT_EQ(empty.offset, 0);
  EXPECT_EQ(empty.mask, (Mask{{0, 0}, {0, 0}}));
  // a dim masked to one index folds into the offset
  View one = View::create({4, 3}, Shape{3, 1}, 0, Mask{{2, 3}, {0, 3}});
  EXPECT_EQ(one.strides, (Shape{0, 1}));
  EXPECT_EQ(one.offset, 6);
  // zero-size views
  View z = View::create({2, 0, 3}, Shape{7, 7, 7}, 4);
  EXPECT_EQ(z.strides, (Shape{0, 0, 0}));
  EXPECT_EQ(z.offset, 0);
  EXPECT_TRUE(z.contiguous);
  EXPECT_FALSE(View::create({4}, Shape{1}, 1).contiguous);
}

TEST(View, PrintsLikeTinygrad) {
  EXPECT_EQ(View::create({4, 4}).repr(), "View(shape=(4, 4), strides=(4, 1), offset=0, mask=None, contiguous=True)");
  EXPECT_EQ(View::create({4}).pad({{1, 0}}).repr(),
            "View(shape=(5,), strides=(1,), offset=-1, mask=((1, 5),), contiguous=False)");
  EXPECT_EQ(View::create({}).repr(), "View(shape=(), strides=(), offset=0, mask=None, contiguous=True)");
  EXPECT_EQ(ShapeTracker::from_shape({4, 4}).repr(),
            "ShapeTracker(views=(View(shape=(4, 4), strides=(4, 1), offset=0, mask=None, contiguous=True),))");
  auto two = ShapeTracker::from_shape({2, 3}).permute({1, 0}).reshape({6});
  EXPECT_EQ(two.repr(),
            "ShapeTracker(views=(View(shape=(3, 2), strides=(1, 3), offset=0, mask=None, contiguous=False), "
            "View(shape=(6,), strides=(1,), offset=0, mask=None, contiguous=True)))");
}

TEST(View, Permute) {
  View v = View::create({2, 3, 4}).permute({2, 0, 1});
  EXPECT_EQ(v.shape, (Shape{4, 2, 3}));
  EXPECT_EQ(v.strides, (Shape{1, 12, 4}));
  EXPECT_FALSE(v.contiguous);
  EXPECT_EQ(v.permute({1, 2, 0}), View::create({2, 3, 4}));
}

TEST(View, Expand) {
  View v = View::create({1, 3}).expand({4, 3});
  EXPECT_EQ(v.strides, (Shape{0, 1}));
  View padded = View::create({1, 3}).pad({{0, 0}, {1, 0}}).expand({5, 4});
  EXPECT_EQ(padded.mask, (Mask{{0, 5}, {1, 4}}));
}

TEST(View, PadAndShrink) {
  View p = View::create({2, 2}).pad({{1, 1}, {0, 1}});
  EXPECT_EQ(p.shape, (Shape{4, 3}));
  EXPECT_EQ(p.offset, -2);
  EXPECT_EQ(p.mask, (Mask{{1, 3}, {0, 2}}));
  // shrinking back to the valid region gives the original
  EXPECT_EQ(p.shrink({{1, 3}, {0, 2}}), View::create({2, 2}));
  View s = View::create({4, 4}).shrink({{1, 3}, {0, 2}});
  EXPECT_EQ(s.shape, (Shape{2, 2}));
  EXPECT_EQ(s.strides, (Shape{4, 1}));
  EXPECT_EQ(s.offset, 4);
  EXPECT_EQ(View::create({3}).pad({{0, 0}}), View::create({3}));
  // shrinking into the padding only: nothing valid
  View none = View::create({2}).pad({{2, 0}}).shrink({{0, 2}});
  EXPECT_EQ(none.mask, (Mask{{0, 0}}));
}

TEST(View, Flip) {
  View f = View::create({4, 4}).flip({true, false});
  EXPECT_EQ(f.strides, (Shape{-4, 1}));
  EXPECT_EQ(f.offset, 12);
  View pf = View::create({3}).pad({{1, 0}}).flip({true});
  EXPECT_EQ(pf.mask, (Mask{{0, 3}}));
  EXPECT_EQ(f.flip({true, false}), View::create({4, 4}));
}

TEST(View, Reshape) {
  // contiguous: anything
  EXPECT_EQ(View::create({4, 4}).reshape({2, 8}), View::create({2, 8}));
  // split and merge of strided dims
  View t = View::create({4, 6}).permute({1, 0});  // (6,4) strides (1,6)
  auto split = t.reshape({2, 3, 4});
  ASSERT_TRUE(split);
  EXPECT_EQ(split->strides, (Shape{3, 1, 6}));
  EXPECT_FALSE(t.reshape({24}).has_value());
  EXPECT_FALSE(t.reshape({4, 6}).has_value());
  // broadcast dims split with stride 0, and size-1 dims come and go
  View e = View::create({1, 4}).expand({6, 4});
  auto es = e.reshape({2, 3, 1, 4});
  ASSERT_TRUE(es);
  EXPECT_EQ(es->strides, (Shape{0, 0, 0, 1}));
  EXPECT_FALSE(e.reshape({24}).has_value());
  // masks: adding a size-1 dim, splitting a dim whose mask is a box in the new dims
  View p = View::create({4}).pad({{0, 4}});  // (8,) valid [0,4)
  auto p1 = p.reshape({1, 8});
  ASSERT_TRUE(p1);
  EXPECT_EQ(p1->mask, (Mask{{0, 1}, {0, 4}}));
  auto p2 = p.reshape({2, 4});
  ASSERT_TRUE(p2);
  EXPECT_EQ(p2->mask, (Mask{{0, 1}, {0, 4}}));
  EXPECT_FALSE(View::create({4}).pad({{1, 3}}).reshape({2, 4}).has_value());  // valid [1,5) is no box
  // merging a padded dim whose outer dims are single-valued
  View q = View::create({1, 3}).pad({{1, 0}, {0, 0}});  // (2,3): row 1 valid
  auto q1 = q.reshape({6});
  ASSERT_TRUE(q1);
  EXPECT_EQ(q1->mask, (Mask{{3, 6}}));
}

TEST(View, SymbolicReshapeRegroupsTheConcreteDims) {
  // Attention's values over start_pos + 1 keys, (heads, hd, S) with strides over S: splitting hd for CPU threads
  // stays one view (before, a second view made every index a division by start_pos + 1).
  const sint S = sint::from_uop(var("start_pos", 100)) + 1;
  View v = View::create({3, S, 64}).permute({0, 2, 1});  // (3, 64, S) strides (64 S, 1, 64)
  auto split = v.reshape({3, 2, 32, S});
  ASSERT_TRUE(split);
  EXPECT_EQ(split->strides, (Shape{S * 64, 32, 1, 64}));
  auto ones = v.reshape({1, 3, 64, 1, S});  // size-1 dims come and go
  ASSERT_TRUE(ones);
  EXPECT_EQ(ones->strides, (Shape{0, S * 64, 1, 0, 64}));
  EXPECT_FALSE(v.reshape({192, S}).has_value());                    // (3, 64) strides (64 S, 1) do not chain
  EXPECT_FALSE(v.reshape({3, S, 64}).has_value());                  // a symbolic dim must keep its place
  View offset = View::create({3, S, 64}, Shape{S * 64, 64, 1}, 5);  // not contiguous (an offset): merges by strides
  auto merged = offset.reshape({3, S, 2, 32});
  ASSERT_TRUE(merged);
  EXPECT_EQ(merged->strides, (Shape{S * 64, 64, 32, 1}));
  EXPECT_EQ(merged->offset, 5);
}

TEST(View, Merge) {
  View inner = View::create({4, 6}).permute({1, 0});  // (6,4)
  // a contiguous outer view of the same shape is the inner view
  EXPECT_EQ(View::merge(inner, View::create({6, 4})), inner);
  // a contiguous inner view lets the outer one through
  View outer = View::create({3, 8}).permute({1, 0});
  EXPECT_EQ(View::merge(View::create({3, 8}), outer), outer);
  // shrink of a permute stays one view
  auto m = View::merge(inner, View::create({6, 4}).shrink({{1, 3}, {0, 4}}));
  ASSERT_TRUE(m);
  EXPECT_EQ(m->shape, (Shape{2, 4}));
  EXPECT_EQ(m->strides, (Shape{1, 6}));
  EXPECT_EQ(m->offset, 1);
  // not representable: flattening a permuted view
  EXPECT_FALSE(View::merge(inner, View::create({24})).has_value());
  // an all-invalid view seen as 0-d: a 0-d view cannot say "invalid", so the two views stay apart
  View invalid = View::create({1}, std::nullopt, 0, tg::Mask{{0, 0}});
  EXPECT_FALSE(View::merge(invalid, View::create({})).has_value());
}

// x.pad(((1, 0),))[0] reads the padding: the 0-d result is the pad value, not x[0] (found by tinygrad's
// test_pad_slice).
TEST(View, ZeroDimViewOfPaddingReadsThePadValue) {
  tg::Tensor x(std::vector<float>{0.5f, 0.25f});
  EXPECT_EQ(x.pad({{1, 0}}).shrink({{0, 1}}).reshape({}).item<float>(), 0.0f);
  EXPECT_EQ(x.pad({{1, 0}}, "constant", 3.0).shrink({{0, 1}}).reshape({}).item<float>(), 3.0f);
}

TEST(View, ShapeTrackerStacksAndMerges) {
  auto st = ShapeTracker::from_shape({4, 6}).permute({1, 0}).reshape({24});
  EXPECT_EQ(st.views.size(), 2u);
  // reshaping back gives a view that merges with the one below
  auto back = st.reshape({6, 4}).simplify();
  EXPECT_EQ(back.views.size(), 1u);
  EXPECT_EQ(back.views[0], View::create({4, 6}).permute({1, 0}));
  // + composes and simplifies
  auto a = ShapeTracker::from_shape({4, 4}).permute({1, 0});
  auto b = ShapeTracker::from_shape({4, 4}).permute({1, 0});
  EXPECT_EQ((a + b).views.size(), 1u);
  EXPECT_TRUE((a + b).contiguous());
  EXPECT_TRUE(ShapeTracker::from_shape({4, 4}).contiguous());
  EXPECT_FALSE(a.contiguous());
  EXPECT_TRUE(ShapeTracker::from_shape({3}).pad({{1, 1}}).has_mask());
  EXPECT_EQ(a.hash(), b.hash());
  EXPECT_NE(a.hash(), ShapeTracker::from_shape({4, 4}).hash());
}

TEST(View, RealSize) {
  EXPECT_EQ(ShapeTracker::from_shape({4, 4}).real_size(), 16);
  EXPECT_EQ(ShapeTracker::from_shape({4, 4}).shrink({{0, 2}, {0, 4}}).real_size(), 8);
  EXPECT_EQ(ShapeTracker::from_shape({4, 4}).shrink({{1, 2}, {1, 3}}).real_size(), 7);
  EXPECT_EQ(ShapeTracker::from_shape({1, 4}).expand({5, 4}).real_size(), 4);
  EXPECT_EQ(ShapeTracker::from_shape({4}).pad({{3, 3}}).real_size(), 4);
  EXPECT_EQ(ShapeTracker::from_shape({4}).flip({true}).real_size(), 4);
  EXPECT_EQ(ShapeTracker::from_shape({0, 4}).real_size(), 0);
  EXPECT_EQ(ShapeTracker::from_shape({2}).pad({{2, 0}}).shrink({{0, 2}}).real_size(), 0);
  EXPECT_EQ(ShapeTracker::from_shape({4, 6}).permute({1, 0}).reshape({24}).real_size(), 24);
}

// ---- index expressions ----

TEST(View, IndexContiguous) {
  auto i = var("i", 4), j = var("j", 4);
  auto [idx, valid] = to_indexed_uops(ShapeTracker::from_shape({4, 4}), {i, j});
  EXPECT_EQ(idx, i * 4 + j);
  EXPECT_EQ(valid, ctrue());
}

TEST(View, IndexReshapeStaysLinear) {
  auto st = ShapeTracker::from_shape({4, 4}).reshape({16}).reshape({2, 8});
  ASSERT_EQ(st.views.size(), 1u);
  auto i = var("i", 2), j = var("j", 8);
  auto [idx, valid] = to_indexed_uops(st, {i, j});
  EXPECT_EQ(idx, i * 8 + j);
  EXPECT_EQ(valid, ctrue());
}

TEST(View, IndexPermuteExpandFlip) {
  auto i = var("i", 4), j = var("j", 4);
  auto [pidx, pvalid] = to_indexed_uops(ShapeTracker::from_shape({4, 4}).permute({1, 0}), {i, j});
  EXPECT_EQ(pidx, j * 4 + i);
  auto [eidx, evalid] = to_indexed_uops(ShapeTracker::from_shape({1, 4}).expand({4, 4}), {i, j});
  EXPECT_EQ(eidx, j);
  auto [fidx, fvalid] = to_indexed_uops(ShapeTracker::from_shape({4, 4}).flip({true, false}), {i, j});
  EXPECT_EQ(fidx, i * -4 + j + 12);
  EXPECT_EQ(fvalid, ctrue());
}

TEST(View, IndexPadOnlyNeededChecks) {
  auto i = var("i", 6), j = var("j", 4);
  // rows padded on both sides, columns only after: row >= 1, row < 5, col < 3
  auto st = ShapeTracker::from_shape({4, 3}).pad({{1, 1}, {0, 1}});
  auto [idx, valid] = to_indexed_uops(st, {i, j});
  EXPECT_EQ(idx, i * 3 + j + -3);
  auto expected = simplify(logical_and(logical_and(ge(i, 1), lt(i, 5)), lt(j, 3)));
  EXPECT_EQ(valid, expected);
  EXPECT_EQ(valid->op, Ops::AND);
  // a pad that the index range never reaches needs no check: shrink back inside the valid region
  auto inner = st.shrink({{1, 5}, {0, 3}});
  auto [idx2, valid2] = to_indexed_uops(inner, {var("a", 4), var("b", 3)});
  EXPECT_EQ(valid2, ctrue());
  EXPECT_EQ(idx2, var("a", 4) * 3 + var("b", 3));
}

TEST(View, IndexTwoViews) {
  auto st = ShapeTracker::from_shape({4, 6}).permute({1, 0}).reshape({24});
  ASSERT_EQ(st.views.size(), 2u);
  auto k = var("k", 24);
  auto [idx, valid] = to_indexed_uops(st, {k});
  EXPECT_EQ(idx, mod(k, 4) * 6 + idiv(k, 4));
  EXPECT_EQ(valid, ctrue());
}

// Shared-memory copies move 16-byte runs through the views below the last (codegen/staging.h): a channels-last
// pad keeps a pixel's 8 channels together; a pad along the contiguous dim, an odd row or a transpose does not.
TEST(ShapeTracker, LowerViewsKeepRuns) {
  const ShapeTracker nhwc = ShapeTracker::from_shape({2, 4, 4, 16});
  const ShapeTracker padded = nhwc.pad({{0, 1}, {1, 1}, {1, 1}, {0, 0}}).reshape({3 * 6 * 6, 16});
  ASSERT_EQ(padded.views.size(), 2u);
  EXPECT_TRUE(padded.lower_views_keep_runs(8));
  EXPECT_TRUE(ShapeTracker::from_shape({4, 16}).lower_views_keep_runs(8));  // one view
  EXPECT_FALSE(nhwc.pad({{0, 0}, {0, 0}, {0, 0}, {1, 7}}).reshape({2 * 4 * 4 * 24}).lower_views_keep_runs(8));
  const ShapeTracker odd = ShapeTracker::from_shape({6, 12}).shrink({{0, 6}, {0, 10}}).reshape({60});
  ASSERT_EQ(odd.views.size(), 2u);
  EXPECT_FALSE(odd.lower_views_keep_runs(8));  // rows of 10
  EXPECT_FALSE(ShapeTracker::from_shape({16, 8}).permute({1, 0}).reshape({128}).lower_views_keep_runs(8));
}
