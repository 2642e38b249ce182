// TinyJit's memory planner: engine/memory_planner.h.
#include "engine/memory_planner.h"

#include <algorithm>
#include <map>
#include <unordered_map>
#include <unordered_set>

#include "engine/buffers.h"
#include "runtime/device.h"

namespace tg {
namespace {

constexpr int64_t kAlign = 256;

struct Life {
  UOpPtr node;
  size_t first = 0, last = 0, uses = 0;
  bool written_first = false;
  int64_t bytes = 0;
  int64_t offset = -1;
};

int64_t aligned(int64_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

// First fit of each buffer, largest first, among the placed ones whose lifetimes overlap its own.
int64_t place(std::vector<Life*>& lives) {
  std::stable_sort(lives.begin(), lives.end(), [](const Life* a, const Life* b) { return a->bytes > b->bytes; });
  int64_t arena = 0;
  std::vector<Life*> placed;
  for (Life* l : lives) {
    std::vector<std::pair<int64_t, int64_t>> taken;  // [offset, end) of overlapping lifetimes
    for (const Life* p : placed)
      if (p->first <= l->last && l->first <= p->last) taken.push_back({p->offset, p->offset + aligned(p->bytes)});
    std::sort(taken.begin(), taken.end());
    int64_t at = 0;
    for (auto [b, e] : taken) {
      if (at + aligned(l->bytes) <= b) break;
      at = std::max(at, e);
    }
    l->offset = at;
    arena = std::max(arena, at + aligned(l->bytes));
    placed.push_back(l);
  }
  return arena;
}

}  // namespace

MemoryPlanStats plan_memory(const std::vector<ScheduleItem>& items, const std::vector<UOpPtr>& keep) {
  std::unordered_set<const UOp*> kept;
  for (const UOpPtr& k : keep) kept.insert(k.get());
  std::unordered_map<const UOp*, Life> lives;
  for (size_t i = 0; i < items.size(); i++) {
    for (size_t j = 0; j < items[i].bufs.size(); j++) {
      const UOpPtr& u = items[i].bufs[j];
      auto [it, fresh] = lives.try_emplace(u.get());
      Life& l = it->second;
      if (fresh) l.node = u, l.first = i, l.written_first = j < items[i].outputs;
      l.last = i;
      l.uses++;
    }
  }
  std::map<std::string, std::vector<Life*>> by_device;
  for (auto& [u, l] : lives) {
    // held by: each use in the items, this table's copy, and nothing else
    if (kept.count(u) || !l.written_first || l.node.use_count() != long(l.uses) + 1) continue;
    std::shared_ptr<Buffer> b = buffer_of(u);
    if (b->external() || b->nbytes() == 0) continue;
    Device& dev = get_device(b->device());
    if (!dev.executes() || dev.memory_space() == Device::MemorySpace::Private) continue;
    l.bytes = int64_t(b->nbytes());
    by_device[b->device()].push_back(&l);
  }
  MemoryPlanStats stats;
  for (auto& [device, group] : by_device) {
    if (group.size() < 2) continue;  // one buffer shares with nothing
    const int64_t arena_bytes = place(group);
    int64_t before = 0;
    for (const Life* l : group) before += aligned(l->bytes);
    if (arena_bytes >= before) continue;  // every lifetime overlaps: nothing to win
    auto arena = std::make_shared<Buffer>(device, arena_bytes, dtypes::uint8);
    auto* base = static_cast<uint8_t*>(arena->ensure_allocated());
    for (const Life* l : group) {
      buffer_of(l->node.get())->rebase(base + l->offset, arena);
      stats.buffers++;
      stats.bytes += l->bytes;
    }
    stats.arena_bytes += arena_bytes;
  }
  return stats;
}

}  // namespace tg
