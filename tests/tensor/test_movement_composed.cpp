// squeeze/unsqueeze/flatten/unflatten, repeat, cat/stack, split/chunk, pad modes and roll, against brute-force
// references (one output element at a time) with random inputs, edge shapes, negative dims and several dtypes.
#include <gtest/gtest.h>

#include "../common/tensor_ref.h"
#include "tg/tg.h"

using tg::Tensor;
using tgtest::expect_ref;
using tgtest::rand_tensor;
using tgtest::to_ref;
using tgtest::Ref;

namespace {

template <class F>
void expect_error(F&& f, const std::string& op) {
  try {
    f();
    ADD_FAILURE() << "expected tg::Error from " << op;
  } catch (const tg::Error& e) {
    EXPECT_NE(std::string(e.what()).find(op), std::string::npos) << e.what();
  }
}

// numpy's pad for one index: where output position i (i in [-before, n + after)) reads from, or -1 (constant).
int64_t pad_source(const std::string& mode, int64_t i, int64_t n) {
  if (i >= 0 && i < n) return i;
  if (mode == "reflect") return i < 0 ? -i : 2 * (n - 1) - i;
  if (mode == "replicate") return i < 0 ? 0 : n - 1;
  if (mode == "circular") return ((i % n) + n) % n;
  return -1;
}

Ref ref_pad(const Ref& x, const tg::PadArg& p, const std::string& mode, double value) {
  std::vector<int64_t> out;
  for (size_t d = 0; d < x.shape.size(); d++) out.push_back(x.shape[d] + p[d].first + p[d].second);
  return Ref::generate(out, [&](const std::vector<int64_t>& o) {
    std::vector<int64_t> src;
    for (size_t d = 0; d < o.size(); d++) {
      int64_t s = pad_source(mode, o[d] - p[d].first, x.shape[d]);
      if (s < 0) return value;
      src.push_back(s);
    }
    return x.at(src);
  });
}

Ref ref_cat(const std::vector<Ref>& xs, size_t dim) {
  std::vector<int64_t> out = xs[0].shape;
  out[dim] = 0;
  for (auto& x : xs) out[dim] += x.shape[dim];
  return Ref::generate(out, [&](const std::vector<int64_t>& o) {
    std::vector<int64_t> src = o;
    for (auto& x : xs) {
      if (src[dim] < x.shape[dim]) return x.at(src);
      src[dim] -= x.shape[dim];
    }
    return -1.0;
  });
}

}  // namespace

TEST(MovementExtra, SqueezeAndUnsqueeze) {
  Tensor t = rand_tensor({2, 1, 3, 1}, 1);
  EXPECT_EQ(t.squeeze().shape(), (tg::Shape{2, 3}));
  EXPECT_EQ(t.squeeze(1).shape(), (tg::Shape{2, 3, 1}));
  EXPECT_EQ(t.squeeze(-1).shape(), (tg::Shape{2, 1, 3}));
  EXPECT_EQ(t.squeeze(0).shape(), (tg::Shape{2, 1, 3, 1}));  // not size 1: unchanged, as torch
  EXPECT_EQ(t.squeeze().tolist<float>(), t.tolist<float>());
  EXPECT_EQ(Tensor::ones({1, 1}).squeeze().shape(), tg::Shape{});
  EXPECT_EQ(Tensor(3.0f).squeeze(0).shape(), tg::Shape{});
  EXPECT_EQ(Tensor(3.0f).unsqueeze(0).shape(), (tg::Shape{1}));
  EXPECT_EQ(Tensor(3.0f).unsqueeze(-1).shape(), (tg::Shape{1}));
  Tensor u = rand_tensor({2, 3}, 2);
  EXPECT_EQ(u.unsqueeze(0).shape(), (tg::Shape{1, 2, 3}));
  EXPECT_EQ(u.unsqueeze(2).shape(), (tg::Shape{2, 3, 1}));
  EXPECT_EQ(u.unsqueeze(-1).shape(), (tg::Shape{2, 3, 1}));
  EXPECT_EQ(u.unsqueeze(-3).shape(), (tg::Shape{1, 2, 3}));
  EXPECT_EQ(u.unsqueeze(-2).shape(), (tg::Shape{2, 1, 3}));
  EXPECT_EQ(u.unsqueeze(1).tolist<float>(), u.tolist<float>());
  EXPECT_EQ(Tensor::zeros({0, 1}).squeeze().shape(), (tg::Shape{0}));
  expect_error([&] { u.unsqueeze(3); }, "unsqueeze");
  expect_error([&] { u.unsqueeze(-4); }, "unsqueeze");
  expect_error([&] { u.squeeze(2); }, "squeeze");
  expect_error([&] { u.squeeze(-3); }, "squeeze");
}

