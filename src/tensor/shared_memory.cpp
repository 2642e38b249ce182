// Memory shared with other libraries without a copy: Tensor::memory() hands out a realized tensor's buffer
// (what DLPack and numpy's buffer protocol export), Tensor::from_blob wraps another library's array as a
// buffer that kernels read and write in place (what they import).
#include <cstdlib>
#include <string>

#include "engine/buffers.h"
#include "engine/device_facts.h"
#include "tensor/tensor_internal.h"

namespace tg {
namespace {

// A realized tensor that is one strided window of a buffer: VIEW(BUFFER) through one view without a mask.
bool is_strided_buffer_view(const UOpPtr& u) {
  return u->op == Ops::VIEW && u->src.at(0)->op == Ops::BUFFER && u->get<ShapeTracker>().views.size() == 1 &&
         !u->get<ShapeTracker>().views[0].mask;
}

SharedMemory shareable_memory(const char* op, const std::string& device) {
  std::optional<SharedMemory> where = device_shared_memory(device);
  if (!where)
    throw Error(std::string(op) + ": tensors on " + device +
                " cannot share memory with other code (its buffers are its own); move the tensor to CPU first");
  return *where;
}

// a * b + c for element counts, or an error instead of a silent overflow.
int64_t checked_mul_add(const char* op, int64_t a, int64_t b, int64_t c) {
  int64_t m = 0, r = 0;
  if (__builtin_mul_overflow(a, b, &m) || __builtin_add_overflow(m, c, &r))
    throw Error(std::string(op) + ": the strides reach past the addressable range (overflow)");
  return r;
}

}  // namespace

MemoryView Tensor::memory() {
  realize();
  UOpPtr u = uop();
  if (!is_strided_buffer_view(u)) u = contiguous().realize().uop();  // a padded view: a copy is all we can share
  if (!is_strided_buffer_view(u)) throw Error("memory: the realized tensor is not a view of a buffer");
  std::shared_ptr<Buffer> buf = buffer_of(u->src[0].get());
  const SharedMemory where = shareable_memory("memory", buf->device());
  const View& v = u->get<ShapeTracker>().views[0];
  auto* base = static_cast<char*>(buf->ensure_allocated());
  // Another library may read it on another stream or thread: finish what is queued on the device first.
  if (!where.host()) synchronize_device(buf->device());
  MemoryView m;
  m.data = numel() == 0 ? base : base + v.offset * dtype().itemsize();
  m.dtype = dtype();
  m.shape = v.shape;
  m.strides = v.strides;
  m.device = buf->device();
  m.device_type = where.dlpack_type;
  m.device_id = where.ordinal;
  m.readonly = buf->readonly();
  m.owner = buf;  // the Buffer outlives every tensor that drops it while the memory is in use elsewhere
  return m;
}

Tensor Tensor::from_blob(void* data, const Shape& shape, DType dtype, const std::string& device,
                         std::shared_ptr<const void> owner, std::optional<Shape> strides) {
  const char* op = "from_blob";
  std::string dev_name = device_or_default(device);
  shareable_memory(op, dev_name);
  for (int64_t d : shape)
    if (d < 0) throw Error(std::string(op) + ": negative dimension in shape " + to_string(shape));
  if (dtype.ptr || dtype.scalar == Scalar::Void)
    throw Error(std::string(op) + ": cannot wrap elements of " + dtype.repr() + " (need a value dtype)");
  Shape st = strides ? *strides : strides_for_shape(shape);
  if (st.size() != shape.size())
    throw Error(std::string(op) + ": " + std::to_string(st.size()) + " strides " + to_string(st) + " for shape " +
                to_string(shape) + " (expected one per dim)");
  int64_t n = tg::prod(shape);
  if (n == 0) return Tensor::empty(shape, {.dtype = dtype, .device = dev_name});
  if (!data) throw Error(std::string(op) + ": null data for shape " + to_string(shape));
  // The elements span [lo, hi] around `data` (negative strides reach below it); the buffer starts at lo.
  int64_t lo = 0, hi = 0;
  for (size_t k = 0; k < shape.size(); k++) {
    if (shape[k] == 1) continue;
    (st[k] < 0 ? lo : hi) = checked_mul_add(op, st[k], shape[k] - 1, st[k] < 0 ? lo : hi);
  }
  if (!owner) owner = std::make_shared<int>(0);  // the caller keeps data alive; the Buffer still wants a token
  void* start = static_cast<char*>(data) + lo * dtype.itemsize();
  UOpPtr buf = new_external_buffer_uop(dev_name, checked_mul_add(op, 1, hi - lo, 1), dtype, start, std::move(owner));
  ShapeTracker view{{View::create(shape, st, -lo)}};
  return Tensor(make_view(buf, view), dev_name);
}

}  // namespace tg
