// operator[] (ints, slices, None, Ellipsis, integer tensors), gather, scatter, one_hot, masked_fill, tril/triu,
// against brute-force references (tests/common/reference_extra.h) with random inputs and edge shapes.
#include <gtest/gtest.h>

#include <random>

#include "../common/tensor_ref.h"
#include "tg/tg.h"

using tg::Index;
using tg::Slice;
using tg::Tensor;
using tgtest::expect_ref;
using tgtest::rand_tensor;
using tgtest::to_ref;
using tgtest::Ref;
using tgtest::RefIndex;

namespace {

Tensor rand_index(const tg::Shape& s, unsigned seed, int32_t lo, int32_t hi) {
  return Tensor(tgtest::rand_ints(size_t(tgtest::numel_of(s)), seed, lo, hi), s);
}

template <class F>
void expect_error(F&& f, const std::string& text) {
  try {
    f();
    ADD_FAILURE() << "expected tg::Error containing '" << text << "'";
  } catch (const tg::Error& e) {
    EXPECT_NE(std::string(e.what()).find(text), std::string::npos) << e.what();
  }
}

// An index entry in both forms: for the library and for the reference.
struct Both {
  std::vector<Index> lib;
  std::vector<RefIndex> ref;
  void integer(int64_t i) { lib.emplace_back(i), ref.push_back(RefIndex::integer(i)); }
  void slice(std::optional<int64_t> a, std::optional<int64_t> b, int64_t step = 1) {
    lib.emplace_back(Slice(a, b, step)), ref.push_back(RefIndex::slice(a, b, step));
  }
  void none() { lib.emplace_back(tg::None), ref.push_back(RefIndex::none()); }
  void tensor(const std::vector<int32_t>& v, const tg::Shape& s) {
    lib.emplace_back(Tensor(v, s));
    ref.push_back(RefIndex::arr(std::vector<double>(v.begin(), v.end()), s));
  }
};

void check(const Tensor& x, const Both& b) { expect_ref(x[b.lib], tgtest::ref_getitem(to_ref(x), b.ref)); }

}  // namespace

TEST(Indexing, IntsAndNegativeInts) {
  Tensor t = Tensor::arange(12).reshape({3, 4});
  EXPECT_EQ(t[1].shape(), (tg::Shape{4}));
  EXPECT_EQ(t[1].tolist<int>(), (std::vector<int>{4, 5, 6, 7}));
  EXPECT_EQ(t[-1].tolist<int>(), (std::vector<int>{8, 9, 10, 11}));
  EXPECT_EQ((t[{1, -2}].shape()), tg::Shape{});
  EXPECT_EQ((t[{1, -2}].item<int>()), 6);
  EXPECT_EQ(t[2][3].item<int>(), 11);
  EXPECT_EQ((t[{-3, 0}].item<int>()), 0);
  expect_error([&] { t[3]; }, "index 3 is out of bounds for axis 0 with size 3");
  expect_error([&] { t[-4]; }, "index -4 is out of bounds for axis 0 with size 3");
  expect_error([&] { t[{0, 4}]; }, "out of bounds for axis 1 with size 4");
  expect_error([&] { Tensor(1.0f)[0]; }, "too many indices");
  expect_error([&] { t[{0, 0, 0}]; }, "too many indices");
  expect_error([&] { Tensor::zeros({0})[0]; }, "out of bounds");
}

