// Tensor core: the handle, creation, properties, and running (realize / tolist / item).
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <new>
#include <sstream>
#include <unordered_set>

#include "engine/realize.h"
#include "uop/device_set.h"
#include "engine/buffers.h"
#include "tensor/tensor_internal.h"
#include "uop/exec_alu.h"

namespace tg {

// ---- helpers ----
std::string device_or_default(const std::string& device) {
  return canonical_device(device.empty() ? default_device() : device);
}

bool always_le(const sint& a, const sint& b) {
  if (a.is_int() && b.is_int()) return a.value() <= b.value();
  return (b - a).vmin() >= 0;
}
bool same_size(const sint& a, const sint& b) { return a == b || (a.is_symbolic() || b.is_symbolic() ? (a - b) == 0 : false); }
bool bounds_symbolic(const PadArg& p) {
  return std::any_of(p.begin(), p.end(), [](const auto& be) { return be.first.is_symbolic() || be.second.is_symbolic(); });
}

int64_t normalize_axis(const char* op, int64_t axis, const Shape& shape) {
  int64_t n = int64_t(shape.size());
  int64_t lo = n == 0 ? -1 : -n, hi = n == 0 ? 0 : n - 1;
  if (axis < lo || axis > hi)
    throw Error(std::string(op) + ": axis " + std::to_string(axis) + " is out of range for shape " + to_string(shape) +
                " (expected " + std::to_string(lo) + " <= axis <= " + std::to_string(hi) + ")");
  return axis < 0 ? axis + std::max<int64_t>(n, 1) : axis;
}

void check_host_bytes(const std::string& what, int64_t bytes) {
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page <= 0) return;  // unknown: leave it to the allocator
  int64_t phys = int64_t(pages) * int64_t(page);
  if (bytes > phys)
    throw Error(what + " (" + std::to_string(bytes) + " bytes) do not fit in host memory (" + std::to_string(phys) +
                " bytes)");
}

UOpPtr const_uop(double value, DType dtype, const std::string& device, const Shape& shape) {
  auto dev = UOp::make(Ops::DEVICE, dtypes::void_, {}, device);
  auto c = UOp::make(Ops::CONST, dtype, {dev}, UOp::const_(dtype, value)->arg);
  ShapeTracker st = ShapeTracker::from_shape({});
  if (!shape.empty()) st = st.reshape(Shape(shape.size(), 1)).expand(shape);
  return UOp::make(Ops::VIEW, dtype, {c}, st);
}

UOpPtr const_uop(const ConstValue& value, DType dtype, const std::string& device, const Shape& shape) {
  if (value.kind == dtypes::float32 || !dtype.is_int()) return const_uop(value.value, dtype, device, shape);
  auto dev = UOp::make(Ops::DEVICE, dtypes::void_, {}, device);
  auto c = UOp::make(Ops::CONST, dtype, {dev}, UOp::const_int(value.ivalue, dtype)->arg);
  ShapeTracker st = ShapeTracker::from_shape({});
  if (!shape.empty()) st = st.reshape(Shape(shape.size(), 1)).expand(shape);
  return UOp::make(Ops::VIEW, dtype, {c}, st);
}

// ---- handle ----
Tensor::Tensor(std::shared_ptr<const UOp> uop, std::string device) : d_(std::make_shared<Data>()) {
  d_->uop = std::move(uop);
  d_->device = std::move(device);
}

const std::shared_ptr<const UOp>& Tensor::uop() const {
  // A node realized through another handle is swapped for its buffer view on first sight.
  if (auto r = realized(d_->uop.get())) d_->set_uop(std::move(r));
  return d_->uop;
}

// ---- creation ----
Tensor::Tensor(const void* data, DType dtype, int64_t count, Shape shape, TensorOptions opts) {
  // No shape: 1-D. A single value with an empty shape is 0-d (C++ cannot tell "no shape" from "{}").
  if (shape.empty() && count != 1) shape = {count};
  for (int64_t s : shape)
    if (s < 0) throw Error("Tensor: negative dimension in shape " + to_string(shape));
  int64_t n = checked_numel(shape, dtype.itemsize(), "Tensor");
  if (n != count)
    throw Error("Tensor: " + std::to_string(count) + " values do not fill shape " + to_string(shape) + " (" +
                std::to_string(n) + " elements)");
  std::string device = device_or_default(opts.device);
  // Data enters on the host and is copied to the device by a COPY in the schedule.
  auto host = new_buffer_uop("HOST", count, dtype);
  buffer_of(host.get())->copyin(data, size_t(count) * size_t(dtype.itemsize()));
  Tensor t(make_view(host, ShapeTracker::from_shape(shape)), "HOST");
  Tensor moved = device == "HOST" ? t : t.to(device);
  if (opts.dtype && !(*opts.dtype == dtype)) moved = moved.cast(*opts.dtype);
  d_ = moved.d_;
  d_->requires_grad = opts.requires_grad;
}

