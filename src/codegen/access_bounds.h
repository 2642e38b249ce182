#pragma once
// A static check that a linearized program (codegen/program.h) reads and writes only inside its buffers, from
// the integer ranges [vmin, vmax] every index node carries. BEAM runs only candidates that pass it: a candidate
// opt that made an index reach past a buffer must never run (on a GPU one such fault ends the process's context).
#include <cstdint>
#include <string>
#include <vector>

#include "uop/uop.h"

namespace tg {

// "" when every memory access provably stays in bounds, else a description of the first one that could not be
// proved to. An access is in bounds when its index range, widened by its vector width, lies inside the buffer:
// a DEFINE_GLOBAL of parameter i holds global_elements[i] elements (a parameter past the list is never in
// bounds), a DEFINE_LOCAL its declared size. A gated access (LOAD/STORE/CP_ASYNC with a gate that is not the
// constant true) touches memory only where its gate holds, which the lowering derives from the same validity
// as the view's mask, so it counts as in bounds. WGMMA reads shared memory through descriptors this check does
// not model, so a program with one is never proved safe.
std::string unproven_access(const std::vector<UOpPtr>& uops, const std::vector<int64_t>& global_elements);

}  // namespace tg
