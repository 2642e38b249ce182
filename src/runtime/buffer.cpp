// Buffer: lazily allocated device memory for `size` elements of a dtype.
#include "runtime/buffer.h"

#include <cstring>

#include "runtime/device.h"
#include "tg/error.h"

namespace tg {

Buffer::Buffer(std::string device, int64_t size, DType dtype)
    : device_(canonical_device(device)), size_(size), dtype_(dtype) {
  if (size < 0) throw Error("Buffer: negative size " + std::to_string(size) + " on " + device_);
  if (dtype.ptr || dtype.scalar == Scalar::Void)
    throw Error("Buffer: cannot hold elements of " + dtype.repr() + " (need a value dtype)");
}

Buffer::Buffer(std::string device, int64_t size, DType dtype, void* external, std::shared_ptr<const void> owner)
    : Buffer(std::move(device), size, dtype) {
  if (!owner) throw Error("Buffer: external memory needs an owner that keeps it alive");
  if (!external && nbytes() > 0)
    throw Error("Buffer: external memory of " + std::to_string(nbytes()) + " bytes is null");
  ptr_ = external;
  owner_ = std::move(owner);
}

std::shared_ptr<Buffer> Buffer::read_only_view(std::string device, int64_t size, DType dtype, const void* external,
                                               std::shared_ptr<const void> owner) {
  auto b = std::make_shared<Buffer>(std::move(device), size, dtype, const_cast<void*>(external), std::move(owner));
  std::optional<SharedMemory> where = shared_memory_of(b->device_);
  if (!where || !where->host())
    throw Error("Buffer: a read-only view of host memory on " + b->device_ + ", whose memory is not host memory");
  b->readonly_ = true;  // (const_cast above: ensure_writable copies before anything writes)
  return b;
}

Buffer::~Buffer() {
  if (!owns_ptr_) return;  // external memory belongs to owner_
  // The device was opened when ptr_ was allocated, so this lookup cannot fail.
  get_device(device_).allocator().free(ptr_, alloc_bytes());
  ptr_ = nullptr;
}

void Buffer::rebase(void* memory, std::shared_ptr<const void> owner) {
  if (!memory) throw Error("Buffer::rebase: null memory for a buffer of " + std::to_string(nbytes()) + " bytes");
  if (owns_ptr_) get_device(device_).allocator().free(ptr_, alloc_bytes());
  ptr_ = memory;
  owns_ptr_ = false;
  owner_ = std::move(owner);
}

void* Buffer::ensure_allocated() {
  if (!ptr_) {  // (an empty external buffer has no memory of its own either: it gets a block like any other)
    ptr_ = get_device(device_).allocator().alloc(alloc_bytes());
    owns_ptr_ = true;
  }
  return ptr_;
}

void* Buffer::ensure_writable() {
  if (!readonly_) return ensure_allocated();
  if (device_ == "HOST")
    throw Error(
        "Buffer: this HOST buffer is a read-only view of external memory (a mapped file); it cannot be "
        "written");
  void* own = get_device(device_).allocator().alloc(alloc_bytes());
  if (!own) throw Error("Buffer: out of memory on " + device_ + " copying " + std::to_string(nbytes()) + " bytes");
  if (nbytes() > 0) std::memcpy(own, ptr_, nbytes());  // (host memory: read_only_view checked the device)
  ptr_ = own;
  owns_ptr_ = true;
  retired_ = std::move(owner_);  // (views of the old memory handed out before, Tensor::memory, stay valid)
  readonly_ = false;
  return ptr_;
}

void Buffer::copyin(const void* host, size_t bytes) {
  if (bytes != nbytes())
    throw Error("Buffer::copyin: got " + std::to_string(bytes) + " bytes for a buffer of " + std::to_string(size_) +
                " x " + dtype_.repr() + " (" + std::to_string(nbytes()) + " bytes) on " + device_);
  if (bytes == 0) return;
  get_device(device_).allocator().copyin(ensure_writable(), host, bytes);
}

void Buffer::copyout(void* host, size_t bytes) {
  if (bytes != nbytes())
    throw Error("Buffer::copyout: asked for " + std::to_string(bytes) + " bytes from a buffer of " +
                std::to_string(size_) + " x " + dtype_.repr() + " (" + std::to_string(nbytes()) + " bytes) on " +
                device_);
  if (bytes == 0) return;
  if (!ptr_) throw Error("Buffer::copyout: buffer on " + device_ + " was never allocated or written");
  get_device(device_).allocator().copyout(host, ptr_, bytes);
}

}  // namespace tg
