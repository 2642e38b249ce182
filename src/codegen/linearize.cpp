// Ordering the lowered graph into loops, accumulators and statements.
//
// Output loops (RANGEs no REDUCE owns) open in dim order around everything. REDUCEs over the same ranges
// form a group that shares one loop nest: all their accumulators are declared before it, every node that
// depends on its ranges is emitted inside it (in graph order), each accumulator is updated at the end of
// the body, and the loops close. Nodes that do not depend on the reduce ranges are emitted before the
// nest, so loads that only depend on output loops are not repeated per reduce step.
//
// A sum of a tensor core's lanes (REDUCE ADD of GEP(WMMA, i) for i = 0..3, the WMMAs chained through their
// C inputs from zeros; likewise the n / 2 lanes of WGMMAs) folds its accumulators into the chain: the first WMMA takes acc0..acc3 as C and the
// accumulators are assigned the last one's lanes, instead of adding each result to them (4 adds per mma).
#include "codegen/linearize.h"

#include "renderer/tensor_core.h"

#include <algorithm>
#include <array>
#include <limits>
#include <map>
#include <unordered_map>
#include <unordered_set>

#include "tg/error.h"
#include "uop/pass_log.h"

namespace tg {

UOpPtr reduce_identity(Ops op, DType dt) {
  if (dt.count > 1) {
    UOpPtr s = reduce_identity(op, dt.scalar_type());
    return UOp::make(Ops::VECTORIZE, dt, std::vector<UOpPtr>(size_t(dt.count), s));
  }
  if (op == Ops::ADD) return UOp::const_(dt, 0);
  if (op == Ops::MUL) return UOp::const_(dt, 1);
  if (op == Ops::MAX) {
    if (dt.is_float()) return UOp::const_(dt, -std::numeric_limits<double>::infinity());
    return dt.is_bool() ? UOp::const_(dt, 0) : UOp::const_int(int64_t(dt.min()), dt);
  }
  throw Error(std::string("linearize: no identity for reduce op ") + op_name(op));
}

namespace {

class Linearizer {
 public:
  explicit Linearizer(const LinearizeOptions& opts) : opts_(opts) {}
  std::vector<UOpPtr> run(const UOpPtr& sink) {
    topo_ = toposort(sink);
    for (size_t i = 0; i < topo_.size(); i++) order_[topo_[i]] = i;
    find_groups();
    compute_deps();
    // Buffers, variables, thread ids and constants first: they are loop invariant and RANGE bounds need them.
    for (const UOp* u : topo_)
      if (u->op == Ops::DEFINE_GLOBAL || u->op == Ops::DEFINE_VAR || u->op == Ops::SPECIAL ||
          u->op == Ops::DEFINE_LOCAL || u->op == Ops::TENSOR_MAP)
        emit(u);
    for (const UOp* u : topo_)
      if (u->op == Ops::CONST) emit(u);
    std::vector<const UOp*> globals;
    for (const UOp* u : topo_)
      if (u->op == Ops::RANGE && !owner_.count(u)) globals.push_back(u);
    std::sort(globals.begin(), globals.end(),
              [](const UOp* a, const UOp* b) { return a->get<int64_t>() < b->get<int64_t>(); });
    for (const UOp* r : globals) emit(r);
    for (const UOp* u : topo_) {
      if (map_.count(u) || u->op == Ops::SINK || u->op == Ops::RANGE || nest_of(u) >= 0) continue;
      if (u->op == Ops::REDUCE) emit_group(group_of_.at(u));
      else emit(u);
    }
    for (auto it = globals.rbegin(); it != globals.rend(); ++it)
      push(UOp::make(Ops::ENDRANGE, dtypes::void_, {map_.at(*it)}));
    return out_;
  }

