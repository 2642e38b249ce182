// The "more elementwise" ops (src/tensor/math.cpp) against std:: math on random inputs with edge values,
// over float32 / float16 / int32 / bool where the op applies, plus broadcasting, edge shapes and errors.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>

#include "../common/gradcheck.h"
#include "../common/reference.h"
#include "math_test_util.h"
#include "tg/tg.h"

using tg::Tensor;
using mtest::kInf;
using mtest::kNaN;
namespace dtypes = tg::dtypes;

namespace {

const std::vector<double> kSpecial = {0.0, -0.0, 1.0, -1.0, kInf, -kInf, kNaN};

double sign_ref(double x) { return std::isnan(x) ? x : x > 0 ? 1 : x < 0 ? -1 : 0; }

// Python's remainder: the sign of the divisor.
double py_mod(double a, double b) {
  double r = std::fmod(a, b);
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}
int64_t py_mod_int(int64_t a, int64_t b) {
  int64_t r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}

}  // namespace

TEST(MathUnary, AbsSignSquareRsqrtFloat) {
  auto x = mtest::with_edges(200, -50, 50, 1, kSpecial);
  for (tg::DType dt : {dtypes::float32, dtypes::float16}) {
    double rtol = dt == dtypes::float16 ? 2e-3 : 1e-6;
    mtest::check_unary("abs", x, dt, [](const Tensor& t) { return t.abs(); }, [](double v) { return std::fabs(v); },
                       0, 0);
    mtest::check_unary("sign", x, dt, [](const Tensor& t) { return t.sign(); }, sign_ref, 0, 0);
    mtest::check_unary("square", x, dt, [](const Tensor& t) { return t.square(); }, [](double v) { return v * v; },
                       0, rtol);
    mtest::check_unary("rsqrt", x, dt, [](const Tensor& t) { return t.rsqrt(); },
                       [](double v) { return 1 / std::sqrt(v); }, 0, rtol);
  }
}

TEST(MathUnary, AbsSignSquareIntAndBool) {
  std::vector<int> v = mtest::uniform_int(100, -1000, 1000, 2);
  v.push_back(0);
  Tensor x(v);
  std::vector<int> abs_want, sign_want, sq_want;
  for (int a : v) {
    abs_want.push_back(std::abs(a));
    sign_want.push_back(a > 0 ? 1 : a < 0 ? -1 : 0);
    sq_want.push_back(a * a);
  }
  EXPECT_EQ(x.abs().dtype(), dtypes::int32);
  EXPECT_EQ(x.abs().tolist<int>(), abs_want);
  EXPECT_EQ(x.sign().dtype(), dtypes::int32);
  EXPECT_EQ(x.sign().tolist<int>(), sign_want);
  EXPECT_EQ(x.square().tolist<int>(), sq_want);
  Tensor b = mtest::bools({1, 0, 1});
  EXPECT_EQ(b.abs().dtype(), dtypes::bool_);
  EXPECT_EQ(b.abs().tolist<int>(), (std::vector<int>{1, 0, 1}));
  EXPECT_EQ(b.sign().tolist<int>(), (std::vector<int>{1, 0, 1}));
  // An int tensor's rsqrt is float.
  EXPECT_TRUE(Tensor(std::vector<int>{4}).rsqrt().dtype().is_float());
  EXPECT_FLOAT_EQ(Tensor(std::vector<int>{4}).rsqrt().item<float>(), 0.5f);
}

TEST(MathTrig, CosTan) {
  auto x = mtest::with_edges(300, -20, 20, 3, {0.0, -0.0, 1e3, -1e3, kInf, kNaN});
  for (tg::DType dt : {dtypes::float32, dtypes::float16}) {
    double atol = dt == dtypes::float16 ? 2e-3 : 2e-6;
    // cos(x) = sin(pi/2 - x) in float32: the subtraction rounds, so a large x loses absolute precision.
    mtest::check_unary("cos", x, dt, [](const Tensor& t) { return t.cos(); }, [](double v) { return std::cos(v); },
                       atol * 50, 0);
  }
  auto t = mtest::uniform(300, -1.4, 1.4, 4);
  mtest::check_unary("tan", t, dtypes::float32, [](const Tensor& a) { return a.tan(); },
                     [](double v) { return std::tan(v); }, 1e-5, 1e-5);
  // Ints become float.
  Tensor c = Tensor(std::vector<int>{0, 1, 2}).cos();
  EXPECT_EQ(c.dtype(), dtypes::float32);
  mtest::expect_close(c.tolist<float>(), std::vector<double>{1, std::cos(1.0), std::cos(2.0)}, 1e-6, 0, "int cos");
}

