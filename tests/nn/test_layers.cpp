// tg::nn layers and state dicts: output shapes, values against hand computation on small inputs,
// initialization bounds, parameter names, round trips and load errors.
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>

#include "tg/tg.h"

using tg::Shape;
using tg::Tensor;
namespace nn = tg::nn;

namespace {

Tensor floats(std::vector<float> v, Shape s) { return Tensor(std::move(v), std::move(s)); }

std::vector<float> iota(size_t n, float start = 0) {
  std::vector<float> v(n);
  std::iota(v.begin(), v.end(), start);
  return v;
}

void expect_near(const std::vector<float>& got, const std::vector<float>& want, float tol = 1e-5f) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); i++) EXPECT_NEAR(got[i], want[i], tol) << "at " << i;
}

void expect_within(const Tensor& t, double bound) {
  for (float x : t.tolist<float>()) {
    EXPECT_LE(std::abs(x), bound + 1e-6);
  }
}

}  // namespace

// ---- layers ----

TEST(NNLayers, LinearShapeValuesAndInit) {
  nn::Linear l(3, 2);
  EXPECT_EQ(l.weight.shape(), (Shape{2, 3}));
  ASSERT_TRUE(l.bias.has_value());
  EXPECT_EQ(l.bias->shape(), (Shape{2}));
  expect_within(l.weight, 1 / std::sqrt(3.0));
  expect_within(*l.bias, 1 / std::sqrt(3.0));
  EXPECT_EQ(l(Tensor::ones({4, 5, 3})).shape(), (Shape{4, 5, 2}));

  l.weight = floats({1, 2, 3, 4, 5, 6}, {2, 3});
  l.bias = floats({10, 20}, {2});
  // [1, 1, 1] -> [1+2+3+10, 4+5+6+20]; [1, 0, -1] -> [1-3+10, 4-6+20]
  expect_near(l(floats({1, 1, 1, 1, 0, -1}, {2, 3})).tolist<float>(), {16, 35, 8, 18});

  nn::Linear nb(3, 2, false);
  EXPECT_FALSE(nb.bias.has_value());
  EXPECT_THROW(nn::Linear(0, 2), tg::Error);
  EXPECT_THROW(l(Tensor::ones({2, 4})), tg::Error);
}

TEST(NNLayers, Conv2dShapesValuesAndInit) {
  nn::Conv2d c(2, 4, 3);
  EXPECT_EQ(c.weight.shape(), (Shape{4, 2, 3, 3}));
  EXPECT_EQ(c.kernel_size, (std::vector<int64_t>{3, 3}));
  expect_within(c.weight, 1 / std::sqrt(2.0 * 9));
  expect_within(*c.bias, 1 / std::sqrt(2.0 * 9));
  EXPECT_EQ(c(Tensor::ones({1, 2, 5, 6})).shape(), (Shape{1, 4, 3, 4}));
  EXPECT_EQ(nn::Conv2d(2, 4, 3, 1, 1)(Tensor::ones({1, 2, 5, 6})).shape(), (Shape{1, 4, 5, 6}));
  EXPECT_EQ(nn::Conv2d(2, 4, 3, 2)(Tensor::ones({1, 2, 7, 7})).shape(), (Shape{1, 4, 3, 3}));
  EXPECT_EQ(nn::Conv2d(2, 4, {1, 3})(Tensor::ones({1, 2, 5, 6})).shape(), (Shape{1, 4, 5, 4}));
  EXPECT_EQ(nn::Conv2d(4, 4, 3, 1, 0, 1, 2).weight.shape(), (Shape{4, 2, 3, 3}));

  // A 2x2 all-ones kernel sums each 2x2 window; the bias adds 0.5.
  nn::Conv2d s(1, 1, 2);
  s.weight = Tensor::ones({1, 1, 2, 2}).contiguous();
  s.bias = floats({0.5f}, {1});
  // x = [[0 1 2] [3 4 5] [6 7 8]]: windows 0+1+3+4, 1+2+4+5, 3+4+6+7, 4+5+7+8
  expect_near(s(floats(iota(9), {1, 1, 3, 3})).tolist<float>(), {8.5f, 12.5f, 20.5f, 24.5f});

  EXPECT_THROW(nn::Conv2d(3, 4, 3, 1, 0, 1, 2), tg::Error);  // 3 channels in 2 groups
  EXPECT_THROW(c(Tensor::ones({1, 3, 5, 5})), tg::Error);     // 3 channels for a 2-channel conv
}

