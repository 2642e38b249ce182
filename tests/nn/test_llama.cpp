// The LLaMA decoder (include/tg/llama.h) against a plain C++ loop implementation of the same model on the host, a
// decode step at a symbolic position (the token a tensor or a bound variable) against the prefill of the same tokens,
// the sampler, and bad configs.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "../common/expect_error.h"
#include "tg/llama.h"
#include "tg/tg.h"

using tg::Tensor;
using tg::nn::Llama;
using tg::nn::LlamaConfig;

namespace {

LlamaConfig tiny(bool tied) {
  LlamaConfig c;
  c.dim = 16, c.n_layers = 2, c.n_heads = 4, c.n_kv_heads = 2, c.hidden_dim = 24, c.vocab_size = 32;
  c.max_context = 16, c.norm_eps = 1e-5, c.rope_theta = 10000.0, c.tied_embeddings = tied;
  return c;
}

using Mat = std::vector<float>;  // row-major

Mat host(const Tensor& t) { return t.cast(tg::dtypes::float32).tolist<float>(); }

// y (n, out) = x (n, in) @ w.T, w (out, in)
Mat matmul_t(const Mat& x, const Mat& w, size_t n, size_t in, size_t out) {
  Mat y(n * out, 0.0f);
  for (size_t i = 0; i < n; i++)
    for (size_t o = 0; o < out; o++) {
      double s = 0;
      for (size_t k = 0; k < in; k++) s += double(x[i * in + k]) * w[o * in + k];
      y[i * out + o] = float(s);
    }
  return y;
}

Mat rms_norm(const Mat& x, const Mat& w, size_t n, size_t d, double eps) {
  Mat y(x.size());
  for (size_t i = 0; i < n; i++) {
    double ss = 0;
    for (size_t k = 0; k < d; k++) ss += double(x[i * d + k]) * x[i * d + k];
    const double r = 1.0 / std::sqrt(ss / double(d) + eps);
    for (size_t k = 0; k < d; k++) y[i * d + k] = float(x[i * d + k] * r * w[k]);
  }
  return y;
}

// Rotates pairs (2i, 2i+1) of each head by position * theta^(-2i/hd).
void rope(Mat& x, size_t n, size_t heads, size_t hd, double theta) {
  for (size_t p = 0; p < n; p++)
    for (size_t h = 0; h < heads; h++)
      for (size_t i = 0; i < hd / 2; i++) {
        const double a = double(p) * std::pow(theta, -2.0 * double(i) / double(hd));
        float& x0 = x[(p * heads + h) * hd + 2 * i];
        float& x1 = x[(p * heads + h) * hd + 2 * i + 1];
        const double r0 = x0 * std::cos(a) - x1 * std::sin(a), r1 = x0 * std::sin(a) + x1 * std::cos(a);
        x0 = float(r0), x1 = float(r1);
      }
}

// The last position's logits of `tokens` through the model's weights, with loops.
Mat reference_logits(Llama& m, const std::vector<int32_t>& tokens) {
  const LlamaConfig& c = m.config;
  const size_t n = tokens.size(), d = size_t(c.dim), hd = size_t(c.head_dim()), H = size_t(c.n_heads);
  const size_t KV = size_t(c.n_kv_heads), F = size_t(c.hidden_dim), V = size_t(c.vocab_size);
  const Mat emb = host(m.tok_embeddings.weight);
  Mat h(n * d);
  for (size_t i = 0; i < n; i++)
    for (size_t k = 0; k < d; k++) h[i * d + k] = emb[size_t(tokens[i]) * d + k];
  for (auto& layer : m.layers) {
    Mat x = rms_norm(h, host(*layer.attention_norm.weight), n, d, c.norm_eps);
    Mat q = matmul_t(x, host(layer.attention.wq.weight), n, d, H * hd);
    Mat k = matmul_t(x, host(layer.attention.wk.weight), n, d, KV * hd);
    Mat v = matmul_t(x, host(layer.attention.wv.weight), n, d, KV * hd);
    rope(q, n, H, hd, c.rope_theta);
    rope(k, n, KV, hd, c.rope_theta);
    Mat att(n * H * hd, 0.0f);
    for (size_t hh = 0; hh < H; hh++) {
      const size_t kvh = hh / (H / KV);
      for (size_t i = 0; i < n; i++) {
        std::vector<double> s(i + 1);
        double mx = -1e300, sum = 0;
        for (size_t j = 0; j <= i; j++) {
          double dot = 0;
          for (size_t e = 0; e < hd; e++) dot += double(q[(i * H + hh) * hd + e]) * k[(j * KV + kvh) * hd + e];
          s[j] = dot / std::sqrt(double(hd));
          mx = std::max(mx, s[j]);
        }
        for (double& e : s) sum += e = std::exp(e - mx);
        for (size_t j = 0; j <= i; j++)
          for (size_t e = 0; e < hd; e++) att[(i * H + hh) * hd + e] += float(s[j] / sum * v[(j * KV + kvh) * hd + e]);
      }
    }
    Mat o = matmul_t(att, host(layer.attention.wo.weight), n, H * hd, d);
    for (size_t i = 0; i < h.size(); i++) h[i] += o[i];
    x = rms_norm(h, host(*layer.ffn_norm.weight), n, d, c.norm_eps);
    Mat g = matmul_t(x, host(layer.feed_forward.w1.weight), n, d, F);
    Mat u = matmul_t(x, host(layer.feed_forward.w3.weight), n, d, F);
    for (size_t i = 0; i < g.size(); i++) g[i] = float(g[i] / (1 + std::exp(-double(g[i]))) * u[i]);
    Mat down = matmul_t(g, host(layer.feed_forward.w2.weight), n, F, d);
    for (size_t i = 0; i < h.size(); i++) h[i] += down[i];
  }
  Mat last(h.end() - ptrdiff_t(d), h.end());
  last = rms_norm(last, host(*m.norm.weight), 1, d, c.norm_eps);
  return matmul_t(last, host(m.output ? m.output->weight : m.tok_embeddings.weight), 1, d, V);
}

void expect_close(const Mat& got, const Mat& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); i++)
    EXPECT_NEAR(got[i], want[i], 2e-4 * (1 + std::abs(want[i]))) << what << " [" << i << "]";
}

}  // namespace

