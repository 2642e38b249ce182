// The autograd API of Tensor: requires_grad and the registry of tensors that want gradients, backward(),
// gradient(), grad()/set_grad() and detach(). The rules themselves are in gradient_rules.cpp.
#include <algorithm>
#include <mutex>
#include <unordered_set>

#include "engine/buffers.h"
#include "tensor/tensor_internal.h"

namespace tg {
namespace {

// The registry: weak references, so a tensor that dies simply drops out. Pruned whenever it doubles. Entries
// are type-erased because Tensor::Data is private to Tensor; only Data's members turn them back.
struct GradRegistry {
  std::mutex mu;
  std::vector<std::weak_ptr<void>> entries;
  size_t prune_at = 64;
};

GradRegistry& registry() {
  static auto* r = new GradRegistry();  // never destroyed: tensors may die during static destruction
  return *r;
}

}  // namespace

Tensor::Data::GradFlag& Tensor::Data::GradFlag::operator=(bool on) {
  if (on && !on_) {
    // A Data is always owned by a shared_ptr once constructed; one set in its constructor is not yet.
    if (auto w = owner_->weak_from_this(); !w.expired()) {
      GradRegistry& r = registry();
      std::lock_guard<std::mutex> lock(r.mu);
      if (r.entries.size() >= r.prune_at) {
        std::erase_if(r.entries, [](const std::weak_ptr<void>& e) { return e.expired(); });
        r.prune_at = std::max<size_t>(64, 2 * r.entries.size());
      }
      r.entries.push_back(std::move(w));
    }
  }
  on_ = on;
  return *this;
}

std::vector<std::shared_ptr<Tensor::Data>> Tensor::Data::requiring_grad() {
  GradRegistry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  std::vector<std::shared_ptr<Data>> live;
  std::unordered_set<const Data*> seen;  // a flag turned off and on again is listed twice
  std::erase_if(r.entries, [](const std::weak_ptr<void>& e) { return e.expired(); });
  for (auto& e : r.entries)
    if (auto d = std::static_pointer_cast<Data>(e.lock()); d && d->requires_grad && seen.insert(d.get()).second)
      live.push_back(std::move(d));
  return live;
}

bool Tensor::requires_grad() const { return d_->requires_grad; }

Tensor& Tensor::requires_grad_(bool on) {
  d_->requires_grad = on;
  return *this;
}

namespace {

// d(root)/d(root): the given gradient (checked and cast to the root's dtype), or ones for a scalar root.
Tensor root_gradient(const char* op, const Tensor& root, const std::optional<Tensor>& gradient) {
  if (!gradient) {
    if (root.numel() != 1)
      throw Error(std::string(op) + ": the tensor has shape " + to_string(root.shape()) +
                  "; without a gradient argument it must be a scalar (one element)");
    return root.ones_like();
  }
  if (gradient->shape() != root.shape())
    throw Error(std::string(op) + ": gradient of shape " + to_string(gradient->shape()) +
                " does not match the tensor's shape " + to_string(root.shape()));
  if (gradient->device() != root.device())
    throw Error(std::string(op) + ": gradient is on " + gradient->device() + ", the tensor on " + root.device());
  return gradient->cast(root.dtype());
}

}  // namespace

Tensor& Tensor::backward(const std::optional<Tensor>& gradient) {
  const UOpPtr& root = uop();
  // The leaves: registered tensors whose node (or the node realized into it) is part of this graph.
  std::unordered_set<const UOp*> in_graph;
  for (const UOp* u : toposort(root)) {
    in_graph.insert(u);
    if (UOpPtr r = realized(u)) in_graph.insert(r.get());
  }
  std::vector<std::shared_ptr<Data>> leaves;
  std::vector<UOpPtr> targets;
  for (auto& d : Data::requiring_grad()) {
    // Read without writing: the tensor may belong to another thread (a realized node counts as its buffer view).
    UOpPtr u = d->uop_snapshot();
    if (UOpPtr r = realized(u.get())) u = std::move(r);
    if (!in_graph.count(u.get())) continue;
    leaves.push_back(d);
    targets.push_back(u);
  }
  if (leaves.empty()) {
    bool realized_root = root->op == Ops::VIEW && root->src[0]->op == Ops::BUFFER;
    throw Error("backward: no tensor requires grad in the graph of this tensor of shape " + to_string(shape()) +
                (realized_root ? " (it is realized, so its graph is gone: call backward() before realize())"
                               : " (create leaves with {.requires_grad = true} or call requires_grad_())"));
  }
  Tensor g0 = root_gradient("backward", *this, gradient);
  std::vector<std::optional<Tensor>> grads = compute_gradient(*this, g0, targets);
  for (size_t i = 0; i < leaves.size(); i++) {
    if (!grads[i]) continue;  // reachable only through a detach
    Data& leaf = *leaves[i];
    Tensor g = *grads[i];
    if (leaf.grad) {
      Tensor old(nullptr, "");
      old.d_ = leaf.grad;
      g = old + g;
    }
    leaf.grad = g.d_;
  }
  return *this;
}

std::vector<Tensor> Tensor::gradient(const std::vector<Tensor>& targets, const std::optional<Tensor>& gradient) const {
  Tensor g0 = root_gradient("gradient", *this, gradient);
  std::vector<UOpPtr> uops;
  for (const auto& t : targets) uops.push_back(t.uop());
  std::vector<std::optional<Tensor>> grads = compute_gradient(*this, g0, uops);
  std::vector<Tensor> out;
  for (size_t i = 0; i < targets.size(); i++) {
    if (!grads[i] && targets[i].numel() == 0) {  // an empty target (cat drops it from the graph): an empty gradient
      out.push_back(Tensor::zeros(targets[i].shape(), {.dtype = targets[i].dtype(), .device = targets[i].device()}));
      continue;
    }
    if (!grads[i])
      throw Error("gradient: target " + std::to_string(i) + " (shape " + to_string(targets[i].shape()) +
                  ") is not part of the graph of this tensor, or only behind a detach");
    out.push_back(*grads[i]);
  }
  return out;
}

Tensor Tensor::grad() const {
  if (!d_->grad)
    throw Error("grad: this tensor of shape " + to_string(shape()) +
                " has no gradient (set requires_grad and call backward() on a loss that depends on it)");
  Tensor g(nullptr, "");
  g.d_ = d_->grad;
  return g;
}

bool Tensor::has_grad() const { return d_->grad != nullptr; }

void Tensor::set_grad(const std::optional<Tensor>& g) {
  if (!g) {
    d_->grad.reset();
    return;
  }
  if (g->shape() != shape())
    throw Error("set_grad: gradient of shape " + to_string(g->shape()) + " does not match the tensor's shape " +
                to_string(shape()));
  d_->grad = g->d_;
}

Tensor Tensor::detach() const { return Tensor(UOp::make(Ops::DETACH, dtype(), {uop()}), device()); }

}  // namespace tg
