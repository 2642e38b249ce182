// The method cache: kernel AST -> program (codegen/to_program.h) -> compiled and loaded, once per device.
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <map>
#include <mutex>
#include <optional>
#include <thread>
#include <tuple>

#include "codegen/to_program.h"
#include "engine/beam.h"
#include "engine/method_cache.h"
#include "engine/realize.h"
#include "helpers/env.h"
#include "tg/context.h"
#include "runtime/interpreter.h"
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

// compile_runner's codegen half: the kernel optimized, lowered and rendered, without its program.
std::unique_ptr<CompiledRunner> plan_runner(const std::string& device, const UOpPtr& ast,
                                            const std::vector<Opt>* opts) {
  Device& dev = get_device(device);
  viz::Context trace("kernel", "", device);  // (VIZ: its passes, opts, program and source)
  if (viz::enabled()) viz::record_step("ast", ast, ast, -1, 0, {});
  auto runner = std::make_unique<CompiledRunner>();
  runner->spec = to_program(ast, dev.renderer(), {.opts = opts, .rename = [&](const std::string& kernel_name) {
                                                     const std::string name = unique_name(kernel_name, ast);
                                                     trace.rename(name);
                                                     return name;
                                                   }});
  runner->device = device;
  if (trace.index() >= 0) {
    std::string applied;
    for (auto& o : runner->spec.applied_opts) applied += o + "\n";
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
