// TinyJit's memory planner: engine/memory_planner.h.
#include "engine/memory_planner.h"

#include <algorithm>
#include <map>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "engine/buffers.h"
#include "runtime/device.h"
#include "tg/context.h"

namespace tg {
namespace {

constexpr int64_t kAlign = 256;
ContextVar MEMORY_POISON("MEMORY_POISON", 0);  // poison_if_asked

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
  // (equal sizes in order of first use: first fit over intervals in that order takes the fewest slots)
  std::sort(lives.begin(), lives.end(), [](const Life* a, const Life* b) {
    return a->bytes != b->bytes ? a->bytes > b->bytes : a->first < b->first;
  });
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

namespace {

// Each buffer's lifetime in `items`: from its first use to its last, both included.
std::unordered_map<const UOp*, Life> lifetimes(const std::vector<ScheduleItem>& items) {
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
  return lives;
}

// Whether the buffer of a planned-to-be node can live in an arena: first written by a kernel, with its own
// memory on a device of plain memory (not the interpreter's checked allocations), not empty.
bool plannable(const Life& l) {
  if (!l.written_first) return false;
  std::shared_ptr<Buffer> b = buffer_of(l.node.get());
  if (b->external() || b->nbytes() == 0) return false;
  Device& dev = get_device(b->device());
  return dev.executes() && dev.shared_memory().has_value();
}

// Places each device's group in one arena where that saves memory, and moves the buffers into it.
MemoryPlanStats place_in_arenas(std::map<std::string, std::vector<Life*>>& by_device) {
  MemoryPlanStats stats;
  for (auto& [device, group] : by_device) {
    if (group.size() < 2) continue;  // one buffer shares with nothing
    for (Life* l : group) l->bytes = int64_t(buffer_of(l->node.get())->nbytes());
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
    stats.arenas.push_back(std::move(arena));
  }
  return stats;
}

}  // namespace

void poison_if_asked(const MemoryPlanStats& stats) {
  if (stats.arenas.empty() || MEMORY_POISON <= 0) return;
  for (const auto& arena : stats.arenas) {
    get_device(arena->device()).synchronize();  // (a replay's kernels may still run)
    std::vector<uint8_t> ones(arena->nbytes(), 0xff);
    arena->copyin(ones.data(), ones.size());
  }
}

MemoryPlanStats plan_memory(const std::vector<ScheduleItem>& items, const std::vector<UOpPtr>& keep) {
  std::unordered_set<const UOp*> kept;
  for (const UOpPtr& k : keep) kept.insert(k.get());
  std::unordered_map<const UOp*, Life> lives = lifetimes(items);
  std::map<std::string, std::vector<Life*>> by_device;
  for (auto& [u, l] : lives) {
    // held by: each use in the items, this table's copy, and nothing else
    if (kept.count(u) || l.node.use_count() != long(l.uses) + 1 || !plannable(l)) continue;
    by_device[buffer_device(u)].push_back(&l);
  }
  return place_in_arenas(by_device);
}

MemoryPlanStats plan_schedule_memory(const std::vector<ScheduleItem>& items,
                                     const std::unordered_set<const UOp*>& reachable) {
  std::unordered_map<const UOp*, Life> lives = lifetimes(items);
  for (const ScheduleItem& item : items)  // a copy may still read its source while the next kernels run
    if (item.ast->op == Ops::COPY || item.ast->op == Ops::ALLREDUCE)
      for (const UOpPtr& b : item.bufs) lives.erase(b.get());
  std::map<std::string, std::vector<Life*>> by_device;
  for (auto& [u, l] : lives)
    if (!reachable.count(u) && !buffer_of(u)->allocated() && plannable(l)) by_device[buffer_device(u)].push_back(&l);
  return place_in_arenas(by_device);
}

}  // namespace tg
