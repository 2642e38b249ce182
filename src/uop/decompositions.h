#pragma once
// decompositions: ops of the tensor graph that no backend renders, rewritten into ones every backend has.
// Run on a kernel AST just before lowering, so autograd and the scheduler see the op itself (with its own
// gradient rule) while the renderers and the interpreter never do. Today that is POW: b ** e becomes
// exp2(e * log2|b|) with C's sign and special-value rules (tinygrad's xpow), and a constant half-integer
// exponent becomes products and one sqrt (exactly rounded, where exp2/log2 are off by an ulp or two).
#include "uop/uop.h"

namespace tg {

UOpPtr decompositions(const UOpPtr& ast);

}  // namespace tg
