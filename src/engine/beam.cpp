// BEAM in the engine (engine/beam.h): cache lookup, search, cache store.
#include "engine/beam.h"

#include <atomic>
#include <chrono>
#include <cstdio>

#include "codegen/opt/heuristic.h"
#include "codegen/opt/search.h"
#include "engine/beam_cache.h"
#include "engine/beam_timer.h"
#include "engine/capture.h"
#include "runtime/device.h"
#include "tg/context.h"

namespace tg {
namespace {

std::atomic<int64_t> g_searches{0};

int checked_level(const ContextVar& knob) {
  const long v = knob.value();
  if (v < 0 || v > 1024)
    throw Error(std::string(knob.key()) + "=" + std::to_string(v) +
                ": expected a beam width in [0, 1024] (0: no search)");
  return int(v);
}

bool has_vars(const UOpPtr& ast) {
  for (const UOp* u : toposort(ast))
    if (u->op == Ops::DEFINE_VAR) return true;
  return false;
}

// The cached opts, if they still apply to this kernel (a stored list from another version of the optimizer may not).
std::optional<std::vector<Opt>> cached_opts(BeamCacheDb& db, const BeamCacheKey& key, Device& dev, const UOpPtr& ast) {
  std::optional<std::vector<Opt>> opts = db.get(key);
  if (!opts) return std::nullopt;
  try {
    Kernel k(ast, dev.renderer());
    k.apply_opts(*opts);
  } catch (const Error& e) {
    if (DEBUG >= 1) std::printf("BEAM: cached opts no longer apply (%s), searching again\n", e.what());
    return std::nullopt;
  }
  return opts;
}

std::optional<std::vector<Opt>> search(Device& dev, const UOpPtr& ast, int level) {
  const auto t0 = std::chrono::steady_clock::now();
  g_searches++;
  Kernel start(ast, dev.renderer());
  Kernel hand_coded = start;
  hand_coded_optimizations(hand_coded);
  CandidateBench bench(dev, ast);
  bench.trust(hand_coded);
  BeamResult r = beam_search(start, {hand_coded}, level,
                             [&](const std::vector<Kernel>& c, double give_up) { return bench.time(c, give_up); });
  if (bench.unproven() && BEAM_DEBUG >= 1)
    std::printf("BEAM: %zu candidates not run (memory access not proved in bounds), e.g. %s\n", bench.unproven(),
                bench.first_unproven_reason().c_str());
  if (r.seconds == kNotTimed) {
    if (DEBUG >= 1)
      std::printf("BEAM: no candidate of %s could be timed; using the default opts\n", start.name().c_str());
    return std::nullopt;
  }
  if (DEBUG >= 1 || BEAM_DEBUG >= 1) {
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("BEAM=%d %s: %.2f us after %d steps, %zu timed, %.2f s\n", level, start.name().c_str(), r.seconds * 1e6,
                r.steps, r.timed, s);
  }
  return r.opts;
}

}  // namespace

// What the opts are timed on, beyond the device's name: the compiler's identity (its version, flags and the CPU
// model or GPU architecture it targets), the CPU threads a THREAD opt may use, and whether tf32 tensor cores are
// allowed (ALLOW_TF32: they change the values).
BeamCacheKey beam_cache_key(Device& dev, const UOpPtr& ast, int level) {
  return {dev.name(),
          dev.compiler().cache_key() + "|threads=" + std::to_string(dev.renderer().threads()) +
              (allow_tf32() ? "|tf32" : ""),
          ast->repr(), level};
}

int beam_level() {
  const int beam = checked_level(BEAM), jitbeam = checked_level(JITBEAM);
  return jitbeam > 0 && in_jit() ? jitbeam : beam;
}

int64_t beam_searches() { return g_searches.load(); }

std::optional<std::vector<Opt>> beam_opts(const std::string& device, const UOpPtr& ast, int level) {
  if (level <= 0) return std::nullopt;
  Device& dev = get_device(device);
  if (!dev.executes() || has_vars(ast)) return std::nullopt;
  const BeamCacheKey key = beam_cache_key(dev, ast, level);
  std::shared_ptr<BeamCacheDb> db = process_beam_cache();
  if (db && !IGNORE_BEAM_CACHE)
    if (std::optional<std::vector<Opt>> hit = cached_opts(*db, key, dev, ast)) return hit;
  std::optional<std::vector<Opt>> found = search(dev, ast, level);
  if (found && db) db->put(key, *found);
  return found;
}

}  // namespace tg
