// tg::nn layers: tinygrad's nn/__init__.py as plain structs. Initialization follows tinygrad: weights and
// biases uniform in +-1/sqrt(fan_in) (what kaiming_uniform(a=sqrt(5)) gives), norms start at weight 1,
// bias 0, Embedding glorot_uniform.
#include <cmath>
#include <numeric>

#include "tg/nn.h"
#include "tg/variable.h"

namespace tg::nn {
namespace {

int64_t prod(const std::vector<int64_t>& v) { return std::accumulate(v.begin(), v.end(), int64_t(1), std::multiplies<>()); }

// A tensor filled with `value` that owns its buffer. Tensor::full would give a constant, and equal
// constants are one interned UOp: two layers' biases would then share a buffer once realized, and an
// assign to one would change the other.
Tensor filled(const Shape& shape, float value) {
  for (int64_t s : shape)
    if (s < 0) throw Error("nn: negative dimension in shape " + to_string(shape));
  return Tensor(std::vector<float>(size_t(prod(shape)), value), shape, {.dtype = dtypes::default_float()});
}

void check_positive(const char* layer, const char* what, int64_t v) {
  if (v <= 0) throw Error(std::string(layer) + ": " + what + " must be > 0, got " + std::to_string(v));
}

double fan_in_bound(int64_t fan_in) { return 1.0 / std::sqrt(double(fan_in)); }

// The weight of a (transposed) convolution, after checking the layer's arguments: shape (a, b / groups, *k)
// with (a, b) = (out, in) for a convolution and (in, out) for a transposed one, uniform in
// +-1/sqrt(in / groups * prod(k)).
Tensor conv_weight(const char* layer, int64_t in, int64_t out, const std::vector<int64_t>& k, int64_t groups,
                   bool transposed) {
  check_positive(layer, "in_channels", in);
  check_positive(layer, "out_channels", out);
  check_positive(layer, "groups", groups);
  if (k.empty()) throw Error(std::string(layer) + ": kernel_size must have at least one dim");
  for (int64_t x : k) check_positive(layer, "kernel_size", x);
  if (in % groups != 0 || out % groups != 0)
    throw Error(std::string(layer) + ": in_channels " + std::to_string(in) + " and out_channels " +
                std::to_string(out) + " must be divisible by groups " + std::to_string(groups));
  Shape ws = transposed ? Shape{in, out / groups} : Shape{out, in / groups};
  ws.insert(ws.end(), k.begin(), k.end());
  // A transposed convolution keeps the bound of the convolution it transposes, as tinygrad's.
  double bound = fan_in_bound(in / groups * prod(k));
  return Tensor::uniform(ws, -bound, bound);
}

// kernel_size=5 is 5x5, as tinygrad's make_tuple(kernel_size, 2).
std::vector<int64_t> kernel_dims(const Ints& k) { return k.scalar ? std::vector<int64_t>(2, k.v[0]) : k.v; }

// (1, C, 1, ...) for a per-channel tensor of an input with `ndim` dims.
Shape channel_shape(int64_t c, int64_t ndim) {
  Shape s(size_t(std::max<int64_t>(ndim, 2)), 1);
  s[1] = c;
  return s;
}

void check_channels(const char* layer, const Tensor& x, int64_t channels) {
  Shape s = x.shape();
  if (s.size() < 2 || s[1] != channels)
    throw Error(std::string(layer) + ": input " + to_string(s) + " does not have " + std::to_string(channels) +
                " channels in dim 1 (expected (N, " + std::to_string(channels) + ", ...))");
}

// x @ weight.T (+ bias), through `blocks` while weight is still their dense form (Linear, and a head tied to an
// Embedding).
Tensor linear_through(const Tensor& x, const Tensor& weight, const std::optional<Tensor>& bias,
                      const std::shared_ptr<const BlockWeight>& blocks) {
  if (!blocks || !blocks->serves(weight)) return x.linear(weight, bias);
  Tensor y = blocks->linear(x);
  return bias ? y + *bias : y;
}

// use_blocks of Linear and Embedding: `w` must have the (out, in) shape of `weight`, which becomes its dense form.
void attach_blocks(const char* who, const BlockWeight& w, Tensor& weight, std::shared_ptr<const BlockWeight>& blocks) {
  if (!(weight.shape() == Shape{w.out_features(), w.in_features()}))
    throw Error(std::string(who) + "::use_blocks: a " + std::to_string(w.out_features()) + "x" +
                std::to_string(w.in_features()) + " " + w.format() + " weight for a layer of " +
                weight.shape()[1].str() + " inputs and " + weight.shape()[0].str() + " outputs");
  blocks = std::make_shared<const BlockWeight>(w);
  weight = blocks->dense();
}

}  // namespace

// ---- Linear ----
Linear::Linear(int64_t in_features, int64_t out_features, bool with_bias)
    : weight((check_positive("Linear", "in_features", in_features),
              check_positive("Linear", "out_features", out_features),
              Tensor::uniform({out_features, in_features}, -fan_in_bound(in_features), fan_in_bound(in_features)))) {
  if (with_bias) bias = Tensor::uniform({out_features}, -fan_in_bound(in_features), fan_in_bound(in_features));
}

Tensor Linear::operator()(const Tensor& x) const { return linear_through(x, weight, bias, blocks); }

void Linear::use_blocks(const BlockWeight& w) { attach_blocks("Linear", w, weight, blocks); }


// ---- Conv2d / Conv1d ----
Conv2d::Conv2d(int64_t in_channels, int64_t out_channels, Ints kernel, Ints stride_, Ints padding_, Ints dilation_,
               int64_t groups_, bool with_bias)
    : weight(conv_weight("Conv2d", in_channels, out_channels, kernel_dims(kernel), groups_, false)),
      kernel_size(kernel_dims(kernel)), stride(stride_.v), padding(padding_.v), dilation(dilation_.v),
      groups(groups_) {
  double bound = fan_in_bound(in_channels / groups * prod(kernel_size));
  if (with_bias) bias = Tensor::uniform({out_channels}, -bound, bound);
}

// Tensor::conv2d takes one value for all dims or one per dim, and checks the input against the weight.
Tensor Conv2d::operator()(const Tensor& x) const { return x.conv2d(weight, bias, groups, stride, dilation, padding); }

// ---- ConvTranspose2d ----
ConvTranspose2d::ConvTranspose2d(int64_t in_channels, int64_t out_channels, Ints kernel, Ints stride_, Ints padding_,
                                 Ints output_padding_, Ints dilation_, int64_t groups_, bool with_bias)
    : weight(conv_weight("ConvTranspose2d", in_channels, out_channels, kernel_dims(kernel), groups_, true)),
      kernel_size(kernel_dims(kernel)), stride(stride_.v), padding(padding_.v), output_padding(output_padding_.v),
      dilation(dilation_.v), groups(groups_) {
  double bound = fan_in_bound(in_channels / groups * prod(kernel_size));
  if (with_bias) bias = Tensor::uniform({out_channels}, -bound, bound);
}

Tensor ConvTranspose2d::operator()(const Tensor& x) const {
  return x.conv_transpose2d(weight, bias, groups, stride, dilation, padding, output_padding);
}

// ---- BatchNorm ----
BatchNorm::BatchNorm(int64_t sz, double eps_, bool affine, bool track, double momentum_)
    : num_batches_tracked(Tensor(std::vector<int64_t>{0}, {})), eps(eps_), momentum(momentum_),
      track_running_stats(track) {
  check_positive("BatchNorm", "sz", sz);
  if (affine) {
    weight = filled({sz}, 1);
    bias = filled({sz}, 0);
  }
  if (track) {
    running_mean = filled({sz}, 0);
    running_var = filled({sz}, 1);
  }
}

namespace {

// The running statistics moved toward a batch's (mean and biased variance over n values a channel). The running
// variance is the unbiased one, as torch keeps it: n / (n - 1) per channel.
void update_running_stats(BatchNorm& bn, const Tensor& batch_mean, const Tensor& batch_var, double n) {
  double unbias = n > 1 ? n / (n - 1) : 1.0;
  Tensor rm = *bn.running_mean, rv = *bn.running_var;
  rm.assign(((1 - bn.momentum) * rm + bn.momentum * batch_mean.detach()).cast(rm.dtype()));
  rv.assign(((1 - bn.momentum) * rv + (bn.momentum * unbias) * batch_var.detach()).cast(rv.dtype()));
  bn.num_batches_tracked.assign(bn.num_batches_tracked + 1);
}

// sync_stats = false over a batch sharded along axis 0 on g devices: x seen as (g, N / g, C, ...), sharded along
// the new axis 0, so its statistics (g, C) are each device's own and reduce without leaving it.
Tensor per_device_batchnorm(BatchNorm& bn, const Tensor& x, int64_t g) {
  const Shape s = x.shape();
  Shape gs{sint(g), s[0] / g};
  gs.insert(gs.end(), s.begin() + 1, s.end());
  std::vector<int64_t> axes{1};  // every axis but the devices' and the channels'
  for (int64_t i = 3; i < int64_t(gs.size()); i++) axes.push_back(i);
  Shape stat_shape(gs.size(), 1), channel(gs.size(), 1);
  stat_shape[0] = g, stat_shape[2] = channel[2] = s[1];
  Tensor xg = x.reshape(gs);
  Tensor batch_mean = xg.mean(axes);
  Tensor y = xg - batch_mean.detach().reshape(stat_shape);
  Tensor batch_var = (y * y).mean(axes);
  if (bn.track_running_stats)  // (the devices' mean: one all-reduce, read only by the update)
    update_running_stats(bn, batch_mean.mean(0), batch_var.mean(0), double(x.numel()) / double(g * int64_t(s[1])));
  Tensor out = (xg - batch_mean.reshape(stat_shape)) * (batch_var + bn.eps).rsqrt().reshape(stat_shape);
  if (bn.weight) out = out * bn.weight->reshape(channel);
  if (bn.bias) out = out + bn.bias->reshape(channel);
  return out.reshape(s);
}

}  // namespace

Tensor BatchNorm::operator()(const Tensor& x) {
  int64_t c = running_mean ? running_mean->numel() : weight ? weight->numel() : -1;
  if (c >= 0) check_channels("BatchNorm", x, c);
  else if (x.ndim() < 2) throw Error("BatchNorm: input " + to_string(x.shape()) + " needs (N, C, ...)");
  if (track_running_stats && !Tensor::training)
    return x.batchnorm(weight, bias, *running_mean, (*running_var + eps).rsqrt());
  if (!sync_stats && x.devices().size() > 1 && x.shard_axis() == std::optional<int64_t>(0))
    return per_device_batchnorm(*this, x, int64_t(x.devices().size()));

  std::vector<int64_t> axes;  // every axis but the channels
  for (int64_t i = 0; i < x.ndim(); i++)
    if (i != 1) axes.push_back(i);
  Shape cs = channel_shape(x.shape()[1], x.ndim());
  Tensor batch_mean = x.mean(axes);
  // The mean is detached in the variance: d(var)/d(mean) is 0, and this keeps the backward graph small.
  Tensor y = x - batch_mean.detach().reshape(cs);
  Tensor batch_var = (y * y).mean(axes);
  if (track_running_stats && Tensor::training)
    update_running_stats(*this, batch_mean, batch_var, double(x.numel()) / double(x.shape()[1]));
  return x.batchnorm(weight, bias, batch_mean, (batch_var + eps).rsqrt());
}

// ---- LayerNorm ----
LayerNorm::LayerNorm(Ints shape, double eps_, bool elementwise_affine) : normalized_shape(shape.v.begin(), shape.v.end()), eps(eps_) {
  if (normalized_shape.empty()) throw Error("LayerNorm: normalized_shape must have at least one dim");
  for (int64_t s : normalized_shape) check_positive("LayerNorm", "normalized_shape", s);
  if (elementwise_affine) {
    weight = filled(normalized_shape, 1);
    bias = filled(normalized_shape, 0);
  }
}

Tensor LayerNorm::operator()(const Tensor& x) const {
  Shape s = x.shape();
  size_t k = normalized_shape.size();
  if (s.size() < k || !std::equal(normalized_shape.begin(), normalized_shape.end(), s.end() - ptrdiff_t(k)))
    throw Error("LayerNorm: last dims of input " + to_string(s) + " must be " + to_string(normalized_shape));
  // Tensor::layernorm normalizes over one axis: fold the normalized dims into one.
  Shape folded(s.begin(), s.end() - ptrdiff_t(k));
  folded.push_back(prod(normalized_shape));
  Tensor y = k == 1 ? x.layernorm(-1, eps) : x.reshape(folded).layernorm(-1, eps).reshape(s);
  if (!weight || !bias) return y;
  return y * *weight + *bias;
}

// ---- RMSNorm ----
RMSNorm::RMSNorm(int64_t dim, double eps_, bool elementwise_affine) : eps(eps_) {
  check_positive("RMSNorm", "dim", dim);
  if (elementwise_affine) weight = filled({dim}, 1);
}

Tensor RMSNorm::operator()(const Tensor& x) const {
  if (x.ndim() == 0) throw Error("RMSNorm: input must have at least one dim");
  if (weight && x.shape().back() != weight->numel())
    throw Error("RMSNorm: last dim of input " + to_string(x.shape()) + " must be " + std::to_string(weight->numel()));
  // Squares of half values overflow: normalize in float32 or wider, as tinygrad's x.float().
  Tensor xf = x.cast(dtypes::promote(x.dtype(), dtypes::float32));
  Tensor y = (xf * ((xf * xf).mean(-1, true) + eps).rsqrt()).cast(x.dtype());
  return weight ? y * *weight : y;
}

// ---- GroupNorm / InstanceNorm ----
GroupNorm::GroupNorm(int64_t groups, int64_t channels, double eps_, bool affine)
    : num_groups(groups), num_channels(channels), eps(eps_) {
  check_positive("GroupNorm", "num_groups", groups);
  check_positive("GroupNorm", "num_channels", channels);
  if (channels % groups != 0)
    throw Error("GroupNorm: num_channels " + std::to_string(channels) + " must be divisible by num_groups " +
                std::to_string(groups));
  if (affine) {
    weight = filled({channels}, 1);
    bias = filled({channels}, 0);
  }
}

Tensor GroupNorm::operator()(const Tensor& x) const {
  check_channels("GroupNorm", x, num_channels);
  Shape s = x.shape();
  Tensor y = x.reshape({s[0], num_groups, -1}).layernorm(-1, eps).reshape(s);
  if (!weight || !bias) return y;
  Shape cs = channel_shape(num_channels, x.ndim());
  return y * weight->reshape(cs) + bias->reshape(cs);
}

InstanceNorm::InstanceNorm(int64_t features, double eps_, bool affine) : num_features(features), eps(eps_) {
  check_positive("InstanceNorm", "num_features", features);
  if (affine) {
    weight = filled({features}, 1);
    bias = filled({features}, 0);
  }
}

Tensor InstanceNorm::operator()(const Tensor& x) const {
  check_channels("InstanceNorm", x, num_features);
  Shape s = x.shape();
  Tensor y = x.reshape({s[0], num_features, -1}).layernorm(-1, eps).reshape(s);
  if (!weight || !bias) return y;
  Shape cs = channel_shape(num_features, x.ndim());
  return y * weight->reshape(cs) + bias->reshape(cs);
}

// ---- Embedding ----
Embedding::Embedding(int64_t vocab, int64_t embed)
    : vocab_size(vocab), embed_size(embed),
      weight((check_positive("Embedding", "vocab_size", vocab), check_positive("Embedding", "embed_size", embed),
              Tensor::glorot_uniform({vocab, embed}))) {}

void Embedding::use_blocks(const BlockWeight& w) { attach_blocks("Embedding", w, weight, blocks); }

Tensor Embedding::as_head(const Tensor& x) const { return linear_through(x, weight, std::nullopt, blocks); }

Tensor Embedding::rows_of(const Tensor& idx, DType dtype) const {
  if (!idx.dtype().is_int())
    throw Error("Embedding::rows_of: indices must have an integer dtype, got " + std::string(idx.dtype().name()));
  Shape out_shape = idx.shape();
  out_shape.push_back(embed_size);
  const std::vector<int32_t> ids = idx.cast(dtypes::int32).tolist<int32_t>();
  const int64_t n = int64_t(ids.size());
  if (n == 0) return Tensor::zeros(out_shape, {.dtype = dtype, .device = weight.device()});
  Tensor out = Tensor::empty({n, embed_size}, {.dtype = dtype, .device = weight.device()}).realize();
  const Variable row("embedding_row", 0, n - 1), id("embedding_id", 0, vocab_size - 1);
  for (int64_t i = 0; i < n; i++) {
    const int32_t v = ids[size_t(i)];
    if (v < 0 || v >= vocab_size)
      throw Error("Embedding::rows_of: id " + std::to_string(v) + " at " + std::to_string(i) +
                  " outside the vocabulary of " + std::to_string(vocab_size));
    const sint r = row.bind(i), t = id.bind(v);
    out.shrink({{r, r + 1}, {0, embed_size}}).assign(weight.shrink({{t, t + 1}, {0, embed_size}}).cast(dtype)).realize();
  }
  return out.reshape(out_shape);
}

Tensor Embedding::operator()(const Tensor& idx) const {
  if (!idx.dtype().is_int())
    throw Error("Embedding: indices must have an integer dtype, got " + std::string(idx.dtype().name()));
  Shape out = idx.shape();
  out.push_back(embed_size);
  if (idx.numel() == 0) return Tensor::zeros(out, {.dtype = weight.dtype(), .device = weight.device()});
  // tinygrad's lookup without a gather: compare each index with arange(vocab), select the matching row
  // and sum over the vocabulary: (..., vocab, 1) where (vocab, embed) -> (..., embed).
  Tensor hit = Tensor::arange(vocab_size, {.device = idx.device()}) == idx.cast(dtypes::int32).unsqueeze(-1);
  return hit.unsqueeze(-1).where(weight, 0).sum(-2);
}

}  // namespace tg::nn
