// GPT-2 (include/tg/gpt2.h) against loops on the host over the same weights; decode steps at a symbolic position
// against the prefill; a Hugging Face-layout safetensors file (Conv1D matrices (in, out), "transformer." names,
// attn.bias masks) loaded back to the same logits; bad inputs named.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "../common/expect_error.h"
#include "tg/gpt2.h"
#include "tg/state.h"
#include "tg/tg.h"

using tg::Tensor;
using tg::nn::GPT2;
using tg::nn::GPT2Config;

namespace {

GPT2Config tiny() {
  GPT2Config c;
  c.vocab_size = 40, c.max_context = 16, c.dim = 16, c.n_layers = 2, c.n_heads = 4;
  return c;
}

using Mat = std::vector<float>;
Mat host(const Tensor& t) { return t.cast(tg::dtypes::float32).tolist<float>(); }

// y (n, out) = x (n, in) @ w.T + b
Mat linear(const Mat& x, const Mat& w, const Mat& b, size_t n, size_t in, size_t out) {
  Mat y(n * out);
  for (size_t i = 0; i < n; i++)
    for (size_t o = 0; o < out; o++) {
      double s = b.empty() ? 0 : b[o];
      for (size_t k = 0; k < in; k++) s += double(x[i * in + k]) * w[o * in + k];
      y[i * out + o] = float(s);
    }
  return y;
}

Mat layer_norm(const Mat& x, const Mat& w, const Mat& b, size_t n, size_t d, double eps) {
  Mat y(x.size());
  for (size_t i = 0; i < n; i++) {
    double mean = 0, var = 0;
    for (size_t k = 0; k < d; k++) mean += x[i * d + k];
    mean /= double(d);
    for (size_t k = 0; k < d; k++) var += (x[i * d + k] - mean) * (x[i * d + k] - mean);
    const double r = 1 / std::sqrt(var / double(d) + eps);
    for (size_t k = 0; k < d; k++) y[i * d + k] = float((x[i * d + k] - mean) * r * w[k] + b[k]);
  }
  return y;
}

Mat reference_logits(GPT2& m, const std::vector<int32_t>& tokens) {
  const GPT2Config& c = m.config;
  const size_t n = tokens.size(), d = size_t(c.dim), H = size_t(c.n_heads), hd = size_t(c.head_dim());
  const Mat wte = host(m.wte.weight), wpe = host(m.wpe.weight);
  Mat x(n * d);
  for (size_t i = 0; i < n; i++)
    for (size_t k = 0; k < d; k++) x[i * d + k] = wte[size_t(tokens[i]) * d + k] + wpe[i * d + k];
  for (auto& b : m.h) {
    Mat a = layer_norm(x, host(*b.ln_1.weight), host(*b.ln_1.bias), n, d, c.norm_eps);
    Mat qkv = linear(a, host(b.attn.c_attn.weight), host(*b.attn.c_attn.bias), n, d, 3 * d);
    Mat att(n * d, 0.0f);
    for (size_t h = 0; h < H; h++)
      for (size_t i = 0; i < n; i++) {
        std::vector<double> s(i + 1);
        double mx = -1e300, sum = 0;
        for (size_t j = 0; j <= i; j++) {
          double dot = 0;
          for (size_t e = 0; e < hd; e++) dot += double(qkv[i * 3 * d + h * hd + e]) * qkv[j * 3 * d + d + h * hd + e];
          mx = std::max(mx, s[j] = dot / std::sqrt(double(hd)));
        }
        for (double& e : s) sum += e = std::exp(e - mx);
        for (size_t j = 0; j <= i; j++)
          for (size_t e = 0; e < hd; e++) att[i * d + h * hd + e] += float(s[j] / sum * qkv[j * 3 * d + 2 * d + h * hd + e]);
      }
    Mat o = linear(att, host(b.attn.c_proj.weight), host(*b.attn.c_proj.bias), n, d, d);
    for (size_t i = 0; i < x.size(); i++) x[i] += o[i];
    a = layer_norm(x, host(*b.ln_2.weight), host(*b.ln_2.bias), n, d, c.norm_eps);
    Mat f = linear(a, host(b.mlp.c_fc.weight), host(*b.mlp.c_fc.bias), n, d, 4 * d);
    for (float& v : f)  // GELU, tanh approximation (GPT-2's gelu_new, tinygrad's gelu)
      v = float(0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * double(v) * v * v))));
    o = linear(f, host(b.mlp.c_proj.weight), host(*b.mlp.c_proj.bias), n, 4 * d, d);
    for (size_t i = 0; i < x.size(); i++) x[i] += o[i];
  }
  Mat last(x.end() - ptrdiff_t(d), x.end());
  last = layer_norm(last, host(*m.ln_f.weight), host(*m.ln_f.bias), 1, d, c.norm_eps);
  return linear(last, wte, {}, 1, d, size_t(c.vocab_size));
}

