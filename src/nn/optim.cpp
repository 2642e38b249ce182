// tg::nn::optim: tinygrad's nn/optim.py. Each step builds the update as lazy tensor ops, assigns it to the
// parameters and the optimizer's state, and realizes all of it in one schedule.
#include <cmath>

#include "tg/nn.h"

namespace tg::nn::optim {
namespace {

// A float32 tensor of `shape` filled with `value` that owns its buffer (equal constants are one interned
// UOp; state tensors must not share buffers once realized).
Tensor owned(const Shape& shape, float value, const std::string& device) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  return Tensor(std::vector<float>(size_t(n), value), shape, {.dtype = dtypes::float32, .device = device});
}

// A (1,) hyperparameter tensor viewed with the parameter's rank, so a 0-d parameter stays 0-d.
Tensor like_rank(const Tensor& scalar, const Tensor& t) { return scalar.reshape(Shape(size_t(t.ndim()), 1)); }

}  // namespace

// ---- Optimizer ----
Optimizer::Optimizer(const std::vector<Tensor>& all, double lr_value)
    : lr(owned({1}, float(lr_value), all.empty() ? default_device() : all[0].device())) {
  if (lr_value < 0) throw Error("optimizer: learning rate must be >= 0, got " + std::to_string(lr_value));
  for (const Tensor& t : all) {
    if (t.dtype().is_float()) {
      Tensor p = t;
      p.requires_grad_(true);
      params.push_back(p);
    } else {
      buffers.push_back(t);
    }
  }
  if (params.empty()) throw Error("optimizer: needs at least one float tensor to train, got none");
  // Realize the parameters now: their initial values (random numbers) are computed once, and each becomes a
  // buffer the step's assigns write into.
  std::vector<Tensor> now = params;
  now.insert(now.end(), buffers.begin(), buffers.end());
  now.push_back(lr);
  Tensor::realize_all(now);
}

std::vector<Tensor> Optimizer::new_state() const {
  std::vector<Tensor> out;
  for (const Tensor& p : params) out.push_back(owned(p.shape(), 0, p.device()));
  Tensor::realize_all(out);
  return out;
}

void Optimizer::zero_grad() {
  for (Tensor& p : params) p.set_grad(std::nullopt);
}

std::vector<Tensor> Optimizer::schedule_step() {
  if (!Tensor::training)
    throw Error("optimizer step: Tensor::training is false; it must be set to use the optimizer "
                "(tg::nn::TrainingScope train; or tg::Context ctx({{\"TRAINING\", 1}}); before the step, or env "
                "TRAINING=1)");
  std::vector<size_t> idx;
  std::vector<Tensor> grads;
  for (size_t i = 0; i < params.size(); i++) {
    if (!params[i].has_grad()) continue;  // no gradient (e.g. BatchNorm's running stats): realized as is
    Tensor g = params[i].grad();
    if (g.shape() != params[i].shape())
      throw Error("optimizer step: gradient " + to_string(g.shape()) + " does not match parameter " +
                  to_string(params[i].shape()));
    idx.push_back(i);
    grads.push_back(g);
  }
  std::vector<Tensor> state;
  std::vector<Tensor> updated = update(idx, grads, state);
  for (size_t k = 0; k < idx.size(); k++) params[idx[k]].assign(updated[k].cast(params[idx[k]].dtype()));
  std::vector<Tensor> out = std::move(state);
  out.insert(out.end(), params.begin(), params.end());
  out.insert(out.end(), buffers.begin(), buffers.end());
  return out;
}

void Optimizer::step(const std::vector<Tensor>& also) {
  std::vector<Tensor> todo = schedule_step();
  todo.insert(todo.end(), also.begin(), also.end());
  Tensor::realize_all(todo);
}

// ---- LARS / SGD ----
LARS::LARS(const std::vector<Tensor>& ps, double lr_value, double momentum_, double weight_decay_, bool nesterov_,
           bool classic_, double tcoef_)
    : Optimizer(ps, lr_value), momentum(momentum_), weight_decay(weight_decay_), tcoef(tcoef_), nesterov(nesterov_),
      classic(classic_) {
  if (momentum < 0) throw Error("SGD/LARS: momentum must be >= 0, got " + std::to_string(momentum));
  if (weight_decay < 0) throw Error("SGD/LARS: weight_decay must be >= 0, got " + std::to_string(weight_decay));
  if (momentum != 0) b = new_state();
}