TEST(MathTrig, AsinAcosAtan) {
  auto x = mtest::with_edges(400, -1, 1, 5, {0.0, -0.0, 1.0, -1.0, 0.9999, -0.9999, 1.5, -2.0, kNaN});
  for (tg::DType dt : {dtypes::float32, dtypes::float16}) {
    double atol = dt == dtypes::float16 ? 1e-3 : 1e-6, rtol = dt == dtypes::float16 ? 1e-3 : 0;
    mtest::check_unary("asin", x, dt, [](const Tensor& t) { return t.asin(); }, [](double v) { return std::asin(v); },
                       atol, rtol);
    mtest::check_unary("acos", x, dt, [](const Tensor& t) { return t.acos(); }, [](double v) { return std::acos(v); },
                       atol, rtol);
  }
  auto y = mtest::with_edges(400, -30, 30, 6,
                             {0.0, -0.0, 1.0, -1.0, 1e-8, -1e-8, 1e3, -1e3, 1e20, -1e20, 3e38, kInf, -kInf, kNaN});
  for (tg::DType dt : {dtypes::float32, dtypes::float16}) {
    double atol = dt == dtypes::float16 ? 1e-3 : 1e-6;
    mtest::check_unary("atan", y, dt, [](const Tensor& t) { return t.atan(); }, [](double v) { return std::atan(v); },
                       atol, 0);
  }
}

TEST(MathHyperbolic, SinhCoshAsinhAcoshAtanh) {
  auto x = mtest::with_edges(300, -10, 10, 7, {0.0, -0.0, 1e-3, 80.0, -80.0, kInf, -kInf, kNaN});
  mtest::check_unary("sinh", x, dtypes::float32, [](const Tensor& t) { return t.sinh(); },
                     [](double v) { return std::sinh(v); }, 1e-6, 1e-5);
  mtest::check_unary("cosh", x, dtypes::float32, [](const Tensor& t) { return t.cosh(); },
                     [](double v) { return std::cosh(v); }, 1e-6, 1e-5);
  mtest::check_unary("sinh", mtest::uniform(100, -5, 5, 8), dtypes::float16, [](const Tensor& t) { return t.sinh(); },
                     [](double v) { return std::sinh(v); }, 2e-3, 3e-3);
  auto a = mtest::with_edges(300, -50, 50, 9, {0.0, -0.0, 1e-3, -1e4, 1e4, 1e25, -1e25, kInf, -kInf, kNaN});
  mtest::check_unary("asinh", a, dtypes::float32, [](const Tensor& t) { return t.asinh(); },
                     [](double v) { return std::asinh(v); }, 1e-6, 1e-5);
  auto c = mtest::with_edges(300, 1, 50, 10, {1.0, 1e4, 1e25, kInf, 0.5, -3.0, kNaN});
  mtest::check_unary("acosh", c, dtypes::float32, [](const Tensor& t) { return t.acosh(); },
                     [](double v) { return std::acosh(v); }, 1e-5, 1e-5);
  auto h = mtest::with_edges(300, -0.99, 0.99, 11, {0.0, 1.0, -1.0, 2.0, kNaN});
  mtest::check_unary("atanh", h, dtypes::float32, [](const Tensor& t) { return t.atanh(); },
                     [](double v) { return std::atanh(v); }, 1e-5, 1e-5);
  mtest::check_unary("atanh", mtest::uniform(100, -0.9, 0.9, 12), dtypes::float16,
                     [](const Tensor& t) { return t.atanh(); }, [](double v) { return std::atanh(v); }, 3e-3, 3e-3);
}

TEST(MathErf, MatchesStdErf) {
  auto x = mtest::with_edges(500, -4, 4, 13, {0.0, -0.0, 10.0, -10.0, kInf, -kInf, kNaN});
  mtest::check_unary("erf", x, dtypes::float32, [](const Tensor& t) { return t.erf(); },
                     [](double v) { return std::erf(v); }, 6e-7, 0);  // A&S's 1.5e-7 plus float32 rounding
  mtest::check_unary("erf", x, dtypes::float16, [](const Tensor& t) { return t.erf(); },
                     [](double v) { return std::erf(v); }, 1e-3, 0);
}

TEST(MathRound, FloorCeilRoundHalfToEven) {
  auto x = mtest::with_edges(300, -100, 100, 14,
                             {-3.5, -2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 3.5, 0.0, -0.0, 0.49999997, 1e8, -1e8, 8388609.0,
                              kInf, -kInf, kNaN});
  for (tg::DType dt : {dtypes::float32, dtypes::float16}) {
    auto fx = x;
    if (dt == dtypes::float16) fx.resize(fx.size() - 6);  // 1e8 is inf in half; keep the ties and specials
    if (dt == dtypes::float16) fx.insert(fx.end(), {float(kInf), float(-kInf), float(kNaN)});
    mtest::check_unary("floor", fx, dt, [](const Tensor& t) { return t.floor(); },
                       [](double v) { return std::floor(v); }, 0, 0);
    mtest::check_unary("ceil", fx, dt, [](const Tensor& t) { return t.ceil(); }, [](double v) { return std::ceil(v); },
                       0, 0);
    mtest::check_unary("round", fx, dt, [](const Tensor& t) { return t.round(); },
                       [](double v) { return std::nearbyint(v); }, 0, 0);  // default mode: half to even
  }
  Tensor i(std::vector<int>{-3, 0, 7});
  for (const Tensor& r : {i.floor(), i.ceil(), i.round()}) {
    EXPECT_EQ(r.dtype(), dtypes::int32);
    EXPECT_EQ(r.tolist<int>(), (std::vector<int>{-3, 0, 7}));
  }
}