TEST(Indexing, SlicesMatchPython) {
  Tensor t = Tensor::arange(7);
  std::vector<std::optional<int64_t>> bounds = {std::nullopt, -9, -7, -3, -1, 0, 2, 7, 9};
  for (int64_t step : {1, 3, -1, -2, 8})
    for (auto a : bounds)
      for (auto b : bounds) {
        Both ix;
        ix.slice(a, b, step);
        SCOPED_TRACE(testing::Message() << "slice(" << (a ? std::to_string(*a) : "None") << ", "
                                        << (b ? std::to_string(*b) : "None") << ", " << step << ")");
        check(t, ix);
      }
  // Hand-checked against Python.
  EXPECT_EQ(t[{Slice(std::nullopt, std::nullopt, -1)}].tolist<int>(), (std::vector<int>{6, 5, 4, 3, 2, 1, 0}));
  EXPECT_EQ(t[{Slice(5, 1, -2)}].tolist<int>(), (std::vector<int>{5, 3}));
  EXPECT_EQ(t[{Slice(-2, std::nullopt, -3)}].tolist<int>(), (std::vector<int>{5, 2}));
  EXPECT_EQ(t[{Slice(1, std::nullopt, 3)}].tolist<int>(), (std::vector<int>{1, 4}));
  EXPECT_EQ(t[{Slice(4, 2)}].shape(), (tg::Shape{0}));
  EXPECT_EQ(t[{Slice(-100, 100)}].tolist<int>(), t.tolist<int>());
  expect_error([&] { t[{Slice(0, 3, 0)}]; }, "step cannot be zero");
  Tensor e = Tensor::zeros({0, 3});
  EXPECT_EQ((e[{Slice(std::nullopt, std::nullopt, -1), Slice(1)}].shape()), (tg::Shape{0, 2}));
}

TEST(Indexing, SlicesOnSeveralDims) {
  Tensor t = rand_tensor({4, 5, 6}, 1);
  Both a;
  a.slice(1, 3), a.slice(std::nullopt, std::nullopt, -2), a.slice(-1, 0, -3);
  check(t, a);
  Both b;
  b.integer(-1), b.slice(4, -6, -1);
  check(t, b);
  Both c;
  c.slice(std::nullopt, std::nullopt, 3), c.integer(2), c.slice(1, std::nullopt, 2);
  check(t, c);
}

TEST(Indexing, NoneAndEllipsis) {
  Tensor t = rand_tensor({2, 3, 4}, 2);
  EXPECT_EQ((t[{tg::None}].shape()), (tg::Shape{1, 2, 3, 4}));
  EXPECT_EQ((t[{Slice(), tg::None}].shape()), (tg::Shape{2, 1, 3, 4}));
  EXPECT_EQ((t[{tg::Ellipsis, tg::None}].shape()), (tg::Shape{2, 3, 4, 1}));
  EXPECT_EQ((t[{tg::Ellipsis, 1}].shape()), (tg::Shape{2, 3}));
  EXPECT_EQ((t[{0, tg::Ellipsis}].shape()), (tg::Shape{3, 4}));
  EXPECT_EQ((t[{0, tg::Ellipsis, 1}].shape()), (tg::Shape{3}));
  EXPECT_EQ((t[{tg::Ellipsis}].shape()), (tg::Shape{2, 3, 4}));
  EXPECT_EQ((t[{0, 1, 2, tg::Ellipsis}].shape()), tg::Shape{});
  EXPECT_EQ((t[{tg::None, 0, tg::None, Slice(1), tg::None}].shape()), (tg::Shape{1, 1, 2, 1, 4}));
  EXPECT_EQ((Tensor(2.0f)[{tg::None, tg::None}].shape()), (tg::Shape{1, 1}));
  EXPECT_EQ((Tensor(2.0f)[{tg::Ellipsis}].item<float>()), 2.0f);
  Both ix;
  ix.none(), ix.integer(1), ix.none(), ix.slice(std::nullopt, std::nullopt, -1);
  check(t, ix);
  EXPECT_EQ((t[{tg::Ellipsis, 1}].tolist<float>()), (t[{Slice(), Slice(), 1}].tolist<float>()));
  expect_error([&] { t[{tg::Ellipsis, 0, tg::Ellipsis}]; }, "single ellipsis");
  expect_error([&] { t[{0, 0, 0, 0, tg::Ellipsis}]; }, "too many indices");
}

