#pragma once
// Linearizer: a lowered kernel graph (codegen/lowerer.h) -> the flat program of codegen/program.h.
// linearize_kernel first runs the pass reduce_to_acc (codegen/reduce_to_acc.h: each REDUCE an accumulator and
// its update), then orders the graph: loops open in dim order around everything; each accumulator is declared
// before its own loops, updated at the end of their body, and read after they close.
#include <vector>

#include "uop/uop.h"

namespace tg {

// The value a reduce of `op` (ADD, MUL, MAX) starts from: 0, 1, or the lowest value of dt.
UOpPtr reduce_identity(Ops op, DType dt);

struct LinearizeOptions {
  // A float sum's update adds the unrolled terms to the accumulator one by one, acc = ((acc + x0) + x1) ...,
  // instead of adding their balanced tree once: each term is then one fused multiply-add (GPUs; the CPU keeps
  // the tree, whose independent adds its vector units overlap).
  bool sequential_sums = false;
};

std::vector<UOpPtr> linearize_kernel(const UOpPtr& sink, const LinearizeOptions& opts = {});
// FLOPs of one run: each ALU node counted once per iteration of the loops around it.
int64_t estimate_flops(const std::vector<UOpPtr>& uops);

}  // namespace tg