TEST(Llama, MatchesALoopImplementation) {
  for (bool tied : {false, true}) {
    Tensor::manual_seed(3);
    Llama m(tiny(tied));
    const std::vector<int32_t> tokens = {3, 17, 5, 30, 0, 9};
    Mat got = host(m.forward(Tensor(tokens, {1, int64_t(tokens.size())}), 0));
    expect_close(got, reference_logits(m, tokens), tied ? "tied head" : "own head");
  }
}

// Prefill of n tokens, then one token at a time at a symbolic position: the logits the prefill of all of them
// gives, and the same kernels at every position.
TEST(Llama, DecodeStepsAtASymbolicPositionMatchThePrefill) {
  Tensor::manual_seed(4);
  Llama whole(tiny(false));
  Llama stepped = whole;  // the same weights, its own KV cache (made at its first forward)
  for (auto& l : stepped.layers) l.attention.cache_kv.reset();
  for (auto& l : whole.layers) l.attention.cache_kv.reset();
  const std::vector<int32_t> tokens = {1, 2, 3, 4, 5, 6};
  tg::Variable pos("start_pos", 1, 15), tok("token", 0, 31);
  stepped.forward(Tensor(std::vector<int32_t>(tokens.begin(), tokens.begin() + 3), {1, 3}), 0).realize();
  for (size_t p = 3; p < tokens.size(); p++) {
    // (odd positions: the token as a bound variable, one row of the embedding)
    Mat step = p % 2 ? host(stepped.forward_token(tok.bind(tokens[p]), pos.bind(int64_t(p))))
                     : host(stepped.forward(Tensor(std::vector<int32_t>{tokens[p]}, {1, 1}), pos.bind(int64_t(p))));
    for (auto& l : whole.layers) l.attention.cache_kv.reset();
    Mat full = host(whole.forward(
        Tensor(std::vector<int32_t>(tokens.begin(), tokens.begin() + ptrdiff_t(p) + 1), {1, int64_t(p) + 1}), 0));
    expect_close(step, full, "position " + std::to_string(p));
  }
}

TEST(Llama, RefusesPositionsPastTheCacheAndBadTokens) {
  Llama m(tiny(false));
  tgtest::expect_error([&] { m.forward(Tensor(std::vector<int32_t>(17, 1), {1, 17}), 0); }, "outside the KV cache");
  tgtest::expect_error([&] { m.forward(Tensor(std::vector<float>{1, 2}, {1, 2}), 0); }, "integer dtype");
  tgtest::expect_error([&] { m.forward(Tensor(std::vector<int32_t>{1}, {1, 1}), 16); }, "outside the KV cache");
  tgtest::expect_error([&] { m.forward_token(32, 0); }, "outside the vocabulary");
  tgtest::expect_error([&] { m.forward(Tensor(std::vector<int32_t>{1, 32}, {1, 2}), 0); }, "id 32 at 1 outside");
  tgtest::expect_error([&] { m.forward(Tensor(std::vector<int32_t>{-1, 3}, {1, 2}), 0); }, "id -1 at 0 outside");
  tgtest::expect_error([&] { m.forward_token(tg::Variable("t", 0, 40).bind(3), 0); }, "outside the vocabulary");
}

