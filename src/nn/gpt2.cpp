// GPT-2: include/tg/gpt2.h.
#include "tg/gpt2.h"

#include <cmath>
#include <limits>

#include "tg/error.h"
#include "tg/state.h"

namespace tg::nn {

GPT2Attention::GPT2Attention(const GPT2Config& c)
    : c_attn(c.dim, 3 * c.dim), c_proj(c.dim, c.dim), n_heads(c.n_heads), head_dim(c.head_dim()),
      max_context(c.max_context) {}

Tensor GPT2Attention::operator()(const Tensor& x, const sint& start_pos, const std::optional<Tensor>& mask) {
  const sint B = x.shape()[0], T = x.shape()[1];
  const int64_t dim = n_heads * head_dim;
  Tensor qkv = c_attn(x).reshape({B, T, 3, n_heads, head_dim});
  auto part = [&](int64_t i) {
    return qkv.shrink({{0, B}, {0, T}, {i, i + 1}, {0, n_heads}, {0, head_dim}}).reshape({B, T, n_heads, head_dim});
  };
  if (!cache_kv)  // (uninitialized: a step reads only the positions written before it)
    cache_kv = Tensor::empty({2, B, max_context, n_heads, head_dim}, {.dtype = x.dtype(), .device = x.device()})
                   .realize();
  const sint end = start_pos + T;
  cache_kv->shrink({{0, 2}, {0, B}, {start_pos, end}, {0, n_heads}, {0, head_dim}})
      .assign(Tensor::stack({part(1), part(2)}).cast(cache_kv->dtype()))
      .realize();
  auto cached = [&](int64_t which) {  // (B, H, S, hd)
    return cache_kv->shrink({{which, which + 1}, {0, B}, {0, end}, {0, n_heads}, {0, head_dim}})
        .reshape({B, end, n_heads, head_dim})
        .permute({0, 2, 1, 3});
  };
  Tensor q = part(0).permute({0, 2, 1, 3});  // (B, H, T, hd)
  Tensor scores = q.matmul(cached(0).transpose(2, 3)) * float(1.0 / std::sqrt(double(head_dim)));
  if (mask) scores = scores + *mask;
  Tensor attn = scores.cast(dtypes::float32).softmax(-1).cast(x.dtype()).matmul(cached(1));  // (B, H, T, hd)
  return c_proj(attn.permute({0, 2, 1, 3}).reshape({B, T, dim}));
}

GPT2MLP::GPT2MLP(const GPT2Config& c) : c_fc(c.dim, 4 * c.dim), c_proj(4 * c.dim, c.dim) {}

Tensor GPT2MLP::operator()(const Tensor& x) const { return c_proj(c_fc(x).gelu()); }

GPT2Block::GPT2Block(const GPT2Config& c)
    : ln_1(c.dim, c.norm_eps), ln_2(c.dim, c.norm_eps), attn(c), mlp(c) {}

GPT2::GPT2(const GPT2Config& c)
    : config(c), wte(c.vocab_size, c.dim), wpe(c.max_context, c.dim), ln_f(c.dim, c.norm_eps) {
  if (c.dim <= 0 || c.n_heads <= 0 || c.dim % c.n_heads != 0 || c.n_layers <= 0 || c.vocab_size <= 0 ||
      c.max_context <= 0)
    throw Error("GPT2: inconsistent sizes: dim " + std::to_string(c.dim) + ", heads " + std::to_string(c.n_heads) +
                ", layers " + std::to_string(c.n_layers) + ", vocab " + std::to_string(c.vocab_size) + ", context " +
                std::to_string(c.max_context));
  h.reserve(size_t(c.n_layers));
  for (int64_t i = 0; i < c.n_layers; i++) h.emplace_back(c);
}

Tensor GPT2::forward(const Tensor& tokens, const sint& start_pos) {
  if (tokens.ndim() != 2 || !tokens.dtype().is_int())
    throw Error("GPT2: tokens must be (batch, T) of an integer dtype, got " + tokens.repr());
  const sint T = tokens.shape()[1];
  if (!(T.is_int() && int64_t(T) >= 1) || start_pos.vmin() < 0 || (start_pos + T).vmax() > config.max_context)
    throw Error("GPT2: positions " + start_pos.str() + " .. " + (start_pos + T).str() + " outside the context of " +
                std::to_string(config.max_context));
  Tensor pos = wpe.weight.shrink({{start_pos, start_pos + T}, {0, config.dim}}).reshape({1, T, config.dim});
  // (more than one token: the rows read where the ids say; one: operator()'s compare-and-sum, no host sync)
  Tensor emb = tokens.numel() > 1 ? wte.rows_of(tokens, wte.weight.dtype()) : wte(tokens);
  return run_blocks(emb + pos, start_pos);
}

Tensor GPT2::forward_token(const sint& token, const sint& start_pos) {
  if (token.vmin() < 0 || token.vmax() >= config.vocab_size)
    throw Error("GPT2: token " + token.str() + " (" + std::to_string(token.vmin()) + " .. " +
                std::to_string(token.vmax()) + ") outside the vocabulary of " + std::to_string(config.vocab_size));
  if (start_pos.vmin() < 0 || start_pos.vmax() >= config.max_context)
    throw Error("GPT2: position " + start_pos.str() + " outside the context of " + std::to_string(config.max_context));
  auto row = [&](const Tensor& table, const sint& i) {
    return table.shrink({{i, i + 1}, {0, config.dim}}).reshape({1, 1, config.dim});
  };
  return run_blocks(row(wte.weight, token) + row(wpe.weight, start_pos), start_pos);
}

Tensor GPT2::run_blocks(Tensor x, const sint& start_pos) {
  const sint T = x.shape()[1];
  std::optional<Tensor> mask;
  if (int64_t(T) > 1)  // causal: position start_pos + i sees keys 0 .. start_pos + i
    mask = Tensor::full({1, 1, T, start_pos + T}, -std::numeric_limits<float>::infinity(),
                        {.dtype = x.dtype(), .device = x.device()})
               .triu(int64_t(start_pos) + 1);
  for (GPT2Block& b : h) {
    x = x + b.attn(b.ln_1(x), start_pos, mask);
    x = (x + b.mlp(b.ln_2(x))).contiguous();  // (a kernel boundary, as Llama's)
  }
  const sint B = x.shape()[0];
  Tensor last = ln_f(x.shrink({{0, B}, {int64_t(T) - 1, int64_t(T)}, {0, config.dim}})).reshape({B, config.dim});
  return wte.as_head(last).cast(dtypes::float32);
}

GPT2 GPT2::from_safetensors(const std::string& path, const std::string& device_name, int64_t max_context) {
  const std::string device = device_name.empty() ? default_device() : device_name;
  std::map<std::string, Tensor> file = state::safe_load(path, device);
  auto find = [&](const std::string& name) -> Tensor {
    for (const std::string& key : {name, "transformer." + name})
      if (auto it = file.find(key); it != file.end()) return it->second;
    throw Error("GPT2::from_safetensors: " + path + " has no tensor " + name);
  };
  GPT2Config c;
  const Tensor wte = find("wte.weight"), wpe = find("wpe.weight");
  if (wte.ndim() != 2 || wpe.ndim() != 2 || !(wte.shape()[1] == wpe.shape()[1]))
    throw Error("GPT2::from_safetensors: wte " + wte.repr() + " and wpe " + wpe.repr() + " are not (rows, dim)");
  c.vocab_size = wte.shape()[0], c.dim = wpe.shape()[1];
  const int64_t n_positions = wpe.shape()[0];
  c.max_context = max_context > 0 ? std::min(max_context, n_positions) : n_positions;
  c.n_layers = 0;
  while (file.count("h." + std::to_string(c.n_layers) + ".ln_1.weight") ||
         file.count("transformer.h." + std::to_string(c.n_layers) + ".ln_1.weight"))
    c.n_layers++;
  c.n_heads = c.dim % 64 == 0 ? c.dim / 64 : 1;  // (the file does not say; GPT-2's heads are 64 wide)
  GPT2 m(c);
  std::vector<Tensor> weights;
  auto take = [&](Tensor& into, const std::string& name, bool conv1d) {
    Tensor t = find(name);
    if (conv1d) t = t.transpose();  // Conv1D keeps (in, out)
    if (!(t.shape() == into.shape()))
      throw Error("GPT2::from_safetensors: " + name + " is " + t.repr() + ", the model expects " + into.repr());
    into = t.cast(dtypes::float32).contiguous();
    weights.push_back(into);
  };
  Tensor rows = wpe.shrink({{0, c.max_context}, {0, c.dim}});
  take(m.wte.weight, "wte.weight", false);
  m.wpe.weight = rows.cast(dtypes::float32).contiguous();
  weights.push_back(m.wpe.weight);
  take(*m.ln_f.weight, "ln_f.weight", false);
  take(*m.ln_f.bias, "ln_f.bias", false);
  for (int64_t i = 0; i < c.n_layers; i++) {
    const std::string p = "h." + std::to_string(i) + ".";
    GPT2Block& b = m.h[size_t(i)];
    for (auto [ln, name] : {std::pair{&b.ln_1, "ln_1"}, std::pair{&b.ln_2, "ln_2"}}) {
      take(*ln->weight, p + name + ".weight", false);
      take(*ln->bias, p + name + ".bias", false);
    }
    for (auto [lin, name] : {std::pair{&b.attn.c_attn, "attn.c_attn"}, std::pair{&b.attn.c_proj, "attn.c_proj"},
                             std::pair{&b.mlp.c_fc, "mlp.c_fc"}, std::pair{&b.mlp.c_proj, "mlp.c_proj"}}) {
      take(lin->weight, p + name + ".weight", true);
      take(*lin->bias, p + name + ".bias", false);
    }
  }
  Tensor::realize_all(weights);
  return m;
}

}  // namespace tg::nn