TEST(Indexing, TensorIndexOneDim) {
  Tensor t = rand_tensor({4, 3}, 3);
  Both a;
  a.tensor({2, 0, 3, 3, -1, -4}, {6});
  check(t, a);
  Both b;
  b.slice(std::nullopt, std::nullopt), b.tensor({2, 0, -1, 1}, {2, 2});
  check(t, b);
  Both c;
  c.tensor({1}, {});  // a 0-d tensor index drops the dim, like an int
  check(t, c);
  EXPECT_EQ(t[{Tensor(std::vector<int32_t>{1}, {})}].shape(), (tg::Shape{3}));
  // Out of range reads 0 (tinygrad's rule; it would take the data to raise).
  Tensor v = Tensor::arange(1, 4, 1);
  EXPECT_EQ(v[{Tensor(std::vector<int32_t>{4, 3, 2, -4, -3})}].tolist<int>(), (std::vector<int>{0, 0, 3, 0, 1}));
  // Index dtypes other than int32.
  EXPECT_EQ(v[{Tensor(std::vector<int8_t>{-1, 0})}].tolist<int>(), (std::vector<int>{3, 1}));
  EXPECT_EQ(v[{Tensor(std::vector<int64_t>{2, 1})}].tolist<int>(), (std::vector<int>{3, 2}));
  EXPECT_EQ(v[{Tensor(std::vector<uint8_t>{2, 200})}].tolist<int>(), (std::vector<int>{3, 0}));
  // A huge int64 index must not wrap into range.
  EXPECT_EQ(v[{Tensor(std::vector<int64_t>{(int64_t(1) << 32) + 1})}].tolist<int>(), (std::vector<int>{0}));
  // Empty index tensor and empty indexed dim.
  EXPECT_EQ(t[{Tensor(std::vector<int32_t>{}, {0})}].shape(), (tg::Shape{0, 3}));
  EXPECT_EQ(Tensor::zeros({0, 2})[{Tensor(std::vector<int32_t>{0, 1})}].tolist<float>(),
            (std::vector<float>{0, 0, 0, 0}));
}

TEST(Indexing, TensorIndicesBroadcastAdjacent) {
  Tensor t = rand_tensor({3, 4, 5}, 4);
  Both a;  // (2,1) and (3,) broadcast to (2,3), replacing dims 0 and 1
  a.tensor({0, 2}, {2, 1}), a.tensor({1, 3, -1}, {3});
  check(t, a);
  Both b;  // slice first: the block stays at dim 1
  b.slice(std::nullopt, std::nullopt), b.tensor({0, 3, 1}, {3}), b.tensor({4, 0, 2}, {3});
  check(t, b);
  Both c;  // out of range in one of the indices reads 0, even when the linear offset would be in range
  c.tensor({0, 1, 2}, {3}), c.tensor({4, 5, -6}, {3});
  check(t, c);
  Both d;  // all three dims
  d.tensor({2, 0}, {2}), d.tensor({3, 1}, {2}), d.tensor({4, 0}, {2});
  check(t, d);
  Both e;  // int between tensors: adjacent advanced indices
  e.tensor({1, 2}, {2}), e.integer(1), e.tensor({0, 4}, {2});
  check(t, e);
  EXPECT_EQ((t[{Tensor(std::vector<int32_t>{0, 2}), Tensor(std::vector<int32_t>{1, 3})}].shape()), (tg::Shape{2, 5}));
  expect_error([&] { t[{Tensor(std::vector<int32_t>{0, 2}), Tensor(std::vector<int32_t>{1, 2, 3})}]; },
               "cannot be broadcast");
}

