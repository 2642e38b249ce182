#pragma once
// The register-tiled matmul (and convolution) of CPUs: see cpu_gemm.cpp.
#include <functional>

#include "codegen/kernel.h"

namespace tg {

// hand_coded_optimizations on renderers without workgroups: a tile of C in registers for a kernel that sums
// products of two float32 loads; false (and no opt applied) when the kernel is not one. `try_opt` applies an opt
// to k (false where it does not apply).
bool cpu_gemm_opts(const Kernel& k, const std::function<bool(const Opt&)>& try_opt);

}  // namespace tg
