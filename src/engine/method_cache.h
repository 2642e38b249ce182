#pragma once
// The method cache's compile step, callable on its own: a kernel AST -> optimized, lowered, linearized,
// rendered, compiled and loaded program for one device. get_runner (engine/realize.h) caches its results
// per (device, AST, NOOPT); tests and benchmarks call it directly to compile a kernel with chosen opts.
#include <memory>
#include <string>
#include <vector>

#include "codegen/kernel.h"
#include "engine/realize.h"

namespace tg {

// Lower, linearize and render one kernel as it stands (its opts applied): the program's uops, launch sizes,
// parameters and source. Compiles nothing. BEAM renders its candidates through this too.
ProgramSpec program_spec(const Kernel& k, const std::string& name, const std::string& display_name);

// opts == nullptr: the default heuristics (none under NOOPT=1); otherwise exactly these opts, in order
// (throws KernelOptError when one does not apply).
std::unique_ptr<CompiledRunner> compile_runner(const std::string& device, const UOpPtr& ast,
                                               const std::vector<Opt>* opts = nullptr);

}  // namespace tg
