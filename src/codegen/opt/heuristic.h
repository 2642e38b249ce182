#pragma once
// The default optimizations (tinygrad's hand_coded_optimizations), as free functions over a Kernel: each step reads
// the kernel through its public view (codegen/kernel.h) and applies opts through `try_opt`, which applies an Opt to
// the kernel and says whether it applied. BEAM (codegen/opt/search.h) starts from what they choose.
#include <functional>

#include "codegen/kernel.h"

namespace tg {

using TryOpt = std::function<bool(const Opt&)>;

// The heuristics (skipped under NOOPT=1): vectorize the contiguous output dim, upcast dims that are expanded in some
// input (a register tile for matmul-like kernels), unroll the reduce, thread the outer dim; tensor cores, split
// reduces and workgroups on GPUs. They depend on the kernel, the renderer's capabilities and the host CPU's ISA
// level only, so the CPU and the interpreter get the same arithmetic.
void hand_coded_optimizations(Kernel& k);

// A matmul's output loop along M or N: the innermost LOOP dim that view `reads` moves along (with a plain stride)
// and view `ignores` does not (B along M, A along N); -1 where none is.
int loop_along(const Kernel& k, size_t reads, size_t ignores);

// The matmul steps, tried first; each returns false (and applies no opt) where the kernel is not one it takes.
// Tensor cores (TC, then register tiles, warps and K steps: codegen/opt/tc_opts.cpp).
bool tensor_core_opts(const Kernel& k, const TryOpt& try_opt);
// GPUs that stage operands through shared memory, without a tensor core (codegen/opt/gemm.cpp).
bool gemm_opts(const Kernel& k, const TryOpt& try_opt);
// CPUs: a tile of C in registers for a kernel that sums products of two float32 loads (codegen/opt/cpu_gemm.cpp).
bool cpu_gemm_opts(const Kernel& k, const TryOpt& try_opt);

}  // namespace tg
