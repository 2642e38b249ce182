#pragma once
// BEAM search over a kernel's opts, as tinygrad's beam_search: the action space (every Opt one step away from
// a kernel) and the beam loop. Timing is not done here: codegen never runs kernels, so the caller (the engine,
// engine/beam.h) passes a function that compiles and times a batch of candidate kernels.
#include <cstddef>
#include <functional>
#include <limits>
#include <vector>

#include "codegen/kernel.h"

namespace tg {

// Every Opt the search tries on `k` (tinygrad's amounts, over the kernel's own axes), before checking that
// it applies: UPCAST, UNROLL, LOCAL, GROUP, GROUPTOP, TC, SWAP, THREAD, PADTO. NOLOCALS is not in it: a kernel
// without LOCAL dims is already in the space (the search simply does not add them).
std::vector<Opt> search_actions(const Kernel& k);

// The kernels one action away from `k`: each applies one of search_actions(k) to a copy, keeping those where
// apply_opt succeeds and the limits hold (upcast size <= max_upcast(), workgroup size within the renderer's).
std::vector<Kernel> kernel_actions(const Kernel& k);

// Times candidate kernels: returns one time in seconds per candidate, +inf for a candidate that failed to
// compile, could not be checked safe to run, or renders to a program already timed in this search. A
// candidate slower than `give_up_after` seconds may stop being timed early (its time is then only known to
// exceed that).
using CandidateTimer = std::function<std::vector<double>(const std::vector<Kernel>& candidates, double give_up_after)>;

constexpr double kNotTimed = std::numeric_limits<double>::infinity();

struct BeamResult {
  std::vector<Opt> opts;       // the winner's opts, in the order they apply to a fresh Kernel
  double seconds = kNotTimed;  // its time (kNotTimed when nothing could be timed)
  int steps = 0;               // expansions done
  size_t timed = 0;            // candidates timed (finite times)
};

// Beam search of width `width` (>= 1) from `start`. `seeds` are further starting points timed with it (the
// hand-coded kernel, so the search never ends worse than the default). Each step expands every kernel of the
// beam by kernel_actions, times them all, and keeps the `width` fastest; it stops when the fastest new kernel
// is not at least 1% faster than the best so far. BEAM_DEBUG=1 prints every step.
BeamResult beam_search(const Kernel& start, const std::vector<Kernel>& seeds, int width, const CandidateTimer& time);

}  // namespace tg
