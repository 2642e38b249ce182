// BUFFER node -> Buffer, cleaned up as nodes die.
#include "engine/buffers.h"

#include <mutex>
#include <unordered_map>

#include "tg/error.h"

namespace tg {
namespace {

struct Buffers {
  std::recursive_mutex mu;
  std::unordered_map<const UOp*, std::shared_ptr<Buffer>> of;
};

Buffers& table() {
  static Buffers* t = [] {
    auto* t = new Buffers();  // never destroyed: nodes may die during static destruction
    UOp::add_destroy_hook([](const UOp* u) {
      std::shared_ptr<Buffer> buf;  // moved out before erasing (freeing it must not run under the map's lock)
      std::lock_guard<std::recursive_mutex> lock(table().mu);
      if (auto it = table().of.find(u); it != table().of.end()) {
        buf = std::move(it->second);
        table().of.erase(it);
      }
    });
    return t;
  }();
  return *t;
}

UOpPtr register_buffer(std::shared_ptr<Buffer> buf) {
  UOpPtr u = new_buffer_uop(buf->device(), buf->size(), buf->dtype());
  auto& t = table();
  std::lock_guard<std::recursive_mutex> lock(t.mu);
  t.of[u.get()] = std::move(buf);
  return u;
}

}  // namespace

std::shared_ptr<Buffer> buffer_of(const UOp* u) {
  if (u->op != Ops::BUFFER) throw Error("buffer_of: node has no buffer: " + std::string(op_name(u->op)));
  auto& t = table();
  std::lock_guard<std::recursive_mutex> lock(t.mu);
  if (auto it = t.of.find(u); it != t.of.end()) return it->second;
  auto b = std::make_shared<Buffer>(buffer_device(u), u->get<BufferArg>().size, u->dtype);  // may throw: no entry
  t.of[u] = b;
  return b;
}

UOpPtr new_external_buffer_uop(const std::string& device, int64_t size, DType dtype, void* data,
                               std::shared_ptr<const void> owner) {
  return register_buffer(std::make_shared<Buffer>(device, size, dtype, data, std::move(owner)));
}

UOpPtr new_read_only_buffer_uop(const std::string& device, int64_t size, DType dtype, const void* data,
                                std::shared_ptr<const void> owner) {
  return register_buffer(Buffer::read_only_view(device, size, dtype, data, std::move(owner)));
}

}  // namespace tg