TEST(MathClassify, IsnanIsinf) {
  Tensor x(std::vector<float>{1, float(kInf), 2, float(-kInf), float(kNaN), 0});
  EXPECT_EQ(x.isnan().dtype(), dtypes::bool_);
  EXPECT_EQ(x.isnan().tolist<int>(), (std::vector<int>{0, 0, 0, 0, 1, 0}));
  EXPECT_EQ(x.isinf().tolist<int>(), (std::vector<int>{0, 1, 0, 1, 0, 0}));
  EXPECT_EQ(x.isinf(true, false).tolist<int>(), (std::vector<int>{0, 1, 0, 0, 0, 0}));
  EXPECT_EQ(x.isinf(false, true).tolist<int>(), (std::vector<int>{0, 0, 0, 1, 0, 0}));
  EXPECT_EQ(x.isinf(false, false).tolist<int>(), std::vector<int>(6, false));
  EXPECT_EQ(x.cast(dtypes::float16).isinf().tolist<int>(),
            (std::vector<int>{0, 1, 0, 1, 0, 0}));
  Tensor i(std::vector<int>{1, -2, 0});
  EXPECT_EQ(i.isnan().tolist<int>(), std::vector<int>(3, false));
  EXPECT_EQ(i.isinf().tolist<int>(), std::vector<int>(3, false));
  EXPECT_EQ(i.isinf().dtype(), dtypes::bool_);
}

TEST(MathPow, ScalarExponentsMatchStdPow) {
  auto x = mtest::with_edges(200, -4, 4, 15, {0.0, -0.0, 1.0, -1.0, 2.0, -2.0, kInf, -kInf, kNaN});
  for (double e : {0.0, 1.0, 2.0, 3.0, 5.0, -1.0, -2.0, -3.0, 0.5, -0.5, 1.5, -2.5, 2.7, -1.3, 0.1}) {
    mtest::check_unary("pow " + std::to_string(e), x, dtypes::float32,
                       [e](const Tensor& t) { return t.pow(e); }, [e](double v) { return std::pow(v, e); }, 1e-6,
                       1e-5);
  }
  for (double e : {2.0, -1.0, 0.5, 1.7}) {
    mtest::check_unary("pow16 " + std::to_string(e), mtest::uniform(100, 0.1, 3, 16), dtypes::float16,
                       [e](const Tensor& t) { return t.pow(e); }, [e](double v) { return std::pow(v, e); }, 1e-3,
                       3e-3);
  }
}

TEST(MathPow, TensorExponentsNegativeBasesAndZero) {
  std::vector<float> b = mtest::uniform(300, -3, 3, 17), e = mtest::uniform(300, -3, 3, 18);
  // Every third exponent is an integer, so negative bases give real results there and nan elsewhere.
  for (size_t i = 0; i < e.size(); i += 3) e[i] = std::round(e[i]);
  std::vector<float> edges_b = {0, 0, 0, -0.0f, 2, -2, -2, 1, 1, -1, -1, float(kInf), -float(kInf), float(kNaN), 0.5f};
  std::vector<float> edges_e = {0, 2, -1, -1, 10, 3, 0.5f, float(kNaN), float(kInf), 3, 4, 0, -2, 0, float(-kInf)};
  b.insert(b.end(), edges_b.begin(), edges_b.end());
  e.insert(e.end(), edges_e.begin(), edges_e.end());
  std::vector<double> want;
  for (size_t i = 0; i < b.size(); i++) want.push_back(std::pow(double(b[i]), double(e[i])));
  Tensor r = Tensor(b).pow(Tensor(e));
  EXPECT_EQ(r.dtype(), dtypes::float32);
  mtest::expect_close(r.tolist<float>(), want, 1e-5, 1e-5, "tensor pow");
}