TEST(Indexing, TensorIndicesNotAdjacentGoFirst) {
  Tensor t = rand_tensor({3, 4, 5}, 5);
  Both a;  // separated by a slice: numpy puts the broadcast dims first
  a.tensor({0, 2}, {2}), a.slice(std::nullopt, std::nullopt), a.tensor({1, 4}, {2});
  check(t, a);
  EXPECT_EQ(t[a.lib].shape(), (tg::Shape{2, 4}));
  // torch and tinygrad apply ints first as basic indices (numpy would count them as advanced and put the idx
  // dims first): [0, :, idx] keeps them in place, and in [:, idx, 1, idx] the two tensors are adjacent.
  EXPECT_EQ((t[{0, Slice(), Tensor(std::vector<int32_t>{1, 2, 3})}].shape()), (tg::Shape{4, 3}));
  EXPECT_EQ((t[{0, Slice(), Tensor(std::vector<int32_t>{1, 2, 3})}].tolist<float>()),
            (t[{0}].permute({1, 0})[{Tensor(std::vector<int32_t>{1, 2, 3})}].permute({1, 0}).tolist<float>()));
  Tensor u = rand_tensor({3, 4, 5, 6}, 6), i7 = Tensor(std::vector<int32_t>{0, 1, 2, 0, 1, 2, 3});
  EXPECT_EQ((u[{Slice(), i7, 1, i7}].shape()), (tg::Shape{3, 7}));
  EXPECT_EQ((u[{1, Slice(), i7}].shape()), (tg::Shape{4, 7, 6}));
  Both c;  // separated by None
  c.slice(1, std::nullopt), c.tensor({0, 1}, {2, 1}), c.none(), c.tensor({4, 3, 2}, {3});
  check(t, c);
  EXPECT_EQ(t[c.lib].shape(), (tg::Shape{2, 3, 2, 1}));
}

TEST(Indexing, RandomIndexFuzzMatchesTheReference) {
  std::mt19937 gen(1234);
  auto rnd = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(gen); };
  for (int iter = 0; iter < 150; iter++) {
    size_t nd = size_t(rnd(1, 3));
    tg::Shape s;
    for (size_t i = 0; i < nd; i++) s.push_back(rnd(0, 4));
    Tensor t = rand_tensor(s, unsigned(iter));
    Both ix;
    std::string desc;
    for (size_t d = 0; d < nd; d++) {
      if (rnd(0, 5) == 0) ix.none(), desc += "None,";
      int64_t kind = rnd(0, 3), n = s[d];
      if (kind == 0 && n > 0) {
        int64_t i = rnd(-n, n - 1);
        ix.integer(i), desc += std::to_string(i) + ",";
      } else if (kind == 1) {
        std::vector<int64_t> shp = rnd(0, 1) ? std::vector<int64_t>{rnd(0, 3)} : std::vector<int64_t>{2, 1};
        if (rnd(0, 4) == 0) shp = {};
        std::vector<int32_t> v(size_t(tgtest::numel_of(shp)));
        for (auto& x : v) x = int32_t(rnd(-n - 1, n));
        ix.tensor(v, shp), desc += "tensor" + std::to_string(shp.size()) + "d,";
      } else {
        auto bound = [&]() -> std::optional<int64_t> {
          if (rnd(0, 3) == 0) return std::nullopt;
          return rnd(-6, 6);
        };
        int64_t step = rnd(1, 3) * (rnd(0, 1) ? 1 : -1);
        auto a = bound(), b = bound();
        ix.slice(a, b, step), desc += "slice,";
      }
    }
    if (rnd(0, 5) == 0 && ix.lib.size() < 3) ix.none(), desc += "None";
    SCOPED_TRACE(testing::Message() << "iter " << iter << " shape " << tgtest::numel_of(s) << " " << desc);
    // Tensor indices that do not broadcast together are an error; the reference cannot say so, so skip them.
    try {
      Tensor r = t[ix.lib];
      expect_ref(r, tgtest::ref_getitem(to_ref(t), ix.ref));
    } catch (const tg::Error& e) {
      EXPECT_NE(std::string(e.what()).find("cannot be broadcast"), std::string::npos) << e.what();
    }
  }
}

