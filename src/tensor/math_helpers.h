#pragma once
// Small helpers shared by math.cpp, activations.cpp, reduce_composed.cpp and sort.cpp (not public). They
// build graph nodes from existing Tensor ops only; nothing here computes eagerly.
#include <string>
#include <utility>
#include <vector>

#include "tensor/tensor_internal.h"

namespace tg::mathx {

// One ALU node over tensors that already share a shape and dtype.
Tensor alu(Ops op, const Tensor& x);
Tensor alu(Ops op, const Tensor& x, const Tensor& y);

// Bring x and y to one dtype (promotion lattice) and one broadcast shape, as tinygrad's _broadcasted.
// Throws "<op>: shapes A and B cannot be broadcast".
std::pair<Tensor, Tensor> broadcast_pair(const char* op, const Tensor& x, const Tensor& y);

// A constant of exactly `like`'s dtype and shape. int_const keeps all 64 bits (for masks such as ~0 of
// uint64, which a double cannot hold).
Tensor const_like(const Tensor& like, double v);
Tensor int_const_like(const Tensor& like, int64_t v);

// The float dtype math on `dt` runs in: dt itself if it is a float, else the default float.
DType float_of(DType dt);

// Order-reversing map used by min/argmin: -x for floats, ~x for ints, !x for bools.
Tensor inverse(const Tensor& t);

// [0, 1, ..., n-1] as int32 on `device`, reshaped to `shape` (which has n elements).
Tensor index_range(int64_t n, const std::string& device, const Shape& shape);

// Move `axis` to the last position (a permute) and back again.
Tensor axis_to_last(const Tensor& t, int64_t axis);
Tensor last_to_axis(const Tensor& t, int64_t axis);

// Insert a size-1 dim at position `dim` (0 <= dim <= ndim), a reshape.
Tensor insert_dim(const Tensor& t, int64_t dim);

}  // namespace tg::mathx
