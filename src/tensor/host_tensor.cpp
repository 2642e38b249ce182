// Tensors over file bytes: a read-only HOST Buffer over the mapping, viewed to a shape, copied to the
// compute device by the schedule when first used.
#include "tensor/host_tensor.h"

#include <cstring>

#include "engine/buffers.h"
#include "engine/device_facts.h"
#include "tensor/tensor_internal.h"

namespace tg {

std::string load_device(const std::string& device) {
  return canonical_device(device.empty() ? default_device() : device);
}

Tensor external_tensor(const void* data, DType dtype, const Shape& shape, std::shared_ptr<const void> owner) {
  auto buf = new_read_only_buffer_uop("HOST", tg::prod(shape), dtype, data, std::move(owner));
  return Tensor(make_view(buf, ShapeTracker::from_shape(shape)), "HOST");
}

Tensor file_tensor(const void* data, DType dtype, const Shape& shape, std::shared_ptr<const void> owner,
                   const std::string& device) {
  // On a device whose memory is host memory (CPU) the kernels read the mapping in place: no copy, no page of
  // anonymous memory per 4 KiB loaded (SmolLM2's 96 MB took 190 ms that way); the first write copies
  // (Buffer::read_only_view). Elements at a misaligned address are copied as before.
  if (device != "HOST" && device_shared_memory(device).value_or(SharedMemory{0, 0}).host() &&
      reinterpret_cast<uintptr_t>(data) % uintptr_t(dtype.itemsize()) == 0) {
    auto buf = new_read_only_buffer_uop(device, tg::prod(shape), dtype, data, std::move(owner));
    return Tensor(make_view(buf, ShapeTracker::from_shape(shape)), device);
  }
  Tensor t = external_tensor(data, dtype, shape, std::move(owner));
  return device == "HOST" ? t : t.to(device);
}

Tensor strided_view(const Tensor& flat, const Shape& shape, const Shape& strides, int64_t offset) {
  // A View can say exactly this (it is what movement ops build); composing it over the tensor's own
  // tracker keeps it right even when `flat` is already a view of a realized buffer.
  ShapeTracker st{{View::create(shape, strides, offset)}};
  const UOpPtr& u = flat.uop();
  return Tensor(make_view(u, (tracker_of(u) + st).simplify()), flat.device());
}

namespace {

bool view_of_buffer(const UOpPtr& u) { return u->op == Ops::VIEW && u->src.at(0)->op == Ops::BUFFER; }

bool dense_buffer_view(const UOpPtr& u) {
  if (!view_of_buffer(u)) return false;
  const ShapeTracker& st = u->get<ShapeTracker>();
  const View& v = st.views.back();
  return st.views.size() == 1 && !v.mask && v.strides == strides_for_shape(v.shape) &&
         v.offset + tg::prod(v.shape) <= u->src[0]->get<BufferArg>().size;
}

}  // namespace

bool is_dense_buffer_view(const Tensor& t) { return dense_buffer_view(t.uop()); }

bool is_buffer_view(const Tensor& t) { return view_of_buffer(t.uop()); }

Tensor host_view_to(const Tensor& t, const std::string& device) {
  UOpPtr u = t.uop();
  if (t.device() != "HOST" || !view_of_buffer(u)) return t.to(device);
  // Copy the whole buffer (a HOST view cannot be made contiguous in place), then view it again there.
  const UOpPtr& buf = u->src[0];
  Tensor whole = Tensor(make_view(buf, ShapeTracker::from_shape({buf->get<BufferArg>().size})), "HOST").to(device);
  const UOpPtr& w = whole.uop();
  return Tensor(make_view(w, (tracker_of(w) + u->get<ShapeTracker>()).simplify()), whole.device());
}

std::vector<uint8_t> tensor_bytes(const Tensor& t) {
  if (t.numel() == 0) return {};
  Tensor c = t;
  if (!dense_buffer_view(c.uop())) {
    if (c.device() == "HOST") c = host_view_to(c, default_device());  // HOST runs no kernels
    c = c.contiguous();
    c.realize();
  }
  UOpPtr u = c.uop();
  if (!dense_buffer_view(u))
    throw Error("tensor_bytes: realized tensor is not a dense view of a buffer: " + std::string(op_name(u->op)));
  const View& v = u->get<ShapeTracker>().views.back();
  auto buf = buffer_of(u->src[0].get());
  size_t item = size_t(t.dtype().itemsize()), n = size_t(c.numel()) * item, start = size_t(v.offset) * item;
  std::vector<uint8_t> all(buf->nbytes());
  buf->copyout(all.data(), all.size());
  if (start == 0 && n == all.size()) return all;
  return std::vector<uint8_t>(all.begin() + std::ptrdiff_t(start), all.begin() + std::ptrdiff_t(start + n));
}

}  // namespace tg