TEST(MathPow, IntPowIsExact) {
  std::vector<int> b = mtest::uniform_int(200, -9, 9, 19), e = mtest::uniform_int(200, 0, 9, 20);
  b.insert(b.end(), {0, 0, 1, -1, -1, 2, 3});
  e.insert(e.end(), {0, 5, 30, 7, 8, 30, 19});
  std::vector<int> want;
  for (size_t i = 0; i < b.size(); i++) {
    int64_t p = 1;
    for (int k = 0; k < e[i]; k++) p = int64_t(int32_t(uint32_t(p) * uint32_t(b[i])));
    want.push_back(int(p));
  }
  Tensor r = Tensor(b).pow(Tensor(e));
  EXPECT_EQ(r.dtype(), dtypes::int32);
  EXPECT_EQ(r.tolist<int>(), want);
  // Scalar exponents keep ints int; negative exponents of a tensor: 1 / b**|e| truncated.
  EXPECT_EQ(Tensor(std::vector<int>{-3, 2, 0}).pow(3).tolist<int>(), (std::vector<int>{-27, 8, 0}));
  EXPECT_EQ(Tensor(std::vector<int>{-3, 2, 0}).pow(0).tolist<int>(), (std::vector<int>{1, 1, 1}));
  EXPECT_EQ(Tensor(std::vector<int>{1, -1, -1, 5}).pow(Tensor(std::vector<int>{-3, -3, -2, -1})).tolist<int>(),
            (std::vector<int>{1, -1, 1, 0}));
  // int ** float is float.
  Tensor f = Tensor(std::vector<int>{4, 9}).pow(0.5);
  EXPECT_EQ(f.dtype(), dtypes::float32);
  EXPECT_EQ(f.tolist<float>(), (std::vector<float>{2, 3}));
  EXPECT_THROW(Tensor(std::vector<int>{2}).pow(-1), tg::Error);
  // bool ** int counts as int.
  EXPECT_EQ(mtest::bools({1, 0}).pow(2).tolist<int>(), (std::vector<int>{1, 0}));
}

TEST(MathPow, BroadcastsAndChecksShapes) {
  Tensor b = Tensor(std::vector<float>{1, 2, 3}).reshape({3, 1});
  Tensor e = Tensor(std::vector<float>{0, 1, 2, 3});
  Tensor r = b.pow(e);
  EXPECT_EQ(r.shape(), (tg::Shape{3, 4}));
  std::vector<double> want;
  for (double bb : {1, 2, 3})
    for (double ee : {0, 1, 2, 3}) want.push_back(std::pow(bb, ee));
  mtest::expect_close(r.tolist<float>(), want, 1e-5, 1e-5, "broadcast pow");
  try {
    (void)Tensor::ones({2, 3}).pow(Tensor::ones({4}));
    FAIL() << "expected tg::Error";
  } catch (const tg::Error& err) {
    EXPECT_NE(std::string(err.what()).find("pow"), std::string::npos) << err.what();
    EXPECT_NE(std::string(err.what()).find("(2, 3)"), std::string::npos) << err.what();
  }
}

TEST(MathMod, PythonSignSemanticsInts) {
  std::vector<int> a = mtest::uniform_int(300, -100, 100, 21), b = mtest::uniform_int(300, -12, 12, 22);
  for (auto& v : b)
    if (v == 0) v = 7;
  a.insert(a.end(), {-4, 7, 5, 4, -7, 8, 0, -6});
  b.insert(b.end(), {2, -3, 8, -2, 3, 5, -3, 3});
  std::vector<int> want;
  for (size_t i = 0; i < a.size(); i++) want.push_back(int(py_mod_int(a[i], b[i])));
  Tensor r = Tensor(a).mod(Tensor(b));
  EXPECT_EQ(r.dtype(), dtypes::int32);
  EXPECT_EQ(r.tolist<int>(), want);
  // Broadcast: (3, 1) % (4,)
  Tensor m = Tensor(std::vector<int>{-7, 0, 9}).reshape({3, 1}).mod(Tensor(std::vector<int>{2, -2, 5, -5}));
  EXPECT_EQ(m.shape(), (tg::Shape{3, 4}));
  EXPECT_EQ(m.tolist<int>(), (std::vector<int>{1, -1, 3, -2, 0, 0, 0, 0, 1, -1, 4, -1}));
}

TEST(MathMod, PythonSignSemanticsFloats) {
  std::vector<float> a = mtest::uniform(300, -50, 50, 23), b = mtest::uniform(300, -7, 7, 24);
  a.insert(a.end(), {5.5f, -5.5f, 5.5f, -5.5f, 0, -1, 1, float(kInf), 3});
  b.insert(b.end(), {2, 2, -2, -2, 3, float(kInf), float(-kInf), 2, 0});
  std::vector<double> want;
  for (size_t i = 0; i < a.size(); i++) want.push_back(py_mod(a[i], b[i]));
  Tensor r = Tensor(a).mod(Tensor(b));
  mtest::expect_close(r.tolist<float>(), want, 1e-5, 1e-6, "float mod");
  Tensor h = Tensor(std::vector<float>{5.5f, -5.5f, 7}).cast(dtypes::float16).mod(Tensor(std::vector<float>{2, 2, -4}));
  EXPECT_EQ(h.dtype(), dtypes::float32);  // half and float promote to float
  mtest::expect_close(h.tolist<float>(), std::vector<double>{1.5, 0.5, -1}, 0, 0, "half mod");
  EXPECT_THROW((void)mtest::bools({1}).mod(mtest::bools({1})), tg::Error);
}