TEST(Llama, ConfigFromGgufChecksItsKeys) {
  tg::nn::state::GGUFFile f;
  auto put = [&](const std::string& k, tg::nn::state::GGUFValue::Type t, auto v) {
    tg::nn::state::GGUFValue x;
    x.type = t;
    x.value = v;
    f.kv[k] = x;
  };
  using T = tg::nn::state::GGUFValue::Type;
  put("general.architecture", T::String, std::string("gpt2"));
  tgtest::expect_error([&] { LlamaConfig::from_gguf(f); }, "architecture is \"gpt2\"");
  put("general.architecture", T::String, std::string("llama"));
  tgtest::expect_error([&] { LlamaConfig::from_gguf(f); }, "llama.embedding_length");
  put("llama.embedding_length", T::UInt32, int64_t(16));
  put("llama.block_count", T::UInt32, int64_t(2));
  put("llama.attention.head_count", T::UInt32, int64_t(3));
  put("llama.feed_forward_length", T::UInt32, int64_t(24));
  put("llama.attention.layer_norm_rms_epsilon", T::Float32, 1e-5);
  put("llama.context_length", T::UInt32, int64_t(64));
  f.tensors.emplace("token_embd.weight", Tensor::zeros({32, 16}));
  tgtest::expect_error([&] { LlamaConfig::from_gguf(f); }, "inconsistent");  // 16 is not a multiple of 3 heads
  put("llama.attention.head_count", T::UInt32, int64_t(4));
  const LlamaConfig c = LlamaConfig::from_gguf(f);
  EXPECT_EQ(c.vocab_size, 32);
  EXPECT_TRUE(c.tied_embeddings);
  EXPECT_EQ(c.max_context, 64);
}

TEST(Llama, SamplerIsGreedyAtZeroAndKeepsToTopKAndTopP) {
  std::mt19937_64 rng(1);
  const std::vector<float> logits = {0.1f, 3.0f, 2.9f, -1.0f, 2.0f};
  EXPECT_EQ(tg::nn::sample_token(logits, {}, rng), 1);
  for (int i = 0; i < 200; i++) {
    const int32_t t = tg::nn::sample_token(logits, {.temperature = 1.0, .top_k = 2}, rng);
    EXPECT_TRUE(t == 1 || t == 2) << t;
    EXPECT_EQ(tg::nn::sample_token(logits, {.temperature = 1.0, .top_p = 0.3}, rng), 1);
  }
  tgtest::expect_error([&] { tg::nn::sample_token({}, {}, rng); }, "no logits");
}

// q, k and v in one matmul (fuse_qkv): the same logits, fewer kernels, and the separate matmuls again once a weight
// is replaced.
TEST(Llama, FusedQkvMatchesAndStepsAsideWhenAWeightIsReplaced) {
  Tensor::manual_seed(8);
  Llama m(tiny(true));
  std::vector<Tensor> weights;
  for (auto& [name, t] : tg::nn::get_state_dict(m)) weights.push_back(t);
  Tensor::realize_all(weights);
  const std::vector<int32_t> tokens = {4, 9, 31, 2};
  auto run = [&] {
    for (auto& l : m.layers) l.attention.cache_kv.reset();
    const int64_t before = tg::GlobalCounters::kernel_count;
    Mat got = host(m.forward(Tensor(tokens, {1, 4}), 0));
    return std::make_pair(got, tg::GlobalCounters::kernel_count - before);
  };
  const auto [plain, plain_kernels] = run();
  m.fuse_qkv();
  ASSERT_TRUE(m.layers[0].attention.wqkv);
  const auto [fused, fused_kernels] = run();
  expect_close(fused, reference_logits(m, tokens), "fused");
  expect_close(fused, plain, "fused against plain");
  EXPECT_LT(fused_kernels, plain_kernels);
  m.layers[1].attention.wk.weight = (m.layers[1].attention.wk.weight * 2.0f).contiguous().realize();
  const auto [replaced, replaced_kernels] = run();
  expect_close(replaced, reference_logits(m, tokens), "wk replaced");
  EXPECT_GT(replaced_kernels, fused_kernels);
}
