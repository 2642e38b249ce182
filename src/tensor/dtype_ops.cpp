// dtype ops: bitcast. Same-size bitcasts are one BITCAST node; a change of item size regroups the bytes of
// the last dimension through unsigned integers of each size, as tinygrad does (little-endian order).
#include "tensor/tensor_internal.h"

namespace tg {
namespace {

DType uint_of_size(int size) {
  switch (size) {
    case 1: return dtypes::uint8;
    case 2: return dtypes::uint16;
    case 4: return dtypes::uint32;
    default: return dtypes::uint64;
  }
}

Tensor shift(Ops op, const Tensor& x, int64_t bits) {
  if (bits == 0) return x;
  Tensor c(const_uop(double(bits), x.dtype(), x.device(), x.shape()), x.device());
  return Tensor(UOp::alu(op, {x.uop(), c.uop()}), x.device());
}

Tensor bit_or(const Tensor& x, const Tensor& y) { return Tensor(UOp::alu(Ops::OR, {x.uop(), y.uop()}), x.device()); }


}  // namespace

Tensor Tensor::bitcast(DType dt) const {
  DType from = dtype();
  if (dt.count != 1 || dt.ptr || dt.scalar == Scalar::Void)
    throw Error("bitcast: target " + dt.repr() + " is not a scalar dtype");
  if (dt == from) return *this;
  // bool has one valid bit pattern per value; reinterpreting other bytes as bool is not defined.
  if (dt.is_bool() || from.is_bool())
    throw Error("bitcast: " + from.repr() + " -> " + dt.repr() + " is not supported (bool has no bits to share)");
  int os = from.itemsize(), ns = dt.itemsize();
  if (os == ns) return Tensor(UOp::make(Ops::BITCAST, dt, {uop()}), device());

  Shape s = shape();
  if (s.empty())
    throw Error("bitcast: " + from.repr() + " -> " + dt.repr() + " changes the item size, which needs a last " +
                "dimension to regroup, but the tensor is 0-d");
  int64_t last = s.back();
  if ((last * os) % ns != 0)
    throw Error("bitcast: " + from.repr() + " -> " + dt.repr() + " on shape " + to_string(s) +
                ": the last dimension (" + std::to_string(last) + " x " + std::to_string(os) +
                " bytes) is not a multiple of " + std::to_string(ns) + " bytes");
  DType old_u = uint_of_size(os), new_u = uint_of_size(ns);
  Tensor u = bitcast(old_u);
  Shape out = s;
  out.back() = last * os / ns;
  std::optional<Tensor> acc;
  if (ns > os) {
    // Wider: element j of the result is the k narrower elements k*j .. k*j+k-1, the first in the low bits.
    int64_t k = ns / os;
    Shape grouped = out;
    grouped.push_back(k);
    Tensor g = u.reshape(grouped);
    PadArg bounds;
    for (int64_t d : out) bounds.push_back({0, d});
    bounds.push_back({0, 1});
    for (int64_t i = 0; i < k; i++) {
      bounds.back() = {i, i + 1};
      Tensor piece = shift(Ops::SHL, g.shrink(bounds).reshape(out).cast(new_u), 8 * os * i);
      acc = i == 0 ? piece : bit_or(*acc, piece);
    }
  } else {
    // Narrower: element i splits into k pieces, low bits first, side by side on a new last axis. Each
    // piece is selected by a one-hot mask (views of a constant) rather than padded into place, which
    // would make the scheduler realize every piece first.
    int64_t k = os / ns;
    Shape split = s, wide = s;
    split.push_back(1);
    wide.push_back(k);
    Tensor ue = u.reshape(split).expand(wide);
    Tensor eye = Tensor::eye(k, {.dtype = dtypes::bool_, .device = device()});
    Shape mask_shape(s.size(), 1);
    mask_shape.push_back(k);
    for (int64_t i = 0; i < k; i++) {
      Tensor piece = shift(Ops::SHR, ue, 8 * ns * i).cast(new_u);
      Tensor is_i = eye.shrink({{i, i + 1}, {0, k}}).reshape(mask_shape).expand(wide);
      acc = i == 0 ? piece : is_i.where(piece, *acc);
    }
    acc = acc->reshape(out);
  }
  return acc->bitcast(dt);
}

}  // namespace tg
