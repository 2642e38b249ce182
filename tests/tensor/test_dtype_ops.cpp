// dtype ops: bitcast (same size and regrouping the last dim, checked against memcpy) and float16 /
// bfloat16 arithmetic and casts against references computed in double and rounded by hand.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "tg/tg.h"
#include "uop/exec_alu.h"
#include "uop/uop.h"

using tg::Tensor;
namespace dtypes = tg::dtypes;

namespace {

const char* kDevices[] = {"CPU", "INTERP"};

template <class T> T from_bytes(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

// The raw bytes of a tensor's values, read through an unsigned type of its item size.
std::vector<uint8_t> bytes_of(const Tensor& t) {
  std::vector<uint8_t> out;
  auto append = [&](const auto& vals) {
    size_t n = vals.size() * sizeof(vals[0]);
    out.resize(n);
    if (n) std::memcpy(out.data(), vals.data(), n);
  };
  switch (t.element_size()) {
    case 1: append(t.bitcast(dtypes::uint8).tolist<uint8_t>()); break;
    case 2: append(t.bitcast(dtypes::uint16).tolist<uint16_t>()); break;
    case 4: append(t.bitcast(dtypes::uint32).tolist<uint32_t>()); break;
    default: append(t.bitcast(dtypes::uint64).tolist<uint64_t>()); break;
  }
  return out;
}

// A tensor of `dt` holding the given bytes (little-endian, as the host), on `device`.
Tensor from_raw(const std::vector<uint8_t>& bytes, tg::DType dt, tg::Shape shape, const std::string& device) {
  int64_t n = int64_t(bytes.size()) / dt.itemsize();
  Tensor t = [&] {
    switch (dt.itemsize()) {
      case 1: return Tensor(bytes, {n}, {.device = device});
      case 2: {
        std::vector<uint16_t> v(static_cast<size_t>(n));
        if (n) std::memcpy(v.data(), bytes.data(), bytes.size());
        return Tensor(v, {n}, {.device = device});
      }
      case 4: {
        std::vector<uint32_t> v(static_cast<size_t>(n));
        if (n) std::memcpy(v.data(), bytes.data(), bytes.size());
        return Tensor(v, {n}, {.device = device});
      }
      default: {
        std::vector<uint64_t> v(static_cast<size_t>(n));
        if (n) std::memcpy(v.data(), bytes.data(), bytes.size());
        return Tensor(v, {n}, {.device = device});
      }
    }
  }();
  return t.bitcast(dt).reshape(shape);
}

float half_round(double x) { return float(tg::half_bits_to_double(tg::double_to_half_bits(x))); }
float bf16_round(double x) { return float(tg::bf16_bits_to_double(tg::double_to_bf16_bits(x))); }

// Random values exactly representable in `dt` (float16/bfloat16), in [-r, r].
std::vector<float> random_in(tg::DType dt, size_t n, double r, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> d(-r, r);
  std::vector<float> v(n);
  for (auto& x : v) x = dt == dtypes::float16 ? half_round(d(gen)) : bf16_round(d(gen));
  return v;
}

}  // namespace

// ---- bitcast ----

TEST(DtypeOps, BitcastSameSizeKnownValues) {
  for (const char* dev : kDevices) {
    Tensor f(std::vector<float>{1.0f, -2.0f, 0.0f, 0.5f}, {}, {.device = dev});
    Tensor i = f.bitcast(dtypes::int32);
    EXPECT_EQ(i.dtype(), dtypes::int32);
    EXPECT_EQ(i.tolist<int32_t>(), (std::vector<int32_t>{0x3f800000, int32_t(0xc0000000u), 0, 0x3f000000})) << dev;
    EXPECT_EQ(i.bitcast(dtypes::float32).tolist<float>(), f.tolist<float>()) << dev;
    Tensor m1(std::vector<int32_t>{-1, 2, 3}, {}, {.device = dev});
    EXPECT_EQ(m1.bitcast(dtypes::uint32).tolist<uint32_t>(), (std::vector<uint32_t>{4294967295u, 2, 3})) << dev;
    Tensor d(std::vector<double>{1.0, -0.0}, {}, {.device = dev});
    EXPECT_EQ(d.bitcast(dtypes::uint64).tolist<uint64_t>(),
              (std::vector<uint64_t>{0x3FF0000000000000ull, 0x8000000000000000ull}))
        << dev;
    Tensor h = Tensor(std::vector<float>{1.0f, -2.0f, 65504.0f}, {}, {.device = dev}).cast(dtypes::float16);
    EXPECT_EQ(h.bitcast(dtypes::uint16).tolist<uint16_t>(), (std::vector<uint16_t>{0x3c00, 0xc000, 0x7bff})) << dev;
    EXPECT_EQ(h.bitcast(dtypes::int16).tolist<int16_t>(), (std::vector<int16_t>{0x3c00, int16_t(0xc000), 0x7bff}));
    Tensor b = Tensor(std::vector<float>{1.0f, -2.0f}, {}, {.device = dev}).cast(dtypes::bfloat16);
    EXPECT_EQ(b.bitcast(dtypes::uint16).tolist<uint16_t>(), (std::vector<uint16_t>{0x3f80, 0xc000})) << dev;
    // float16 <-> bfloat16 reinterpret the same 16 bits: 0x3c00 as bfloat16 is 2^-7.
    EXPECT_EQ(h.bitcast(dtypes::bfloat16).tolist<float>()[0], 0.0078125f) << dev;
  }
}

TEST(DtypeOps, BitcastKeepsShapeAndIsLazy) {
  Tensor x = Tensor::ones({2, 3, 4});
  Tensor y = x.bitcast(dtypes::uint32);
  EXPECT_EQ(y.shape(), (tg::Shape{2, 3, 4}));
  EXPECT_EQ(y.uop()->op, tg::Ops::BITCAST);
  EXPECT_EQ(x.bitcast(dtypes::float32).uop(), x.uop());  // same dtype: nothing to do
  for (uint32_t v : y.tolist<uint32_t>()) EXPECT_EQ(v, 0x3f800000u);
  // On a view and inside a fused expression.
  Tensor z = (Tensor::arange(8).reshape({2, 4}).T() + 1).bitcast(dtypes::uint32);
  EXPECT_EQ(z.tolist<uint32_t>(), (std::vector<uint32_t>{1, 5, 2, 6, 3, 7, 4, 8}));
  EXPECT_EQ(Tensor::zeros({3, 0}).bitcast(dtypes::int32).shape(), (tg::Shape{3, 0}));
}

TEST(DtypeOps, BitcastChangesLastDimLittleEndian) {
  for (const char* dev : kDevices) {
    Tensor u8(std::vector<uint8_t>{1, 2, 3, 4, 5, 6, 7, 8}, {2, 4}, {.device = dev});
    Tensor w = u8.bitcast(dtypes::uint32);
    EXPECT_EQ(w.shape(), (tg::Shape{2, 1}));
    EXPECT_EQ(w.tolist<uint32_t>(), (std::vector<uint32_t>{0x04030201u, 0x08070605u})) << dev;
    Tensor s = u8.bitcast(dtypes::uint16);
    EXPECT_EQ(s.shape(), (tg::Shape{2, 2}));
    EXPECT_EQ(s.tolist<uint16_t>(), (std::vector<uint16_t>{0x0201, 0x0403, 0x0605, 0x0807})) << dev;
    Tensor big(std::vector<uint32_t>{0xdeadbeefu, 0x01020304u}, {}, {.device = dev});
    Tensor bytes = big.bitcast(dtypes::uint8);
    EXPECT_EQ(bytes.shape(), tg::Shape{8});
    EXPECT_EQ(bytes.tolist<uint8_t>(), (std::vector<uint8_t>{0xef, 0xbe, 0xad, 0xde, 4, 3, 2, 1})) << dev;
    Tensor f(std::vector<float>{1.0f}, {1}, {.device = dev});
    EXPECT_EQ(f.bitcast(dtypes::float16).tolist<float>(), (std::vector<float>{0.0f, 1.875f})) << dev;  // 0x0000, 0x3f80
    EXPECT_EQ(f.bitcast(dtypes::uint16).shape(), tg::Shape{2});
    Tensor i64(std::vector<int64_t>{-2}, {1}, {.device = dev});
    EXPECT_EQ(i64.bitcast(dtypes::int32).tolist<int32_t>(), (std::vector<int32_t>{-2, -1})) << dev;
  }
}

// Narrowing then widening one element: the widening reads single elements of the narrowed (masked) result.
TEST(DtypeOps, BitcastOneElementRoundTrip) {
  for (const char* dev : kDevices) {
    Tensor f(std::vector<float>{1.0f}, {1}, {.device = dev});
    EXPECT_EQ(f.bitcast(dtypes::uint16).bitcast(dtypes::float32).tolist<float>(), std::vector<float>{1.0f}) << dev;
    Tensor g(std::vector<uint32_t>{0x3f800000u, 5}, {2}, {.device = dev});
    EXPECT_EQ(g.bitcast(dtypes::uint8).bitcast(dtypes::uint32).tolist<uint32_t>(),
              (std::vector<uint32_t>{0x3f800000u, 5})) << dev;
  }
}

// Every pair of integer dtypes and every float source, on random data, against memcpy on the host.
TEST(DtypeOps, BitcastRandomAgainstMemcpy) {
  const tg::DType ints[] = {dtypes::int8,  dtypes::uint8, dtypes::int16, dtypes::uint16,
                            dtypes::int32, dtypes::uint32, dtypes::int64, dtypes::uint64};
  const tg::DType all[] = {dtypes::int8,   dtypes::uint8,  dtypes::int16,   dtypes::uint16,  dtypes::int32,
                           dtypes::uint32, dtypes::int64,  dtypes::uint64,  dtypes::float16, dtypes::bfloat16,
                           dtypes::float32, dtypes::float64};
  std::mt19937 gen(77);
  for (tg::DType from : ints) {
    for (tg::DType to : all) {
      // 3 rows of 16 bytes: every item size divides the last dim in both directions.
      std::vector<uint8_t> raw(48);
      for (auto& b : raw) b = uint8_t(gen());
      // Keep floats away from NaN bit patterns, whose payloads a float register need not preserve.
      if (to.is_float())
        for (size_t i = to.itemsize() - 1; i < raw.size(); i += size_t(to.itemsize())) raw[i] &= 0x3f;
      tg::Shape shape{3, 16 / from.itemsize()};
      Tensor t = from_raw(raw, from, shape, "CPU").bitcast(to);
      EXPECT_EQ(t.dtype(), to);
      EXPECT_EQ(t.shape(), (tg::Shape{3, 16 / to.itemsize()})) << from.repr() << " -> " << to.repr();
      EXPECT_EQ(bytes_of(t), raw) << from.repr() << " -> " << to.repr();
    }
  }
}

TEST(DtypeOps, BitcastFloatValuesAgainstMemcpy) {
  std::mt19937 gen(5);
  std::uniform_real_distribution<float> d(-1000, 1000);
  std::vector<float> v(12);
  for (auto& x : v) x = d(gen);
  for (const char* dev : kDevices) {
    Tensor f(v, {3, 4}, {.device = dev});
    auto b = f.bitcast(dtypes::uint8).tolist<uint8_t>();
    ASSERT_EQ(b.size(), 48u);
    EXPECT_EQ(std::memcmp(b.data(), v.data(), 48), 0) << dev;
    auto d64 = f.bitcast(dtypes::float64);
    EXPECT_EQ(d64.shape(), (tg::Shape{3, 2}));
    auto dv = d64.bitcast(dtypes::uint64).tolist<uint64_t>();
    for (size_t i = 0; i < 6; i++) EXPECT_EQ(dv[i], from_bytes<uint64_t>(reinterpret_cast<uint8_t*>(v.data()) + 8 * i));
  }
}

TEST(DtypeOps, BitcastBadInputThrows) {
  Tensor x = Tensor::ones({2, 3});
  EXPECT_THROW(x.bitcast(dtypes::float64), tg::Error);  // 3 * 4 bytes is not a multiple of 8
  EXPECT_THROW(Tensor(1.0f).bitcast(dtypes::uint8), tg::Error);  // 0-d: no last dim to regroup
  EXPECT_THROW(x.bitcast(dtypes::bool_), tg::Error);
  EXPECT_THROW(Tensor::ones({4}, {.dtype = dtypes::bool_}).bitcast(dtypes::uint8), tg::Error);
  EXPECT_THROW(x.bitcast(dtypes::float32.vec(4)), tg::Error);
  EXPECT_THROW(x.bitcast(dtypes::void_), tg::Error);
  try {
    x.bitcast(dtypes::int64);
    FAIL();
  } catch (const tg::Error& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("bitcast"), std::string::npos);
    EXPECT_NE(m.find("(2, 3)"), std::string::npos);
  }
  EXPECT_NO_THROW(Tensor::ones({2, 4}).bitcast(dtypes::float64));
  EXPECT_NO_THROW(Tensor(1.0f).bitcast(dtypes::int32));  // same size: fine at 0-d
}

