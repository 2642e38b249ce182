// Tensors over several devices (Tensor::shard): a MULTI node over one part per device, lowered per device when
// realized (schedule/multi.h).
#include "engine/device_facts.h"
#include "tensor/tensor_internal.h"
#include "tg/error.h"
#include "uop/device_set.h"

namespace tg {

namespace {
std::vector<std::string> canonical_members(const char* op, const std::vector<std::string>& devices) {
  if (devices.empty()) throw Error(std::string(op) + ": no devices given");
  for (const std::string& d : devices)
    if (is_device_set(d)) throw Error(std::string(op) + ": '" + d + "' is a device set, expected device names");
  return device_set_members(canonical_device(device_set_name(devices)));  // (refuses a device named twice)
}
}  // namespace

Tensor Tensor::shard(const std::vector<std::string>& devices, std::optional<int64_t> axis) const {
  if (is_device_set(device()))
    throw Error("shard: the tensor is already spread over " + device() + " (to() moves it to another set)");
  const std::vector<std::string> devs = canonical_members("shard", devices);
  const int64_t n = int64_t(devs.size());
  int64_t ax = -1;
  if (axis) {
    ax = normalize_axis("shard", *axis, shape());
    const sint size = shape()[size_t(ax)];
    if (!size.is_int() || int64_t(size) % n != 0)
      throw Error("shard: dim " + std::to_string(ax) + " of shape " + to_string(shape()) + " does not split into " +
                  std::to_string(n) + " equal parts (its size must be a multiple of the device count)");
  }
  std::vector<UOpPtr> parts;
  for (int64_t i = 0; i < n; i++) {
    Tensor part = *this;
    if (ax >= 0) {
      const int64_t k = int64_t(shape()[size_t(ax)]) / n;
      PadArg window;
      for (size_t d = 0; d < shape().size(); d++)
        window.push_back(int64_t(d) == ax ? std::pair<sint, sint>{i * k, (i + 1) * k}
                                          : std::pair<sint, sint>{0, shape()[d]});
      part = part.shrink(window);
    }
    parts.push_back(part.to(devs[size_t(i)]).uop());
  }
  return Tensor(multi_uop(device_set_name(devs), ax, parts), device_set_name(devs));
}

Tensor& Tensor::shard_(const std::vector<std::string>& devices, std::optional<int64_t> axis) {
  Tensor s = shard(devices, axis);
  d_->set_uop(s.uop());
  d_->device = s.device();
  return *this;
}

std::vector<std::string> Tensor::devices() const { return device_set_members(device()); }

std::optional<int64_t> Tensor::shard_axis() const {
  if (!is_device_set(device())) return std::nullopt;
  const int64_t axis = shard_axis_of(uop());
  return axis < 0 ? std::nullopt : std::optional<int64_t>(axis);
}

Tensor Tensor::to(const std::string& device) const {
  std::string dev = canonical_device(device);
  if (dev == this->device()) return *this;
  if (is_device_set(dev)) {
    if (!is_device_set(this->device())) return shard(device_set_members(dev));
    return to(device_set_members(dev)[0]).shard(device_set_members(dev), shard_axis());
  }
  // (a sharded source is gathered onto `dev` by the multi pass)
  auto target = UOp::make(Ops::DEVICE, dtypes::void_, {}, dev);
  Tensor src = contiguous();
  return Tensor(UOp::make(Ops::COPY, dtype(), {target, src.uop()}), dev);
}

}  // namespace tg