TEST(MathIdiv, TruncatesTowardZero) {
  std::vector<int> a = mtest::uniform_int(300, -1000, 1000, 25), b = mtest::uniform_int(300, -20, 20, 26);
  for (auto& v : b)
    if (v == 0) v = -3;
  std::vector<int> want;
  for (size_t i = 0; i < a.size(); i++) want.push_back(a[i] / b[i]);
  EXPECT_EQ(Tensor(a).idiv(Tensor(b)).tolist<int>(), want);
  Tensor u8 = Tensor(std::vector<int>{3, 2}).cast(dtypes::uint8);
  Tensor u = Tensor(std::vector<int>{250, 7}).cast(dtypes::uint8).idiv(u8);
  EXPECT_EQ(u.dtype(), dtypes::uint8);
  EXPECT_EQ(u.tolist<int>(), (std::vector<int>{83, 3}));
  EXPECT_THROW((void)Tensor(std::vector<float>{1}).idiv(Tensor(std::vector<float>{2})), tg::Error);
  EXPECT_THROW((void)mtest::bools({1}).idiv(mtest::bools({1})), tg::Error);
}

TEST(MathClamp, BoundsAndDtypes) {
  auto x = mtest::with_edges(200, -10, 10, 27, {kInf, -kInf, kNaN});
  mtest::check_unary("clamp", x, dtypes::float32, [](const Tensor& t) { return t.clamp(-2.5, 3); },
                     [](double v) { return std::isnan(v) ? v : std::min(std::max(v, -2.5), 3.0); }, 0, 0);
  mtest::check_unary("clamp min", x, dtypes::float16, [](const Tensor& t) { return t.clamp(0.5); },
                     [](double v) { return std::isnan(v) ? v : std::max(v, 0.5); }, 0, 0);
  mtest::check_unary("clip max", x, dtypes::float32, [](const Tensor& t) { return t.clip(std::nullopt, 1); },
                     [](double v) { return std::isnan(v) ? v : std::min(v, 1.0); }, 0, 0);
  Tensor i(std::vector<int>{-5, 0, 5, 10});
  Tensor ci = i.clamp(0, 6);
  EXPECT_EQ(ci.dtype(), dtypes::int32);  // integral bounds keep an int tensor int
  EXPECT_EQ(ci.tolist<int>(), (std::vector<int>{0, 0, 5, 6}));
  Tensor cf = i.clamp(0.5);
  EXPECT_EQ(cf.dtype(), dtypes::float32);
  EXPECT_EQ(cf.tolist<float>(), (std::vector<float>{0.5f, 0.5f, 5, 10}));
  EXPECT_THROW((void)i.clamp(), tg::Error);
}

TEST(MathLerp, ScalarAndTensorWeights) {
  auto a = mtest::uniform(100, -5, 5, 28), b = mtest::uniform(100, -5, 5, 29), w = mtest::uniform(100, 0, 1, 30);
  std::vector<double> want_s, want_t;
  for (size_t i = 0; i < a.size(); i++) {
    want_s.push_back(a[i] + (double(b[i]) - a[i]) * 0.25);
    want_t.push_back(a[i] + (double(b[i]) - a[i]) * w[i]);
  }
  mtest::expect_close(Tensor(a).lerp(Tensor(b), 0.25).tolist<float>(), want_s, 1e-5, 1e-5, "lerp scalar");
  mtest::expect_close(Tensor(a).lerp(Tensor(b), Tensor(w)).tolist<float>(), want_t, 1e-5, 1e-5, "lerp tensor");
  // Broadcast end (3,) against self (2, 3).
  Tensor r = Tensor::zeros({2, 3}).lerp(Tensor(std::vector<float>{2, 4, 6}), 0.5);
  EXPECT_EQ(r.tolist<float>(), (std::vector<float>{1, 2, 3, 1, 2, 3}));
}

