#pragma once
// Convolutions on tensor cores read a flattened, padded, channels-last copy of their input (see conv_flat.cpp).
#include <optional>
#include <vector>

#include "tg/tensor.h"

namespace tg {

// x (N, C, H, W) conv w (O, C, kh, kw), stride 1, dilation 1, one group, padding `pads` ((before, after) per
// spatial dim, all >= 0), as one matmul-shaped reduce whose operands are plain strided views (so tensor cores and
// shared-memory staging take it); nullopt where it does not apply or would not pay (see conv_flat.cpp), or under
// CONV_FLAT=0.
std::optional<Tensor> flat_window_conv2d(const Tensor& x, const Tensor& w, const PadArg& pads, int64_t groups,
                                         const std::vector<int64_t>& stride, const std::vector<int64_t>& dil);

}  // namespace tg
