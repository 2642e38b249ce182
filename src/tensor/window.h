#pragma once
// The window views every conv and pool is built on (nn_conv.cpp), shared with the conv's gradient
// (conv_grad.cpp).
#include <vector>

#include "tg/tensor.h"
#include "uop/movement.h"

namespace tg {

// Pad the last pads.size() dims with `value`; negative amounts cut instead (conv_transpose2d makes those).
Tensor pad_const(const Tensor& x, const PadArg& pads, double value);

// tinygrad's _pool: (..., *i) -> (..., *o, *k), where out[..., o, k] = x[..., o*stride + k*dilation], with
// movement ops only.
Tensor pool(const Tensor& x, const Shape& k, const std::vector<int64_t>& stride, const std::vector<int64_t>& dil);

}  // namespace tg