TEST(DtypeOps, BitcastCarriesNoGradient) {
  Tensor x(std::vector<float>{1.0f, 2.0f}, {2}, {.requires_grad = true});
  Tensor y(std::vector<float>{3.0f, 4.0f}, {2}, {.requires_grad = true});
  // Through the bits there is no derivative; y's path still gets its gradient.
  Tensor loss = x.bitcast(dtypes::int32).cast(dtypes::float32).sum() * 0 + (y * 2).sum() +
                x.bitcast(dtypes::uint16).cast(dtypes::float32).sum();
  loss.backward();
  EXPECT_EQ(y.grad().tolist<float>(), (std::vector<float>{2, 2}));
  EXPECT_FALSE(x.has_grad() && x.grad().abs().sum().item<float>() != 0);
}

// ---- float16 / bfloat16 ----

TEST(DtypeOps, HalfCastsRoundTripEveryBitPattern) {
  std::vector<uint16_t> all(65536);
  for (size_t i = 0; i < all.size(); i++) all[i] = uint16_t(i);
  for (tg::DType dt : {dtypes::float16, dtypes::bfloat16}) {
    Tensor h = Tensor(all).bitcast(dt);
    auto as_float = h.cast(dtypes::float32).tolist<float>();
    auto back = h.cast(dtypes::float32).cast(dt).bitcast(dtypes::uint16).tolist<uint16_t>();
    auto via64 = h.cast(dtypes::float64).cast(dt).bitcast(dtypes::uint16).tolist<uint16_t>();
    for (size_t i = 0; i < all.size(); i++) {
      double want = dt == dtypes::float16 ? tg::half_bits_to_double(uint16_t(i)) : tg::bf16_bits_to_double(uint16_t(i));
      if (std::isnan(want)) {
        ASSERT_TRUE(std::isnan(as_float[i])) << dt.repr() << " " << i;
        continue;
      }
      ASSERT_EQ(double(as_float[i]), want) << dt.repr() << " bits " << i;
      ASSERT_EQ(back[i], uint16_t(i)) << dt.repr() << " bits " << i;
      ASSERT_EQ(via64[i], uint16_t(i)) << dt.repr() << " bits " << i;
    }
  }
}