void expect_close(const Mat& got, const Mat& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); i++)
    EXPECT_NEAR(got[i], want[i], 2e-4 * (1 + std::abs(want[i]))) << what << " [" << i << "]";
}

// Random biases and LayerNorm weights too (the constructor's are 0 and 1).
void randomize(GPT2& m) {
  for (auto& b : m.h)
    for (auto* t : {&*b.ln_1.weight, &*b.ln_1.bias, &*b.ln_2.weight, &*b.ln_2.bias, &*b.attn.c_attn.bias,
                    &*b.attn.c_proj.bias, &*b.mlp.c_fc.bias, &*b.mlp.c_proj.bias})
      *t = (Tensor::rand(t->shape()) - 0.5f).realize();
  *m.ln_f.bias = (Tensor::rand(m.ln_f.bias->shape()) - 0.5f).realize();
}

}  // namespace

TEST(GPT2, MatchesALoopImplementation) {
  Tensor::manual_seed(5);
  GPT2 m(tiny());
  randomize(m);
  const std::vector<int32_t> tokens = {3, 17, 5, 39, 0, 9};
  expect_close(host(m.forward(Tensor(tokens, {1, 6}), 0)), reference_logits(m, tokens), "prefill");
}

TEST(GPT2, DecodeStepsAtASymbolicPositionMatchThePrefill) {
  Tensor::manual_seed(6);
  GPT2 stepped(tiny());
  randomize(stepped);
  const std::vector<int32_t> tokens = {1, 2, 3, 4, 5, 6};
  tg::Variable pos("start_pos", 0, 15), tok("token", 0, 39);
  stepped.forward(Tensor(std::vector<int32_t>(tokens.begin(), tokens.begin() + 3), {1, 3}), 0).realize();
  for (size_t p = 3; p < tokens.size(); p++) {
    Mat step = host(stepped.forward_token(tok.bind(tokens[p]), pos.bind(int64_t(p))));
    GPT2 whole = stepped;
    for (auto& b : whole.h) b.attn.cache_kv.reset();
    std::vector<int32_t> prefix(tokens.begin(), tokens.begin() + ptrdiff_t(p) + 1);
    expect_close(step, reference_logits(whole, prefix), "position " + std::to_string(p));
  }
}

TEST(GPT2, LoadsHuggingFaceSafetensors) {
  Tensor::manual_seed(7);
  GPT2 m(tiny());
  randomize(m);
  std::map<std::string, Tensor> sd;
  for (auto& [name, t] : tg::nn::get_state_dict(m)) {
    const bool conv1d = name.find(".weight") != std::string::npos && name.find("ln_") == std::string::npos &&
                        name.rfind("h.", 0) == 0;
    sd.insert_or_assign("transformer." + name, conv1d ? t.transpose().contiguous() : t);
  }
  sd.insert_or_assign("transformer.h.0.attn.bias", Tensor::ones({1, 1, 16, 16}));  // a causal mask, not a weight
  const std::string path = testing::TempDir() + "gpt2_tiny.safetensors";
  tg::nn::state::safe_save(sd, path);
  GPT2 loaded = GPT2::from_safetensors(path, "", 8);
  EXPECT_EQ(loaded.config.n_layers, 2);
  EXPECT_EQ(loaded.config.max_context, 8);
  EXPECT_EQ(loaded.config.n_heads, 1);  // (16 wide: fewer than one 64-wide head; a real GPT-2 has dim / 64)
  loaded.config.n_heads = m.config.n_heads;
  for (auto& b : loaded.h) b.attn.n_heads = 4, b.attn.head_dim = 4;
  const std::vector<int32_t> tokens = {7, 1, 38};
  expect_close(host(loaded.forward(Tensor(tokens, {1, 3}), 0)), reference_logits(m, tokens), "loaded");
  sd.erase("transformer.h.1.mlp.c_fc.bias");
  tg::nn::state::safe_save(sd, path);
  tgtest::expect_error([&] { GPT2::from_safetensors(path); }, "has no tensor h.1.mlp.c_fc.bias");
}

TEST(GPT2, RefusesBadTokensAndPositions) {
  GPT2 m(tiny());
  tgtest::expect_error([&] { m.forward(Tensor(std::vector<int32_t>(17, 1), {1, 17}), 0); }, "outside the context");
  tgtest::expect_error([&] { m.forward(Tensor(std::vector<float>{1, 2}, {1, 2}), 0); }, "integer dtype");
  tgtest::expect_error([&] { m.forward_token(40, 0); }, "outside the vocabulary");
  tgtest::expect_error([&] { m.forward_token(1, 16); }, "outside the context");
  GPT2Config bad = tiny();
  bad.n_heads = 3;
  tgtest::expect_error([&] { GPT2 g(bad); }, "inconsistent sizes");
}