Tensor::Tensor(ConstValue scalar, TensorOptions opts) {
  DType dt = opts.dtype ? *opts.dtype : scalar.kind == dtypes::float32 ? dtypes::default_float() : scalar.kind;
  std::string device = device_or_default(opts.device);
  *this = Tensor(const_uop(scalar, dt, device, {}), device);
  d_->requires_grad = opts.requires_grad;
}

Tensor Tensor::empty(const Shape& shape, TensorOptions opts) {
  for (int64_t s : shape)
    if (s < 0) throw Error("empty: negative dimension in shape " + to_string(shape));
  DType dt = opts.dtype.value_or(dtypes::default_float());
  const int64_t n = checked_numel(shape, dt.itemsize(), "empty");
  std::string device = device_or_default(opts.device);
  if (is_device_set(device)) {  // a buffer on each device
    std::vector<UOpPtr> parts;
    for (const std::string& d : device_set_members(device)) parts.push_back(empty(shape, {.dtype = dt, .device = d}).uop());
    Tensor t(multi_uop(device, -1, parts), device);
    t.d_->requires_grad = opts.requires_grad;
    return t;
  }
  auto buf = new_buffer_uop(device, n, dt);
  Tensor t(make_view(buf, ShapeTracker::from_shape({n}).reshape(shape)), device);
  t.d_->requires_grad = opts.requires_grad;
  return t;
}

Tensor Tensor::full(const Shape& shape, ConstValue fill, TensorOptions opts) {
  for (int64_t s : shape)
    if (s < 0) throw Error("full: negative dimension in shape " + to_string(shape));
  DType dt = opts.dtype ? *opts.dtype : fill.kind == dtypes::float32 ? dtypes::default_float() : fill.kind;
  checked_numel(shape, dt.itemsize(), "full");
  std::string device = device_or_default(opts.device);
  Tensor t(const_uop(fill, dt, device, shape), device);
  t.d_->requires_grad = opts.requires_grad;
  return t;
}

Tensor Tensor::zeros(const Shape& shape, TensorOptions opts) {
  if (!opts.dtype) opts.dtype = dtypes::default_float();
  return full(shape, 0, opts);
}
Tensor Tensor::ones(const Shape& shape, TensorOptions opts) {
  if (!opts.dtype) opts.dtype = dtypes::default_float();
  return full(shape, 1, opts);
}
Tensor Tensor::full_like(ConstValue fill) const { return full(shape(), fill, {.dtype = dtype(), .device = device()}); }
Tensor Tensor::zeros_like() const { return full_like(0); }
Tensor Tensor::ones_like() const { return full_like(1); }

Tensor Tensor::arange(int64_t stop, TensorOptions opts) {
  if (!opts.dtype) opts.dtype = dtypes::int32;
  return arange(0, double(stop), 1, opts);
}

Tensor Tensor::arange(double start, double stop, double step, TensorOptions opts) {
  if (step == 0) throw Error("arange: step must not be 0");
  if (!std::isfinite(start) || !std::isfinite(stop) || !std::isfinite(step))  // NaN would give an empty range
    throw Error("arange: start, stop and step must be finite, got start=" + std::to_string(start) +
                " stop=" + std::to_string(stop) + " step=" + std::to_string(step));
  double span = (stop - start) / step;
  int64_t n = span > 0 ? int64_t(std::ceil(span)) : 0;
  bool is_int = start == std::floor(start) && stop == std::floor(stop) && step == std::floor(step);
  DType dt = opts.dtype.value_or(is_int ? dtypes::int32 : dtypes::default_float());
  // The values are written on the host straight in the tensor's dtype (C cast semantics, as a CAST
  // would give), so the device gets one buffer of that dtype and no conversion kernel.
  const size_t item = size_t(dt.itemsize());
  checked_numel({n}, dt.itemsize(), "arange");
  // The values are made on the host: a count the host cannot hold is a tg::Error naming it, not bad_alloc.
  const std::string what = "arange: " + std::to_string(n) + " elements of " + dt.repr();
  check_host_bytes(what, n * int64_t(item));
  std::vector<std::byte> bytes;
  try {
    bytes.resize(size_t(n) * item);
  } catch (const std::bad_alloc&) {
    throw Error(what + " (" + std::to_string(n * int64_t(item)) + " bytes) do not fit in host memory");
  }
  for (int64_t i = 0; i < n; i++) {
    uint64_t bits = num_to_bits(cast_num(Num{0, start + double(i) * step}, dtypes::float64, dt), dt);
    std::memcpy(bytes.data() + size_t(i) * item, &bits, item);
  }
  opts.dtype.reset();
  return Tensor(bytes.data(), dt, n, {n}, opts);
}

