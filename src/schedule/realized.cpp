// The scheduler's node-keyed tables, cleaned up as nodes die.
#include "schedule/realized.h"

#include <atomic>
#include <mutex>
#include <unordered_map>

namespace tg {
namespace {

struct Realized {
  std::recursive_mutex mu;
  std::unordered_map<const UOp*, UOpPtr> views;
  std::unordered_map<const UOp*, std::vector<std::weak_ptr<const UOp>>> readers;  // BUFFER -> realized from it
};

Realized& table() {
  static Realized* t = [] {
    auto* t = new Realized();  // never destroyed: nodes may die during static destruction
    UOp::add_destroy_hook([](const UOp* u) {
      UOpPtr view;  // moved out before erasing: dropping it may destroy more nodes, which re-enter this hook
      std::lock_guard<std::recursive_mutex> lock(table().mu);
      if (auto it = table().views.find(u); it != table().views.end()) {
        view = std::move(it->second);
        table().views.erase(it);
      }
      if (u->op == Ops::BUFFER) table().readers.erase(u);
    });
    return t;
  }();
  return *t;
}

std::atomic<int64_t> next_buffer_id{1};

}  // namespace

UOpPtr new_buffer_uop(const std::string& device, int64_t size, DType dtype) {
  auto dev = UOp::make(Ops::DEVICE, dtypes::void_, {}, device);
  return UOp::make(Ops::BUFFER, dtype, {dev}, BufferArg{next_buffer_id++, size});
}

std::string buffer_device(const UOp* u) { return u->src.at(0)->get<std::string>(); }

const UOp* buffer_under(const UOp* view) {
  while (view->op == Ops::VIEW && !view->src.empty()) view = view->src[0].get();
  return view->op == Ops::BUFFER ? view : nullptr;
}

void set_realized(const UOpPtr& node, const UOpPtr& view, std::span<const UOpPtr> reads) {
  auto& t = table();
  std::lock_guard<std::recursive_mutex> lock(t.mu);
  t.views[node.get()] = view;
  for (const UOpPtr& b : reads) {
    auto& list = t.readers[b.get()];
    if (list.size() >= 16 && (list.size() & (list.size() - 1)) == 0)  // at each power of two: drop the dead ones
      std::erase_if(list, [](const std::weak_ptr<const UOp>& w) { return w.expired(); });
    list.push_back(node);
  }
}

UOpPtr realized(const UOp* node) {
  auto& t = table();
  std::lock_guard<std::recursive_mutex> lock(t.mu);
  auto it = t.views.find(node);
  return it == t.views.end() ? nullptr : it->second;
}

void buffers_overwritten(std::span<const UOpPtr> buffers) {
  std::vector<std::weak_ptr<const UOp>> stale;
  {
    auto& t = table();
    std::lock_guard<std::recursive_mutex> lock(t.mu);
    if (t.readers.empty()) return;
    for (const UOpPtr& b : buffers)
      if (auto it = t.readers.find(b.get()); it != t.readers.end()) {
        stale.insert(stale.end(), it->second.begin(), it->second.end());
        t.readers.erase(it);
      }
  }
  for (const auto& w : stale)  // (outside the lock: dropping a node may run the destroy hook)
    if (UOpPtr n = w.lock()) UOp::unintern(*n);
}

}  // namespace tg