TEST(MovementExtra, FlattenRangeAndUnflatten) {
  Tensor t = rand_tensor({2, 3, 4, 5}, 3);
  EXPECT_EQ(t.flatten(1, 2).shape(), (tg::Shape{2, 12, 5}));
  EXPECT_EQ(t.flatten(-2, -1).shape(), (tg::Shape{2, 3, 20}));
  EXPECT_EQ(t.flatten(0, -1).shape(), (tg::Shape{120}));
  EXPECT_EQ(t.flatten(2, 2).shape(), (tg::Shape{2, 3, 4, 5}));
  EXPECT_EQ(t.flatten(1, 2).tolist<float>(), t.tolist<float>());
  EXPECT_EQ(Tensor(1.0f).flatten(0, -1).shape(), (tg::Shape{1}));
  EXPECT_EQ(Tensor::zeros({2, 0, 3}).flatten(1, 2).shape(), (tg::Shape{2, 0}));
  expect_error([&] { t.flatten(2, 1); }, "flatten");
  expect_error([&] { t.flatten(0, 4); }, "flatten");

  Tensor u = rand_tensor({3, 4, 1}, 4);
  EXPECT_EQ(u.unflatten(1, {2, 2}).shape(), (tg::Shape{3, 2, 2, 1}));
  EXPECT_EQ(u.unflatten(1, {-1, 2}).shape(), (tg::Shape{3, 2, 2, 1}));
  EXPECT_EQ(u.unflatten(-3, {3, 1}).shape(), (tg::Shape{3, 1, 4, 1}));
  EXPECT_EQ(Tensor::ones({5, 12, 3}).unflatten(-2, {2, 2, 3, 1, 1}).shape(), (tg::Shape{5, 2, 2, 3, 1, 1, 3}));
  EXPECT_EQ(u.unflatten(1, {2, 2}).tolist<float>(), u.tolist<float>());
  EXPECT_EQ(Tensor::zeros({2, 0}).unflatten(1, {0, 5}).shape(), (tg::Shape{2, 0, 5}));
  expect_error([&] { u.unflatten(1, {3, 2}); }, "unflatten");
  expect_error([&] { u.unflatten(1, {-1, -1}); }, "unflatten");
  expect_error([&] { u.unflatten(1, {}); }, "unflatten");
  expect_error([&] { u.unflatten(3, {1}); }, "unflatten");
  expect_error([&] { Tensor(1.0f).unflatten(0, {1}); }, "unflatten");
}

TEST(MovementExtra, RepeatMatchesTiling) {
  // (a pair, not structured bindings: the lambda below captures the shape, which clang accepts from 16 on)
  for (const auto& shape_reps : std::vector<std::pair<tg::Shape, tg::Shape>>{
           {{2, 3}, {2, 1, 3}}, {{3}, {4, 2}}, {{2, 3}, {1, 1}}, {{1, 2}, {3, 0}}, {{}, {2, 3}}, {{0, 2}, {2, 2}}}) {
    const tg::Shape &shape = shape_reps.first, &reps = shape_reps.second;
    Tensor t = rand_tensor(shape, 5);
    Ref x = to_ref(t);
    size_t lead = reps.size() - shape.size();
    std::vector<int64_t> out;
    for (size_t i = 0; i < reps.size(); i++) out.push_back(reps[i] * (i < lead ? 1 : shape[i - lead].value()));
    Ref r = Ref::generate(out, [&](const std::vector<int64_t>& o) {
      std::vector<int64_t> src;
      for (size_t i = lead; i < o.size(); i++) src.push_back(o[i] % shape[i - lead]);
      return x.at(src);
    });
    expect_ref(t.repeat(reps), r);
  }
  Tensor i(std::vector<int32_t>{1, 2, 3});
  EXPECT_EQ(i.repeat({2}).tolist<int>(), (std::vector<int>{1, 2, 3, 1, 2, 3}));
  EXPECT_EQ(i.repeat({2}).dtype(), tg::dtypes::int32);
  expect_error([&] { rand_tensor({2, 3}, 1).repeat({2}); }, "repeat");
  expect_error([&] { i.repeat({-1}); }, "repeat");
}

