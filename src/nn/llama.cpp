// A LLaMA-family decoder: include/tg/llama.h.
#include "tg/llama.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "tg/error.h"

namespace tg::nn {
namespace {

Linear linear(int64_t in, int64_t out) { return Linear(in, out, /*bias=*/false); }

// Rotates each pair (x[2i], x[2i+1]) of the last dim by its position's angle (llama.cpp's "normal" rope, the
// layout GGUF files store q and k in). x (B, T, H, hd); freqs (T, hd / 2, 2) of cos, sin.
Tensor apply_rotary(const Tensor& x, const Tensor& freqs) {
  const Shape s = x.shape();
  const sint T = s[1];
  const int64_t H = s[2], hd = s[3];
  Tensor pairs = x.reshape({s[0], T, H, hd / 2, 2});
  Tensor a = pairs.shrink({{0, s[0]}, {0, T}, {0, H}, {0, hd / 2}, {0, 1}});
  Tensor b = pairs.shrink({{0, s[0]}, {0, T}, {0, H}, {0, hd / 2}, {1, 2}});
  Tensor cos = freqs.shrink({{0, T}, {0, hd / 2}, {0, 1}}).reshape({1, T, 1, hd / 2, 1});
  Tensor sin = freqs.shrink({{0, T}, {0, hd / 2}, {1, 2}}).reshape({1, T, 1, hd / 2, 1});
  Tensor out = Tensor::cat({a * cos - b * sin, a * sin + b * cos}, -1);
  return out.reshape(s).cast(x.dtype());
}

const state::GGUFValue& key(const state::GGUFFile& f, const std::string& name) {
  auto it = f.kv.find(name);
  if (it == f.kv.end()) throw Error("Llama: the GGUF file has no " + name);
  return it->second;
}

// cos and sin of position p times theta^(-2i/hd), for p < n: (n, hd / 2, 2), float32.
Tensor rotary_table(int64_t n, int64_t hd, double theta, const std::string& device) {
  std::vector<float> v(static_cast<size_t>(n * hd));
  for (int64_t p = 0; p < n; p++)
    for (int64_t i = 0; i < hd / 2; i++) {
      const double angle = double(p) * std::pow(theta, -2.0 * double(i) / double(hd));
      v[size_t((p * (hd / 2) + i) * 2)] = float(std::cos(angle));
      v[size_t((p * (hd / 2) + i) * 2 + 1)] = float(std::sin(angle));
    }
  return Tensor(v, {n, hd / 2, 2}, {.device = device});
}

}  // namespace

LlamaConfig LlamaConfig::from_gguf(const state::GGUFFile& f, int64_t max_context) {
  const std::string arch = key(f, "general.architecture").as_string();
  if (arch != "llama") throw Error("Llama: the GGUF file's architecture is \"" + arch + "\", expected \"llama\"");
  LlamaConfig c;
  c.dim = key(f, "llama.embedding_length").as_int();
  c.n_layers = key(f, "llama.block_count").as_int();
  c.n_heads = key(f, "llama.attention.head_count").as_int();
  c.n_kv_heads =
      f.kv.count("llama.attention.head_count_kv") ? key(f, "llama.attention.head_count_kv").as_int() : c.n_heads;
  c.hidden_dim = key(f, "llama.feed_forward_length").as_int();
  c.norm_eps = key(f, "llama.attention.layer_norm_rms_epsilon").as_float();
  if (f.kv.count("llama.rope.freq_base")) c.rope_theta = key(f, "llama.rope.freq_base").as_float();
  auto emb = f.tensors.find("token_embd.weight");
  if (emb == f.tensors.end()) throw Error("Llama: the GGUF file has no token_embd.weight");
  c.vocab_size = emb->second.shape().at(0);
  c.tied_embeddings = !f.tensors.count("output.weight");
  const int64_t file_context = key(f, "llama.context_length").as_int();
  c.max_context = max_context > 0 ? max_context : std::min<int64_t>(file_context, 4096);
  if (c.dim <= 0 || c.n_layers <= 0 || c.n_heads <= 0 || c.n_kv_heads <= 0 || c.dim % c.n_heads != 0 ||
      c.n_heads % c.n_kv_heads != 0 || c.head_dim() % 2 != 0 || c.hidden_dim <= 0 || c.max_context <= 0)
    throw Error("Llama: inconsistent GGUF sizes: dim " + std::to_string(c.dim) + ", heads " +
                std::to_string(c.n_heads) + ", kv heads " + std::to_string(c.n_kv_heads) + ", layers " +
                std::to_string(c.n_layers) + ", feed-forward " + std::to_string(c.hidden_dim) + ", context " +
                std::to_string(c.max_context));
  return c;
}

LlamaAttention::LlamaAttention(const LlamaConfig& c)
    : wq(linear(c.dim, c.n_heads * c.head_dim())),
      wk(linear(c.dim, c.n_kv_heads * c.head_dim())),
      wv(linear(c.dim, c.n_kv_heads * c.head_dim())),
      wo(linear(c.n_heads * c.head_dim(), c.dim)),
      n_heads(c.n_heads),
      n_kv_heads(c.n_kv_heads),
      head_dim(c.head_dim()),
      max_context(c.max_context) {}

Tensor LlamaAttention::operator()(const Tensor& x, const sint& start_pos, const Tensor& freqs,
                                  const std::optional<Tensor>& mask) {
  const sint B = x.shape()[0], T = x.shape()[1];
  const int64_t dq = n_heads * head_dim, dkv = n_kv_heads * head_dim;
  const bool fused = qkv_fused();
  Tensor q_lin = fused ? (*wqkv)(x) : wq(x);
  auto cols = [&](int64_t a, int64_t b) { return q_lin.shrink({{0, B}, {0, T}, {a, b}}); };
  Tensor xq = apply_rotary((fused ? cols(0, dq) : q_lin).reshape({B, T, n_heads, head_dim}), freqs);
  Tensor xk = apply_rotary((fused ? cols(dq, dq + dkv) : wk(x)).reshape({B, T, n_kv_heads, head_dim}), freqs);
  Tensor xv = (fused ? cols(dq + dkv, dq + 2 * dkv) : wv(x)).reshape({B, T, n_kv_heads, head_dim});
  if (!cache_kv)
    // (uninitialized: a step reads only the positions written before it; zeroing 4096 positions of 30 layers took
    // 119 ms of a prompt's first token)
    cache_kv = Tensor::empty({2, B, max_context, n_kv_heads, head_dim}, {.dtype = x.dtype(), .device = x.device()})
                   .realize();
  // Write this step's keys and values at their positions, then attend over every position so far.
  const sint end = start_pos + T;
  cache_kv->shrink({{0, 2}, {0, B}, {start_pos, end}, {0, n_kv_heads}, {0, head_dim}})
      .assign(Tensor::stack({xk, xv}).cast(cache_kv->dtype()))
      .realize();
  // Grouped: the n_rep query heads of a key/value head attend to it through a broadcast dim (heads kv * n_rep + r, as
  // llama.cpp orders them), never a merged (KV * n_rep) dim, whose index over a symbolic number of keys would need
  // divisions by it in the kernels.
  const int64_t n_rep = n_heads / n_kv_heads;
  auto cached = [&](int64_t which) {  // (B, KV, 1, S, hd)
    return cache_kv->shrink({{which, which + 1}, {0, B}, {0, end}, {0, n_kv_heads}, {0, head_dim}})
        .reshape({B, end, n_kv_heads, 1, head_dim})
        .permute({0, 2, 3, 1, 4});
  };
  Tensor keys = cached(0), values = cached(1);
  Tensor q = xq.reshape({B, T, n_kv_heads, n_rep, head_dim}).permute({0, 2, 3, 1, 4});        // (B, KV, n_rep, T, hd)
  Tensor scores = q.matmul(keys.transpose(3, 4)) * float(1.0 / std::sqrt(double(head_dim)));  // (B, KV, n_rep, T, S)
  if (mask) scores = scores + mask->reshape({1, 1, 1, T, end});
  Tensor attn = scores.cast(dtypes::float32).softmax(-1).cast(x.dtype()).matmul(values);  // (B, KV, n_rep, T, hd)
  return wo(attn.permute({0, 3, 1, 2, 4}).reshape({B, T, n_heads * head_dim}));
}

bool LlamaAttention::qkv_fused() const {
  if (!wqkv || qkv_views.size() != 3) return false;
  const Linear* parts[3] = {&wq, &wk, &wv};
  for (size_t i = 0; i < 3; i++)
    if (parts[i]->weight.uop() != qkv_views[i].uop()) return false;
  return true;
}

void LlamaAttention::fuse_qkv() {
  Linear* parts[3] = {&wq, &wk, &wv};
  int blocked = 0;
  for (Linear* l : parts) {
    if (l->bias) return;
    blocked += l->blocks && l->blocks->serves(l->weight);
  }
  const int64_t in = int64_t(wq.weight.shape()[1]);
  std::vector<int64_t> rows;
  for (Linear* l : parts) rows.push_back(int64_t(l->weight.shape()[0]));
  Linear fused(in, rows[0] + rows[1] + rows[2], /*bias=*/false);
  if (blocked == 3) {
    if (wq.blocks->format() != wk.blocks->format() || wq.blocks->format() != wv.blocks->format()) return;
    BlockWeight all = BlockWeight::cat({*wq.blocks, *wk.blocks, *wv.blocks});
    Tensor::realize_all(all.parts());
    fused.use_blocks(all);
    for (int64_t i = 0, at = 0; i < 3; at += rows[size_t(i)], i++)
      parts[i]->use_blocks(all.rows(at, at + rows[size_t(i)]));
  } else if (blocked == 0) {
    fused.weight = Tensor::cat({wq.weight, wk.weight, wv.weight}, 0).contiguous().realize();
    for (int64_t i = 0, at = 0; i < 3; at += rows[size_t(i)], i++)
      parts[i]->weight = fused.weight.shrink({{at, at + rows[size_t(i)]}, {0, in}});
  } else {
    return;  // some in blocks, some dense: three matmuls
  }
  wqkv = std::move(fused);
  qkv_views = {wq.weight, wk.weight, wv.weight};
}

LlamaFeedForward::LlamaFeedForward(const LlamaConfig& c)
    : w1(linear(c.dim, c.hidden_dim)), w2(linear(c.hidden_dim, c.dim)), w3(linear(c.dim, c.hidden_dim)) {}

Tensor LlamaFeedForward::operator()(const Tensor& x) const { return w2(w1(x).silu() * w3(x)); }

LlamaBlock::LlamaBlock(const LlamaConfig& c)
    : attention(c), feed_forward(c), attention_norm(c.dim, c.norm_eps), ffn_norm(c.dim, c.norm_eps) {}

Llama::Llama(const LlamaConfig& c, const std::string& device)
    : config(c),
      tok_embeddings(c.vocab_size, c.dim),
      norm(c.dim, c.norm_eps),
      freqs_cis(rotary_table(c.max_context, c.head_dim(), c.rope_theta, device.empty() ? default_device() : device)) {
  layers.reserve(size_t(c.n_layers));
  for (int64_t i = 0; i < c.n_layers; i++) layers.emplace_back(c);
  if (!c.tied_embeddings) output = linear(c.dim, c.vocab_size);
}

void Llama::fuse_qkv() {
  for (LlamaBlock& b : layers) b.attention.fuse_qkv();
}

Tensor Llama::forward(const Tensor& tokens, const sint& start_pos) {
  if (tokens.ndim() != 2 || !tokens.dtype().is_int())
    throw Error("Llama: tokens must be (batch, T) of an integer dtype, got " + tokens.repr());
  const DType dt = dtype.value_or(tok_embeddings.weight.dtype());
  if (tokens.numel() <= 1) return run_layers(tok_embeddings(tokens).cast(dt), start_pos);  // (a jitted step: no sync)
  return run_layers(tok_embeddings.rows_of(tokens, dt), start_pos);
}

Tensor Llama::forward_token(const sint& token, const sint& start_pos) {
  if (token.vmin() < 0 || token.vmax() >= config.vocab_size)
    throw Error("Llama: token " + token.str() + " (" + std::to_string(token.vmin()) + " .. " +
                std::to_string(token.vmax()) + ") outside the vocabulary of " + std::to_string(config.vocab_size));
  // One row of the embedding, not tok_embeddings' compare-and-sum over the whole vocabulary.
  Tensor h = tok_embeddings.weight.shrink({{token, token + 1}, {0, config.dim}})
                 .reshape({1, 1, config.dim})
                 .cast(dtype.value_or(tok_embeddings.weight.dtype()));
  return run_layers(h, start_pos);
}

Tensor Llama::run_layers(Tensor h, const sint& start_pos) {
  const sint T = h.shape()[1];
  if (!(T.is_int() && int64_t(T) >= 1) || start_pos.vmin() < 0 || (start_pos + T).vmax() > config.max_context)
    throw Error("Llama: positions " + start_pos.str() + " .. " + (start_pos + T).str() + " outside the KV cache of " +
                std::to_string(config.max_context));
  Tensor freqs = freqs_cis.shrink({{start_pos, start_pos + T}, {0, config.head_dim() / 2}, {0, 2}});
  std::optional<Tensor> mask;
  if (int64_t(T) > 1) {  // causal: position start_pos + i sees keys 0 .. start_pos + i
    mask = Tensor::full({1, 1, T, start_pos + T}, -std::numeric_limits<float>::infinity(),
                        {.dtype = h.dtype(), .device = h.device()})
               .triu(int64_t(start_pos) + 1);
  }
  for (LlamaBlock& layer : layers) {
    h = h + layer.attention(layer.attention_norm(h), start_pos, freqs, mask);
    // (a kernel boundary: the next layer's cache write realizes its graph, which then reads h instead of
    // computing every layer below again)
    h = (h + layer.feed_forward(layer.ffn_norm(h))).contiguous();
  }
  const sint B = h.shape()[0];
  Tensor last = norm(h.shrink({{0, B}, {int64_t(T) - 1, int64_t(T)}, {0, config.dim}})).reshape({B, config.dim});
  Tensor logits = output ? (*output)(last) : tok_embeddings.as_head(last);
  return logits.cast(dtypes::float32);
}

int32_t sample_token(const std::vector<float>& logits, const SamplerConfig& cfg, std::mt19937_64& rng) {
  if (logits.empty()) throw Error("sample_token: no logits");
  if (cfg.temperature <= 0) return int32_t(std::max_element(logits.begin(), logits.end()) - logits.begin());
  std::vector<int32_t> ids(logits.size());
  std::iota(ids.begin(), ids.end(), 0);
  const size_t k = cfg.top_k > 0 ? std::min(size_t(cfg.top_k), ids.size()) : ids.size();
  std::partial_sort(ids.begin(), ids.begin() + ptrdiff_t(k), ids.end(),
                    [&](int32_t a, int32_t b) { return logits[size_t(a)] > logits[size_t(b)]; });
  ids.resize(k);
  std::vector<double> p(k);
  const double top = logits[size_t(ids[0])];
  double sum = 0;
  for (size_t i = 0; i < k; i++) sum += p[i] = std::exp((double(logits[size_t(ids[i])]) - top) / cfg.temperature);
  size_t keep = k;
  if (cfg.top_p < 1.0) {  // the smallest prefix whose mass reaches top_p
    double mass = 0;
    for (size_t i = 0; i < k; i++)
      if ((mass += p[i] / sum) >= cfg.top_p) {
        keep = i + 1;
        break;
      }
  }
  std::discrete_distribution<size_t> pick(p.begin(), p.begin() + ptrdiff_t(keep));
  return ids[pick(rng)];
}

}  // namespace tg::nn
