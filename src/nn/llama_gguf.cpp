// Llama::from_gguf: llama.cpp's tensor names onto the model's (include/tg/llama.h).
#include <map>

#include "tg/error.h"
#include "tg/llama.h"

namespace tg::nn {
namespace {

// The file's tensor `name`, checked against the shape the model expects (GGUF shapes are tinygrad's: reversed
// ggml dims, so a linear weight is (out, in) as the model's).
Tensor take(std::map<std::string, Tensor>& tensors, const std::string& name, const Shape& want, DType dtype,
            const std::string& device) {
  auto it = tensors.find(name);
  if (it == tensors.end()) throw Error("Llama::from_gguf: the file has no tensor " + name);
  Tensor t = it->second;
  if (!(t.shape() == want))
    throw Error("Llama::from_gguf: " + name + " has shape " + t.repr() + ", the model expects " +
                Tensor::zeros(want).repr());
  return t.cast(dtype).to(device).contiguous();
}

}  // namespace

Llama Llama::from_gguf(const std::string& path, const std::string& device_name, int64_t max_context, DType dtype) {
  const std::string device = device_name.empty() ? default_device() : device_name;
  state::GGUFFile f = state::gguf_load(path, device);
  Llama m(LlamaConfig::from_gguf(f, max_context), device);
  const LlamaConfig& c = m.config;
  const int64_t hd = c.head_dim();
  std::vector<Tensor> weights;
  auto load = [&](Tensor& into, const std::string& name, const Shape& shape) {
    into = take(f.tensors, name, shape, dtype, device);
    weights.push_back(into);
  };
  load(m.tok_embeddings.weight, "token_embd.weight", {c.vocab_size, c.dim});
  load(*m.norm.weight, "output_norm.weight", {c.dim});
  if (m.output) load(m.output->weight, "output.weight", {c.vocab_size, c.dim});
  for (int64_t i = 0; i < c.n_layers; i++) {
    const std::string p = "blk." + std::to_string(i) + ".";
    LlamaBlock& b = m.layers[size_t(i)];
    load(b.attention.wq.weight, p + "attn_q.weight", {c.n_heads * hd, c.dim});
    load(b.attention.wk.weight, p + "attn_k.weight", {c.n_kv_heads * hd, c.dim});
    load(b.attention.wv.weight, p + "attn_v.weight", {c.n_kv_heads * hd, c.dim});
    load(b.attention.wo.weight, p + "attn_output.weight", {c.dim, c.n_heads * hd});
    load(*b.attention_norm.weight, p + "attn_norm.weight", {c.dim});
    load(*b.ffn_norm.weight, p + "ffn_norm.weight", {c.dim});
    load(b.feed_forward.w1.weight, p + "ffn_gate.weight", {c.hidden_dim, c.dim});
    load(b.feed_forward.w2.weight, p + "ffn_down.weight", {c.dim, c.hidden_dim});
    load(b.feed_forward.w3.weight, p + "ffn_up.weight", {c.hidden_dim, c.dim});
  }
  // Dequantized once, here (the file's bytes are read now); RMSNorm weights and the embedding stay in `dtype` too.
  Tensor::realize_all(weights);
  return m;
}

}  // namespace tg::nn
