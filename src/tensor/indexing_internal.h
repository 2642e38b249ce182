#pragma once
// Helpers shared by the tensor-indexed ops (indexing.cpp, gather_scatter.cpp). As in tinygrad, reading at a
// tensor of indices is a comparison of the indices with an arange (a one-hot mask) and a sum: no kernel is
// written by hand, and an index that is out of range matches nothing, so it reads 0.
#include <string>
#include <vector>

#include "tensor/tensor_internal.h"

namespace tg::indexing {

// A 0-d constant of t's dtype on t's device: where(mask, x, 0) must keep x's dtype (a bool or int8 x with a
// C++ 0 would promote).
inline Tensor scalar_like(const Tensor& t, double v) {
  return Tensor(const_uop(v, t.dtype(), t.device(), {}), t.device());
}

// Right-aligned broadcast of shapes; throws "<op>: <what> of shapes A and B cannot be broadcast".
Shape broadcast_shapes(const char* op, const char* what, const std::vector<Shape>& shapes);

// Checks that `index` can index `self` in op (same device, an integer dtype) and casts small or unsigned
// index dtypes to int32/int64, so that adding a dim size to a negative index cannot wrap around.
Tensor checked_index(const char* op, const Tensor& self, const Tensor& index);

// idx == arange(num_classes), the classes running along a dim that has `trailing` dims after it (idx has
// size 1 there, or broadcasts). Bool, shaped as the broadcast of idx and (num_classes, 1 x trailing).
Tensor eq_arange(const Tensor& idx, int64_t num_classes, int64_t trailing);

}  // namespace tg::indexing
