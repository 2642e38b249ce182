#pragma once
// A LLaMA-family decoder, as tinygrad's extra/models/llama.py: RMSNorm, rotary position embeddings, grouped-query
// attention over a KV cache that is written in place, a SwiGLU feed-forward, and an output head that may share the
// token embedding. Weights come from a GGUF file (llama.cpp's tensor names, its rotary layout) or any state dict
// with the names below (load_state_dict).
//
//   auto model = tg::nn::Llama::from_gguf("SmolLM2-135M-Instruct.Q4_1.gguf", "CPU");
//   tg::Tensor logits = model.forward(tokens, 0);            // prefill: tokens (1, T) int32 at positions 0..T-1
//   logits = model.forward(next, start_pos.bind(T));         // a decode step: (1, 1) at position T, one kernel set
//                                                            // for every position (a symbolic start_pos)
// forward returns the float32 logits of the last position, (batch, vocab). Positions must stay below the KV
// cache's length (max_context); the cache holds one sequence batch and is made at the first forward.
#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "tg/nn.h"
#include "tg/state.h"
#include "tg/variable.h"

namespace tg::nn {

struct LlamaConfig {
  int64_t dim = 0, n_layers = 0, n_heads = 0, n_kv_heads = 0, hidden_dim = 0, vocab_size = 0;
  int64_t max_context = 0;  // positions the KV cache holds
  double norm_eps = 1e-5, rope_theta = 10000.0;
  bool tied_embeddings = false;  // the output head is the token embedding
  int64_t head_dim() const { return dim / n_heads; }
  // From a GGUF's llama.* keys (a missing or inconsistent one is a tg::Error naming it); max_context 0: the file's
  // context length, at most 4096.
  static LlamaConfig from_gguf(const state::GGUFFile& f, int64_t max_context = 0);
};

struct LlamaAttention {
  Linear wq, wk, wv, wo;
  int64_t n_heads, n_kv_heads, head_dim, max_context;
  std::optional<Tensor> cache_kv;  // (2, batch, max_context, n_kv_heads, head_dim), realized at the first call
  // wq, wk and wv packed into one realized matrix (fuse_qkv; dense or all in the same blocks, no biases): their
  // weights become views of it, and while they still are, one matmul computes q, k and v (a kernel, not three).
  std::optional<Linear> wqkv;
  std::vector<Tensor> qkv_views;
  explicit LlamaAttention(const LlamaConfig& c);
  void fuse_qkv();
  bool qkv_fused() const;  // wqkv made and the three weights still its views
  // x (batch, T, dim) at positions start_pos .. start_pos + T - 1; freqs (T, head_dim / 2, 2) their cos and sin.
  Tensor operator()(const Tensor& x, const sint& start_pos, const Tensor& freqs, const std::optional<Tensor>& mask);
  TG_PARAMETERS(wq, wk, wv, wo)
};

struct LlamaFeedForward {
  Linear w1, w2, w3;  // gate, down, up: w2(silu(w1(x)) * w3(x))
  explicit LlamaFeedForward(const LlamaConfig& c);
  Tensor operator()(const Tensor& x) const;
  TG_PARAMETERS(w1, w2, w3)
};

struct LlamaBlock {
  LlamaAttention attention;
  LlamaFeedForward feed_forward;
  RMSNorm attention_norm, ffn_norm;
  explicit LlamaBlock(const LlamaConfig& c);
  TG_PARAMETERS(attention, feed_forward, attention_norm, ffn_norm)
};

class Llama {
 public:
  LlamaConfig config;
  Embedding tok_embeddings;
  std::vector<LlamaBlock> layers;
  RMSNorm norm;
  std::optional<Linear> output;  // absent when tied_embeddings
  Tensor freqs_cis;              // (max_context, head_dim / 2, 2): cos and sin of every position's rotation
  std::optional<DType> dtype;    // the activations' (and the KV cache's) dtype; unset: the embedding's
  TG_PARAMETERS(tok_embeddings, layers, norm, output)

  explicit Llama(const LlamaConfig& c, const std::string& device = "");
  // tokens (batch, T) of an integer dtype, the first at position start_pos (an int, or a bound variable for one
  // compiled step at every position): the logits of the last position, (batch, vocab), float32. More than one token
  // is read on the host (an id outside the vocabulary is a tg::Error) and embedded row by row.
  Tensor forward(const Tensor& tokens, const sint& start_pos);
  // One token (a number, or a bound variable: tinygrad's decode step) at start_pos, batch 1: its embedding is one
  // row of the table, read where the token says.
  Tensor forward_token(const sint& token, const sint& start_pos);
  // The model of a GGUF file (general.architecture "llama") on `device`, computing in `dtype`. With keep_blocks its
  // Q4_0, Q4_1 and Q8_0 matrices stay in their blocks, dequantized inside the matmuls (tg/block_weight.h); other
  // types, and all without it, are dequantized to `dtype` at load. Unset: blocks on the CPU only (on GPUs the
  // blocked reduce is not tuned yet: SmolLM2's shape decoded at 30 tok/s against 476 dense on an H200).
  static Llama from_gguf(const std::string& path, const std::string& device = "", int64_t max_context = 0,
                         DType dtype = dtypes::float32, std::optional<bool> keep_blocks = std::nullopt);
  void fuse_qkv();  // every layer's LlamaAttention::fuse_qkv (from_gguf does it)

 private:
  Tensor run_layers(Tensor h, const sint& start_pos);  // embedded tokens (batch, T, dim) -> last logits
};

// Next-token choice from one row of logits, as llama.cpp's samplers: temperature 0 takes the largest (greedy);
// otherwise the top_k largest (0: all), then the smallest set whose probabilities reach top_p (1: all), sampled
// at that temperature.
struct SamplerConfig {
  double temperature = 0.0;
  int64_t top_k = 0;
  double top_p = 1.0;
};
int32_t sample_token(const std::vector<float>& logits, const SamplerConfig& cfg, std::mt19937_64& rng);

}  // namespace tg::nn
