// The foundation's behaviours: creation, elementwise, reductions, matmul, movement chains, fusion counts.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "../common/reference.h"
#include "../common/random_data.h"
#include "tg/tg.h"
#include "uop/uop.h"

using tg::Tensor;
using tgtest::Ref;
using tgtest::random_floats;

TEST(Tensor, EmptyPlusEmptyGivesSixteenValues) {
  auto v = (Tensor::empty({4, 4}) + Tensor::empty({4, 4})).tolist<float>();
  EXPECT_EQ(v.size(), 16u);
  auto w = (Tensor::ones({4, 4}) + Tensor::ones({4, 4})).tolist<float>();
  ASSERT_EQ(w.size(), 16u);
  for (float x : w) EXPECT_EQ(x, 2.0f);
}

TEST(Tensor, DotProductIsElevenInOneKernel) {
  Tensor a(std::vector<int>{1, 2}), b(std::vector<int>{3, 4});
  a.realize();
  b.realize();
  int64_t before = tg::GlobalCounters::kernel_count;
  Tensor d = a.dot(b);
  EXPECT_EQ(d.dtype(), tg::dtypes::int32);
  EXPECT_EQ(d.item<int>(), 11);
  EXPECT_EQ(tg::GlobalCounters::kernel_count - before, 1);
}

TEST(Tensor, Reductions3x4) {
  Tensor a(std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, {3, 4});
  EXPECT_EQ(a.sum(0).tolist<float>(), (std::vector<float>{15, 18, 21, 24}));
  Tensor s1 = a.sum(1, true);
  EXPECT_EQ(s1.shape(), (tg::Shape{3, 1}));
  EXPECT_EQ(s1.tolist<float>(), (std::vector<float>{10, 26, 42}));
  EXPECT_EQ(a.max().item<float>(), 12.0f);
  EXPECT_FLOAT_EQ(a.mean().item<float>(), 6.5f);
  EXPECT_EQ(a.min(0).tolist<float>(), (std::vector<float>{1, 2, 3, 4}));
  EXPECT_EQ(a.max(1).tolist<float>(), (std::vector<float>{4, 8, 12}));
  EXPECT_EQ(a.sum({0, 1}).item<float>(), 78.0f);
  EXPECT_EQ(a.sum(-1).tolist<float>(), (std::vector<float>{10, 26, 42}));
}

TEST(Tensor, IntReductionsAndMean) {
  Tensor a(std::vector<int>{1, 2, 3, 4, 5, 6}, {2, 3});
  EXPECT_EQ(a.sum().item<int>(), 21);
  EXPECT_EQ(a.min().item<int>(), 1);
  EXPECT_EQ(a.max(0).tolist<int>(), (std::vector<int>{4, 5, 6}));
  Tensor m = a.mean(1);
  EXPECT_TRUE(m.dtype().is_float());
  EXPECT_EQ(m.tolist<float>(), (std::vector<float>{2, 5}));
}

TEST(Tensor, FusedReduceIsOneKernel) {
  Tensor a = Tensor(random_floats(64, 1), {8, 8}), b = Tensor(random_floats(64, 2), {8, 8});
  a.realize();
  b.realize();
  int64_t before = tg::GlobalCounters::kernel_count;
  Tensor r = ((a + b) * 2).sum();
  r.realize();
  EXPECT_EQ(tg::GlobalCounters::kernel_count - before, 1);
  auto av = a.tolist<float>(), bv = b.tolist<float>();
  double ref = 0;
  for (size_t i = 0; i < 64; i++) ref += (double(av[i]) + bv[i]) * 2;
  EXPECT_NEAR(r.item<float>(), ref, 1e-4);
}

TEST(Tensor, Matmul64MatchesTripleLoop) {
  const int n = 64;
  auto av = random_floats(n * n, 3), bv = random_floats(n * n, 4);
  Tensor a(av, {n, n}), b(bv, {n, n});
  auto c = a.matmul(b).tolist<float>();
  ASSERT_EQ(c.size(), size_t(n * n));
  for (int i = 0; i < n; i++)
    for (int j = 0; j < n; j++) {
      double acc = 0;
      for (int k = 0; k < n; k++) acc += double(av[size_t(i * n + k)]) * bv[size_t(k * n + j)];
      EXPECT_NEAR(c[size_t(i * n + j)], acc, 1e-4 * std::max(1.0, std::abs(acc)));
    }
}