TEST(Indexing, KeepsDtypes) {
  Tensor i = Tensor::arange(6).reshape({2, 3});
  Tensor idx(std::vector<int32_t>{2, 0});
  Tensor r = i[{Slice(), idx}];
  EXPECT_EQ(r.dtype(), tg::dtypes::int32);
  EXPECT_EQ(r.tolist<int>(), (std::vector<int>{2, 0, 5, 3}));
  Tensor b = (i > 2)[{Slice(), idx}];
  EXPECT_EQ(b.dtype(), tg::dtypes::bool_);
  EXPECT_EQ(b.tolist<int>(), (std::vector<int>{0, 0, 1, 1}));
  Tensor h = i.cast(tg::dtypes::float16)[{1, idx}];
  EXPECT_EQ(h.dtype(), tg::dtypes::float16);
  EXPECT_EQ(h.tolist<float>(), (std::vector<float>{5, 3}));
  Tensor i8 = Tensor(std::vector<int8_t>{-100, 100, 7})[{Tensor(std::vector<int32_t>{1, 0})}];
  EXPECT_EQ(i8.dtype(), tg::dtypes::int8);
  EXPECT_EQ(i8.tolist<int>(), (std::vector<int>{100, -100}));
  // NaN and inf elsewhere do not leak into the selected values.
  float inf = std::numeric_limits<float>::infinity();
  Tensor f(std::vector<float>{std::nanf(""), 1.5f, inf});
  EXPECT_EQ(f[{Tensor(std::vector<int32_t>{1})}].tolist<float>(), (std::vector<float>{1.5f}));
  EXPECT_EQ(f[{Tensor(std::vector<int32_t>{2})}].tolist<float>(), (std::vector<float>{inf}));
}

TEST(Indexing, IndexErrors) {
  Tensor t = Tensor::zeros({2, 3});
  expect_error([&] { t[{Tensor(std::vector<float>{0.f})}]; }, "dtype");
  expect_error([&] { t[{(t > 0)}]; }, "dtype");
  expect_error([&] { t[{Tensor(std::vector<int32_t>{0}, {}, {.device = "NULL"})}]; }, "device");
}

TEST(Indexing, GatherMatchesTorch) {
  Tensor x = rand_tensor({3, 4, 5}, 6);
  Ref xr = to_ref(x);
  struct Case {
    int64_t dim;
    tg::Shape ishape;
  };
  unsigned seed = 100;
  for (const Case& c : std::vector<Case>{{0, {2, 4, 5}}, {1, {3, 7, 5}}, {2, {3, 4, 2}}, {-1, {1, 2, 3}},
                                         {-3, {5, 1, 1}}, {1, {3, 0, 5}}}) {
    int64_t d = c.dim < 0 ? c.dim + 3 : c.dim, n = x.shape()[size_t(d)];
    Tensor idx = rand_index(c.ishape, seed++, -1, int32_t(n));  // -1 and n are out of range: read 0
    Ref ir = to_ref(idx);
    expect_ref(x.gather(c.dim, idx), Ref::generate(c.ishape, [&](const std::vector<int64_t>& o) {
                 std::vector<int64_t> src = o;
                 int64_t v = int64_t(ir.at(o));
                 if (v < 0 || v >= n) return 0.0;
                 src[size_t(d)] = v;
                 return xr.at(src);
               }));
  }
  Tensor a(std::vector<int32_t>{1, 2, 3, 4}, {2, 2});
  Tensor g = a.gather(1, Tensor(std::vector<int32_t>{0, 0, 1, 0}, {2, 2}));
  EXPECT_EQ(g.dtype(), tg::dtypes::int32);
  EXPECT_EQ(g.tolist<int>(), (std::vector<int>{1, 1, 4, 3}));
  EXPECT_EQ(Tensor(std::vector<int8_t>{5, -6}).gather(0, Tensor(std::vector<int64_t>{1, 1, 0})).tolist<int>(),
            (std::vector<int>{-6, -6, 5}));
  EXPECT_EQ(Tensor(4.0f).gather(0, Tensor(std::vector<int32_t>{0}, {})).item<float>(), 4.0f);
  expect_error([&] { x.gather(0, Tensor(std::vector<int32_t>{0})); }, "gather");
  expect_error([&] { x.gather(0, rand_index({2, 5, 5}, 1, 0, 2)); }, "gather");
  expect_error([&] { x.gather(3, rand_index({2, 4, 5}, 1, 0, 2)); }, "gather");
  expect_error([&] { x.gather(0, rand_tensor({2, 4, 5}, 1)); }, "gather");
}