 private:
  struct Group {
    std::vector<const UOp*> ranges;   // the reduce loops, outermost first
    std::vector<const UOp*> members;  // its REDUCEs, in graph order
    bool done = false;
  };
  std::vector<const UOp*> topo_;
  std::unordered_map<const UOp*, size_t> order_;
  std::vector<Group> groups_;
  std::unordered_map<const UOp*, int> group_of_;                  // REDUCE -> group
  std::unordered_map<const UOp*, int> owner_;                     // reduce range -> group
  std::unordered_map<const UOp*, std::vector<const UOp*>> deps_;  // ranges a node depends on
  std::unordered_map<const UOp*, UOpPtr> map_;                    // lowered node -> emitted node
  std::vector<UOpPtr> out_;
  std::unordered_set<const UOp*> emitted_;
  int64_t acc_count_ = 0;
  std::unordered_map<const UOp*, std::vector<UOpPtr>> wmma_c_;  // first WMMA of a folded chain -> its C (the accs)
  std::unordered_set<const UOp*> folded_;                        // REDUCEs whose value is assigned as it is
  const LinearizeOptions opts_;
  std::unordered_map<const UOp*, std::vector<const UOp*>> terms_;  // REDUCE -> the terms added one by one
  std::unordered_set<const UOp*> tree_;                            // their sum trees' ADDs (never emitted)

  // sequential_sums: a float ADD reduce's value, when it is a tree of single-use ADDs, is replaced by its terms
  // (leaves, left to right), added to the accumulator one at a time.
  void split_sum_trees(int gi, const std::unordered_map<const UOp*, int>& uses) {
    for (const UOp* r : groups_[size_t(gi)].members) {
      if (folded_.count(r) || r->get<int64_t>() != int64_t(Ops::ADD) || !r->dtype.is_float()) continue;
      std::vector<const UOp*> terms, stack{r->src[0].get()}, inner;
      while (!stack.empty()) {
        const UOp* x = stack.back();
        stack.pop_back();
        bool sum = x->op == Ops::ADD && x->dtype == r->dtype && (x == r->src[0].get() || uses.at(x) == 1) &&
                   nest_of(x) == gi;
        if (!sum) {
          terms.push_back(x);
          continue;
        }
        inner.push_back(x);
        stack.push_back(x->src[1].get());  // the left operand is taken first
        stack.push_back(x->src[0].get());
      }
      if (inner.empty()) continue;
      terms_[r] = std::move(terms);
      tree_.insert(inner.begin(), inner.end());
    }
  }

  // The tensor-core chains of group gi whose lanes (4 of a WMMA, n / 2 of a WGMMA) are summed by REDUCEs of it:
  // the chain's first op gets the accumulators as C. Every intermediate lane must feed only the next op of the
  // chain.
  static bool is_mma(const UOp* u) { return u && (u->op == Ops::WMMA || u->op == Ops::WGMMA); }
  static size_t c_start(const UOp* u) { return u->op == Ops::WMMA ? u->src.size() - size_t(TensorCore::kC) : 5; }

  void fold_wmma_chains(int gi, const std::vector<UOpPtr>& accs) {
    const Group& g = groups_[size_t(gi)];
    std::unordered_map<const UOp*, int> uses;
    for (const UOp* u : topo_)
      for (auto& s : u->src) uses[s.get()]++;
    std::unordered_map<const UOp*, std::vector<int>> lanes;  // last op of a chain -> member per lane
    for (size_t m = 0; m < g.members.size(); m++) {
      const UOp* r = g.members[m];
      const UOp* v = r->src[0].get();
      if (r->get<int64_t>() != int64_t(Ops::ADD) || v->op != Ops::GEP || !is_mma(v->src[0].get()) || uses[v] != 1)
        continue;
      auto [it, fresh] = lanes.try_emplace(v->src[0].get());
      if (fresh) it->second.assign(size_t(v->src[0]->dtype.count), -1);
      it->second[size_t(v->get<int64_t>())] = int(m);
    }
    for (auto& [last, mem] : lanes) {
      if (std::count(mem.begin(), mem.end(), -1) != 0) continue;
      // walk down the chain to the op whose C is zeros
      const UOp* first = last;
      const size_t c0 = c_start(last), nc = mem.size();
      bool ok = true;
      for (;;) {
        const UOp* prev = first->src[c0]->op == Ops::GEP ? first->src[c0]->src[0].get() : nullptr;
        bool zeros = true, chained = prev && prev->op == last->op;
        for (size_t i = 0; i < nc; i++) {
          const UOp* c = first->src[c0 + i].get();
          zeros &= c->op == Ops::CONST && c->const_value() == 0;
          chained &= c->op == Ops::GEP && c->src[0].get() == prev && c->get<int64_t>() == int64_t(i) && uses[c] == 1;
        }
        if (zeros) break;
        if (!chained) {
          ok = false;
          break;
        }
        first = prev;
      }
      if (!ok || nest_of(first) != gi || wmma_c_.count(first)) continue;
      std::vector<UOpPtr> c;
      for (int m : mem) {
        if (accs[size_t(m)]->dtype != first->dtype.scalar_type()) ok = false;
        c.push_back(accs[size_t(m)]);
      }
      if (!ok) continue;
      wmma_c_[first] = std::move(c);
      for (int m : mem) folded_.insert(g.members[size_t(m)]);
    }
  }