TEST(DtypeOps, FloatToHalfRoundsToNearestEven) {
  std::mt19937 gen(21);
  std::vector<float> v;
  std::uniform_real_distribution<float> wide(-70000, 70000), small(-1e-4f, 1e-4f), unit(-2, 2);
  for (int i = 0; i < 300; i++) v.push_back(wide(gen)), v.push_back(small(gen)), v.push_back(unit(gen));
  // Ties: 1 + 2^-11 is halfway between two halves and rounds to even (1.0); 1 + 3 * 2^-11 rounds up.
  v.insert(v.end(), {1.0f + 0x1p-11f, 1.0f + 3 * 0x1p-11f, 65520.0f, -65520.0f, 65519.0f, 0x1p-25f, 0x1p-24f,
                     std::numeric_limits<float>::infinity()});
  for (const char* dev : kDevices) {
    auto h = Tensor(v, {}, {.device = dev}).cast(dtypes::float16).tolist<float>();
    auto b = Tensor(v, {}, {.device = dev}).cast(dtypes::bfloat16).tolist<float>();
    for (size_t i = 0; i < v.size(); i++) {
      ASSERT_EQ(h[i], half_round(v[i])) << dev << " " << v[i];
      ASSERT_EQ(b[i], bf16_round(v[i])) << dev << " " << v[i];
    }
  }
}