TEST(NNLayers, Conv1dAndConvTranspose2d) {
  nn::Conv1d c(2, 3, 3);
  EXPECT_EQ(c.weight.shape(), (Shape{3, 2, 3}));
  EXPECT_EQ(c(Tensor::ones({4, 2, 10})).shape(), (Shape{4, 3, 8}));
  EXPECT_EQ(nn::Conv1d(2, 3, 3, 1, 1)(Tensor::ones({4, 2, 10})).shape(), (Shape{4, 3, 10}));

  nn::ConvTranspose2d t(2, 4, 3, 2);
  EXPECT_EQ(t.weight.shape(), (Shape{2, 4, 3, 3}));
  // (H - 1) * stride - 2 * padding + kernel = 2 * 2 + 3
  EXPECT_EQ(t(Tensor::ones({1, 2, 3, 3})).shape(), (Shape{1, 4, 7, 7}));
  // One input pixel spreads the kernel: with a ones kernel and input 2, every output is 2 (+ bias 1).
  nn::ConvTranspose2d u(1, 1, 2);
  u.weight = Tensor::ones({1, 1, 2, 2}).contiguous();
  u.bias = floats({1}, {1});
  expect_near(u(floats({2}, {1, 1, 1, 1})).tolist<float>(), {3, 3, 3, 3});
}

TEST(NNLayers, BatchNormTrainingAndEval) {
  nn::BatchNorm bn(2);
  EXPECT_EQ(bn.running_mean->tolist<float>(), (std::vector<float>{0, 0}));
  EXPECT_EQ(bn.running_var->tolist<float>(), (std::vector<float>{1, 1}));
  // (N=2, C=2, 2): channel 0 holds 0 1 4 5, channel 1 holds 2 3 6 7.
  Tensor x = floats(iota(8), {2, 2, 2});
  {
    nn::TrainingScope train;
    Tensor y = bn(x);
    // channel 0: mean 2.5, biased var (6.25 + 2.25 + 2.25 + 6.25) / 4 = 4.25
    float inv = 1 / std::sqrt(4.25f + 1e-5f);
    // channel 1 (2 3 6 7) has the same spread around 4.5
    expect_near(y.tolist<float>(), {-2.5f * inv, -1.5f * inv, -2.5f * inv, -1.5f * inv, 1.5f * inv, 2.5f * inv,
                                    1.5f * inv, 2.5f * inv}, 1e-4f);
    Tensor::realize_all({*bn.running_mean, *bn.running_var, bn.num_batches_tracked});
  }
  // running = 0.9 * old + 0.1 * batch; the variance unbiased: 4.25 * 4 / 3
  expect_near(bn.running_mean->tolist<float>(), {0.25f, 0.45f});
  float rv = 0.9f + 0.1f * 4.25f * 4 / 3;
  expect_near(bn.running_var->tolist<float>(), {rv, rv});
  EXPECT_EQ(bn.num_batches_tracked.item<int64_t>(), 1);
  EXPECT_EQ(bn.num_batches_tracked.dtype(), tg::dtypes::int64);

  // Eval: (x - running_mean) / sqrt(running_var + eps)
  bool was = Tensor::training;
  Tensor::training = false;
  std::vector<float> y = bn(x).tolist<float>();
  Tensor::training = was;
  EXPECT_NEAR(y[0], (0 - 0.25f) / std::sqrt(rv + 1e-5f), 1e-4f);
  EXPECT_NEAR(y[7], (7 - 0.45f) / std::sqrt(rv + 1e-5f), 1e-4f);

  nn::BatchNorm plain(3, 1e-5, false, false);
  EXPECT_FALSE(plain.weight.has_value());
  EXPECT_FALSE(plain.running_mean.has_value());
  EXPECT_THROW(bn(Tensor::ones({2, 3, 4})), tg::Error);
}

