#include "codegen/reduce_to_acc.h"

#include <algorithm>
#include <map>
#include <unordered_map>
#include <unordered_set>

#include "codegen/linearize.h"
#include "renderer/tensor_core.h"
#include "tg/error.h"
#include "uop/pattern.h"

namespace tg {
namespace {

// The pass's state: made by looking at the whole graph first (the rules see one node at a time), keyed by the
// graph's nodes as they were (the rules run top-down, on each node before its sources).
struct AccCtx {
  std::unordered_map<const UOp*, UOpPtr> acc;                 // REDUCE -> its DEFINE_ACC
  std::unordered_map<const UOp*, std::vector<UOpPtr>> mma_c;  // first op of a folded chain -> accumulators as its C
  std::unordered_set<const UOp*> folded;                      // REDUCEs whose update is their value
  std::unordered_map<const UOp*, std::vector<UOpPtr>> terms;  // REDUCE -> the terms its sum adds one at a time
};

// What the state is made from: each node's uses and the loops it runs in (the ranges it depends on; a REDUCE's
// own end with it), and the REDUCEs grouped by the ranges they sum over.
struct Graph {
  std::vector<const UOp*> topo;
  std::unordered_map<const UOp*, int> uses;
  std::unordered_map<const UOp*, std::vector<const UOp*>> deps;
  std::map<std::vector<const UOp*>, std::vector<const UOp*>> groups;  // ranges -> their REDUCEs, in graph order