TEST(DtypeOps, HalfAddMulMatchFloatReference) {
  for (tg::DType dt : {dtypes::float16, dtypes::bfloat16}) {
    auto round = [&](double x) { return dt == dtypes::float16 ? half_round(x) : bf16_round(x); };
    double rel = dt == dtypes::float16 ? 0x1p-11 : 0x1p-8;  // half an ulp
    auto a = random_in(dt, 257, 8, 1), b = random_in(dt, 257, 8, 2);
    for (const char* dev : kDevices) {
      Tensor ta = Tensor(a, {}, {.device = dev}).cast(dt), tb = Tensor(b, {}, {.device = dev}).cast(dt);
      EXPECT_EQ(ta.tolist<float>(), a);  // exactly representable: the cast is exact
      Tensor sum = ta + tb, prod = ta * tb, fma = ta * tb + ta, div = ta / (tb.maximum(0.5));
      EXPECT_EQ(sum.dtype(), dt);
      EXPECT_EQ(prod.dtype(), dt);
      auto s = sum.tolist<float>(), p = prod.tolist<float>(), f = fma.tolist<float>(), q = div.tolist<float>();
      for (size_t i = 0; i < a.size(); i++) {
        double x = a[i], y = b[i];
        // One rounding of the exact result (a float computation rounded to the dtype on store).
        EXPECT_EQ(s[i], round(x + y)) << dt.repr() << " " << dev << " " << x << " + " << y;
        EXPECT_EQ(p[i], round(x * y)) << dt.repr() << " " << dev << " " << x << " * " << y;
        double want_f = double(round(x * y)) + x, want_q = x / std::max(y, 0.5);
        EXPECT_NEAR(f[i], want_f, std::abs(want_f) * 2 * rel + 1e-6) << dt.repr() << " " << dev;
        EXPECT_NEAR(q[i], want_q, std::abs(want_q) * 2 * rel + 1e-6) << dt.repr() << " " << dev;
      }
    }
  }
}

