// The method cache: kernel AST -> optimized, linearized, rendered, compiled program, once per device.
#include <cstdio>
#include <map>
#include <mutex>
#include <optional>
#include <tuple>

#include "codegen/kernel.h"
#include "codegen/linearize.h"
#include "codegen/lowerer.h"
#include "codegen/verify_program.h"
#include "engine/beam.h"
#include "engine/method_cache.h"
#include "engine/realize.h"
#include "tg/context.h"
#include "uop/pass_log.h"

namespace tg {
namespace {

// Kernel names are unique per process: a second AST with the same name gets a suffix, as tinygrad's "n1".
std::string unique_name(const std::string& name, const UOpPtr& ast) {
  static std::mutex mu;  // compile_runner is also called directly, outside get_runner's lock
  static std::map<std::string, std::vector<UOpPtr>> seen;
  std::lock_guard<std::mutex> lock(mu);
  auto& asts = seen[name];
  for (size_t i = 0; i < asts.size(); i++)
    if (asts[i] == ast) return i == 0 ? name : name + "n" + std::to_string(i);
  asts.push_back(ast);
  return asts.size() == 1 ? name : name + "n" + std::to_string(asts.size() - 1);
}

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

}  // namespace

ProgramSpec program_spec(const Kernel& k, const std::string& name, const std::string& display_name) {
  ProgramSpec spec;
  spec.name = name;
  spec.display_name = display_name;
  {
    // DEBUG>=4: the passes the kernel went through, with their rewrites, nodes and time
    std::optional<PassLog> passes;
    if (DEBUG >= 4) passes.emplace();
    UOpPtr lowered = lower_kernel(k);
    // every device adds a sum's terms to its accumulator one at a time: a fused multiply-add per product
    // on CPUs and GPUs, and the interpreter the same order
    spec.uops = linearize_kernel(lowered, {.sequential_sums = true});
    if (passes) std::printf("passes of %s:\n%s", spec.name.c_str(), passes->str().c_str());
  }
  if (DEBUG >= 6) print_uops(spec.uops);
  for (auto& u : spec.uops) {
    if (u->op == Ops::DEFINE_GLOBAL) spec.n_bufs = std::max<int>(spec.n_bufs, int(u->get<int64_t>()) + 1);
    if (u->op == Ops::DEFINE_VAR) spec.vars.push_back(u);
    // The launch: blocks (GROUP) and threads of a block (LOCAL) per dim; a kernel split across CPU threads
    // launches one instance per CORE index.
    if (u->op == Ops::SPECIAL) {
      const auto& sp = u->get<SpecialArg>();
      const size_t dim = size_t(sp.dim);
      if (dim > 2) throw Error("compile: " + spec.name + " has a launch index along dim " + std::to_string(dim));
      if (sp.axis == LaunchAxis::GROUP || sp.axis == LaunchAxis::CORE) spec.global_size[dim] = sp.size;
      if (sp.axis == LaunchAxis::LOCAL) spec.local_size[dim] = sp.size;
    }
  }
  verify_program(spec);  // what every renderer and runtime may then trust
  spec.estimated_ops = estimate_flops(spec.uops);
  spec.src = k.renderer().render(spec.name, spec.uops);
  if (DEBUG >= 4) std::printf("%s\n", spec.src.c_str());
  return spec;
}

std::unique_ptr<CompiledRunner> compile_runner(const std::string& device, const UOpPtr& ast,
                                               const std::vector<Opt>* opts) {
  Device& dev = get_device(device);
  Kernel k(ast, dev.renderer());
  if (opts) k.apply_opts(*opts);
  else if (!NOOPT) k.hand_coded_optimizations();
  const std::string name = unique_name(k.name(), ast);
  if (DEBUG >= 3) {
    std::printf("%s\n", (k.colored_name() + name.substr(k.name().size())).c_str());
    for (auto& o : k.applied_opts()) std::printf("%s\n", o.repr().c_str());
    if (k.applied_opts().empty()) std::printf("(no opts) %s\n", name.c_str());
  }
  if (DEBUG >= 5) std::printf("%s\n", ast->repr().c_str());
  auto runner = std::make_unique<CompiledRunner>();
  runner->spec = program_spec(k, name, k.colored_name() + name.substr(k.name().size()));
  std::string binary = dev.compiler().compile_cached(runner->spec.src);
  runner->program = dev.load(runner->spec, binary);
  runner->device = device;
  return runner;
}

CompiledRunner& get_runner(const std::string& device, const UOpPtr& ast) {
  static std::recursive_mutex mu;
  // NOOPT, the BEAM width and ALLOW_TF32 are part of the key: the same AST compiles to different programs under
  // each (a tf32 one computes other values).
  using Key = std::tuple<std::string, const UOp*, bool, int, bool>;
  static std::map<Key, std::pair<UOpPtr, std::unique_ptr<CompiledRunner>>> cache;
  const int beam = NOOPT ? 0 : beam_level();
  std::lock_guard<std::recursive_mutex> lock(mu);
  Key key{device, ast.get(), NOOPT != 0, beam, allow_tf32()};
  if (auto it = cache.find(key); it != cache.end()) return *it->second.second;
  // BEAM searches under the lock: two threads never search the same kernel at once.
  std::optional<std::vector<Opt>> opts = beam_opts(device, ast, beam);
  auto runner = compile_runner(device, ast, opts ? &*opts : nullptr);
  auto& slot = cache[key];
  slot.first = ast;
  slot.second = std::move(runner);
  return *slot.second;
}

}  // namespace tg
