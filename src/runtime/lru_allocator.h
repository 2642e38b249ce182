#pragma once
// LRUAllocator: wraps a device's raw allocator and keeps freed blocks, by exact size, for reuse. Tensors
// of a training step allocate and free the same sizes over and over; reusing skips malloc/cudaMalloc.
// It also keeps GlobalCounters::mem_used equal to the bytes handed out and not yet freed (cached blocks
// are not "used").
#include <cstddef>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "runtime/device.h"

namespace tg {

class LRUAllocator : public Allocator {
 public:
  explicit LRUAllocator(std::unique_ptr<Allocator> inner);
  ~LRUAllocator() override;  // returns every cached block to the inner allocator

  // A cached block of exactly `bytes` if there is one, else a new one. When the inner allocator fails,
  // the cache is emptied and the allocation tried once more before giving up.
  void* alloc(size_t bytes) override;
  // Keeps the block for reuse (unless LRU=0 in the environment, then frees it at once).
  void free(void* ptr, size_t bytes) override;
  void copyin(void* dst, const void* host_src, size_t bytes) override { inner_->copyin(dst, host_src, bytes); }
  void copyout(void* host_dst, const void* src, size_t bytes) override { inner_->copyout(host_dst, src, bytes); }
  // Device-to-device copies are the inner allocator's (false where it has none).
  bool transfer(void* dst, const void* src, size_t bytes, Device& src_dev) override {
    return inner_->transfer(dst, src, bytes, src_dev);
  }

  // Return all cached blocks to the inner allocator.
  void free_cache();
  size_t cached_bytes() const;
  Allocator& inner() { return *inner_; }

 private:
  void free_cache_locked();

  std::unique_ptr<Allocator> inner_;
  mutable std::mutex mu_;
  std::unordered_map<size_t, std::vector<void*>> cache_;  // size -> free blocks, most recent last
  size_t cached_bytes_ = 0;
};

}  // namespace tg