TEST(DtypeOps, HalfReductionsAccumulateInFloat) {
  for (tg::DType dt : {dtypes::float16, dtypes::bfloat16}) {
    double ulp = dt == dtypes::float16 ? 0x1p-10 : 0x1p-7;
    auto a = random_in(dt, 3000, 1, 3);
    double total = 0, mx = -1e9;
    for (float x : a) total += x, mx = std::max(mx, double(x));
    for (const char* dev : kDevices) {
      Tensor t = Tensor(a, {30, 100}, {.device = dev}).cast(dt);
      Tensor s = t.sum();
      EXPECT_EQ(s.dtype(), dt);
      // A float32 accumulator rounded once is within an ulp; a half-precision one would drift further.
      EXPECT_NEAR(s.item<float>(), total, std::abs(total) * ulp) << dt.repr() << " " << dev;
      EXPECT_EQ(t.max().item<float>(), float(mx));
      auto rows = t.sum(1).tolist<float>();
      for (size_t r = 0; r < 30; r++) {
        double want = 0;
        for (size_t c = 0; c < 100; c++) want += a[r * 100 + c];
        EXPECT_NEAR(rows[r], want, std::abs(want) * ulp + 1e-6) << dt.repr() << " " << dev << " row " << r;
      }
      EXPECT_NEAR(t.mean().item<float>(), total / 3000, 0.002) << dt.repr() << " " << dev;
    }
  }
  // 4096 ones: a float16 accumulator would stop at 2048.
  EXPECT_EQ(Tensor::ones({4096}, {.dtype = dtypes::float16}).sum().item<float>(), 4096.0f);
}

TEST(DtypeOps, HalfMatmulAndPromotion) {
  auto a = random_in(dtypes::float16, 12, 2, 7), b = random_in(dtypes::float16, 20, 2, 8);
  Tensor ta = Tensor(a, {3, 4}).half(), tb = Tensor(b, {4, 5}).half();
  Tensor c = ta.matmul(tb);
  EXPECT_EQ(c.dtype(), dtypes::float16);
  auto cv = c.tolist<float>();
  for (size_t i = 0; i < 3; i++)
    for (size_t j = 0; j < 5; j++) {
      double want = 0, mag = 0;
      for (size_t k = 0; k < 4; k++) {
        double p = double(a[i * 4 + k]) * b[k * 5 + j];
        want += p, mag += std::abs(p);
      }
      // Each product rounds to half, the float32 sum rounds once more at the end.
      EXPECT_NEAR(cv[i * 5 + j], want, mag * 0x1p-11 + std::abs(want) * 0x1p-11 + 1e-6) << i << "," << j;
    }
  // Promotion: half with float is float; half with bfloat16 is float; a C++ float keeps half.
  EXPECT_EQ((ta + ta.float_()).dtype(), dtypes::float32);
  EXPECT_EQ((ta + ta.cast(dtypes::bfloat16)).dtype(), dtypes::float32);
  EXPECT_EQ((ta * 2.5).dtype(), dtypes::float16);
  EXPECT_EQ((Tensor::ones({2}, {.dtype = dtypes::int32}) + ta.shrink({{0, 1}, {0, 2}}).reshape({2})).dtype(),
            dtypes::float16);
}