Tensor Tensor::eye(int64_t n, TensorOptions opts) {
  if (n < 0) throw Error("eye: n must be >= 0, got " + std::to_string(n));
  // tinygrad's trick: a column of ones padded to width n+1, flattened and cut to n*n, puts the ones on
  // the diagonal. All of it is views of one constant.
  return ones({n, 1}, opts).pad({{0, 0}, {0, n}}).flatten().shrink({{0, n * n}}).reshape({n, n});
}

// ---- properties ----
Shape Tensor::shape() const { return uop()->shape; }
DType Tensor::dtype() const { return uop()->dtype; }
const std::string& Tensor::device() const { return d_->device; }
int64_t Tensor::numel() const { return tg::prod(shape()); }

std::string Tensor::repr() const {
  std::ostringstream os;
  os << "<Tensor <UOp " << device() << " " << to_string(shape()) << " " << dtype().name() << " (Ops."
     << op_name(uop()->op) << ")> on " << device() << " with grad None>";
  return os.str();
}

// ---- running ----
Tensor& Tensor::realize() {
  realize_all({*this});
  return *this;
}

void Tensor::realize_all(std::vector<Tensor> tensors) {
  std::vector<UOpPtr> roots;
  for (auto& t : tensors) roots.push_back(t.uop());
  // The references to each root this call lets go of: one per tensor (handles of one tensor share it) that is
  // swapped to its result below. With them, the memory planner knows what nothing else holds.
  std::vector<int> released(roots.size(), 1);
  if (tensors.size() > 1) {
    std::unordered_set<const Data*> counted;
    for (size_t i = 0; i < tensors.size(); i++) released[i] = counted.insert(tensors[i].d_.get()).second;
  }
  std::vector<UOpPtr> out = run_realize(roots, released);
  for (size_t i = 0; i < tensors.size(); i++) tensors[i].d_->set_uop(out[i]);
}

Tensor Tensor::contiguous() const {
  const UOpPtr& u = uop();
  if (u->op == Ops::VIEW && u->src[0]->op == Ops::BUFFER) {
    const ShapeTracker& st = u->get<ShapeTracker>();
    if (st.contiguous() && tg::prod(st.shape()) == u->src[0]->get<BufferArg>().size) return *this;
  }
  if (u->op == Ops::CONTIGUOUS) return *this;
  if (u->op == Ops::MULTI) {  // each part a whole buffer already: nothing to copy
    const std::vector<std::string> devs = devices();
    bool whole = true;
    for (size_t i = 1; i < u->src.size() && whole; i++)
      whole = Tensor(u->src[i], devs.at(i - 1)).contiguous().uop() == u->src[i];
    if (whole) return *this;
  }
  // A reshape only needs its source realized: keep the reshape on top (a view of the result).
  if (u->op == Ops::RESHAPE) return Tensor(u->src[0], device()).contiguous().reshape(u->shape);
  return Tensor(UOp::make(Ops::CONTIGUOUS, u->dtype, {u}), device());
}

void Tensor::check_item() const {
  if (numel() != 1) throw Error("item: tensor of shape " + to_string(shape()) + " has " + std::to_string(numel()) +
                                " elements (expected exactly 1)");
}

void Tensor::copy_out(DType as, void* out, size_t bytes) const {
  if (is_device_set(device())) return to(devices().at(0)).copy_out(as, out, bytes);  // gathered on the first
  Tensor t = cast(as).contiguous();
  t.realize();
  const UOpPtr& u = t.uop();
  if (numel() == 0) return;
  auto buf = buffer_of(u->src.at(0).get());
  std::vector<uint8_t> tmp(buf->nbytes());
  buf->copyout(tmp.data(), tmp.size());
  // The view may start inside the buffer (a realized tensor is a contiguous view with an offset).
  int64_t offset = u->get<ShapeTracker>().views.back().offset;
  std::memcpy(out, tmp.data() + size_t(offset) * size_t(as.itemsize()), bytes);
}

}  // namespace tg