TEST(MovementExtra, CatMatchesReference) {
  struct Case {
    std::vector<tg::Shape> shapes;
    int64_t dim;
  };
  std::vector<Case> cases = {{{{2, 3}, {4, 3}}, 0},       {{{2, 3}, {2, 1}, {2, 5}}, 1}, {{{2, 3}, {2, 2}}, -1},
                             {{{3, 2, 2}, {3, 1, 2}}, -2}, {{{2, 0}, {2, 3}, {2, 0}}, 1}, {{{1}, {1}, {1}, {1}}, 0},
                             {{{2, 2}, {2, 2}}, 0}};
  unsigned seed = 10;
  for (const Case& c : cases) {
    std::vector<Tensor> ts;
    std::vector<Ref> rs;
    for (const auto& s : c.shapes) {
      ts.push_back(rand_tensor(s, seed++));
      rs.push_back(to_ref(ts.back()));
    }
    size_t d = size_t(c.dim < 0 ? c.dim + int64_t(c.shapes[0].size()) : c.dim);
    expect_ref(Tensor::cat(ts, c.dim), ref_cat(rs, d));
  }
  Tensor a = rand_tensor({3}, 1);
  EXPECT_EQ(Tensor::cat({a}).tolist<float>(), a.tolist<float>());
  EXPECT_EQ(Tensor::cat({Tensor::zeros({0, 2}), Tensor::zeros({0, 2})}).shape(), (tg::Shape{0, 2}));
}

TEST(MovementExtra, CatIsOneFusedKernel) {
  Tensor a = rand_tensor({4, 3}, 1), b = rand_tensor({2, 3}, 2), c = rand_tensor({5, 3}, 3);
  Tensor::realize_all({a, b, c});
  int64_t before = tg::GlobalCounters::kernel_count;
  Tensor r = Tensor::cat({a, b, c}, 0);
  r.realize();
  EXPECT_EQ(tg::GlobalCounters::kernel_count - before, 1);
  expect_ref(r, ref_cat({to_ref(a), to_ref(b), to_ref(c)}, 0));
}

TEST(MovementExtra, CatPromotesDtypes) {
  Tensor i(std::vector<int32_t>{1, 2}), f(std::vector<float>{0.5f}, {1});
  Tensor b = Tensor(std::vector<int32_t>{1, 0}).cast(tg::dtypes::bool_);
  Tensor r = Tensor::cat({i, f});
  EXPECT_EQ(r.dtype(), tg::dtypes::float32);
  EXPECT_EQ(r.tolist<float>(), (std::vector<float>{1, 2, 0.5f}));
  Tensor ib = Tensor::cat({b, i});
  EXPECT_EQ(ib.dtype(), tg::dtypes::int32);
  EXPECT_EQ(ib.tolist<int>(), (std::vector<int>{1, 0, 1, 2}));
  Tensor bb = Tensor::cat({b, b});
  EXPECT_EQ(bb.dtype(), tg::dtypes::bool_);
  EXPECT_EQ(bb.tolist<int>(), (std::vector<int>{1, 0, 1, 0}));
  Tensor h = Tensor::cat({f.cast(tg::dtypes::float16), f.cast(tg::dtypes::float16)});
  EXPECT_EQ(h.dtype(), tg::dtypes::float16);
  EXPECT_EQ(h.tolist<float>(), (std::vector<float>{0.5f, 0.5f}));
  Tensor i8(std::vector<int8_t>{-3, 4});
  EXPECT_EQ(Tensor::cat({i8, i8}).dtype(), tg::dtypes::int8);
  EXPECT_EQ(Tensor::cat({i8, i8}).tolist<int>(), (std::vector<int>{-3, 4, -3, 4}));
}