TEST(NNLayers, LayerNormRMSNormGroupNorm) {
  nn::LayerNorm ln(3);
  Tensor x = floats({1, 2, 3, 2, 4, 6}, {2, 3});
  float i1 = 1 / std::sqrt(2.0f / 3 + 1e-5f), i2 = 1 / std::sqrt(8.0f / 3 + 1e-5f);
  expect_near(ln(x).tolist<float>(), {-i1, 0, i1, -2 * i2, 0, 2 * i2}, 1e-4f);
  ln.weight = floats({1, 2, 3}, {3});
  ln.bias = floats({0, 1, 0}, {3});
  expect_near(ln(x).tolist<float>(), {-i1, 1, 3 * i1, -2 * i2, 1, 6 * i2}, 1e-4f);
  // Two normalized dims: all six values of each row together.
  nn::LayerNorm ln2(Shape{2, 3});
  EXPECT_EQ(ln2.weight->shape(), (Shape{2, 3}));
  std::vector<float> y = ln2(floats(iota(12), {2, 2, 3})).tolist<float>();
  float inv = 1 / std::sqrt(35.0f / 12 + 1e-5f);  // variance of 0..5
  EXPECT_NEAR(y[0], -2.5f * inv, 1e-4f);
  EXPECT_NEAR(y[11], 2.5f * inv, 1e-4f);
  EXPECT_THROW(ln(Tensor::ones({2, 4})), tg::Error);

  nn::RMSNorm rms(2);
  // [3, 4]: mean square 12.5
  expect_near(rms(floats({3, 4}, {1, 2})).tolist<float>(), {3 / std::sqrt(12.5f), 4 / std::sqrt(12.5f)}, 1e-4f);

  nn::GroupNorm gn(2, 4);
  // (1, 4, 2): groups {0..3} and {4..7}, each normalized on its own.
  std::vector<float> g = gn(floats(iota(8), {1, 4, 2})).tolist<float>();
  float ig = 1 / std::sqrt(1.25f + 1e-5f);
  expect_near(g, {-1.5f * ig, -0.5f * ig, 0.5f * ig, 1.5f * ig, -1.5f * ig, -0.5f * ig, 0.5f * ig, 1.5f * ig}, 1e-4f);
  EXPECT_THROW(nn::GroupNorm(3, 4), tg::Error);

  nn::InstanceNorm in(2);
  std::vector<float> h = in(floats({1, 3, 10, 30}, {1, 2, 2})).tolist<float>();
  EXPECT_NEAR(h[0], -1, 1e-3f);
  EXPECT_NEAR(h[3], 1, 1e-3f);
}

TEST(NNLayers, EmbeddingLooksUpRows) {
  nn::Embedding e(4, 2);
  EXPECT_EQ(e.weight.shape(), (Shape{4, 2}));
  e.weight = floats({0, 1, 10, 11, 20, 21, 30, 31}, {4, 2});
  Tensor idx(std::vector<int>{1, 0, 3, 3}, {2, 2});
  Tensor y = e(idx);
  EXPECT_EQ(y.shape(), (Shape{2, 2, 2}));
  expect_near(y.tolist<float>(), {10, 11, 0, 1, 30, 31, 30, 31});
  EXPECT_THROW(e(floats({1}, {1})), tg::Error);
  // rows_of: the same rows, copied where the ids say (one kernel, run once per id), in the dtype asked for
  Tensor r = e.rows_of(idx, tg::dtypes::float16);
  EXPECT_EQ(r.shape(), (Shape{2, 2, 2}));
  EXPECT_EQ(r.dtype(), tg::dtypes::float16);
  expect_near(r.cast(tg::dtypes::float32).tolist<float>(), {10, 11, 0, 1, 30, 31, 30, 31});
  EXPECT_EQ(e.rows_of(Tensor(std::vector<int>{}, {0}), tg::dtypes::float32).shape(), (Shape{0, 2}));
  EXPECT_THROW(e.rows_of(floats({1}, {1}), tg::dtypes::float32), tg::Error);
  EXPECT_THROW(e.rows_of(Tensor(std::vector<int>{4}, {1}), tg::dtypes::float32), tg::Error);
}

// ---- parameter discovery and state dicts ----

namespace {
struct Block {
  nn::Linear fc{4, 4};
  nn::LayerNorm norm{4};
  TG_PARAMETERS(fc, norm)
};

struct Net {
  nn::Conv2d c1{1, 2, 3};
  nn::BatchNorm bn{2};
  std::vector<nn::Linear> layers{{8, 4, false}, {4, 2}};
  Block block;
  Tensor scale = Tensor::ones({1}).contiguous();
  TG_PARAMETERS(c1, bn, layers, block, scale)
};
}  // namespace