std::vector<Tensor> LARS::update(const std::vector<size_t>& idx, const std::vector<Tensor>& grads,
                                 std::vector<Tensor>& state) {
  std::vector<Tensor> out;
  for (size_t k = 0; k < idx.size(); k++) {
    size_t i = idx[k];
    Tensor t = params[i].detach(), g = grads[k];
    Tensor lr_t = like_rank(lr, t);
    std::optional<Tensor> r;  // the trust ratio; none means 1
    if (tcoef != 0) {
      Tensor r1 = t.square().sum().sqrt(), r2 = g.square().sum().sqrt();
      r = (r1 > 0).where((r2 > 0).where(tcoef * r1 / (r2 + weight_decay * r1), 1.0), 1.0);
    }
    if (weight_decay > 0) g = g + weight_decay * t;
    auto scaled = [&](const Tensor& x) { return r ? x * *r * lr_t : x * lr_t; };
    if (classic) g = scaled(g);  // classic momentum: the learning rate goes into the buffer
    if (momentum != 0) {
      b[i].assign((momentum * b[i] + g).cast(b[i].dtype()));
      g = nesterov ? g + momentum * b[i] : b[i];
    }
    if (!classic) g = scaled(g);
    out.push_back(t - g);
  }
  state = b;
  return out;
}

// ---- LAMB / Adam / AdamW ----
LAMB::LAMB(const std::vector<Tensor>& ps, double lr_value, double b1_, double b2_, double eps_, double weight_decay_,
           bool adam_)
    : Optimizer(ps, lr_value), b1(b1_), b2(b2_), eps(eps_), weight_decay(weight_decay_), adam(adam_),
      b1_t(owned({1}, 1, lr.device())), b2_t(owned({1}, 1, lr.device())) {
  if (weight_decay < 0) throw Error("LAMB/Adam: weight_decay must be >= 0, got " + std::to_string(weight_decay));
  if (b1 < 0 || b1 >= 1 || b2 < 0 || b2 >= 1)
    throw Error("LAMB/Adam: betas must be in [0, 1), got (" + std::to_string(b1) + ", " + std::to_string(b2) + ")");
  Tensor::realize_all({b1_t, b2_t});
  m = new_state();
  v = new_state();
}

std::vector<Tensor> LAMB::update(const std::vector<size_t>& idx, const std::vector<Tensor>& grads,
                                 std::vector<Tensor>& state) {
  // The step count lives in b1^t and b2^t, so the same compiled kernels serve every step.
  b1_t.assign(b1_t * b1);
  b2_t.assign(b2_t * b2);
  std::vector<Tensor> out;
  for (size_t k = 0; k < idx.size(); k++) {
    size_t i = idx[k];
    Tensor t = params[i].detach(), g = grads[k];
    m[i].assign((b1 * m[i] + (1.0 - b1) * g).cast(m[i].dtype()));
    v[i].assign((b2 * v[i] + (1.0 - b2) * (g * g)).cast(v[i].dtype()));
    Tensor m_hat = m[i] / (1.0 - like_rank(b1_t, t)), v_hat = v[i] / (1.0 - like_rank(b2_t, t));
    Tensor up = m_hat / (v_hat.sqrt() + eps);
    if (weight_decay != 0) up = up + weight_decay * t;
    Tensor lr_t = like_rank(lr, t);
    if (!adam) {
      Tensor r1 = t.square().sum().sqrt(), r2 = up.square().sum().sqrt();
      Tensor r = (r1 > 0).where((r2 > 0).where(r1 / r2, 1.0), 1.0);
      out.push_back(t - lr_t * r * up);
    } else {
      out.push_back(t - lr_t * up);
    }
  }
  state = {b1_t, b2_t};
  state.insert(state.end(), m.begin(), m.end());
  state.insert(state.end(), v.begin(), v.end());
  return out;
}

}  // namespace tg::nn::optim
