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

// opts == nullptr: the default heuristics (none under NOOPT=1); otherwise exactly these opts, in order
// (throws KernelOptError when one does not apply).
std::unique_ptr<CompiledRunner> compile_runner(const std::string& device, const UOpPtr& ast,
                                               const std::vector<Opt>* opts = nullptr);

// The method cache's runner for each (device, AST) of a schedule, under one lock: nullptr where there is none yet
// (and for entries without an AST).
// The kernels missing are compiled several at once first (a cold start compiles a schedule's kernels on
// compile_jobs() threads instead of one by one): codegen and rendering on the calling thread (they read its knobs,
// and DEBUG prints in order), only source -> binary on the pool. They stay nullptr under BEAM (each kernel's search
// times candidates on the device, one kernel at a time), alone, or when they fail: get_runner compiles them in their
// turn and raises the error there.
std::vector<CompiledRunner*> find_runners(const std::vector<std::pair<std::string, UOpPtr>>& kernels);

// Threads that compile at once: TG_JOBS (the build's and tests' parallelism knob) if set, else the machine's
// hardware threads.
int compile_jobs();

}  // namespace tg