  explicit Graph(const UOpPtr& sink) : topo(toposort(sink)) {
    for (const UOp* u : topo) {
      for (auto& s : u->src) uses[s.get()]++;
      std::vector<const UOp*> d;
      if (u->op == Ops::RANGE) d.push_back(u);
      const size_t last = u->op == Ops::REDUCE ? 1 : u->src.size();
      for (size_t i = 0; i < last; i++)
        for (const UOp* r : deps.at(u->src[i].get()))
          if (std::find(d.begin(), d.end(), r) == d.end()) d.push_back(r);
      if (u->op == Ops::REDUCE) {
        std::vector<const UOp*> rs;
        for (size_t i = 1; i < u->src.size(); i++) rs.push_back(u->src[i].get());
        if (rs.empty()) throw Error("reduce_to_acc: a REDUCE without ranges");
        for (const UOp* r : rs) d.erase(std::remove(d.begin(), d.end(), r), d.end());
        groups[rs].push_back(u);
      }
      deps[u] = std::move(d);
    }
  }
  // whether u runs inside one of these loops
  bool inside(const UOp* u, const std::vector<const UOp*>& ranges) const {
    for (const UOp* r : deps.at(u))
      if (std::find(ranges.begin(), ranges.end(), r) != ranges.end()) return true;
    return false;
  }
};

bool is_mma(const UOp* u) { return u && (u->op == Ops::WMMA || u->op == Ops::WGMMA); }
size_t c_start(const UOp* u) { return u->op == Ops::WMMA ? u->src.size() - size_t(TensorCore::kC) : 5; }

// The op at the start of the chain that ends in `last` (each op's C the previous one's lanes, each lane used once),
// whose C is zeros; nullptr when the chain is not that.
const UOp* chain_start(const Graph& g, const UOp* last) {
  const UOp* first = last;
  const size_t c0 = c_start(last), nc = size_t(last->dtype.count);
  for (;;) {
    const UOp* prev = first->src[c0]->op == Ops::GEP ? first->src[c0]->src[0].get() : nullptr;
    bool zeros = true, chained = prev && prev->op == last->op;
    for (size_t i = 0; i < nc; i++) {
      const UOp* c = first->src[c0 + i].get();
      zeros &= c->op == Ops::CONST && c->const_value() == 0;
      chained &= c->op == Ops::GEP && c->src[0].get() == prev && c->get<int64_t>() == int64_t(i) && g.uses.at(c) == 1;
    }
    if (zeros) return first;
    if (!chained) return nullptr;
    first = prev;
  }
}

// The tensor-core chains whose every lane is summed by one of these REDUCEs (over the same loops): their first op
// takes the accumulators as C.
void fold_mma_chains(const Graph& g, const std::vector<const UOp*>& ranges, const std::vector<const UOp*>& members,
                     AccCtx& ctx) {
  std::unordered_map<const UOp*, std::vector<int>> lanes;  // last op of a chain -> member per lane
  for (size_t m = 0; m < members.size(); m++) {
    const UOp* v = members[m]->src[0].get();
    if (members[m]->get<int64_t>() != int64_t(Ops::ADD) || v->op != Ops::GEP || !is_mma(v->src[0].get()) ||
        g.uses.at(v) != 1)
      continue;
    auto [it, fresh] = lanes.try_emplace(v->src[0].get());
    if (fresh) it->second.assign(size_t(v->src[0]->dtype.count), -1);
    it->second[size_t(v->get<int64_t>())] = int(m);
  }
  for (auto& [last, mem] : lanes) {
    if (std::count(mem.begin(), mem.end(), -1) != 0) continue;
    const UOp* first = chain_start(g, last);
    if (!first || !g.inside(first, ranges) || ctx.mma_c.count(first)) continue;
    std::vector<UOpPtr> c;
    for (int m : mem) c.push_back(ctx.acc.at(members[size_t(m)]));
    if (std::any_of(c.begin(), c.end(), [&](const UOpPtr& a) { return a->dtype != first->dtype.scalar_type(); })) continue;
    ctx.mma_c[first] = std::move(c);
    for (int m : mem) ctx.folded.insert(members[size_t(m)]);
  }
}

// A float sum whose value is a tree of single-use ADDs inside its loops: the tree's leaves, left to right.
void split_sum_tree(const Graph& g, const std::vector<const UOp*>& ranges, const UOp* r, AccCtx& ctx) {
  if (ctx.folded.count(r) || r->get<int64_t>() != int64_t(Ops::ADD) || !r->dtype.is_float()) return;
  std::vector<UOpPtr> terms, stack{r->src[0]};
  bool split = false;
  while (!stack.empty()) {
    UOpPtr x = stack.back();
    stack.pop_back();
    const bool sum = x->op == Ops::ADD && x->dtype == r->dtype && (x == r->src[0] || g.uses.at(x.get()) == 1) &&
                     g.inside(x.get(), ranges);
    if (!sum) {
      terms.push_back(x);
      continue;
    }
    split = true;
    stack.push_back(x->src[1]);  // the left operand is taken first
    stack.push_back(x->src[0]);
  }
  if (split) ctx.terms[r] = std::move(terms);
}

UOpPtr accumulate(const Captures& m, AccCtx& ctx) {
  const UOpPtr& r = m["r"];
  auto it = ctx.acc.find(r.get());
  if (it == ctx.acc.end()) return nullptr;
  const UOpPtr& acc = it->second;
  UOpPtr update;
  if (ctx.folded.count(r.get())) {
    update = r->src[0];
  } else if (auto t = ctx.terms.find(r.get()); t != ctx.terms.end()) {
    update = acc;
    for (const UOpPtr& term : t->second) update = UOp::make(Ops::ADD, r->dtype, {update, term});
  } else {
    update = UOp::make(static_cast<Ops>(r->get<int64_t>()), r->dtype, {acc, r->src[0]});
  }
  return UOp::make(Ops::ASSIGN, r->dtype, {acc, update});
}

UOpPtr feed_accumulators(const Captures& m, AccCtx& ctx) {
  const UOpPtr& u = m["u"];
  auto it = ctx.mma_c.find(u.get());
  if (it == ctx.mma_c.end()) return nullptr;
  std::vector<UOpPtr> srcs = u->src;
  std::copy(it->second.begin(), it->second.end(), srcs.end() - std::ptrdiff_t(it->second.size()));
  return UOp::make(u->op, u->dtype, std::move(srcs), u->arg);
}

const TypedMatcher<AccCtx>& pm_reduce_to_acc() {
  static const TypedMatcher<AccCtx> pm({
      // a reduce: its accumulator updated at the end of its loops' body
      {UPat::ops_of({Ops::REDUCE}, "r"), accumulate},
      // the first op of a tensor-core chain whose lanes are summed: the accumulators as its C
      {UPat::ops_of({Ops::WMMA, Ops::WGMMA}, "u"), feed_accumulators},
  });
  return pm;
}

}  // namespace

UOpPtr reduce_to_acc(const UOpPtr& sink, bool sequential_sums) {
  const Graph g(sink);
  AccCtx ctx;
  int64_t id = 0;
  for (const UOp* u : g.topo)
    if (u->op == Ops::REDUCE) {
      std::vector<UOpPtr> srcs{reduce_identity(static_cast<Ops>(u->get<int64_t>()), u->dtype)};
      srcs.insert(srcs.end(), u->src.begin() + 1, u->src.end());
      ctx.acc[u] = UOp::make(Ops::DEFINE_ACC, u->dtype, std::move(srcs), id++);
    }
  for (const auto& [ranges, members] : g.groups) {
    fold_mma_chains(g, ranges, members, ctx);
    if (sequential_sums)
      for (const UOp* r : members) split_sum_tree(g, ranges, r, ctx);
  }
  return graph_rewrite("reduce_to_acc", sink, pm_reduce_to_acc(), ctx, /*bottom_up=*/true);
}

}  // namespace tg
