// The method cache: kernel AST -> optimized, linearized, rendered, compiled program, once per device.
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <map>
#include <mutex>
#include <optional>
#include <thread>
#include <tuple>

#include "codegen/kernel.h"
#include "codegen/linearize.h"
#include "codegen/lowerer.h"
#include "codegen/verify_program.h"
#include "engine/beam.h"
#include "engine/method_cache.h"
#include "engine/realize.h"
#include "helpers/env.h"
#include "tg/context.h"
#include "runtime/interpreter.h"
#include "uop/pass_log.h"
#include "uop/viz_trace.h"

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
  const bool tracing = viz::enabled();
  {
    // DEBUG>=4: the passes the kernel went through, with their rewrites, nodes and time
    std::optional<PassLog> passes;
    if (DEBUG >= 4) passes.emplace();
    UOpPtr lowered = lower_kernel(k);
    // every device adds a sum's terms to its accumulator one at a time: a fused multiply-add per product
    // on CPUs and GPUs, and the interpreter the same order
    // (VIZ: a stage, not a rewrite, from the lowered graph to the program's, whose last node, its SINK, holds it;
    // its own passes are steps nested in it)
    const double start = tracing ? viz::now_s() : 0;
    {
      std::optional<viz::StepDepth> nested;
      if (tracing) nested.emplace();
      spec.uops = linearize_kernel(lowered, {.sequential_sums = true});
    }
    if (tracing && !spec.uops.empty())
      viz::record_step("linearize", lowered, spec.uops.back(), -1, viz::now_s() - start, {});
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
  const double start = tracing ? viz::now_s() : 0;
  spec.src = k.renderer().render(spec.name, spec.uops);
  if (tracing && !spec.uops.empty()) viz::record_step("render", spec.uops.back(), spec.uops.back(), -1, viz::now_s() - start, {});
  if (DEBUG >= 4) std::printf("%s\n", spec.src.c_str());
  return spec;
}

namespace {

// compile_runner's codegen half: the kernel optimized, lowered and rendered, without its program.
std::unique_ptr<CompiledRunner> plan_runner(const std::string& device, const UOpPtr& ast,
                                            const std::vector<Opt>* opts) {
  Device& dev = get_device(device);
  viz::Context trace("kernel", "", device);  // (VIZ: its passes, opts, program and source)
  if (viz::enabled()) viz::record_step("ast", ast, ast, -1, 0, {});
  Kernel k(ast, dev.renderer());
  if (opts) k.apply_opts(*opts);
  else if (!NOOPT) k.hand_coded_optimizations();
  const std::string name = unique_name(k.name(), ast);
  trace.rename(name);
  if (DEBUG >= 3) {
    std::printf("%s\n", (k.colored_name() + name.substr(k.name().size())).c_str());
    for (auto& o : k.applied_opts()) std::printf("%s\n", o.repr().c_str());
    if (k.applied_opts().empty()) std::printf("(no opts) %s\n", name.c_str());
  }
  if (DEBUG >= 5) std::printf("%s\n", ast->repr().c_str());
  auto runner = std::make_unique<CompiledRunner>();
  runner->spec = program_spec(k, name, k.colored_name() + name.substr(k.name().size()));
  runner->device = device;
  if (trace.index() >= 0) {
    std::string applied;
    for (auto& o : k.applied_opts()) applied += o.repr() + "\n";
    trace.text("opts", applied.empty() ? "(no opts)" : applied);
    trace.text("program", uops_listing(runner->spec.uops));
    trace.text("source", runner->spec.src);
    runner->viz_context = trace.index();
  }
  return runner;
}

}  // namespace

std::unique_ptr<CompiledRunner> compile_runner(const std::string& device, const UOpPtr& ast,
                                               const std::vector<Opt>* opts) {
  auto runner = plan_runner(device, ast, opts);
  Device& dev = get_device(device);
  runner->program = dev.load(runner->spec, dev.compiler().compile_cached(runner->spec.src));
  return runner;
}

int compile_jobs() {
  const long jobs = getenv_int("TG_JOBS", 0);
  if (jobs > 0) return int(std::min<long>(jobs, 64));
  return std::max(1, int(std::thread::hardware_concurrency()));
}

