#include "codegen/prefetch.h"

#include <algorithm>
#include <optional>
#include <unordered_map>
#include <vector>

#include "uop/pattern.h"
#include "uop/symbolic_linear.h"

namespace tg {
namespace {

constexpr int64_t kLine = 64;            // bytes a prefetch brings
constexpr int64_t kMinTile = 1024;       // smaller tiles stay with the hardware prefetchers
constexpr int64_t kMaxTile = 32768;      // larger ones (a matmul's panel) are reused, not streamed
constexpr int64_t kMaxLinesPerStep = 8;  // the prefetches one reduce step may add

// The loads of one buffer that walk the same tiles: the same output loop, reduce loops and other terms (thread
// index, variables), at constant offsets [lo, hi) from each other.
struct Stream {
  UOpPtr buffer, outer;
  int64_t tile = 0;                // elements per outer iteration
  std::vector<LinearTerm> reduce;  // the reduce loops (every loop of one accumulator), with their strides
  std::vector<LinearTerm> rest;
  int64_t lo = 0, hi = 0;
};

// The pass's state, made from the whole kernel before the rule runs: the loops of each reduce (outermost first)
// and the streams.
struct PrefetchCtx {
  std::unordered_map<const UOp*, std::vector<UOpPtr>> loops_of;  // a reduce loop -> all loops of its reduce
  std::vector<Stream> streams;
};

bool is_const_range(const UOp* r) {
  return r->op == Ops::RANGE && r->src.at(0)->op == Ops::CONST && r->src.at(0)->const_int_value() == 0 &&
         r->src.at(1)->op == Ops::CONST;
}

bool depends_on_a_loop(const UOpPtr& x) {
  for (const UOp* u : toposort(x))
    if (u->op == Ops::RANGE) return true;
  return false;
}

// The stream a load belongs to, or nothing when its index is not (other terms) + tile * O + sum(stride * R) + c
// for one output loop O and every loop R of one reduce (each a constant trip).
std::optional<Stream> stream_of(const UOp& load, const PrefetchCtx& ctx) {
  if (load.src.size() != 2 || load.src[0]->op != Ops::DEFINE_GLOBAL || !is_signed_int_scalar(load.src[1]->dtype))
    return std::nullopt;
  std::optional<Linear> lin = linearize(load.src[1]);
  if (!lin) return std::nullopt;
  Stream s{load.src[0], nullptr};
  const std::vector<UOpPtr>* loops = nullptr;
  for (const LinearTerm& t : lin->terms) {
    auto it = ctx.loops_of.find(t.x.get());
    if (t.x->op != Ops::RANGE) {
      if (depends_on_a_loop(t.x)) return std::nullopt;  // (a div or mod of a loop: not a walk of tiles)
      s.rest.push_back(t);
    } else if (it != ctx.loops_of.end() && (!loops || *loops == it->second) && is_const_range(t.x.get()) &&
               t.coef > 0) {
      loops = &it->second;
      s.reduce.push_back(t);
    } else if (it == ctx.loops_of.end() && !s.outer && t.coef > 0) {
      s.outer = t.x, s.tile = t.coef;
    } else {
      return std::nullopt;
    }
  }
  if (!s.outer || !loops || s.reduce.size() != loops->size()) return std::nullopt;
  // outermost loop first, as the reduce lists them
  std::vector<LinearTerm> ordered;
  for (const UOpPtr& r : *loops)
    for (const LinearTerm& t : s.reduce)
      if (t.x == r) ordered.push_back(t);
  s.reduce = std::move(ordered);
  s.lo = lin->c, s.hi = lin->c + std::max<int64_t>(load.dtype.count, 1);
  return s;
}

bool same_walk(const Stream& a, const Stream& b) {
  auto same = [](const std::vector<LinearTerm>& x, const std::vector<LinearTerm>& y) {
    if (x.size() != y.size()) return false;
    for (size_t i = 0; i < x.size(); i++)
      if (x[i].x != y[i].x || x[i].coef != y[i].coef) return false;
    return true;
  };
  return a.buffer == b.buffer && a.outer == b.outer && a.tile == b.tile && same(a.reduce, b.reduce) &&
         same(a.rest, b.rest);
}

PrefetchCtx analyze(const UOpPtr& sink) {
  PrefetchCtx ctx;
  const std::vector<const UOp*> topo = toposort(sink);
  for (const UOp* u : topo)
    if (u->op == Ops::REDUCE) {
      std::vector<UOpPtr> loops(u->src.begin() + 1, u->src.end());
      for (const UOpPtr& r : loops) ctx.loops_of.emplace(r.get(), loops);
    }
  if (ctx.loops_of.empty()) return ctx;
  for (const UOp* u : topo) {
    if (u->op != Ops::LOAD) continue;
    std::optional<Stream> s = stream_of(*u, ctx);
    if (!s) continue;
    auto it = std::find_if(ctx.streams.begin(), ctx.streams.end(), [&](const Stream& o) { return same_walk(o, *s); });
    if (it == ctx.streams.end()) {
      ctx.streams.push_back(*s);
    } else {
      it->lo = std::min(it->lo, s->lo);
      it->hi = std::max(it->hi, s->hi);
    }
  }
  return ctx;
}

int64_t trip(const LinearTerm& loop) { return loop.x->src[1]->const_int_value(); }

// The prefetches of one stream: at reduce step r (the reduce loops counted as one), lines r * lines .. of the tile
// after this one. None when the tiles are not contiguous blocks of a streamed size.
std::vector<UOpPtr> prefetches(const Stream& s) {
  const int64_t item = s.buffer->dtype.scalar_type().itemsize(), tile_bytes = s.tile * item;
  int64_t steps = 1, reach = 0;  // reduce steps per tile; the elements the loops walk past the first
  for (const LinearTerm& r : s.reduce) steps *= trip(r), reach += r.coef * (trip(r) - 1);
  if (steps < 2 || kLine % item != 0 || tile_bytes < kMinTile || tile_bytes > kMaxTile ||
      reach + (s.hi - s.lo) > s.tile)
    return {};
  const int64_t lines = (tile_bytes + steps * kLine - 1) / (steps * kLine);
  if (lines > kMaxLinesPerStep) return {};
  std::vector<UOpPtr> out;
  for (int64_t j = 0; j < lines; j++) {
    Linear at;
    at.terms = s.rest;
    at.terms.push_back({s.outer, s.tile});
    int64_t stride = lines * kLine / item;  // of the innermost loop; outer ones step past all its steps
    for (size_t k = s.reduce.size(); k-- > 0;) {
      at.terms.push_back({s.reduce[k].x, stride});
      stride *= trip(s.reduce[k]);
    }
    at.c = s.lo + s.tile + j * kLine / item;
    out.push_back(UOp::make(Ops::PREFETCH, dtypes::void_, {s.buffer, build_linear(at, s.outer->dtype)}));
  }
  return out;
}

UOpPtr with_prefetches(const Captures& m, PrefetchCtx& ctx) {
  const UOpPtr& sink = m["sink"];
  std::vector<UOpPtr> srcs = sink->src;
  for (const Stream& s : ctx.streams)
    for (UOpPtr& p : prefetches(s)) srcs.push_back(std::move(p));
  ctx.streams.clear();  // once
  if (srcs.size() == sink->src.size()) return nullptr;
  return UOp::make(Ops::SINK, sink->dtype, std::move(srcs), sink->arg);
}

const TypedMatcher<PrefetchCtx>& pm_prefetch() {
  static const TypedMatcher<PrefetchCtx> pm({
      // the kernel's SINK: one PREFETCH per line of the next tile each reduce step needs
      {UPat::ops_of({Ops::SINK}, "sink"), with_prefetches},
  });
  return pm;
}

}  // namespace

UOpPtr add_prefetches(const UOpPtr& sink) {
  PrefetchCtx ctx = analyze(sink);
  if (ctx.streams.empty()) return sink;
  return graph_rewrite("prefetch", sink, pm_prefetch(), ctx, /*bottom_up=*/true);
}

}  // namespace tg