TEST(NNLayersState, NamesFollowMembersAndNesting) {
  Net net;
  auto sd = nn::get_state_dict(net);
  std::vector<std::string> names;
  for (auto& [k, v] : sd) names.push_back(k);
  EXPECT_EQ(names, (std::vector<std::string>{
                       "block.fc.bias", "block.fc.weight", "block.norm.bias", "block.norm.weight", "bn.bias",
                       "bn.num_batches_tracked", "bn.running_mean", "bn.running_var", "bn.weight", "c1.bias",
                       "c1.weight", "layers.0.weight", "layers.1.bias", "layers.1.weight", "scale"}));
  EXPECT_EQ(sd.at("layers.0.weight").shape(), (Shape{4, 8}));
  // get_parameters: the same tensors, in declaration order.
  std::vector<Tensor> ps = nn::get_parameters(net);
  ASSERT_EQ(ps.size(), names.size());
  EXPECT_EQ(ps[0].shape(), (Shape{2, 1, 3, 3}));   // c1.weight
  EXPECT_EQ(ps.back().shape(), (Shape{1}));        // scale
  EXPECT_EQ(nn::state::get_parameters(net).size(), ps.size());

  std::vector<std::string> visited;
  nn::visit_state(net, [&](const std::string& name, Tensor&) { visited.push_back(name); });
  EXPECT_EQ(visited.front(), "c1.weight");
  EXPECT_EQ(visited[1], "c1.bias");
}

TEST(NNLayersState, RoundTripCopiesValues) {
  Net a, b;
  auto sa = nn::get_state_dict(a);
  std::vector<float> w = sa.at("c1.weight").tolist<float>();
  EXPECT_NE(nn::get_state_dict(b).at("c1.weight").tolist<float>(), w);  // different random init
  std::vector<Tensor> loaded = nn::load_state_dict(b, sa);
  EXPECT_EQ(loaded.size(), sa.size());
  EXPECT_EQ(b.c1.weight.tolist<float>(), w);
  EXPECT_EQ(b.layers[1].bias->tolist<float>(), sa.at("layers.1.bias").tolist<float>());
  // The loaded tensors are b's own (assigned), not a's: changing a afterwards leaves b alone.
  a.c1.weight.assign(Tensor::zeros({2, 1, 3, 3}));
  a.c1.weight.realize();
  EXPECT_EQ(b.c1.weight.tolist<float>(), w);
  // A model's own state dict loads into itself.
  EXPECT_NO_THROW(nn::load_state_dict(b, nn::get_state_dict(b)));
}

TEST(NNLayersState, LoadErrors) {
  Net net;
  auto sd = nn::get_state_dict(net);
  std::vector<float> before = net.c1.weight.tolist<float>();

  auto bad = sd;
  bad.at("c1.weight") = Tensor::ones({2, 1, 2, 2});
  try {
    nn::load_state_dict(net, bad);
    FAIL() << "no error for a shape mismatch";
  } catch (const tg::Error& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("c1.weight"), std::string::npos) << m;
    EXPECT_NE(m.find("(2, 1, 3, 3)"), std::string::npos) << m;
    EXPECT_NE(m.find("(2, 1, 2, 2)"), std::string::npos) << m;
  }
  EXPECT_EQ(net.c1.weight.tolist<float>(), before);  // nothing loaded

  auto missing = sd;
  missing.erase("bn.running_var");
  EXPECT_THROW(nn::load_state_dict(net, missing), tg::Error);
  missing.at("c1.weight") = Tensor::zeros({2, 1, 3, 3});
  EXPECT_NO_THROW(nn::load_state_dict(net, missing, false));  // not strict: the missing one keeps its value
  EXPECT_EQ(net.c1.weight.tolist<float>(), std::vector<float>(18, 0));

  // () and (1,) are interchangeable; another dtype is cast; extra entries are ignored.
  auto other = sd;
  other.at("scale") = Tensor(3.0f);
  other.at("bn.num_batches_tracked") = Tensor(std::vector<int>{7}, {1});
  other.emplace("unused.weight", Tensor::ones({3}));
  nn::load_state_dict(net, other);
  EXPECT_EQ(net.scale.tolist<float>(), (std::vector<float>{3}));
  EXPECT_EQ(net.bn.num_batches_tracked.item<int64_t>(), 7);
  EXPECT_EQ(net.bn.num_batches_tracked.dtype(), tg::dtypes::int64);
}