TEST(MathBitwise, IntsAndBools) {
  std::vector<int> a = mtest::uniform_int(200, -100000, 100000, 31), b = mtest::uniform_int(200, -100000, 100000, 32);
  std::vector<int> wand, wor, wxor, wnot;
  for (size_t i = 0; i < a.size(); i++) {
    wand.push_back(a[i] & b[i]);
    wor.push_back(a[i] | b[i]);
    wxor.push_back(a[i] ^ b[i]);
    wnot.push_back(~a[i]);
  }
  Tensor ta(a), tb(b);
  EXPECT_EQ(ta.bitwise_and(tb).tolist<int>(), wand);
  EXPECT_EQ(ta.bitwise_or(tb).tolist<int>(), wor);
  EXPECT_EQ(ta.bitwise_xor(tb).tolist<int>(), wxor);
  EXPECT_EQ(ta.bitwise_not().tolist<int>(), wnot);
  Tensor u = Tensor(std::vector<int>{0, 2, 5, 255}).cast(dtypes::uint8).bitwise_not();
  EXPECT_EQ(u.dtype(), dtypes::uint8);
  EXPECT_EQ(u.tolist<int>(), (std::vector<int>{255, 253, 250, 0}));
  Tensor s8 = Tensor(std::vector<int>{0, 2, 5, 127}).cast(dtypes::int8).bitwise_not();
  EXPECT_EQ(s8.tolist<int>(), (std::vector<int>{-1, -3, -6, -128}));
  Tensor p = mtest::bools({1, 1, 0, 0}), q = mtest::bools({1, 0, 1, 0});
  EXPECT_EQ(p.bitwise_and(q).tolist<int>(), (std::vector<int>{1, 0, 0, 0}));
  EXPECT_EQ(p.bitwise_or(q).tolist<int>(), (std::vector<int>{1, 1, 1, 0}));
  EXPECT_EQ(p.bitwise_xor(q).tolist<int>(), (std::vector<int>{0, 1, 1, 0}));
  EXPECT_EQ(p.bitwise_not().tolist<int>(), (std::vector<int>{0, 0, 1, 1}));
  EXPECT_EQ(p.bitwise_and(q).dtype(), dtypes::bool_);
  // bool & int promotes to int; broadcasting (2, 1) with (3,).
  Tensor m = Tensor(std::vector<int>{12, 10}).reshape({2, 1}).bitwise_and(Tensor(std::vector<int>{4, 8, 6}));
  EXPECT_EQ(m.tolist<int>(), (std::vector<int>{4, 8, 4, 0, 8, 2}));
  Tensor f(std::vector<float>{1});
  EXPECT_THROW((void)f.bitwise_and(f), tg::Error);
  EXPECT_THROW((void)f.bitwise_or(ta), tg::Error);
  EXPECT_THROW((void)f.bitwise_xor(f), tg::Error);
  EXPECT_THROW((void)f.bitwise_not(), tg::Error);
}

TEST(MathBitwise, Shifts) {
  std::vector<int> a = mtest::uniform_int(100, -100000, 100000, 33);
  for (int bits : {0, 1, 3, 7}) {
    std::vector<int> wl, wr;
    for (int v : a) {
      wl.push_back(int(uint32_t(v) << bits));
      wr.push_back(v >> bits);  // arithmetic for negatives (C++20)
    }
    EXPECT_EQ(Tensor(a).lshift(bits).tolist<int>(), wl) << bits;
    EXPECT_EQ(Tensor(a).rshift(bits).tolist<int>(), wr) << bits;
  }
  Tensor u = Tensor(std::vector<int>{1, 3, 31, 200}).cast(dtypes::uint8);
  EXPECT_EQ(u.lshift(2).tolist<int>(), (std::vector<int>{4, 12, 124, 32}));
  EXPECT_EQ(u.rshift(2).tolist<int>(), (std::vector<int>{0, 0, 7, 50}));
  EXPECT_EQ(u.lshift(2).dtype(), dtypes::uint8);
  EXPECT_THROW((void)u.lshift(-1), tg::Error);
  EXPECT_THROW((void)u.rshift(-2), tg::Error);
  EXPECT_THROW((void)Tensor(std::vector<float>{1}).lshift(1), tg::Error);
  EXPECT_THROW((void)mtest::bools({1}).rshift(1), tg::Error);
}

TEST(MathShapes, ZeroOneAndScalarShapes) {
  Tensor e = Tensor::zeros({0, 3});
  for (const Tensor& r : {e.abs(), e.cos(), e.erf(), e.round(), e.pow(2.5), e.mod(Tensor::ones({3})), e.atan()})
    EXPECT_EQ(r.shape(), (tg::Shape{0, 3}));
  EXPECT_EQ(e.abs().tolist<float>().size(), 0u);
  Tensor s(2.5);
  EXPECT_EQ(s.floor().shape(), tg::Shape{});
  EXPECT_EQ(s.floor().item<float>(), 2.0f);
  EXPECT_EQ(s.round().item<float>(), 2.0f);
  EXPECT_EQ(s.pow(2).item<float>(), 6.25f);
  Tensor one = Tensor(std::vector<float>{-0.25f}).reshape({1, 1, 1});
  EXPECT_EQ(one.sign().shape(), (tg::Shape{1, 1, 1}));
  EXPECT_EQ(one.sign().item<float>(), -1.0f);
  EXPECT_NEAR(one.acos().item<float>(), std::acos(-0.25), 1e-6);
}

