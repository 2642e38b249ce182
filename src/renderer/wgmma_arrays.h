#pragma once
// Hopper's wgmma accumulates in place in the registers it names. A reduce loop around a chain of WGMMAs
// (codegen/lower_tc.cpp: the first reads the loop's accumulators, each next one the previous one's lanes, the
// loop ASSIGNs the last one's lanes back to the accumulators) is rendered with one array per chain that every
// WGMMA of it updates: no copies into a fresh array per WGMMA and back into the accumulators per step. Those
// copies read the wgmma's registers, which forced ptxas to wait for the wgmmas at every step's end (and to
// serialize them when a step leaves them in flight, WgmmaArg::defer).
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "uop/uop.h"

namespace tg {

struct WgmmaArrays {
  std::unordered_map<const UOp*, std::pair<int, int>> acc;  // DEFINE_ACC -> (array, lane)
  std::unordered_map<const UOp*, int> wgmma;                // a WGMMA of a chain -> its array
  std::unordered_set<const UOp*> assign;                    // ASSIGNs of a chain's lanes to its own registers
  std::vector<int> lanes;                                   // per array: its size
  // per array: the value every accumulator starts from, or null when they differ. (Rendered as one loop: 64
  // separate stores of 0.0f made ptxas serialize the deferred wgmmas of a Hopper matmul, info C7514.)
  std::vector<const UOp*> init;
};

// The chains of a linearized program that can be rendered in place (the rest keep their copies): every
// accumulator of the chain is read in the loop by its first WGMMA alone, and written back from the lane it fed.
WgmmaArrays find_wgmma_arrays(const std::vector<UOpPtr>& uops);

}  // namespace tg