TEST(Indexing, ScatterReplaceAddMultiply) {
  unsigned seed = 200;
  for (int64_t dim : {0, 1, -1})
    for (const std::string reduce : {"", "add", "multiply"}) {
      tg::Shape s = {3, 4}, is = {2, 3}, ss = {3, 5};
      int64_t d = dim < 0 ? dim + 2 : dim, n = s[size_t(d)];
      Tensor self = rand_tensor(s, seed++), src = rand_tensor(ss, seed++);
      Tensor idx = rand_index(is, seed++, 0, int32_t(n) - 1);  // duplicates likely: last wins / accumulate
      Ref r = to_ref(self), sr = to_ref(src), ir = to_ref(idx);
      Ref::generate(is, [&](const std::vector<int64_t>& p) {  // row-major: the later source wins
        std::vector<int64_t> tgt = p;
        tgt[size_t(d)] = int64_t(ir.at(p));
        auto st = r.strides();
        double& o = r.data[size_t(tgt[0] * st[0] + tgt[1] * st[1])];
        double v = sr.at(p);
        o = reduce == "add" ? o + v : reduce == "multiply" ? o * v : v;
        return 0.0;
      });
      SCOPED_TRACE(testing::Message() << "dim " << dim << " reduce '" << reduce << "'");
      Tensor out = self.scatter(dim, idx, src, reduce);
      ASSERT_EQ(out.shape(), s);
      auto v = out.tolist<double>();
      for (size_t i = 0; i < v.size(); i++) EXPECT_NEAR(v[i], r.data[i], 1e-6) << i;
    }
  // tinygrad's examples.
  Tensor src = Tensor::arange(1, 11, 1).reshape({2, 5});
  Tensor z = Tensor::zeros({3, 5}, {.dtype = tg::dtypes::int32});
  EXPECT_EQ(z.scatter(0, Tensor(std::vector<int32_t>{0, 1, 2, 0}, {1, 4}), src).tolist<int>(),
            (std::vector<int>{1, 0, 0, 4, 0, 0, 2, 0, 0, 0, 0, 0, 3, 0, 0}));
  EXPECT_EQ(z.scatter(1, Tensor(std::vector<int32_t>{0, 1, 2, 0, 1, 4}, {2, 3}), src).tolist<int>(),
            (std::vector<int>{1, 2, 3, 0, 0, 6, 7, 0, 0, 8, 0, 0, 0, 0, 0}));
  Tensor two = Tensor::full({2, 4}, 2.0);
  Tensor i2(std::vector<int32_t>{2, 3}, {2, 1});
  auto mul = two.scatter(1, i2, 1.5, "multiply").tolist<float>();
  EXPECT_EQ(mul, (std::vector<float>{2, 2, 3, 2, 2, 2, 2, 3}));
  auto add = two.scatter(1, i2, 1.5, "add").tolist<float>();
  EXPECT_EQ(add, (std::vector<float>{2, 2, 3.5f, 2, 2, 2, 2, 3.5f}));
  EXPECT_EQ(two.scatter(1, i2, 7.0).tolist<float>(), (std::vector<float>{2, 2, 7, 2, 2, 2, 2, 7}));
  // Duplicates along the dim: replace keeps the last; out-of-range indices write nothing.
  Tensor row = Tensor::zeros({1, 3}, {.dtype = tg::dtypes::int32});
  Tensor dup(std::vector<int32_t>{1, 1, 5, -1}, {1, 4});
  Tensor vals(std::vector<int32_t>{10, 20, 30, 40}, {1, 4});
  EXPECT_EQ(row.scatter(1, dup, vals).tolist<int>(), (std::vector<int>{0, 20, 0}));
  EXPECT_EQ(row.scatter(1, dup, vals, "add").tolist<int>(), (std::vector<int>{0, 30, 0}));
  EXPECT_EQ(row.ones_like().scatter(1, dup, vals, "multiply").tolist<int>(), (std::vector<int>{1, 200, 1}));
  // bool and int8 keep their dtype.
  Tensor b = Tensor::zeros({4}, {.dtype = tg::dtypes::bool_});
  Tensor sb = b.scatter(0, Tensor(std::vector<int32_t>{2}, {1}), true);
  EXPECT_EQ(sb.dtype(), tg::dtypes::bool_);
  EXPECT_EQ(sb.tolist<int>(), (std::vector<int>{0, 0, 1, 0}));
  Tensor i8 = Tensor(std::vector<int8_t>{100, 1});
  Tensor s8 = i8.scatter(0, Tensor(std::vector<int32_t>{0}, {1}), Tensor(std::vector<int8_t>{100}, {1}), "add");
  EXPECT_EQ(s8.dtype(), tg::dtypes::int8);
  EXPECT_EQ(s8.tolist<int>(), (std::vector<int>{-56, 1}));  // wraps as int8 arithmetic does
  EXPECT_EQ(Tensor::zeros({0, 2}).scatter(0, Tensor(std::vector<int32_t>{}, {0, 2}), 1.0).shape(), (tg::Shape{0, 2}));
}

