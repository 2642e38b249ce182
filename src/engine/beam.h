#pragma once
// BEAM in the engine: the opts a kernel gets under BEAM=n (or JITBEAM=n while a TinyJit captures or replays),
// from the on-disk cache (engine/beam_cache.h) or by searching (codegen/opt/search.h) with candidates timed on
// the device (engine/beam_timer.h). The method cache (get_runner) calls it.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "codegen/kernel.h"
#include "engine/beam_cache.h"
#include "runtime/device.h"

namespace tg {

// The beam width for a kernel compiled now on this thread: JITBEAM while a TinyJit captures or replays (when it
// is set), else BEAM; 0 means no search. Throws tg::Error naming the knob for a negative value.
int beam_level();

// The opts BEAM=level picks for `ast` on `device`: the cached winner when the cache has one that still applies
// (IGNORE_BEAM_CACHE=1 skips the lookup), else the result of a search, which is then cached. nullopt when the
// kernel is not searched: a device that runs no kernels (NULL), symbolic shapes, or no candidate that could be
// proved safe to run (the caller then uses the default heuristics).
std::optional<std::vector<Opt>> beam_opts(const std::string& device, const UOpPtr& ast, int level);

// The cache key of `ast` on `dev` at `level`: the device, what the opts are timed on (the compiler's identity:
// version, flags, CPU model or GPU arch; and the CPU threads a THREAD opt may use), the AST's text and the width.
BeamCacheKey beam_cache_key(Device& dev, const UOpPtr& ast, int level);

// Searches this process ran (cache misses that timed candidates), for tests and benchmarks.
int64_t beam_searches();

}  // namespace tg
