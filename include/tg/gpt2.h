#pragma once
// GPT-2, as tinygrad's examples/gpt2.py: learned token and position embeddings, pre-LayerNorm blocks of causal
// multi-head attention (one c_attn projection for q, k and v) over a KV cache written in place and a GELU MLP, a
// final LayerNorm and a head tied to the token embedding. Weights from Hugging Face's model.safetensors (its Conv1D
// matrices are (in, out): transposed at load) or random (GPT2's constructor).
//
//   auto model = tg::nn::GPT2::from_safetensors("gpt2/model.safetensors", "CUDA");
//   tg::Tensor logits = model.forward(tokens, 0);        // prefill: tokens (1, T) int32 at positions 0..T-1
//   logits = model.forward_token(next, start_pos.bind(T));  // a decode step, one kernel set for every position
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tg/nn.h"
#include "tg/variable.h"

namespace tg::nn {

struct GPT2Config {
  int64_t vocab_size = 50257, max_context = 1024, dim = 768, n_layers = 12, n_heads = 12;
  double norm_eps = 1e-5;
  int64_t head_dim() const { return dim / n_heads; }
};

struct GPT2Attention {
  Linear c_attn, c_proj;  // (3 dim, dim): q, k, v; (dim, dim)
  int64_t n_heads, head_dim, max_context;
  std::optional<Tensor> cache_kv;  // (2, batch, max_context, n_heads, head_dim), made at the first call
  explicit GPT2Attention(const GPT2Config& c);
  Tensor operator()(const Tensor& x, const sint& start_pos, const std::optional<Tensor>& mask);
  TG_PARAMETERS(c_attn, c_proj)
};

struct GPT2MLP {
  Linear c_fc, c_proj;  // (4 dim, dim), (dim, 4 dim): c_proj(gelu(c_fc(x)))
  explicit GPT2MLP(const GPT2Config& c);
  Tensor operator()(const Tensor& x) const;
  TG_PARAMETERS(c_fc, c_proj)
};

struct GPT2Block {
  LayerNorm ln_1, ln_2;
  GPT2Attention attn;
  GPT2MLP mlp;
  explicit GPT2Block(const GPT2Config& c);
  TG_PARAMETERS(ln_1, attn, ln_2, mlp)
};

class GPT2 {
 public:
  GPT2Config config;
  Embedding wte, wpe;
  std::vector<GPT2Block> h;
  LayerNorm ln_f;
  TG_PARAMETERS(wte, wpe, h, ln_f)  // Hugging Face's names (without "transformer."); the head is wte

  explicit GPT2(const GPT2Config& c = {});
  // tokens (batch, T) of an integer dtype at positions start_pos .. start_pos + T - 1 (an int, or a bound
  // variable): the float32 logits of the last position, (batch, vocab).
  Tensor forward(const Tensor& tokens, const sint& start_pos);
  // One token (a number or a bound variable) at start_pos, batch 1: its embedding and its position's are one row
  // each, read where the token and the position say (tinygrad's jitted decode step).
  Tensor forward_token(const sint& token, const sint& start_pos);
  // Hugging Face's GPT-2 model.safetensors (names with or without "transformer."; the attn.bias masks are not
  // weights and are skipped). max_context 0: the file's n_positions (wpe's rows).
  static GPT2 from_safetensors(const std::string& path, const std::string& device = "", int64_t max_context = 0);

 private:
  Tensor run_blocks(Tensor x, const sint& start_pos);
};

}  // namespace tg::nn
