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

Llama Llama::from_gguf(const std::string& path, const std::string& device_name, int64_t max_context, DType dtype,
                       std::optional<bool> keep_blocks_opt) {
  const std::string device = device_name.empty() ? default_device() : device_name;
  const bool keep_blocks = keep_blocks_opt.value_or(device.rfind("CPU", 0) == 0);
  state::GGUFFile f = state::gguf_load(path, device);
  Llama m(LlamaConfig::from_gguf(f, max_context), device);
  m.dtype = dtype;
  const LlamaConfig& c = m.config;
  const int64_t hd = c.head_dim();
  std::vector<Tensor> weights;
  auto load = [&](Tensor& into, const std::string& name, const Shape& shape) {
    into = take(f.tensors, name, shape, dtype, device);
    weights.push_back(into);
  };
  // A Q4_0, Q4_1 or Q8_0 matrix stays in its blocks on the device (compacted from the file's interleaved ones);
  // the layer dequantizes it inside its matmul.
  auto load_matrix = [&](auto& layer, const std::string& name, const Shape& shape) {
    auto it = f.blocks.find(name);
    if (!keep_blocks || it == f.blocks.end()) return load(layer.weight, name, shape);
    if (!(Shape{it->second.out_features(), it->second.in_features()} == shape))
      throw Error("Llama::from_gguf: " + name + " is " + std::to_string(it->second.out_features()) + "x" +
                  std::to_string(it->second.in_features()) + ", the model expects " + shape[0].str() + "x" +
                  shape[1].str());
    BlockWeight b = it->second.to(device);
    layer.use_blocks(b);
    for (const Tensor& p : b.parts()) weights.push_back(p);
  };
  load_matrix(m.tok_embeddings, "token_embd.weight", {c.vocab_size, c.dim});
  load(*m.norm.weight, "output_norm.weight", {c.dim});
  if (m.output) load_matrix(*m.output, "output.weight", {c.vocab_size, c.dim});
  for (int64_t i = 0; i < c.n_layers; i++) {
    const std::string p = "blk." + std::to_string(i) + ".";
    LlamaBlock& b = m.layers[size_t(i)];
    load_matrix(b.attention.wq, p + "attn_q.weight", {c.n_heads * hd, c.dim});
    load_matrix(b.attention.wk, p + "attn_k.weight", {c.n_kv_heads * hd, c.dim});
    load_matrix(b.attention.wv, p + "attn_v.weight", {c.n_kv_heads * hd, c.dim});
    load_matrix(b.attention.wo, p + "attn_output.weight", {c.dim, c.n_heads * hd});
    load(*b.attention_norm.weight, p + "attn_norm.weight", {c.dim});
    load(*b.ffn_norm.weight, p + "ffn_norm.weight", {c.dim});
    load_matrix(b.feed_forward.w1, p + "ffn_gate.weight", {c.hidden_dim, c.dim});
    load_matrix(b.feed_forward.w2, p + "ffn_down.weight", {c.dim, c.hidden_dim});
    load_matrix(b.feed_forward.w3, p + "ffn_up.weight", {c.hidden_dim, c.dim});
  }
  // Realized once, here (the file's bytes are read now): the blocks, and the other weights in `dtype`.
  Tensor::realize_all(weights);
  m.fuse_qkv();
  return m;
}

}  // namespace tg::nn