TEST(Tensor, MovementChainThenReduceMatchesReference) {
  auto v = random_floats(2 * 3 * 4, 5);
  std::vector<double> dv(v.begin(), v.end());
  Tensor t(v, {2, 3, 4});
  Ref r = Ref::from(dv, {2, 3, 4});
  Tensor x = t.permute({2, 0, 1}).pad({{1, 0}, {0, 2}, {1, 1}}).shrink({{0, 4}, {1, 4}, {0, 4}}).flip({0, 2});
  Ref rx = r.permute({2, 0, 1}).pad({{1, 0}, {0, 2}, {1, 1}}).shrink({{0, 4}, {1, 4}, {0, 4}}).flip({0, 2});
  x = x.reshape({4, 1, 3, 4}).expand({4, 5, 3, 4}).sum(2);
  rx = rx.reshape({4, 1, 3, 4}).expand({4, 5, 3, 4}).sum(2);
  auto out = x.tolist<float>();
  ASSERT_EQ(out.size(), rx.data.size());
  for (size_t i = 0; i < out.size(); i++) EXPECT_NEAR(out[i], rx.data[i], 1e-4) << "at " << i;
}

TEST(Tensor, PadOfExpIsNotFusedUnsafely) {
  Tensor t(std::vector<float>{0, 1, 2}, {3});
  auto out = t.exp().pad({{1, 1}}).tolist<float>();
  ASSERT_EQ(out.size(), 5u);
  EXPECT_EQ(out[0], 0.0f);
  EXPECT_NEAR(out[1], 1.0f, 1e-6);
  EXPECT_NEAR(out[3], std::exp(2.0f), 1e-5);
  EXPECT_EQ(out[4], 0.0f);
}

TEST(Tensor, CreationFunctions) {
  EXPECT_EQ(Tensor::arange(5).tolist<int>(), (std::vector<int>{0, 1, 2, 3, 4}));
  EXPECT_EQ(Tensor::eye(3).tolist<float>(), (std::vector<float>{1, 0, 0, 0, 1, 0, 0, 0, 1}));
  EXPECT_EQ(Tensor::full({2, 2}, 3.5f).tolist<float>(), (std::vector<float>{3.5f, 3.5f, 3.5f, 3.5f}));
  Tensor d = Tensor::zeros({2, 3}, {.dtype = tg::dtypes::int32});
  EXPECT_EQ(d.dtype(), tg::dtypes::int32);
  EXPECT_EQ(d.tolist<int>(), (std::vector<int>(6, 0)));
  Tensor c(std::vector<float>{1, 2, 3, 4, 5, 6}, {2, 3});
  EXPECT_EQ(c.shape(), (tg::Shape{2, 3}));
  EXPECT_EQ(c.numel(), 6);
  EXPECT_EQ(c.T().tolist<float>(), (std::vector<float>{1, 4, 2, 5, 3, 6}));
  EXPECT_EQ(c.reshape({3, -1}).shape(), (tg::Shape{3, 2}));
  EXPECT_EQ(c.flip(1).tolist<float>(), (std::vector<float>{3, 2, 1, 6, 5, 4}));
}