TEST(Indexing, ScatterErrors) {
  Tensor t = Tensor::zeros({3, 4});
  Tensor idx(std::vector<int32_t>{0, 1}, {1, 2});
  expect_error([&] { t.scatter(0, idx, Tensor::ones({1, 2}), "max"); }, "scatter");
  expect_error([&] { t.scatter(0, idx, Tensor::ones({1, 2}, {.dtype = tg::dtypes::int32})); }, "dtype");
  expect_error([&] { t.scatter(0, idx, Tensor::ones({1, 1})); }, "scatter");
  expect_error([&] { t.scatter(0, Tensor(std::vector<int32_t>{0, 1, 2, 3, 0}, {1, 5}), Tensor::ones({1, 5})); },
               "scatter");
  expect_error([&] { t.scatter(0, Tensor(std::vector<int32_t>{0}), Tensor::ones({1})); }, "scatter");
  expect_error([&] { t.scatter(2, idx, 1.0); }, "scatter");
  expect_error([&] { t.scatter(0, idx.cast(tg::dtypes::float32), 1.0); }, "scatter");
}

TEST(Indexing, OneHot) {
  Tensor t(std::vector<int32_t>{0, 1, 3, 3, 4});
  Tensor o = t.one_hot(5);
  EXPECT_EQ(o.shape(), (tg::Shape{5, 5}));
  EXPECT_EQ(o.dtype(), tg::dtypes::int32);
  EXPECT_EQ(o.tolist<int>(),
            (std::vector<int>{1, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 1}));
  EXPECT_EQ(t.one_hot().shape(), (tg::Shape{5, 5}));  // -1: max + 1 classes
  EXPECT_EQ(t.one_hot().tolist<int>(), o.tolist<int>());
  Tensor m = Tensor(std::vector<int64_t>{2, 0, 1, 1}, {2, 2}).one_hot(3);
  EXPECT_EQ(m.shape(), (tg::Shape{2, 2, 3}));
  EXPECT_EQ(m.tolist<int>(), (std::vector<int>{0, 0, 1, 1, 0, 0, 0, 1, 0, 0, 1, 0}));
  // Out of range (negative included) gives an all-zero row.
  EXPECT_EQ(Tensor(std::vector<int8_t>{-1, 2}).one_hot(2).tolist<int>(), (std::vector<int>{0, 0, 0, 0}));
  EXPECT_EQ(Tensor(std::vector<int32_t>{}, {0}).one_hot(3).shape(), (tg::Shape{0, 3}));
  EXPECT_EQ(Tensor(2).one_hot(3).tolist<int>(), (std::vector<int>{0, 0, 1}));
  expect_error([&] { Tensor(std::vector<float>{1.f}).one_hot(2); }, "one_hot");
  expect_error([&] { t.one_hot(-2); }, "one_hot");
  expect_error([&] { Tensor(std::vector<int32_t>{}, {0}).one_hot(); }, "one_hot");
}