TEST(MovementExtra, CatAndStackErrors) {
  Tensor a = Tensor::zeros({2, 3}), b = Tensor::zeros({3, 3});
  expect_error([&] { Tensor::cat({}); }, "cat");
  expect_error([&] { Tensor::cat({a, b}, 1); }, "cat");
  expect_error([&] { Tensor::cat({a, Tensor::zeros({2, 3, 1})}); }, "cat");
  expect_error([&] { Tensor::cat({a, a}, 2); }, "cat");
  expect_error([&] { Tensor::cat({Tensor(1.0f), Tensor(2.0f)}); }, "cat");
  expect_error([&] { Tensor::cat({a, Tensor::zeros({2, 3}, {.device = "NULL"})}); }, "cat");
  expect_error([&] { Tensor::stack({}); }, "stack");
  expect_error([&] { Tensor::stack({a, b}); }, "stack");
  expect_error([&] { Tensor::stack({a, a}, 3); }, "stack");
  expect_error([&] { Tensor::stack({a, a}, -4); }, "stack");
}

TEST(MovementExtra, StackMatchesReference) {
  for (int64_t dim : {0, 1, 2, -1, -2, -3}) {
    std::vector<Tensor> ts = {rand_tensor({2, 3}, 1), rand_tensor({2, 3}, 2), rand_tensor({2, 3}, 3)};
    Tensor r = Tensor::stack(ts, dim);
    size_t d = size_t(dim < 0 ? dim + 3 : dim);
    std::vector<int64_t> out = {2, 3};
    out.insert(out.begin() + int64_t(d), 3);
    std::vector<Ref> rs;
    for (auto& t : ts) rs.push_back(to_ref(t));
    expect_ref(r, Ref::generate(out, [&](const std::vector<int64_t>& o) {
                 std::vector<int64_t> src = o;
                 src.erase(src.begin() + int64_t(d));
                 return rs[size_t(o[d])].at(src);
               }));
  }
  Tensor s = Tensor::stack({Tensor(1), Tensor(2), Tensor(3)});
  EXPECT_EQ(s.shape(), (tg::Shape{3}));
  EXPECT_EQ(s.tolist<int>(), (std::vector<int>{1, 2, 3}));
  Tensor e = Tensor::stack({Tensor::zeros({0}), Tensor::zeros({0})}, 1);
  EXPECT_EQ(e.shape(), (tg::Shape{0, 2}));
  Tensor m = Tensor::stack({Tensor(std::vector<int32_t>{1, 2}), Tensor(std::vector<float>{0.5f, 1.5f})});
  EXPECT_EQ(m.dtype(), tg::dtypes::float32);
  EXPECT_EQ(m.tolist<float>(), (std::vector<float>{1, 2, 0.5f, 1.5f}));
}