  void find_groups() {
    std::map<std::vector<const UOp*>, int> by_ranges;
    for (const UOp* u : topo_) {
      if (u->op != Ops::REDUCE) continue;
      std::vector<const UOp*> rs;
      for (size_t i = 1; i < u->src.size(); i++) rs.push_back(u->src[i].get());
      if (rs.empty()) throw Error("linearize: REDUCE without ranges");
      auto [it, fresh] = by_ranges.emplace(rs, int(groups_.size()));
      if (fresh) groups_.push_back(Group{rs, {}, false});
      groups_[size_t(it->second)].members.push_back(u);
      group_of_[u] = it->second;
      for (const UOp* r : rs) {
        auto [o, added] = owner_.emplace(r, it->second);
        if (!added && o->second != it->second)
          throw Error("linearize: a reduce range is shared by REDUCEs over different range sets");
      }
    }
  }

  void compute_deps() {
    for (const UOp* u : topo_) {
      std::vector<const UOp*> d;
      if (u->op == Ops::RANGE) d.push_back(u);
      size_t last = u->op == Ops::REDUCE ? 1 : u->src.size();
      for (size_t i = 0; i < last; i++)
        for (const UOp* r : deps_.at(u->src[i].get()))
          if (std::find(d.begin(), d.end(), r) == d.end()) d.push_back(r);
      if (u->op == Ops::REDUCE)
        for (size_t i = 1; i < u->src.size(); i++) d.erase(std::remove(d.begin(), d.end(), u->src[i].get()), d.end());
      deps_[u] = std::move(d);
    }
  }

  // The group whose loops a node must sit in, or -1.
  int nest_of(const UOp* u) const {
    if (u->op == Ops::RANGE) {
      auto it = owner_.find(u);
      return it == owner_.end() ? -1 : it->second;
    }
    for (const UOp* r : deps_.at(u))
      if (auto it = owner_.find(r); it != owner_.end()) return it->second;
    return -1;
  }

  void push(const UOpPtr& u) {
    if (emitted_.insert(u.get()).second) out_.push_back(u);
  }

  void emit(const UOp* u) {
    std::vector<UOpPtr> srcs;
    for (auto& s : u->src) srcs.push_back(map_.at(s.get()));
    if (auto it = wmma_c_.find(u); it != wmma_c_.end())
      std::copy(it->second.begin(), it->second.end(), srcs.end() - std::ptrdiff_t(it->second.size()));
    UOpPtr n = UOp::make(u->op, u->dtype, std::move(srcs), u->arg);
    map_[u] = n;
    push(n);
  }

  // Everything the group's REDUCEs need from outside their loops, in graph order.
  void emit_outside_ancestors(const Group& g) {
    std::unordered_set<const UOp*> anc;
    std::vector<const UOp*> stack(g.members.begin(), g.members.end());
    while (!stack.empty()) {
      const UOp* u = stack.back();
      stack.pop_back();
      for (auto& s : u->src)
        if (!map_.count(s.get()) && anc.insert(s.get()).second) stack.push_back(s.get());
    }
    std::vector<const UOp*> todo(anc.begin(), anc.end());
    std::sort(todo.begin(), todo.end(), [&](const UOp* a, const UOp* b) { return order_.at(a) < order_.at(b); });
    for (const UOp* v : todo) {
      if (map_.count(v) || v->op == Ops::RANGE || nest_of(v) >= 0) continue;
      if (v->op == Ops::REDUCE) emit_group(group_of_.at(v));
      else emit(v);
    }
  }