namespace {

// The method cache. NOOPT, the BEAM width and ALLOW_TF32 are part of the key: the same AST compiles to different
// programs under each (a tf32 one computes other values).
using Key = std::tuple<std::string, const UOp*, bool, int, bool>;
struct MethodCache {
  std::recursive_mutex mu;
  std::map<Key, std::pair<UOpPtr, std::unique_ptr<CompiledRunner>>> runners;
};
MethodCache& method_cache() {
  static MethodCache* c = new MethodCache();  // (lives until exit: programs may be released after main)
  return *c;
}
Key key_of(const std::string& device, const UOpPtr& ast, int beam) {
  return Key{device, ast.get(), NOOPT != 0, beam, allow_tf32()};
}

}  // namespace

CompiledRunner& get_runner(const std::string& device, const UOpPtr& ast) {
  MethodCache& c = method_cache();
  const int beam = NOOPT ? 0 : beam_level();
  std::lock_guard<std::recursive_mutex> lock(c.mu);
  const Key key = key_of(device, ast, beam);
  if (auto it = c.runners.find(key); it != c.runners.end()) return *it->second.second;
  // BEAM searches under the lock: two threads never search the same kernel at once.
  std::optional<std::vector<Opt>> opts = beam_opts(device, ast, beam);
  auto runner = compile_runner(device, ast, opts ? &*opts : nullptr);
  auto& slot = c.runners[key];
  slot.first = ast;
  slot.second = std::move(runner);
  return *slot.second;
}

std::vector<CompiledRunner*> find_runners(const std::vector<std::pair<std::string, UOpPtr>>& kernels) {
  MethodCache& c = method_cache();
  const int beam = NOOPT ? 0 : beam_level();
  std::vector<CompiledRunner*> found(kernels.size(), nullptr);
  std::lock_guard<std::recursive_mutex> lock(c.mu);  // (one lock for the whole schedule, not one per kernel)
  std::vector<size_t> missing;  // the first item of each kernel not compiled yet
  for (size_t i = 0; i < kernels.size(); i++) {
    if (!kernels[i].second) continue;  // (not a kernel: a copy)
    if (auto it = c.runners.find(key_of(kernels[i].first, kernels[i].second, beam)); it != c.runners.end())
      found[i] = it->second.second.get();
    else if (std::none_of(missing.begin(), missing.end(), [&](size_t m) { return kernels[m] == kernels[i]; }))
      missing.push_back(i);
  }
  // (get_runner compiles them as they come; compile_jobs() reads /sys: not on every realize)
  if (beam > 0 || missing.size() < 2 || compile_jobs() < 2) return found;
  std::vector<std::unique_ptr<CompiledRunner>> planned(missing.size());
  for (size_t m = 0; m < missing.size(); m++) {
    try {
      planned[m] = plan_runner(kernels[missing[m]].first, kernels[missing[m]].second, nullptr);
    } catch (const std::exception&) {  // (as a failed compile below)
    }
  }
  // Source -> binary on the pool, each worker under the caller's CACHELEVEL and DEBUG (knobs are per thread).
  std::vector<std::string> binaries(planned.size());
  std::vector<char> failed(planned.size(), 0);
  std::atomic<size_t> next{0};
  const long cache_level = CACHELEVEL, debug = DEBUG;
  auto work = [&] {
    CACHELEVEL = cache_level;
    DEBUG = debug;
    for (size_t m; (m = next.fetch_add(1)) < planned.size();) {
      if (!planned[m]) continue;
      try {
        binaries[m] = get_device(planned[m]->device).compiler().compile_cached(planned[m]->spec.src);
      } catch (const std::exception&) {
        failed[m] = 1;  // get_runner compiles it again and raises the error where the kernel runs
      }
    }
  };
  std::vector<std::thread> pool;
  for (size_t t = 1; t < std::min(planned.size(), size_t(compile_jobs())); t++) pool.emplace_back(work);
  work();
  for (auto& t : pool) t.join();
  for (size_t m = 0; m < planned.size(); m++) {
    if (!planned[m] || failed[m]) continue;
    const auto& [device, ast] = kernels[missing[m]];
    planned[m]->program = get_device(device).load(planned[m]->spec, binaries[m]);
    auto& slot = c.runners[key_of(device, ast, beam)];
    slot.first = ast;
    slot.second = std::move(planned[m]);
    for (size_t i = 0; i < kernels.size(); i++)
      if (kernels[i] == kernels[missing[m]]) found[i] = slot.second.get();
  }
  return found;
}

}  // namespace tg
