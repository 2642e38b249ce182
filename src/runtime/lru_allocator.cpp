// LRUAllocator: reuse of freed device blocks by exact size, and the mem_used counter.
#include "runtime/lru_allocator.h"

#include <atomic>
#include <new>
#include <string>

#include "helpers/env.h"
#include "tg/counters.h"
#include "tg/error.h"

namespace tg {
namespace {

void add_mem_used(int64_t delta) {
  const int64_t now = GlobalCounters::mem_used.fetch_add(delta) + delta;
  int64_t peak = GlobalCounters::mem_peak.load();
  while (now > peak && !GlobalCounters::mem_peak.compare_exchange_weak(peak, now)) {
  }
}

bool lru_enabled() {
  static const bool on = getenv_int("LRU", 1) != 0;
  return on;
}

}  // namespace

LRUAllocator::LRUAllocator(std::unique_ptr<Allocator> inner) : inner_(std::move(inner)) {
  if (!inner_) throw Error("LRUAllocator: needs an allocator to wrap");
}

LRUAllocator::~LRUAllocator() {
  std::lock_guard<std::mutex> lock(mu_);
  free_cache_locked();
}

void* LRUAllocator::alloc(size_t bytes) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = cache_.find(bytes);
    if (it != cache_.end() && !it->second.empty()) {
      void* p = it->second.back();
      it->second.pop_back();
      cached_bytes_ -= bytes;
      add_mem_used(int64_t(bytes));
      return p;
    }
  }
  // Cache miss. A failed allocation may succeed once the blocks we hold for other sizes are released.
  for (int attempt = 0; attempt < 2; attempt++) {
    void* p = nullptr;
    try {
      p = inner_->alloc(bytes);
    } catch (const std::bad_alloc&) {
      p = nullptr;
    } catch (const Error&) {
      if (attempt == 1) throw;
      p = nullptr;
    }
    if (p) {
      add_mem_used(int64_t(bytes));
      return p;
    }
    free_cache();
  }
  throw Error("alloc: out of memory allocating " + std::to_string(bytes) + " bytes (cache already emptied)");
}

void LRUAllocator::free(void* ptr, size_t bytes) {
  if (!ptr) return;
  add_mem_used(-int64_t(bytes));
  if (!lru_enabled()) {
    inner_->free(ptr, bytes);
    return;
  }
  std::lock_guard<std::mutex> lock(mu_);
  cache_[bytes].push_back(ptr);
  cached_bytes_ += bytes;
}

void LRUAllocator::free_cache() {
  std::lock_guard<std::mutex> lock(mu_);
  free_cache_locked();
}

void LRUAllocator::free_cache_locked() {
  for (auto& [bytes, blocks] : cache_)
    for (void* p : blocks) inner_->free(p, bytes);
  cache_.clear();
  cached_bytes_ = 0;
}

size_t LRUAllocator::cached_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return cached_bytes_;
}

}  // namespace tg
