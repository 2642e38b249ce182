#pragma once
// Buffer: device memory for `size` elements of `dtype`, allocated lazily on first use.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "tg/dtype.h"

namespace tg {

class Buffer {
 public:
  Buffer(std::string device, int64_t size, DType dtype);
  // A buffer on `device` over writable memory of that device it does not own (another library's array,
  // shared through Tensor::from_blob): kernels read and write it in place; `owner` keeps it alive.
  Buffer(std::string device, int64_t size, DType dtype, void* external, std::shared_ptr<const void> owner);
  // A read-only buffer on `device` (one whose memory is host memory: HOST, CPU) over external memory it does not
  // own (a mapped file's tensor), kept alive by `owner` as long as this Buffer lives. On a computing device
  // kernels read it in place and the first write makes it the buffer's own copy (ensure_writable), so the mapping
  // itself is never written; on HOST writing it is an error.
  static std::shared_ptr<Buffer> read_only_view(std::string device, int64_t size, DType dtype, const void* external,
                                                std::shared_ptr<const void> owner);
  ~Buffer();
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  const std::string& device() const { return device_; }
  int64_t size() const { return size_; }
  DType dtype() const { return dtype_; }
  size_t nbytes() const { return size_t(size_) * size_t(dtype_.itemsize()); }
  bool allocated() const { return ptr_ != nullptr || nbytes() == 0; }
  // An empty buffer still gets a (1-byte) block: kernels take a valid pointer for every buffer, even one
  // they never read (a reduce over 0 elements), and devices need not allocate 0 bytes.
  size_t alloc_bytes() const { return nbytes() > 0 ? nbytes() : 1; }
  bool external() const { return owner_ != nullptr; }
  bool readonly() const { return readonly_; }

  void* ensure_allocated();                     // allocates on the device if needed
  // ensure_allocated, for a buffer about to be written: a read-only view on a computing device becomes a copy of
  // its contents in memory of its own first (a HOST file view stays read-only: throws).
  void* ensure_writable();
  // Moves this buffer into memory of the same device it does not own (a slice of a memory planner's arena, kept
  // alive by `owner`): its own block goes back to the allocator. The contents are not copied.
  void rebase(void* memory, std::shared_ptr<const void> owner);
  void* ptr() const { return ptr_; }
  void copyin(const void* host, size_t bytes);  // bytes must equal nbytes()
  void copyout(void* host, size_t bytes);       // bytes must equal nbytes()

 private:
  std::string device_;
  int64_t size_;
  DType dtype_;
  void* ptr_ = nullptr;
  std::shared_ptr<const void> owner_;  // set for external memory
  std::shared_ptr<const void> retired_;  // a read-only view's memory after its first write (ensure_writable)
  bool owns_ptr_ = false;              // ptr_ came from the device's allocator (is freed back to it)
  bool readonly_ = false;              // external memory that must not be written (a file mapping)
};

}  // namespace tg
