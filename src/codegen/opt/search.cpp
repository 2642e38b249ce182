// BEAM search (codegen/opt/search.h): the action space and the beam loop. Candidates are timed by the caller.
#include "codegen/opt/search.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <numeric>
#include <string>

#include "tg/context.h"

namespace tg {
namespace {

// tinygrad's amounts (0 means the whole dim). UPCAST also tries 8 and 16: a CPU register holds 8 or 16 floats.
constexpr int kUpcastAmounts[] = {0, 2, 3, 4, 5, 7, 8, 16};
constexpr int kUnrollAmounts[] = {0, 2, 4, 7, 8};
constexpr int kLocalAmounts[] = {2, 3, 4, 8, 13, 16, 29, 32};
constexpr int kGroupAmounts[] = {0, 4, 8, 16};
constexpr int kGroupTopAmounts[] = {13, 16, 28, 29, 32, 49, 64, 256};
constexpr int kThreadAmounts[] = {2, 3, 4, 5, 8, 12, 16, 24, 32, 64};
constexpr int kPadTo = 32;

// A new best must beat the old one by this fraction (tinygrad's BEAM_MIN_PROGRESS, made relative): smaller
// gains are timing noise, and chasing them only makes the search longer.
constexpr double kMinProgress = 0.01;
// A candidate is timed past its first run only while it is within this factor of the best so far.
constexpr double kGiveUpFactor = 3.0;
// A beam entry this many times slower than the best is not expanded: one more opt cannot close such a gap
// (it keeps a 1024^3 matmul's plain loops, 100x slower than its register tile, from costing a second per child).
constexpr double kHopelessFactor = 16.0;

bool is_loop(const Kernel& k, int d) { return k.kinds()[size_t(d)] == AxisKind::LOOP; }

// Opts of `op` on `axis` (a dim of size `dim_size`) for each amount; an amount equal to the dim is left out
// when 0 (the whole dim) is tried anyway.
template <size_t N>
void add_amounts(std::vector<Opt>& out, OptOps op, int axis, int64_t dim_size, const int (&amounts)[N],
                 int max_amount) {
  const bool has_whole = std::find(std::begin(amounts), std::end(amounts), 0) != std::end(amounts);
  for (int a : amounts) {
    if (a > max_amount || (a == dim_size && has_whole)) continue;
    out.push_back({op, axis, a});
  }
}

// BEAM_DEBUG=2: every candidate of a step, with its time.
void print_candidates(const std::vector<Kernel>& candidates, const std::vector<double>& times) {
  for (size_t i = 0; i < candidates.size(); i++) {
    const std::vector<Opt>& opts = candidates[i].applied_opts();
    std::string last = opts.empty() ? "(none)" : opts.back().repr();
    if (times[i] < kNotTimed)
      std::printf("  %10.2f us  %s  + %s\n", times[i] * 1e6, candidates[i].colored_name().c_str(), last.c_str());
    else
      std::printf("  %13s  %s  + %s\n", "not timed", candidates[i].colored_name().c_str(), last.c_str());
  }
}

struct Ranked {
  size_t index;
  double seconds;
};

// The finite times, fastest first.
std::vector<Ranked> rank(const std::vector<double>& times) {
  std::vector<Ranked> r;
  for (size_t i = 0; i < times.size(); i++)
    if (times[i] < kNotTimed) r.push_back({i, times[i]});
  std::stable_sort(r.begin(), r.end(), [](const Ranked& a, const Ranked& b) { return a.seconds < b.seconds; });
  return r;
}

// The `width` fastest candidates that are not hopelessly slower than the fastest.
std::vector<Kernel> keep_best(const std::vector<Kernel>& candidates, const std::vector<Ranked>& ranked, int width) {
  std::vector<Kernel> beam;
  for (const Ranked& r : ranked) {
    if (int(beam.size()) >= width || r.seconds > ranked.front().seconds * kHopelessFactor) break;
    beam.push_back(candidates[r.index]);
  }
  return beam;
}

std::string opts_text(const std::vector<Opt>& opts) {
  std::string s;
  for (const Opt& o : opts) s += (s.empty() ? "" : ", ") + o.repr();
  return "[" + s + "]";
}

}  // namespace

std::vector<Opt> search_actions(const Kernel& k) {
  std::vector<Opt> out;
  const Renderer& r = k.renderer();
  const Shape& shape = k.full_shape();
  const int first_reduce = k.first_reduce(), n_reduce = k.first_upcast() - first_reduce;
  if (!r.tensor_cores().empty() && k.applied_opts().empty()) out.push_back({OptOps::TC, 0, 0});
  for (int d = 0; d < first_reduce; d++) {
    if (!is_loop(k, d)) continue;
    add_amounts(out, OptOps::UPCAST, d, shape[size_t(d)], kUpcastAmounts, 1 << 30);
    if (r.has_local()) add_amounts(out, OptOps::LOCAL, d, shape[size_t(d)], kLocalAmounts, int(r.max_local_size()));
    // More pieces than cores only adds scheduling work on a CPU.
    if (r.threads() > 1) add_amounts(out, OptOps::THREAD, d, shape[size_t(d)], kThreadAmounts, r.threads());
    for (int e = d + 1; e < first_reduce; e++)
      if (is_loop(k, e)) out.push_back({OptOps::SWAP, d, e});
  }
  // PADTO 32 (tinygrad's amount) on every output loop and reduce dim that is not a multiple of it already
  for (int d = 0; d < first_reduce + n_reduce; d++)
    if ((is_loop(k, d) || k.kinds()[size_t(d)] == AxisKind::REDUCE) && shape[size_t(d)] % kPadTo != 0)
      out.push_back({OptOps::PADTO, d, int(kPadTo)});
  for (int a = 0; a < n_reduce; a++) {
    const int64_t size = shape[size_t(first_reduce + a)];
    add_amounts(out, OptOps::UNROLL, a, size, kUnrollAmounts, 1 << 30);
    if (r.has_local()) {
      add_amounts(out, OptOps::GROUP, a, size, kGroupAmounts, int(r.max_local_size()));
      add_amounts(out, OptOps::GROUPTOP, a, size, kGroupTopAmounts, int(r.max_local_size()));
    }
  }
  return out;
}

std::vector<Kernel> kernel_actions(const Kernel& k) {
  std::vector<Kernel> out;
  for (const Opt& o : search_actions(k)) {
    Kernel child = k;
    try {
      child.apply_opt(o);
    } catch (const Error&) {  // KernelOptError, or a tensor core that cannot be set up on this kernel
      continue;
    }
    if (child.upcast_size() > child.max_upcast()) continue;
    if (child.renderer().has_local() && child.local_size() > child.renderer().max_local_size()) continue;
    out.push_back(std::move(child));
  }
  return out;
}

BeamResult beam_search(const Kernel& start, const std::vector<Kernel>& seeds, int width, const CandidateTimer& time) {
  if (width < 1) throw Error("beam_search: width " + std::to_string(width) + " (BEAM) must be >= 1");
  const auto t0 = std::chrono::steady_clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
  BeamResult result;
  result.opts = start.applied_opts();

  // The seeds first: their best time lets the plain start give up after one run when it is far slower (a
  // 1024^3 matmul's plain loops take a second a run). (push_back, not insert: a Kernel holds its renderer by
  // reference, so it can be copied but not assigned.)
  std::vector<Kernel> candidates(seeds.begin(), seeds.end());
  std::vector<double> times = time(candidates, kNotTimed);
  double best_seed = kNotTimed;
  for (double t : times) best_seed = std::min(best_seed, t);
  candidates.push_back(start);
  times.push_back(time({start}, best_seed * kGiveUpFactor).at(0));
  if (BEAM_DEBUG >= 2) print_candidates(candidates, times);
  std::vector<Ranked> ranked = rank(times);
  result.timed += ranked.size();
  if (ranked.empty()) return result;
  result.opts = candidates[ranked.front().index].applied_opts();
  result.seconds = ranked.front().seconds;
  std::vector<Kernel> beam = keep_best(candidates, ranked, width);
  if (BEAM_DEBUG >= 1)
    std::printf("BEAM %7.2fs: start %10.2f us %s %s\n", elapsed(), result.seconds * 1e6,
                beam.front().colored_name().c_str(), opts_text(result.opts).c_str());

  for (;;) {
    candidates.clear();
    for (const Kernel& k : beam)
      for (Kernel& child : kernel_actions(k)) candidates.push_back(std::move(child));
    if (candidates.empty()) break;
    result.steps++;
    times = time(candidates, result.seconds * kGiveUpFactor);
    if (BEAM_DEBUG >= 2) print_candidates(candidates, times);
    ranked = rank(times);
    result.timed += ranked.size();
    const bool improved = !ranked.empty() && ranked.front().seconds < result.seconds * (1 - kMinProgress);
    if (BEAM_DEBUG >= 1) {
      const double step_best = ranked.empty() ? kNotTimed : ranked.front().seconds;
      std::printf("BEAM %7.2fs: step %d %10.2f us from %zu candidates (%zu timed)%s\n", elapsed(), result.steps,
                  step_best * 1e6, candidates.size(), ranked.size(), improved ? "" : ", no progress: done");
    }
    if (!improved) break;
    result.opts = candidates[ranked.front().index].applied_opts();
    result.seconds = ranked.front().seconds;
    beam = keep_best(candidates, ranked, width);
    if (BEAM_DEBUG >= 1)
      std::printf("BEAM %7.2fs:        best %s %s\n", elapsed(), beam.front().colored_name().c_str(),
                  opts_text(result.opts).c_str());
  }
  std::fflush(stdout);
  return result;
}

}  // namespace tg
