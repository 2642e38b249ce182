#pragma once
// Lowering: a Kernel's optimized AST -> a graph of RANGE loops, index math, LOAD/STORE and REDUCE nodes,
// simplified by the symbolic rules. The linearizer then orders it into a flat program.
#include "codegen/kernel.h"

namespace tg {

// SINK(STORE(buf, idx, value[, gate])...) where values may contain REDUCE(x, ranges...) (arg: the op): the
// stages up to the linearizer of codegen/to_program.cpp, which defines it.
UOpPtr lower_kernel(const Kernel& k);

}  // namespace tg
