// LLaMA and GPT-2 decode speed with random weights, for machines without the model file (the GPU machine): the
// layers of SmolLM2-135M's or TinyLlama-1.1B's shape, the matrices random Q4_1 blocks (as a Q4_1 GGUF keeps them: scale,
// offset and 4-bit quants, dequantized inside the matmuls) or dense weights in the activations' dtype. One decode
// step per token through TinyJit (start_pos and the token bound variables), timed over `steps` tokens after 3
// warm-up ones; prints tok/s, the bytes of weights a token reads, and those bytes times tok/s. gpt2: GPT-2 124M,
// float32 dense (the peer: upstream tinygrad's examples/gpt2.py with JIT).
//
//   build/bench/llm_decode [smollm2|tinyllama|gpt2] [q4_1|dense] [float32|float16] [steps]
#include <tg/gpt2.h>
#include <tg/jit.h>
#include <tg/llama.h>
#include <tg/tg.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

using tg::Tensor;
namespace dtypes = tg::dtypes;

namespace {

tg::nn::LlamaConfig shape_of(const std::string& name) {
  tg::nn::LlamaConfig c;
  if (name == "tinyllama") {
    c.dim = 2048, c.n_layers = 22, c.n_heads = 32, c.n_kv_heads = 4, c.hidden_dim = 5632, c.vocab_size = 32000;
  } else {
    c.dim = 576, c.n_layers = 30, c.n_heads = 9, c.n_kv_heads = 3, c.hidden_dim = 1536, c.vocab_size = 49152;
    c.tied_embeddings = true;
  }
  c.max_context = 512, c.rope_theta = 10000, c.norm_eps = 1e-5;
  return c;
}

// Random Q4_1 parts for an out x in matrix, realized on `device`: scales ~0.01, offsets ~-0.08.
tg::nn::BlockWeight random_q4_1(int64_t out, int64_t in, const std::string& device) {
  const int64_t nb = in / 32;
  Tensor scale = (Tensor::rand({out, nb}, {.device = device}) * 0.02f).cast(dtypes::float16).contiguous();
  Tensor offset = (Tensor::rand({out, nb}, {.device = device}) * -0.16f).cast(dtypes::float16).contiguous();
  Tensor quants = Tensor::randint({out, nb, 16}, 0, 256, {.device = device}).cast(dtypes::uint8).contiguous();
  Tensor::realize_all({scale, offset, quants});
  return tg::nn::BlockWeight("Q4_1", scale, offset, quants);
}

}  // namespace

// Decode steps of `forward(token, start_pos)` through TinyJit: tok/s over `steps` tokens after 3 warm-up ones.
template <class F>
double decode_rate(int64_t vocab, int64_t context, int steps, F forward) {
  tg::Variable pos("start_pos", 0, context - 1), tok("token", 0, vocab - 1);
  tg::TinyJit step([&](const std::vector<Tensor>& in) {
    return std::vector<Tensor>{forward(*in[0].bound_variable(), *in[1].bound_variable()).argmax(-1)};
  });
  int32_t next = 1;
  auto run = [&](int p) { next = step({Tensor(tok.bind(next)), Tensor(pos.bind(p))})[0].tolist<int32_t>().at(0); };
  for (int p = 0; p < 3; p++) run(p);
  const auto t0 = std::chrono::steady_clock::now();
  for (int p = 3; p < 3 + steps; p++) run(p);
  return steps / std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

int gpt2(int steps) {
  tg::nn::GPT2Config c;
  c.max_context = 512;
  tg::nn::GPT2 m(c);
  std::vector<Tensor> weights;
  int64_t bytes = 0;
  for (auto& [name, t] : tg::nn::get_state_dict(m)) {
    weights.push_back(t);
    if (name != "wpe.weight") bytes += t.numel() * 4;
  }
  Tensor::realize_all(weights);
  const double rate = decode_rate(c.vocab_size, c.max_context, steps, [&](const tg::sint& t, const tg::sint& p) {
    return m.forward_token(t, p);
  });
  std::printf("gpt2 dense float on %s: %.1f tok/s (%d tokens), %.1f MB of weights a token, %.0f GB/s of them\n",
              tg::default_device().c_str(), rate, steps, bytes / 1e6, bytes * rate / 1e9);
  return 0;
}

int main(int argc, char** argv) {
  const std::string shape = argc > 1 ? argv[1] : "smollm2", format = argc > 2 ? argv[2] : "q4_1";
  const tg::DType dtype = dtypes::from_name(argc > 3 ? argv[3] : "float16");
  const int steps = argc > 4 ? std::atoi(argv[4]) : 64;
  if (shape == "gpt2") return gpt2(steps);
  const std::string device = tg::default_device();
  tg::nn::Llama m(shape_of(shape), device);
  m.dtype = dtype;
  const tg::nn::LlamaConfig& c = m.config;
  int64_t bytes = 0;
  std::vector<Tensor> weights;
  auto matrix = [&](auto& layer, bool counted = true) {
    const int64_t out = int64_t(layer.weight.shape()[0]), in = int64_t(layer.weight.shape()[1]);
    if (format == "q4_1") {
      layer.use_blocks(random_q4_1(out, in, device));
      if (counted) bytes += layer.blocks->nbytes();
    } else {
      layer.weight = (layer.weight.to(device) * 1.0f).cast(dtype).contiguous();
      weights.push_back(layer.weight);
      if (counted) bytes += out * in * dtype.itemsize();
    }
  };
  // The head reads its whole matrix each token: the tied embedding, or the output projection (then the embedding
  // gives one row a token, not counted).
  matrix(m.tok_embeddings, /*counted=*/!m.output);
  if (m.output) matrix(*m.output);
  for (auto& b : m.layers) {
    for (auto* l : {&b.attention.wq, &b.attention.wk, &b.attention.wv, &b.attention.wo, &b.feed_forward.w1,
                    &b.feed_forward.w2, &b.feed_forward.w3})
      matrix(*l);
    weights.push_back(*b.attention_norm.weight = b.attention_norm.weight->to(device).cast(dtype).contiguous());
    weights.push_back(*b.ffn_norm.weight = b.ffn_norm.weight->to(device).cast(dtype).contiguous());
  }
  weights.push_back(*m.norm.weight = m.norm.weight->to(device).cast(dtype).contiguous());
  Tensor::realize_all(weights);
  if (!std::getenv("NO_FUSE_QKV")) m.fuse_qkv();  // as Llama::from_gguf does

  const double rate = decode_rate(c.vocab_size, c.max_context, steps, [&](const tg::sint& t, const tg::sint& p) {
    return m.forward_token(t, p);
  });
  std::printf("%s %s %s on %s: %.1f tok/s (%d tokens), %.1f MB of weights a token, %.0f GB/s of them\n",
              shape.c_str(), format.c_str(), dtype.name().c_str(), device.c_str(), rate, steps, bytes / 1e6,
              bytes * rate / 1e9);
}
