// The table of hand-written gradients (see custom_gradient.h): weak references to the nodes, so an entry
// dies with its node; expired entries are pruned whenever the table doubles.
#include "tensor/custom_gradient.h"

#include <algorithm>
#include <mutex>
#include <unordered_map>

namespace tg {
namespace {

struct Entry {
  std::weak_ptr<const UOp> node;  // a new node at a freed address is not this one
  std::shared_ptr<const CustomGradient> grad;
};

struct Table {
  std::mutex mu;
  std::unordered_map<const UOp*, Entry> entries;
  size_t prune_at = 64;
};

Table& table() {
  static auto* t = new Table();  // never destroyed: tensors may die during static destruction
  return *t;
}

}  // namespace

void set_custom_gradient(const Tensor& out, const std::vector<Tensor>& inputs, GradientFn fn) {
  const UOpPtr& node = out.uop();
  CustomGradient g{{}, {}, std::move(fn)};
  for (const Tensor& in : inputs) {
    g.inputs.push_back(in.uop());
    g.devices.push_back(in.device());
  }
  auto grad = std::make_shared<const CustomGradient>(std::move(g));
  Table& t = table();
  std::lock_guard<std::mutex> lock(t.mu);
  if (t.entries.size() >= t.prune_at) {
    std::erase_if(t.entries, [](const auto& e) { return e.second.node.expired(); });
    t.prune_at = std::max<size_t>(64, 2 * t.entries.size());
  }
  t.entries[node.get()] = Entry{node, std::move(grad)};
}

std::shared_ptr<const CustomGradient> custom_gradient(const UOp* node) {
  Table& t = table();
  std::lock_guard<std::mutex> lock(t.mu);
  auto it = t.entries.find(node);
  if (it == t.entries.end()) return nullptr;
  if (it->second.node.lock().get() != node) {
    t.entries.erase(it);
    return nullptr;
  }
  return it->second.grad;
}

}  // namespace tg
