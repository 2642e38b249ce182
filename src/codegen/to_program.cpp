// to_program: every stage from a kernel's AST to its source, in order. Each stage is a named pass (a
// graph_rewrite with its rules, or a ScopedPass around a walk) that the pass log lists at DEBUG>=4 and VIZ shows
// step by step:
//   opts            the kernel's shape split and its dims given kinds (codegen/kernel.h, codegen/opt/)
//   exact_products  products whose exact value matters kept from contraction (codegen/exact_products.h)
//   decompositions  ops the renderers lack, written with others (uop/decompositions.h)
//   lower           reduce_ranges, expand, symbolic: views to index math, upcasts to lanes (codegen/lowerer.h)
//     prefetch      software prefetches for the CPU's matmul streams (codegen/prefetch.h)
//   reduce_to_acc   each REDUCE an accumulator and its update (codegen/reduce_to_acc.h)
//   linearize       the graph ordered into a flat program (codegen/linearize.h)
//   verify          what every renderer and runtime may trust (codegen/verify_program.h)
//   render          the program as source (renderer/)
#include "codegen/to_program.h"

#include <cstdio>
#include <map>
#include <optional>

#include "codegen/exact_products.h"
#include "codegen/linearize.h"
#include "codegen/opt/heuristic.h"
#include "codegen/lowerer.h"
#include "codegen/lowerer_internal.h"
#include "codegen/prefetch.h"
#include "codegen/verify_program.h"
#include "tg/context.h"
#include "uop/decompositions.h"
#include "uop/pass_log.h"
#include "uop/viz_trace.h"

namespace tg {
namespace {

// DEBUG>=6: the program, a node per line with its sources' positions.
void print_uops(const std::vector<UOpPtr>& uops) {
  std::map<const UOp*, size_t> index;
  for (size_t i = 0; i < uops.size(); i++) index[uops[i].get()] = i;
  for (size_t i = 0; i < uops.size(); i++) {
    const UOp& u = *uops[i];
    std::string srcs = "[";
    for (size_t j = 0; j < u.src.size(); j++) {
      auto it = index.find(u.src[j].get());
      srcs += (j ? ", " : "") + (it == index.end() ? std::string("--") : std::to_string(it->second));
    }
    srcs += "]";
    std::printf("%4zu %-16s %-28s %-20s %s\n", i, op_name(u.op), u.dtype.repr().c_str(), srcs.c_str(),
                u.arg_repr().c_str());
  }
}

// The launch (GPU blocks and threads per dim; a kernel split across CPU threads launches one instance per core
// index) and the parameters, read off the program.
void read_launch(ProgramSpec& spec) {
  for (auto& u : spec.uops) {
    if (u->op == Ops::DEFINE_GLOBAL) spec.n_bufs = std::max<int>(spec.n_bufs, int(u->get<int64_t>()) + 1);
    if (u->op == Ops::DEFINE_VAR) spec.vars.push_back(u);
    if (u->op != Ops::SPECIAL) continue;
    const auto& sp = u->get<SpecialArg>();
    const size_t dim = size_t(sp.dim);
    if (dim > 2) throw Error("compile: " + spec.name + " has a launch index along dim " + std::to_string(dim));
    if (sp.axis == LaunchAxis::GROUP || sp.axis == LaunchAxis::CORE) spec.global_size[dim] = sp.size;
    if (sp.axis == LaunchAxis::LOCAL) spec.local_size[dim] = sp.size;
  }
}

}  // namespace

UOpPtr lower_kernel(const Kernel& k) {
  UOpPtr x = exact_products(k.optimized_ast());
  x = decompositions(x);
  ScopedPass pass("lower");
  lowering::LowerCtx ctx(k, x);
  x = lowering::lower(ctx, x);  // reduce_ranges, expand, symbolic
  if (k.renderer().prefetches()) x = add_prefetches(x);
  pass.set(-1, int64_t(toposort(x).size()));
  return x;
}

ProgramSpec to_program(const Kernel& k, const std::string& name, const std::string& display_name) {
  ProgramSpec spec;
  spec.name = name;
  spec.display_name = display_name;
  for (const Opt& o : k.applied_opts()) spec.applied_opts.push_back(o.repr());
  const bool tracing = viz::enabled();
  {
    std::optional<PassLog> passes;
    if (DEBUG >= 4) passes.emplace();
    UOpPtr lowered = lower_kernel(k);
    // (VIZ: linearize is a stage, not a rewrite, from the lowered graph to the program's last node, its SINK;
    // reduce_to_acc is a step nested in it)
    const double start = tracing ? viz::now_s() : 0;
    {
      std::optional<viz::StepDepth> nested;
      if (tracing) nested.emplace();
      // every device adds a sum's terms to its accumulator one at a time: a fused multiply-add per product on
      // CPUs and GPUs, and the interpreter the same order
      spec.uops = linearize_kernel(lowered, {.sequential_sums = true});
    }
    if (tracing && !spec.uops.empty())
      viz::record_step("linearize", lowered, spec.uops.back(), -1, viz::now_s() - start, {});
    if (passes) std::printf("passes of %s:\n%s", spec.name.c_str(), passes->str().c_str());
  }
  if (DEBUG >= 6) print_uops(spec.uops);
  read_launch(spec);
  verify_program(spec);
  spec.estimated_ops = estimate_flops(spec.uops);
  const double start = tracing ? viz::now_s() : 0;
  spec.src = k.renderer().render(spec.name, spec.uops);
  if (tracing && !spec.uops.empty())
    viz::record_step("render", spec.uops.back(), spec.uops.back(), -1, viz::now_s() - start, {});
  if (DEBUG >= 4) std::printf("%s\n", spec.src.c_str());
  return spec;
}

ProgramSpec to_program(const UOpPtr& ast, const Renderer& renderer, const ProgramRequest& request) {
  Kernel k(ast, renderer);
  if (request.opts) k.apply_opts(*request.opts);
  else if (!NOOPT) hand_coded_optimizations(k);
  const std::string name = request.rename ? request.rename(k.name()) : k.name();
  const std::string display_name = k.colored_name() + name.substr(k.name().size());
  if (DEBUG >= 3) {
    std::printf("%s\n", display_name.c_str());
    for (auto& o : k.applied_opts()) std::printf("%s\n", o.repr().c_str());
    if (k.applied_opts().empty()) std::printf("(no opts) %s\n", name.c_str());
  }
  if (DEBUG >= 5) std::printf("%s\n", ast->repr().c_str());
  return to_program(k, name, display_name);
}

}  // namespace tg