TEST(Indexing, MaskedFill) {
  Tensor t = rand_tensor({2, 3}, 7);
  Tensor mask = Tensor(std::vector<int32_t>{1, 0, 1}).cast(tg::dtypes::bool_);
  auto v = t.tolist<float>(), r = t.masked_fill(mask, -9.5).tolist<float>();
  for (size_t i = 0; i < v.size(); i++) EXPECT_EQ(r[i], i % 3 == 1 ? v[i] : -9.5f);
  Tensor i = Tensor::arange(4);
  Tensor mi = i.masked_fill(i > 1, 7);
  EXPECT_EQ(mi.dtype(), tg::dtypes::int32);
  EXPECT_EQ(mi.tolist<int>(), (std::vector<int>{0, 1, 7, 7}));
  float ninf = -std::numeric_limits<float>::infinity();
  EXPECT_EQ(t.masked_fill(t > 2, ninf).tolist<float>(), v);  // nothing above 2
  expect_error([&] { t.masked_fill(Tensor::ones({4}) > 0, 1); }, "masked_fill");
  expect_error([&] { t.masked_fill(Tensor::ones({3}, {.device = "NULL"}) > 0, 1); }, "masked_fill");
}

TEST(Indexing, TrilTriu) {
  for (const tg::Shape& s : std::vector<tg::Shape>{{3, 4}, {4, 3}, {2, 3, 3}, {1, 1}, {0, 2}, {3, 0}}) {
    Tensor t = rand_tensor(s, 8);
    Ref r = to_ref(t);
    size_t rd = s.size() - 2, cd = s.size() - 1;
    for (int64_t diag : {-5, -2, -1, 0, 1, 3, 9}) {
      SCOPED_TRACE(testing::Message() << "diag " << diag);
      expect_ref(t.triu(diag), Ref::generate(s, [&](const std::vector<int64_t>& o) {
                   return o[cd] - o[rd] >= diag ? r.at(o) : 0.0;
                 }));
      expect_ref(t.tril(diag), Ref::generate(s, [&](const std::vector<int64_t>& o) {
                   return o[cd] - o[rd] <= diag ? r.at(o) : 0.0;
                 }));
    }
  }
  Tensor i = Tensor::arange(1, 13, 1).reshape({3, 4});
  EXPECT_EQ(i.triu(1).dtype(), tg::dtypes::int32);
  EXPECT_EQ(i.triu(1).tolist<int>(), (std::vector<int>{0, 2, 3, 4, 0, 0, 7, 8, 0, 0, 0, 12}));
  EXPECT_EQ(i.tril(-1).tolist<int>(), (std::vector<int>{0, 0, 0, 0, 5, 0, 0, 0, 9, 10, 0, 0}));
  Tensor b = (i > 0).tril();
  EXPECT_EQ(b.dtype(), tg::dtypes::bool_);
  EXPECT_EQ(b.tolist<int>(), (std::vector<int>{1, 0, 0, 0, 1, 1, 0, 0, 1, 1, 1, 0}));
  EXPECT_EQ(i.triu(std::numeric_limits<int64_t>::max()).tolist<int>(), std::vector<int>(12, 0));
  EXPECT_EQ(i.tril(std::numeric_limits<int64_t>::max()).tolist<int>(), i.tolist<int>());
  EXPECT_EQ(i.tril(std::numeric_limits<int64_t>::min()).tolist<int>(), std::vector<int>(12, 0));
  expect_error([&] { Tensor::ones({3}).tril(); }, "tril");
  expect_error([&] { Tensor::ones({3}).triu(); }, "triu");
}
