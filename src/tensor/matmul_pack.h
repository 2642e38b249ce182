#pragma once
// CPU matmuls with a packed right operand (see matmul_pack.cpp).
#include <optional>

#include "tg/tensor.h"

namespace tg {

// x (..., n, k) @ w (k, m) with w first copied into column panels of 32, (m/32, k, 32), when the product
// runs on the CPU in float32 and is large enough to pay for the copy; nullopt otherwise (or CPU_PACK=0).
// CPU_PACK (default 1): 0 turns off packed operands for matmuls and convs.
bool cpu_pack_enabled();
// Devices whose kernels run on this CPU from the same codegen (CPU and CPU:n through C, LLVM through its JIT), and
// sets of them: the packed layouts pay off on each.
bool is_host_cpu_device(const std::string& device);

std::optional<Tensor> cpu_packed_dot(const Tensor& x, const Tensor& w);

}  // namespace tg