// ---- gradients (finite differences in float64 against backward()) ----
namespace {
using X = std::vector<Tensor>;
using tgtest::expect_grad_close;
using tgtest::expect_grad_close_random;
}  // namespace

TEST(MathGrad, SignMagnitudeAndRoots) {
  // Inputs kept away from the kinks at 0.
  expect_grad_close({[](const X& x) { return x[0].abs(); }}, {{-2.f, -0.5f, 0.3f, 1.5f}}, {{4}});
  expect_grad_close({[](const X& x) { return x[0].sign() * 3 + x[0]; }}, {{-2.f, -0.5f, 0.3f, 1.5f}}, {{4}});
  expect_grad_close_random([](const X& x) { return x[0].square(); }, {{2, 3}}, 40);
  expect_grad_close_random([](const X& x) { return x[0].rsqrt(); }, {{2, 3}}, 41, 0.3f, 3.f);
}

TEST(MathGrad, Trig) {
  expect_grad_close_random([](const X& x) { return x[0].cos(); }, {{2, 3}}, 42, -3.f, 3.f);
  expect_grad_close_random([](const X& x) { return x[0].tan(); }, {{2, 3}}, 43, -1.2f, 1.2f);
  expect_grad_close_random([](const X& x) { return x[0].asin(); }, {{2, 3}}, 44, -0.9f, 0.9f);
  expect_grad_close_random([](const X& x) { return x[0].acos(); }, {{2, 3}}, 45, -0.9f, 0.9f);
  expect_grad_close({[](const X& x) { return x[0].atan(); }}, {{-30.f, -2.f, -0.7f, 0.2f, 1.3f, 8.f}}, {{6}});
}

TEST(MathGrad, HyperbolicAndErf) {
  expect_grad_close_random([](const X& x) { return x[0].sinh(); }, {{2, 3}}, 46, -3.f, 3.f);
  expect_grad_close_random([](const X& x) { return x[0].cosh(); }, {{2, 3}}, 47, -3.f, 3.f);
  expect_grad_close({[](const X& x) { return x[0].asinh(); }}, {{-40.f, -3.f, -0.5f, 0.25f, 0.9f, 12.f}}, {{6}});
  expect_grad_close_random([](const X& x) { return x[0].acosh(); }, {{2, 3}}, 48, 1.2f, 6.f);
  expect_grad_close_random([](const X& x) { return x[0].atanh(); }, {{2, 3}}, 49, -0.8f, 0.8f);
  expect_grad_close_random([](const X& x) { return x[0].erf(); }, {{2, 3}}, 50, -2.f, 2.f);
}

TEST(MathGrad, RoundingIsFlat) {
  // Away from the jumps the derivative is 0 (the x term makes the gradient exist).
  std::vector<float> v = {-2.7f, -1.2f, 0.3f, 1.6f, 2.2f};
  expect_grad_close({[](const X& x) { return x[0].floor() + x[0]; }}, {v}, {{5}});
  expect_grad_close({[](const X& x) { return x[0].ceil() + x[0]; }}, {v}, {{5}});
  expect_grad_close({[](const X& x) { return x[0].round() + x[0]; }}, {v}, {{5}});
}

TEST(MathGrad, Pow) {
  for (double e : {2.0, 3.0, -1.0, -2.0, 0.5, -1.5, 2.7})
    expect_grad_close_random([e](const X& x) { return x[0].pow(e); }, {{2, 3}}, 51, 0.3f, 2.f);
  // Negative bases with integer exponents.
  expect_grad_close_random([](const X& x) { return x[0].pow(3); }, {{2, 3}}, 52, -2.f, -0.3f);
  expect_grad_close_random([](const X& x) { return x[0].pow(x[1]); }, {{2, 3}, {2, 3}}, 53, 0.3f, 2.f);
  // (A negative base's exponent has no derivative: a nudged integer exponent gives nan.)
  expect_grad_close({[](const X& x) { return x[0].pow(Tensor(std::vector<float>{2, 3, -1})); }}, {{-1.5f, -0.7f, 2.f}},
                    {{3}});
}

TEST(MathGrad, ModClampLerp) {
  expect_grad_close({[](const X& x) { return x[0].mod(x[1]); }}, {{5.3f, -5.3f, 7.1f, -2.2f}, {2.f, 2.f, -3.f, -0.9f}},
                    {{4}, {4}});
  expect_grad_close({[](const X& x) { return x[0].clamp(-0.5, 0.5); }}, {{-0.9f, -0.2f, 0.1f, 0.7f}}, {{4}});
  expect_grad_close_random([](const X& x) { return x[0].lerp(x[1], x[2]); }, {{2, 3}, {2, 3}, {2, 3}}, 54);
  expect_grad_close_random([](const X& x) { return x[0].lerp(x[1], 0.3); }, {{2, 3}, {3}}, 55);
}

