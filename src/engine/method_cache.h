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

// Compiles, several at once, the kernels among `kernels` (device, AST) that the method cache lacks, so the
// get_runner calls of a schedule's run find them ready: a cold start compiles a schedule's kernels on
// compile_jobs() threads instead of one by one. Codegen and rendering stay on the calling thread (they read its
// knobs, and DEBUG prints in order); only source -> binary runs on the pool. Under BEAM it does nothing (each
// kernel's search times candidates on the device, one kernel at a time). A kernel that fails to compile is left
// to get_runner, which raises the error where the kernel runs.
void precompile(const std::vector<std::pair<std::string, UOpPtr>>& kernels);

// Threads that compile at once: TG_JOBS (the build's and tests' parallelism knob) if set, else the machine's
// hardware threads.
int compile_jobs();

}  // namespace tg
