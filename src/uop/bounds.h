#pragma once
// Integer value ranges [vmin, vmax] of a node, from its sources (interval arithmetic). The symbolic
// simplifier decides comparisons, divisions and mods with them.
#include <cstdint>
#include <utility>

namespace tg {
struct UOp;
std::pair<int64_t, int64_t> compute_bounds(const UOp& u);
}  // namespace tg
