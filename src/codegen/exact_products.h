#pragma once
// exact_products: a sum of products of two 16-bit floats accumulated in a wider float computes each product
// in the wider type: REDUCE_AXIS(ADD, CAST(MUL(a, b))) -> REDUCE_AXIS(ADD, MUL(CAST(a), CAST(b))). The
// product of two float16 (11-bit significands) or two bfloat16 (8-bit) values is exact in float32, so a
// matmul or conv of half inputs (sum accumulates in float32) rounds once per accumulation instead of once
// more per product, as tensor cores and cuBLAS do. Only under a sum: `(a * b).float()` outside a reduce
// keeps the half-rounded product it asks for. A pass over a kernel AST, run before lowering.
#include "uop/uop.h"

namespace tg {

UOpPtr exact_products(const UOpPtr& ast);

}  // namespace tg