TEST(Tensor, ElementwiseAndPromotion) {
  Tensor a(std::vector<float>{1, 4, 9});
  EXPECT_EQ(a.sqrt().tolist<float>(), (std::vector<float>{1, 2, 3}));
  EXPECT_EQ((1.0f - a).tolist<float>(), (std::vector<float>{0, -3, -8}));
  EXPECT_EQ((-a).tolist<float>(), (std::vector<float>{-1, -4, -9}));
  EXPECT_EQ((a < 2.0f).where(a, 0.0f).tolist<float>(), (std::vector<float>{1, 0, 0}));
  EXPECT_EQ(a.maximum(Tensor(std::vector<float>{2, 2, 10})).tolist<float>(), (std::vector<float>{2, 4, 10}));
  Tensor i8(std::vector<int8_t>{100, -100});
  EXPECT_EQ((i8 * 300).dtype(), tg::dtypes::int8);  // a C++ int does not widen the tensor
  Tensor i32(std::vector<int>{1, 2});
  EXPECT_EQ((i32 * 1.5).dtype(), tg::dtypes::float32);
  EXPECT_EQ((i32 * 1.5).tolist<float>(), (std::vector<float>{1.5f, 3.0f}));
  EXPECT_EQ((i32 / i32).dtype(), tg::dtypes::float32);
  EXPECT_EQ(a.cast(tg::dtypes::int32).tolist<int>(), (std::vector<int>{1, 4, 9}));
  auto e = Tensor(std::vector<float>{0, 1}).exp().tolist<float>();
  EXPECT_NEAR(e[1], std::exp(1.0f), 1e-5);
  auto l = Tensor(std::vector<float>{1, 8}).log2().tolist<float>();
  EXPECT_NEAR(l[1], 3.0f, 1e-6);
  EXPECT_EQ(Tensor(std::vector<float>{-1, 2}).relu().tolist<float>(), (std::vector<float>{0, 2}));
}

TEST(Tensor, ZeroAndOneSizedDims) {
  Tensor z = Tensor::ones({3, 0});
  EXPECT_EQ(z.sum(1).tolist<float>(), (std::vector<float>{0, 0, 0}));
  EXPECT_EQ(z.sum(0).numel(), 0);
  EXPECT_TRUE(z.tolist<float>().empty());
  Tensor o = Tensor::ones({1, 4});
  EXPECT_EQ((o + Tensor::ones({3, 1})).sum().item<float>(), 24.0f);
}

TEST(Tensor, InterningBuildsSameUOp) {
  Tensor a = Tensor::ones({4, 4}), b = Tensor::full({4, 4}, 2.0f);
  Tensor x = (a + b) * 3.0f, y = (a + b) * 3.0f;
  EXPECT_EQ(x.uop().get(), y.uop().get());
}

TEST(Tensor, RealizeUpdatesEveryHandle) {
  Tensor a = Tensor::ones({2}) * 5.0f;
  Tensor alias = a;
  a.realize();
  EXPECT_EQ(alias.uop()->op, tg::Ops::VIEW);
  EXPECT_EQ(alias.tolist<float>(), (std::vector<float>{5, 5}));
}