TEST(MovementExtra, SplitAndChunk) {
  Tensor t = Tensor::arange(10).reshape({5, 2});
  auto parts = t.split(2);
  ASSERT_EQ(parts.size(), 3u);
  EXPECT_EQ(parts[0].tolist<int>(), (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(parts[2].shape(), (tg::Shape{1, 2}));
  EXPECT_EQ(parts[2].tolist<int>(), (std::vector<int>{8, 9}));
  auto byl = t.split(std::vector<int64_t>{1, 0, 4});
  ASSERT_EQ(byl.size(), 3u);
  EXPECT_EQ(byl[1].shape(), (tg::Shape{0, 2}));
  EXPECT_EQ(byl[2].tolist<int>(), (std::vector<int>{2, 3, 4, 5, 6, 7, 8, 9}));
  auto cols = t.split(1, -1);
  ASSERT_EQ(cols.size(), 2u);
  EXPECT_EQ(cols[1].tolist<int>(), (std::vector<int>{1, 3, 5, 7, 9}));
  EXPECT_EQ(t.split(7).size(), 1u);
  auto empty = Tensor::zeros({0, 3}).split(2);
  ASSERT_EQ(empty.size(), 1u);
  EXPECT_EQ(empty[0].shape(), (tg::Shape{0, 3}));
  expect_error([&] { t.split(0); }, "split");
  expect_error([&] { t.split(std::vector<int64_t>{1, 2}); }, "split");
  expect_error([&] { t.split(std::vector<int64_t>{6, -1}); }, "split");
  expect_error([&] { t.split(1, 2); }, "split");

  auto sizes = [](const std::vector<Tensor>& ps) {
    std::vector<int64_t> s;
    for (auto& p : ps) s.push_back(p.shape()[0]);
    return s;
  };
  EXPECT_EQ(sizes(Tensor::arange(11).chunk(6)), (std::vector<int64_t>{2, 2, 2, 2, 2, 1}));
  EXPECT_EQ(sizes(Tensor::arange(12).chunk(6)), (std::vector<int64_t>{2, 2, 2, 2, 2, 2}));
  EXPECT_EQ(sizes(Tensor::arange(13).chunk(6)), (std::vector<int64_t>{3, 3, 3, 3, 1}));
  EXPECT_EQ(sizes(Tensor::zeros({0}).chunk(3)), (std::vector<int64_t>{0, 0, 0}));
  auto ch = Tensor::arange(13).chunk(6);
  EXPECT_EQ(ch[4].tolist<int>(), (std::vector<int>{12}));
  auto ch2 = t.chunk(2, 1);
  EXPECT_EQ(ch2[0].tolist<int>(), (std::vector<int>{0, 2, 4, 6, 8}));
  expect_error([&] { t.chunk(0); }, "chunk");
  expect_error([&] { t.chunk(2, -3); }, "chunk");
}

TEST(MovementExtra, PadModesMatchNumpy) {
  std::vector<tg::PadArg> pads = {{{1, 2}, {2, 1}}, {{0, 0}, {3, 3}}, {{2, 0}, {0, 1}}, {{-1, 2}, {1, -2}},
                                  {{0, -2}, {-1, 0}}};
  unsigned seed = 20;
  for (const std::string mode : {"constant", "reflect", "replicate"}) {
    for (const auto& p : pads) {
      Tensor t = rand_tensor({4, 5}, seed++);
      SCOPED_TRACE(mode);
      expect_ref(t.pad(p, mode), ref_pad(to_ref(t), p, mode, 0));
    }
  }
  Tensor t3 = rand_tensor({2, 3, 4}, 30);
  expect_ref(t3.pad({{1, 1}, {2, 1}, {3, 2}}, "reflect"), ref_pad(to_ref(t3), {{1, 1}, {2, 1}, {3, 2}}, "reflect", 0));
  expect_ref(t3.pad({{1, 1}, {2, 1}, {3, 2}}, "replicate"),
             ref_pad(to_ref(t3), {{1, 1}, {2, 1}, {3, 2}}, "replicate", 0));
  // Circular: non-negative pads wrap the tensor (at most once around).
  for (const tg::PadArg& p : std::vector<tg::PadArg>{{{1, 2}, {2, 1}}, {{4, 4}, {5, 0}}, {{0, 3}, {0, 0}}}) {
    Tensor t = rand_tensor({4, 5}, seed++);
    expect_ref(t.pad(p, "circular"), ref_pad(to_ref(t), p, "circular", 0));
  }
}

TEST(MovementExtra, PadCircularNegativeCutsFirst) {
  // As tinygrad: a negative pad cuts first, and what wraps around is the cut tensor.
  Tensor t = Tensor::arange(5);
  EXPECT_EQ(t.pad({{-1, 2}}, "circular").tolist<int>(), (std::vector<int>{1, 2, 3, 4, 1, 2}));
  EXPECT_EQ(t.pad({{2, -2}}, "circular").tolist<int>(), (std::vector<int>{1, 2, 0, 1, 2}));
}

TEST(MovementExtra, PadConstantValueAndDtypes) {
  Tensor t(std::vector<float>{1, 2, 3, 4}, {2, 2});
  expect_ref(t.pad({{1, 0}, {0, 2}}, "constant", -1.5), ref_pad(to_ref(t), {{1, 0}, {0, 2}}, "constant", -1.5));
  expect_ref(t.pad({{-1, 1}, {1, -1}}, "constant", 7), ref_pad(to_ref(t), {{-1, 1}, {1, -1}}, "constant", 7));
  Tensor i(std::vector<int32_t>{1, 2, 3});
  Tensor pi = i.pad({{1, 1}}, "constant", 9);
  EXPECT_EQ(pi.dtype(), tg::dtypes::int32);
  EXPECT_EQ(pi.tolist<int>(), (std::vector<int>{9, 1, 2, 3, 9}));
  Tensor pf = i.pad({{1, 0}}, "constant", 0.5);  // a float fill promotes an int tensor, as tinygrad's where
  EXPECT_EQ(pf.dtype(), tg::dtypes::float32);
  EXPECT_EQ(pf.tolist<float>(), (std::vector<float>{0.5f, 1, 2, 3}));
  EXPECT_EQ(i.pad({{2, 1}}, "reflect").tolist<int>(), (std::vector<int>{3, 2, 1, 2, 3, 2}));
  EXPECT_EQ(i.pad({{2, 1}}, "replicate").tolist<int>(), (std::vector<int>{1, 1, 1, 2, 3, 3}));
  Tensor b = Tensor(std::vector<int32_t>{1, 0}).cast(tg::dtypes::bool_);
  EXPECT_EQ(b.pad({{1, 1}}, "reflect").dtype(), tg::dtypes::bool_);
  EXPECT_EQ(b.pad({{1, 1}}, "reflect").tolist<int>(), (std::vector<int>{0, 1, 0, 1}));
  EXPECT_EQ(b.pad({{1, 1}}, "constant", true).dtype(), tg::dtypes::bool_);
  EXPECT_EQ(b.pad({{1, 1}}, "constant", true).tolist<int>(), (std::vector<int>{1, 1, 0, 1}));
  Tensor h = t.cast(tg::dtypes::float16).pad({{0, 0}, {1, 1}}, "replicate");
  EXPECT_EQ(h.dtype(), tg::dtypes::float16);
  EXPECT_EQ(h.tolist<float>(), (std::vector<float>{1, 1, 2, 2, 3, 3, 4, 4}));
  Tensor inf = t.pad({{0, 0}, {1, 0}}, "constant", -std::numeric_limits<double>::infinity());
  EXPECT_EQ(inf.tolist<float>()[0], -std::numeric_limits<float>::infinity());
  EXPECT_EQ(Tensor::zeros({0, 2}).pad({{1, 1}, {0, 0}}, "constant", 3).tolist<float>(),
            (std::vector<float>{3, 3, 3, 3}));
}

TEST(MovementExtra, PadErrors) {
  Tensor t = Tensor::zeros({3, 4});
  expect_error([&] { t.pad({{1, 1}}, "constant"); }, "pad");
  expect_error([&] { t.pad({{0, 0}, {1, 1}}, "wrap"); }, "pad");
  expect_error([&] { t.pad({{3, 0}, {0, 0}}, "reflect"); }, "pad");
  expect_error([&] { t.pad({{0, 0}, {0, 4}}, "reflect"); }, "pad");
  expect_error([&] { t.pad({{4, 0}, {0, 0}}, "circular"); }, "pad");
  expect_error([&] { t.pad({{-2, -2}, {0, 0}}, "constant"); }, "pad");
  expect_error([&] { Tensor::zeros({0, 2}).pad({{1, 0}, {0, 0}}, "replicate"); }, "pad");
}

TEST(MovementExtra, RollMatchesReference) {
  Tensor t = rand_tensor({3, 4}, 40);
  Ref x = to_ref(t);
  for (auto [shifts, dims] : std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>>{
           {{1}, {0}}, {{-1}, {1}}, {{5}, {-1}}, {{2, -3}, {0, 1}}, {{0}, {1}}, {{1, 1}, {1, 1}}, {{-7}, {0}}}) {
    std::vector<int64_t> total(2, 0);
    for (size_t i = 0; i < dims.size(); i++) total[size_t(dims[i] < 0 ? dims[i] + 2 : dims[i])] += shifts[i];
    expect_ref(t.roll(shifts, dims), Ref::generate({3, 4}, [&](const std::vector<int64_t>& o) {
                 std::vector<int64_t> src = o;
                 for (size_t d = 0; d < 2; d++) src[d] = (((o[d] - total[d]) % x.shape[d]) + x.shape[d]) % x.shape[d];
                 return x.at(src);
               }));
  }
  EXPECT_EQ(Tensor::arange(4).roll(1, 0).tolist<int>(), (std::vector<int>{3, 0, 1, 2}));
  EXPECT_EQ(Tensor::arange(4).roll(-1, 0).tolist<int>(), (std::vector<int>{1, 2, 3, 0}));
  // No dims: the flattened tensor rolls.
  EXPECT_EQ(Tensor::arange(6).reshape({2, 3}).roll(std::vector<int64_t>{1}, {}).tolist<int>(),
            (std::vector<int>{5, 0, 1, 2, 3, 4}));
  EXPECT_EQ(Tensor::zeros({0, 3}).roll(2, 0).shape(), (tg::Shape{0, 3}));
  expect_error([&] { t.roll({1, 2}, {0}); }, "roll");
  expect_error([&] { t.roll(1, 2); }, "roll");
  expect_error([&] { t.roll(std::vector<int64_t>{1, 2}, {}); }, "roll");
}
