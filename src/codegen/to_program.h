#pragma once
// A kernel's AST -> its program: the one way through codegen (the pipeline's stages, in order, are in
// to_program.cpp). The engine calls it once per kernel it compiles (engine/method_cache.cpp), BEAM once per
// candidate (engine/beam_timer.cpp); DEBUG>=3 prints the kernel's opts, DEBUG>=4 every pass with its rewrites,
// nodes and time, and the source.
#include <functional>
#include <string>
#include <vector>

#include "codegen/kernel.h"
#include "codegen/program.h"

namespace tg {

struct ProgramRequest {
  // Exactly these opts, in order (BEAM's winner; a KernelOptError where one does not apply); null: the hand-coded
  // heuristics (codegen/opt/heuristic.cpp), none under NOOPT=1.
  const std::vector<Opt>* opts = nullptr;
  // The program's name from the kernel's (r_16_4), called once: the engine makes names unique per process.
  std::function<std::string(const std::string&)> rename;
};

// The kernel optimized, then the program of the kernel as below.
ProgramSpec to_program(const UOpPtr& ast, const Renderer& renderer, const ProgramRequest& request = {});

// The program of one kernel as it stands (its opts applied): lowered, linearized, checked and rendered; its uops,
// launch sizes, parameters and source. Compiles nothing.
ProgramSpec to_program(const Kernel& k, const std::string& name, const std::string& display_name);

}  // namespace tg
