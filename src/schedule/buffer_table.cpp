// The node-keyed side tables, cleaned up as nodes die.
#include "schedule/buffer_table.h"

#include <atomic>
#include <mutex>
#include <unordered_map>

#include "tg/error.h"

namespace tg {
namespace {

struct Tables {
  std::recursive_mutex mu;
  std::unordered_map<const UOp*, std::shared_ptr<Buffer>> buffers;
  std::unordered_map<const UOp*, UOpPtr> realized;
};

Tables& tables() {
  static Tables* t = [] {
    auto* t = new Tables();  // never destroyed: nodes may die during static destruction
    UOp::destroy_hook = [](const UOp* u) {
      // Move values out before erasing: dropping them may destroy more nodes, which re-enter this hook.
      std::shared_ptr<Buffer> buf;
      UOpPtr view;
      {
        std::lock_guard<std::recursive_mutex> lock(tables().mu);
        if (auto it = tables().buffers.find(u); it != tables().buffers.end()) {
          buf = std::move(it->second);
          tables().buffers.erase(it);
        }
        if (auto it = tables().realized.find(u); it != tables().realized.end()) {
          view = std::move(it->second);
          tables().realized.erase(it);
        }
      }
    };
    return t;
  }();
  return *t;
}

std::atomic<int64_t> next_buffer_id{1};

}  // namespace

UOpPtr new_buffer_uop(const std::string& device, int64_t size, DType dtype) {
  auto dev = UOp::make(Ops::DEVICE, dtypes::void_, {}, device);
  auto u = UOp::make(Ops::BUFFER, dtype, {dev}, BufferArg{next_buffer_id++, size});
  auto& t = tables();
  std::lock_guard<std::recursive_mutex> lock(t.mu);
  t.buffers[u.get()] = std::make_shared<Buffer>(device, size, dtype);
  return u;
}

namespace {

UOpPtr register_buffer(std::shared_ptr<Buffer> buf) {
  auto dev = UOp::make(Ops::DEVICE, dtypes::void_, {}, buf->device());
  auto u = UOp::make(Ops::BUFFER, buf->dtype(), {dev}, BufferArg{next_buffer_id++, buf->size()});
  auto& t = tables();
  std::lock_guard<std::recursive_mutex> lock(t.mu);
  t.buffers[u.get()] = std::move(buf);
  return u;
}

}  // namespace

UOpPtr new_external_buffer_uop(int64_t size, DType dtype, const void* data, std::shared_ptr<const void> owner) {
  return register_buffer(std::make_shared<Buffer>(size, dtype, data, std::move(owner)));  // checks come first
}

UOpPtr new_external_buffer_uop(const std::string& device, int64_t size, DType dtype, void* data,
                               std::shared_ptr<const void> owner) {
  return register_buffer(std::make_shared<Buffer>(device, size, dtype, data, std::move(owner)));
}

std::shared_ptr<Buffer> buffer_of(const UOp* u) {
  auto& t = tables();
  std::lock_guard<std::recursive_mutex> lock(t.mu);
  auto it = t.buffers.find(u);
  if (it == t.buffers.end()) throw Error("buffer_of: node has no buffer: " + std::string(op_name(u->op)));
  return it->second;
}

std::string buffer_device(const UOp* u) { return u->src.at(0)->get<std::string>(); }

void set_realized(const UOpPtr& node, const UOpPtr& view) {
  auto& t = tables();
  std::lock_guard<std::recursive_mutex> lock(t.mu);
  t.realized[node.get()] = view;
}

UOpPtr realized(const UOp* node) {
  auto& t = tables();
  std::lock_guard<std::recursive_mutex> lock(t.mu);
  auto it = t.realized.find(node);
  return it == t.realized.end() ? nullptr : it->second;
}

}  // namespace tg
