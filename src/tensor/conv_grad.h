#pragma once
// The hand-written gradient of a convolution (conv_grad.cpp).
#include <vector>

#include "tg/tensor.h"
#include "uop/movement.h"

namespace tg {

// Gives `out` = conv(x, w) (no bias; groups, stride, dilation, (before, after) pads per spatial dim, all >= 0)
// its gradient as convolutions: the input's is conv_transpose of the output gradient with w, the weight's a
// reduce over batch and output positions of x's windows times the output gradient read channels-last.
void set_conv_gradient(const Tensor& out, const Tensor& x, const Tensor& w, int64_t groups,
                       const std::vector<int64_t>& stride, const std::vector<int64_t>& dil, const PadArg& pads);

}  // namespace tg
