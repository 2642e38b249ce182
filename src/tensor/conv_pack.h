#pragma once
// CPU convolutions read packed weights (see conv_pack.cpp).
#include <optional>

#include "tg/tensor.h"

namespace tg {

// The weights w (cout, cin, *k) of a conv with `macs` products, copied to (cin, *k, cout) and read back as
// (cout, cin, *k): on the CPU in float32 with one group, cout a multiple of 16 and past 2^20 products;
// nullopt otherwise (or CPU_PACK=0).
std::optional<Tensor> cpu_packed_conv_weight(const Tensor& w, int64_t groups, int64_t macs);

}  // namespace tg
