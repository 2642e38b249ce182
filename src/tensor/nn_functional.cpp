// Normalization, attention and losses, built from elementwise ops and reductions as tinygrad builds them.
// The few composites they need (a stable log_softmax, softmax, one-hot) are written here from primitives so
// this file depends only on the core ops.
#include <cmath>
#include <limits>

#include "tensor/tensor_internal.h"

namespace tg {
namespace {

// tinygrad's _do_reduction for the losses.
Tensor reduce_loss(const char* op, const Tensor& loss, const std::string& reduction) {
  if (reduction == "mean") return loss.mean();
  if (reduction == "sum") return loss.sum();
  if (reduction == "none") return loss;
  throw Error(std::string(op) + ": reduction must be \"mean\", \"sum\" or \"none\", got \"" + reduction + "\"");
}

// x - logsumexp(x): shifting by the max keeps exp from overflowing; the shift cancels, also in the gradient.
Tensor log_softmax_(const Tensor& x, int64_t axis) {
  Tensor m = x - x.max(axis, true);
  return m - m.exp().sum(axis, true).log();
}

Tensor softmax_(const Tensor& x, int64_t axis) {
  Tensor e = (x - x.max(axis, true)).exp();
  return e / e.sum(axis, true);
}

// Y (int class ids, any shape) -> bool one-hot with the classes along `dim` of the result (rank Y.ndim + 1).
Tensor one_hot_along(const Tensor& Y, int64_t classes, int64_t dim) {
  Shape ys = Y.shape();
  Shape r = ys;
  r.insert(r.begin() + dim, 1);
  Shape ar = {classes};
  ar.insert(ar.end(), ys.size() - size_t(dim), 1);
  return Y.reshape(r) == Tensor::arange(classes, {.device = Y.device()}).cast(Y.dtype()).reshape(ar);
}

// 1 / sqrt(x); rsqrt itself lives in math.cpp.
Tensor inv_sqrt(const Tensor& x) { return x.sqrt().reciprocal(); }

}  // namespace

Tensor Tensor::layernorm(int64_t axis, double eps) const {
  normalize_axis("layernorm", axis, shape());
  Tensor y = *this - mean(axis, true);
  return y * inv_sqrt((y * y).mean(axis, true) + eps);
}

// (x - mean) * weight * invstd + bias, with mean/invstd/weight/bias shaped like the `axis` dim of x; an invstd
// of another rank is broadcast as it is.
Tensor Tensor::batchnorm(const std::optional<Tensor>& weight, const std::optional<Tensor>& bias, const Tensor& mean,
                         const Tensor& invstd, int64_t axis) const {
  Shape s = shape();
  int64_t ax = normalize_axis("batchnorm", axis, s);
  Shape bshape(s.size(), 1);
  bshape[size_t(ax)] = s[size_t(ax)];
  auto fit = [&](const Tensor& t, const char* what) {
    if (t.numel() != s[size_t(ax)])
      throw Error(std::string("batchnorm: ") + what + " " + to_string(t.shape()) + " does not match dim " +
                  std::to_string(ax) + " of input " + to_string(s) + " (expected " +
                  std::to_string(s[size_t(ax)]) + " elements)");
    return t.reshape(bshape);
  };
  Tensor x = *this - fit(mean, "mean");
  if (weight) x = x * fit(*weight, "weight");
  x = x * (invstd.ndim() == 1 ? fit(invstd, "invstd") : invstd);
  return bias ? x + fit(*bias, "bias") : x;
}

// softmax(q @ k^T / sqrt(d) + mask) @ v. The scores are computed in at least float32 (half inputs would lose
// the large dot products), then cast back to the query's dtype before the softmax, as tinygrad does.
Tensor Tensor::scaled_dot_product_attention(const Tensor& key, const Tensor& value,
                                            const std::optional<Tensor>& attn_mask, bool is_causal) const {
  Shape qs = shape(), ks = key.shape(), vs = value.shape();
  if (qs.size() < 2 || ks.size() < 2 || vs.size() < 2 || qs.back() != ks.back() || ks[ks.size() - 2] != vs[vs.size() - 2])
    throw Error("scaled_dot_product_attention: query " + to_string(qs) + ", key " + to_string(ks) + " and value " +
                to_string(vs) + " do not fit (expected (..., L, E), (..., S, E) and (..., S, Ev))");
  if (is_causal && attn_mask)
    throw Error("scaled_dot_product_attention: cannot set attn_mask when is_causal is true");
  DType acc = dtypes::promote(dtypes::promote(dtype(), key.dtype()), dtypes::float32);
  Tensor qk = cast(acc).matmul(key.cast(acc).transpose(-2, -1)) / std::sqrt(double(qs.back()));
  std::optional<Tensor> mask = attn_mask;
  if (is_causal) {  // keep key j for query i when j <= i (the lower triangle, tril of ones)
    int64_t L = qs[qs.size() - 2], S = ks[ks.size() - 2];
    mask = Tensor::arange(L, {.device = device()}).reshape({L, 1}) >=
           Tensor::arange(S, {.device = device()}).reshape({1, S});
  }
  if (mask) {
    Tensor m = mask->dtype().is_bool() ? mask->where(0.0, -std::numeric_limits<double>::infinity()) : *mask;
    qk = qk + m;
  }
  if (dtype().is_float()) qk = qk.cast(dtype());
  return softmax_(qk, -1).matmul(value);
}

// Mean over the non-ignored rows of -log p(Y), with label smoothing mixing in the mean log-probability. As in
// tinygrad, ignore_index == -1 masks nothing (a label -1 then adds 0 loss but counts in the mean).
Tensor Tensor::sparse_categorical_crossentropy(const Tensor& Y, int64_t ignore_index, double label_smoothing,
                                               const std::string& reduction) const {
  const char* op = "sparse_categorical_crossentropy";
  Shape s = shape(), ys = Y.shape();
  if (s.empty() || Shape(s.begin(), s.end() - 1) != ys)
    throw Error(std::string(op) + ": logits " + to_string(s) + " and labels " + to_string(ys) +
                " do not fit (expected labels of the logits' shape without the last (class) dim)");
  if (!Y.dtype().is_int())
    throw Error(std::string(op) + ": labels must be an int tensor, got " + Y.dtype().name());
  if (label_smoothing < 0 || label_smoothing > 1)
    throw Error(std::string(op) + ": label_smoothing " + std::to_string(label_smoothing) + " is not in [0, 1]");
  if (Y.device() != device())
    throw Error(std::string(op) + ": labels on " + Y.device() + " and logits on " + device() + " differ");
  Tensor log_probs = log_softmax_(*this, -1);
  Tensor loss_mask = ignore_index != -1 ? Y != Tensor::broadcast_scalar(Y, ignore_index)
                                        : Tensor::full(ys, true, {.dtype = dtypes::bool_, .device = device()});
  Shape ms = ys;
  ms.push_back(1);
  Tensor y = one_hot_along(Y, s.back(), int64_t(ys.size())) * loss_mask.reshape(ms);
  Tensor picked = y.where(log_probs, 0).sum(-1);
  Tensor unreduced = label_smoothing == 0 ? picked
                                          : (1 - label_smoothing) * picked +
                                                label_smoothing * loss_mask.where(log_probs.mean(-1), 0);
  // The mean is over the samples that count (not ignored); "none" keeps ignored samples as 0.
  if (reduction == "mean") return -unreduced.sum() / loss_mask.sum();
  return reduce_loss(op, -unreduced, reduction);
}

// Classes on dim 1 (dim 0 for a 1-d input), as torch. Y holds class ids (the input's shape without the class
// dim) or class probabilities (the input's shape).
Tensor Tensor::cross_entropy(const Tensor& Y, double label_smoothing, const std::string& reduction) const {
  Shape s = shape(), ys = Y.shape();
  if (s.empty()) throw Error("cross_entropy: input must have a class dim, got a 0-d tensor");
  if (label_smoothing < 0 || label_smoothing > 1)
    throw Error("cross_entropy: label_smoothing " + std::to_string(label_smoothing) + " is not in [0, 1]");
  int64_t cdim = s.size() == 1 ? 0 : 1, classes = s[size_t(cdim)];
  Tensor target = Y;
  if (s != ys) {
    Shape no_class = s;
    no_class.erase(no_class.begin() + cdim);
    if (ys != no_class)
      throw Error("cross_entropy: input " + to_string(s) + " and target " + to_string(ys) + " do not fit (expected " +
                  to_string(no_class) + " class ids or " + to_string(s) + " probabilities)");
    if (!Y.dtype().is_int())
      throw Error("cross_entropy: class-id targets must be an int tensor, got " + Y.dtype().name());
    target = one_hot_along(Y, classes, cdim).cast(dtypes::promote(dtype(), dtypes::float32));
  }
  if (label_smoothing != 0) target = (1 - label_smoothing) * target + label_smoothing / double(classes);
  return reduce_loss("cross_entropy", -(log_softmax_(*this, cdim) * target).sum(cdim), reduction);
}

// self holds probabilities in (0, 1).
Tensor Tensor::binary_crossentropy(const Tensor& Y, const std::string& reduction) const {
  if (shape() != Y.shape())
    throw Error("binary_crossentropy: input " + to_string(shape()) + " and target " + to_string(Y.shape()) +
                " must have the same shape");
  return reduce_loss("binary_crossentropy", -Y * log() - (1 - Y) * (1 - *this).log(), reduction);
}

// self holds logits: max(x, 0) - x*y + log(1 + exp(-|x|)), which never exponentiates a large positive number.
Tensor Tensor::binary_crossentropy_logits(const Tensor& Y, const std::string& reduction) const {
  const char* op = "binary_crossentropy_logits";
  if (shape() != Y.shape())
    throw Error(std::string(op) + ": input " + to_string(shape()) + " and target " + to_string(Y.shape()) +
                " must have the same shape");
  Tensor neg_abs = -maximum(-*this);  // -|x|, from max(x, -x)
  return reduce_loss(op, maximum(0) - *this * Y + (neg_abs.exp() + 1).log(), reduction);
}

// With a weight p on the positive term: -(p * y * log(sigmoid(x)) + (1 - y) * log(sigmoid(-x))), both logs
// through logsigmoid (stable at any x).
Tensor Tensor::binary_crossentropy_logits(const Tensor& Y, const Tensor& pos_weight,
                                          const std::string& reduction) const {
  const char* op = "binary_crossentropy_logits";
  if (shape() != Y.shape())
    throw Error(std::string(op) + ": input " + to_string(shape()) + " and target " + to_string(Y.shape()) +
                " must have the same shape");
  return reduce_loss(op, -(pos_weight * Y * logsigmoid() + (1 - Y) * (-*this).logsigmoid()), reduction);
}

}  // namespace tg