TEST(TensorErrors, BadInputThrowsWithShapes) {
  auto msg = [](auto f) {
    try {
      f();
    } catch (const tg::Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  std::string m = msg([] { (void)(Tensor::ones({2, 3}) + Tensor::ones({4, 5})); });
  EXPECT_NE(m.find("add"), std::string::npos) << m;
  EXPECT_NE(m.find("(2, 3)"), std::string::npos) << m;
  EXPECT_NE(m.find("(4, 5)"), std::string::npos) << m;
  m = msg([] { (void)Tensor::ones({2, 3}).reshape({4, 2}); });
  EXPECT_NE(m.find("reshape"), std::string::npos) << m;
  EXPECT_NE(m.find("(4, 2)"), std::string::npos) << m;
  m = msg([] { (void)Tensor::ones({2, 3}).sum(2); });
  EXPECT_NE(m.find("sum"), std::string::npos) << m;
  EXPECT_NE(m.find("axis 2"), std::string::npos) << m;
  m = msg([] { (void)Tensor::ones({2, 3}).pad({{-1, 0}, {0, 0}}); });
  EXPECT_NE(m.find("pad"), std::string::npos) << m;
  EXPECT_NE(m.find("(2, 3)"), std::string::npos) << m;
  m = msg([] { (void)Tensor::ones({2, 3}).matmul(Tensor::ones({4, 5})); });
  EXPECT_NE(m.find("matmul"), std::string::npos) << m;
  m = msg([] { (void)Tensor::ones({2, 3}).item<float>(); });
  EXPECT_NE(m.find("item"), std::string::npos) << m;
  m = msg([] { (void)Tensor::ones({2}, {.device = "NOPE"}); });
  EXPECT_NE(m.find("NOPE"), std::string::npos) << m;
  m = msg([] { (void)Tensor(std::vector<float>{1, 2, 3}, {2, 2}); });
  EXPECT_NE(m.find("(2, 2)"), std::string::npos) << m;
  m = msg([] { (void)Tensor::ones({2, 3}).permute({0, 0}); });
  EXPECT_NE(m.find("permute"), std::string::npos) << m;
  m = msg([] { (void)Tensor::ones({2, 3}).expand({4, 3, 3}); });
  EXPECT_NE(m.find("expand"), std::string::npos) << m;
  m = msg([] { (void)Tensor::ones({2, 3}).shrink({{0, 3}, {0, 3}}); });
  EXPECT_NE(m.find("shrink"), std::string::npos) << m;
}

TEST(Tensor, ElementwiseAfterReduceFusesThroughReshape) {
  Tensor a(random_floats(12, 9), {3, 4});
  a.realize();
  int64_t before = tg::GlobalCounters::kernel_count;
  Tensor m = a.sum(1) * 2.0f + 1.0f;  // sum drops the axis (a reshape), then elementwise
  m.realize();
  EXPECT_EQ(tg::GlobalCounters::kernel_count - before, 1);
  before = tg::GlobalCounters::kernel_count;
  float mean = a.mean().item<float>();
  EXPECT_EQ(tg::GlobalCounters::kernel_count - before, 1);
  auto v = a.tolist<float>();
  double ref = 0;
  for (float x : v) ref += x;
  EXPECT_NEAR(mean, ref / 12, 1e-5);
}

TEST(Tensor, FullyPaddedSingleElementReadsZero) {
  // A one-element window inside the padding must read 0 even after size-1 dims are dropped (a 0-d view).
  Tensor t = Tensor(std::vector<float>{5, 6}, {2, 1}).pad({{0, 0}, {1, 0}}).shrink({{0, 1}, {0, 1}});
  EXPECT_EQ(t.tolist<float>(), (std::vector<float>{0}));
}

TEST(Tensor, WhereWithEqualBranchesKeepsKernelSignature) {
  Tensor a(std::vector<float>{-1, 2});
  EXPECT_EQ((a > 0.0f).where(Tensor::zeros({2}), 0.0f).tolist<float>(), (std::vector<float>{0, 0}));
}

// Realized buffers with 0 elements: reduces over them give the identity and read nothing (the interpreter
// checks every access), elementwise kernels on them store nothing.
TEST(Tensor, ZeroSizedRealizedBuffers) {
  for (const char* dev : {"CPU", "INTERP"}) {
    SCOPED_TRACE(dev);
    Tensor a = Tensor::rand({0, 3}, {.device = dev}).realize();
    EXPECT_EQ(a.sum(0).tolist<float>(), (std::vector<float>{0, 0, 0}));
    EXPECT_EQ(a.sum().item<float>(), 0.0f);
    EXPECT_EQ(a.max(0).tolist<float>(), std::vector<float>(3, -INFINITY));
    EXPECT_EQ(a.prod(0).tolist<float>(), (std::vector<float>{1, 1, 1}));
    EXPECT_TRUE((a * 2 + 1).tolist<float>().empty());
    EXPECT_EQ(a.pad({{1, 1}, {0, 0}}).tolist<float>(), std::vector<float>(6, 0.0f));
    Tensor e(std::vector<int>{}, {3, 0}, {.device = dev});
    EXPECT_EQ(e.sum(1).tolist<int>(), (std::vector<int>{0, 0, 0}));
    EXPECT_EQ(e.matmul(Tensor::ones({0, 2}, {.dtype = tg::dtypes::int32, .device = dev})).tolist<int>(),
              std::vector<int>(6, 0));
  }
}