// tinygrad's operators: % (mod, Python's sign rule), & | ^ (bitwise), with tensors or C++ numbers on either
// side; idiv and mod with a number.
TEST(MathOperators, ModAndBitwiseOperators) {
  Tensor a(std::vector<int>{7, -7, 12, 5}), b(std::vector<int>{3, 3, -5, 6});
  EXPECT_EQ((a % b).tolist<int>(), (std::vector<int>{1, 2, -3, 5}));
  EXPECT_EQ((a % 4).tolist<int>(), (std::vector<int>{3, 1, 0, 1}));
  EXPECT_EQ((10 % b).tolist<int>(), (std::vector<int>{1, 1, 0, 4}));
  EXPECT_EQ(a.mod(4).tolist<int>(), (a % 4).tolist<int>());
  EXPECT_EQ(a.idiv(2).tolist<int>(), (std::vector<int>{3, -3, 6, 2}));
  EXPECT_EQ((a & b).tolist<int>(), (std::vector<int>{7 & 3, -7 & 3, 12 & -5, 5 & 6}));
  EXPECT_EQ((a | 8).tolist<int>(), (std::vector<int>{7 | 8, -7 | 8, 12 | 8, 5 | 8}));
  EXPECT_EQ((1 ^ a).tolist<int>(), (std::vector<int>{1 ^ 7, 1 ^ -7, 1 ^ 12, 1 ^ 5}));
  Tensor p = a > 0, q = b > 0;
  EXPECT_EQ((p & q).dtype(), dtypes::bool_);
  EXPECT_EQ((p & q).tolist<int>(), (std::vector<int>{1, 0, 0, 1}));
  EXPECT_EQ((p | q).tolist<int>(), (std::vector<int>{1, 1, 1, 1}));
  EXPECT_EQ((p ^ q).tolist<int>(), (std::vector<int>{0, 1, 1, 0}));
  Tensor f(std::vector<float>{5.5f, -5.5f});
  EXPECT_EQ((f % 2.0f).tolist<float>(), (std::vector<float>{1.5f, 0.5f}));
  EXPECT_THROW(f & 1, tg::Error) << "bitwise ops need ints or bools";
  EXPECT_THROW(f.idiv(2), tg::Error) << "idiv needs integers";
}

// dot4: acc + the unsigned bytes of a times the signed bytes of b, against a loop over the bytes. Edge words (every
// byte 0x80 or 0xff, INT_MIN, sums that wrap past INT_MAX) and random ones; 16 and 8 lanes (vpdpbusd where the CPU
// has VNNI), 3 (lanes of scalars) and one value; broadcasting; int32 only.
TEST(MathDot4, UnsignedBytesTimesSignedBytesPlusAccumulator) {
  const auto want = tgtest::dot4_ref;
  const std::vector<int32_t> edge{0,
                                  1,
                                  -1,
                                  INT32_MIN,
                                  INT32_MAX,
                                  int32_t(0x80808080),
                                  int32_t(0x7f7f7f7f),
                                  int32_t(0x01ff80ff),
                                  0x0f0f0f0f,
                                  int32_t(0xf0f0f0f0)};
  uint32_t state = 12345;
  auto next = [&] { return int32_t(state = state * 1664525u + 1013904223u); };
  for (int64_t n : {16, 8, 3, 1, 40}) {
    std::vector<int32_t> a, b, c, w;
    for (int64_t i = 0; i < n; i++) {
      a.push_back(i < int64_t(edge.size()) ? edge[size_t(i)] : next());
      b.push_back(i < int64_t(edge.size()) ? edge[size_t(edge.size() - 1 - size_t(i))] : next());
      c.push_back(i % 3 == 0 ? INT32_MAX - int32_t(i) : next());  // wraps
      w.push_back(want(a.back(), b.back(), c.back()));
    }
    EXPECT_EQ(Tensor(a).dot4(Tensor(b), Tensor(c)).tolist<int32_t>(), w) << n << " lanes";
  }
  // (2, 1) x (1, 3) + a scalar accumulator: broadcast to (2, 3)
  Tensor a(std::vector<int32_t>{0x01020304, int32_t(0xff00ff00)}, {2, 1}),
      b(std::vector<int32_t>{1, -1, 0x7f7f7f7f}, {1, 3});
  std::vector<int32_t> got = a.dot4(b, Tensor(std::vector<int32_t>{5}, {1})).tolist<int32_t>(), expect;
  for (int32_t x : {0x01020304, int32_t(0xff00ff00)})
    for (int32_t y : {1, -1, 0x7f7f7f7f}) expect.push_back(want(x, y, 5));
  EXPECT_EQ(got, expect);
  EXPECT_THROW(Tensor(std::vector<float>{1}).dot4(Tensor(std::vector<int32_t>{1}), Tensor(std::vector<int32_t>{1})),
               tg::Error);
}