TEST(DtypeOps, HalfGradients) {
  // Casts pass the gradient through (cast back to the source dtype); half arithmetic has the usual rules.
  for (tg::DType dt : {dtypes::float16, dtypes::bfloat16}) {
    Tensor x(std::vector<float>{0.5f, -1.25f, 2.0f}, {3}, {.requires_grad = true});
    Tensor y(std::vector<float>{1.5f, 3.0f, -0.75f}, {3}, {.requires_grad = true});
    Tensor h = x.cast(dt) * y.cast(dt) + x.cast(dt);
    EXPECT_EQ(h.dtype(), dt);
    h.sum().backward();
    EXPECT_EQ(x.grad().dtype(), dtypes::float32);
    EXPECT_EQ(x.grad().tolist<float>(), (std::vector<float>{2.5f, 4.0f, 0.25f})) << dt.repr();  // y + 1
    EXPECT_EQ(y.grad().tolist<float>(), (std::vector<float>{0.5f, -1.25f, 2.0f})) << dt.repr();  // x
  }
}

TEST(DtypeOps, HalfIntCastsAndSpecialValues) {
  std::vector<int> ints{0, 1, -1, 2047, 2048, 2049, -30000, 65504, 70000};
  for (const char* dev : kDevices) {
    Tensor h = Tensor(ints, {}, {.device = dev}).cast(dtypes::float16);
    auto v = h.tolist<float>();
    for (size_t i = 0; i < ints.size(); i++) EXPECT_EQ(v[i], half_round(ints[i])) << dev << " " << ints[i];
    EXPECT_TRUE(std::isinf(v.back()));
    Tensor back = Tensor(std::vector<float>{1.5f, -2.75f, 100.25f}, {}, {.device = dev}).half().int_();
    EXPECT_EQ(back.tolist<int>(), (std::vector<int>{1, -2, 100})) << dev;  // float -> int truncates
    Tensor over = Tensor(std::vector<float>{60000}, {}, {.device = dev}).half() * 2;
    EXPECT_TRUE(std::isinf(over.item<float>())) << dev;
    Tensor tiny = Tensor(std::vector<float>{0x1p-24f}, {}, {.device = dev}).half();  // the smallest subnormal
    EXPECT_EQ(tiny.item<float>(), 0x1p-24f) << dev;
    EXPECT_EQ((tiny * 0.5).item<float>(), 0.0f) << dev;  // halfway to zero: ties to even
    Tensor bf = Tensor(std::vector<float>{3.0e38f}, {}, {.device = dev}).cast(dtypes::bfloat16);
    EXPECT_NEAR(bf.item<float>(), 3.0e38f, 3.0e38f / 128) << dev;  // bfloat16 keeps float32's range
  }
}

TEST(DtypeOps, HalfDotProductsAreExactBeforeTheSum) {
  // A sum of 16-bit products accumulates exact products in float32 (codegen/exact_products.h), as tensor
  // cores do: x*x - x*y with x = 1+e, y = 1+2e is e^2 exactly, while products rounded to the dtype give 0.
  // `(a * b).float()` outside a sum still rounds the product to the dtype, as it asks.
  for (tg::DType dt : {dtypes::float16, dtypes::bfloat16}) {
    const double e = dt == dtypes::float16 ? 0x1p-10 : 0x1p-7;
    std::vector<float> av{float(1 + e), -1.0f}, bv{float(1 + e), float(1 + 2 * e)};
    for (const char* dev : kDevices) {
      Tensor a = Tensor(av, {2}, {.device = dev}).cast(dt), b = Tensor(bv, {2}, {.device = dev}).cast(dt);
      EXPECT_EQ(a.dot(b).item<float>(), float(e * e)) << dt.repr() << " " << dev;
      EXPECT_EQ(a.reshape({1, 2}).matmul(b.reshape({2, 1})).item<float>(), float(e * e)) << dt.repr() << " " << dev;
      EXPECT_EQ((a * b).cast(dtypes::float32).tolist<float>()[0], float(1 + 2 * e)) << dt.repr() << " " << dev;
    }
  }
}