  void emit_group(int gi) {
    Group& g = groups_[size_t(gi)];
    if (g.done) return;
    g.done = true;
    emit_outside_ancestors(g);
    std::vector<UOpPtr> accs;
    for (const UOp* r : g.members) {
      UOpPtr init = reduce_identity(static_cast<Ops>(r->get<int64_t>()), r->dtype);
      for (auto& s : init->src) push(s);
      push(init);
      accs.push_back(UOp::make(Ops::DEFINE_ACC, r->dtype, {init}, acc_count_++));
      push(accs.back());
    }
    fold_wmma_chains(gi, accs);
    if (opts_.sequential_sums) {
      std::unordered_map<const UOp*, int> uses;
      for (const UOp* u : topo_)
        for (auto& s : u->src) uses[s.get()]++;
      split_sum_trees(gi, uses);
    }
    for (const UOp* rng : g.ranges) emit(rng);
    for (const UOp* v : topo_) {
      if (map_.count(v) || v->op == Ops::RANGE || nest_of(v) != gi || tree_.count(v)) continue;
      if (v->op == Ops::REDUCE) throw Error("linearize: a REDUCE inside another REDUCE's loops");
      emit(v);
    }
    std::vector<UOpPtr> assigns;
    for (size_t m = 0; m < g.members.size(); m++) {
      const UOp* r = g.members[m];
      UOpPtr update;
      if (auto it = terms_.find(r); it != terms_.end()) {
        update = accs[m];
        for (const UOp* t : it->second) push(update = UOp::make(Ops::ADD, r->dtype, {update, map_.at(t)}));
      } else {
        update = map_.at(r->src[0].get());
        if (!folded_.count(r)) update = UOp::make(static_cast<Ops>(r->get<int64_t>()), r->dtype, {accs[m], update});
      }
      push(update);
      UOpPtr assign = UOp::make(Ops::ASSIGN, r->dtype, {accs[m], update});
      push(assign);
      assigns.push_back(assign);
    }
    for (size_t i = g.ranges.size(); i-- > 0;) push(UOp::make(Ops::ENDRANGE, dtypes::void_, {map_.at(g.ranges[i])}));
    for (size_t m = 0; m < g.members.size(); m++) map_[g.members[m]] = assigns[m];
  }
};

}  // namespace

std::vector<UOpPtr> linearize_kernel(const UOpPtr& sink, const LinearizeOptions& opts) {
  ScopedPass pass("linearize");
  std::vector<UOpPtr> out = Linearizer(opts).run(sink);
  pass.set(-1, int64_t(out.size()));
  return out;
}

int64_t estimate_flops(const std::vector<UOpPtr>& uops) {
  int64_t total = 0, mult = 1, outer = 1;
  std::vector<int64_t> trips;
  for (auto& u : uops) {
    if (u->op == Ops::SPECIAL) {
      outer *= u->get<SpecialArg>().size;  // every thread (or GPU index) runs the body
    } else if (u->op == Ops::RANGE) {
      const UOp& end = *u->src[1];
      int64_t n = end.op == Ops::CONST ? end.const_int_value() - u->src[0]->vmin : end.vmax;
      trips.push_back(std::max<int64_t>(n, 0));
      mult *= trips.back();
    } else if (u->op == Ops::ENDRANGE) {
      mult = 1;
      trips.pop_back();
      for (int64_t t : trips) mult *= t;
    } else if (is_alu(u->op) && u->op != Ops::CAST && u->op != Ops::BITCAST) {
      total += mult * u->dtype.count;
    } else if (u->op == Ops::WMMA) {  // one warp-wide m x n x k multiply-add, counted per lane
      if (const TensorCore* tc = TensorCore::from_name(u->get<std::string>()))
        total += mult * 2 * tc->m * tc->n * tc->k / TensorCore::kLanes;
    } else if (u->op == Ops::WGMMA) {  // one warpgroup-wide 64 x n x 16 multiply-add, counted per thread
      total += mult * 2 * 64 * WgmmaArg::unpack(u->get<std::vector<int64_t>>()).n * 16 / 128;
    }
  }
  return total * outer;
}

}  // namespace tg
