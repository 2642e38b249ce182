// Ordering the lowered graph into loops, accumulators and statements.
//
// Output loops (RANGEs no accumulator sums over) open in dim order around everything. Accumulators over the
// same ranges form a group that shares one loop nest: all of them are declared before it, every node that
// depends on its ranges is emitted inside it (in graph order), each accumulator's update chain and ASSIGN at the
// end of the body, and the loops close. Nodes that do not depend on the reduce ranges are emitted before the
// nest, so loads that only depend on output loops are not repeated per reduce step.
//
// The REDUCEs are accumulators by then: the pass reduce_to_acc (codegen/reduce_to_acc.h) runs first.
#include "codegen/linearize.h"

#include "codegen/reduce_to_acc.h"

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
    // A symbolic loop's bound (start_pos + 1): computed once, before every loop, from variables and constants.
    for (const UOp* u : topo_)
      if (u->op == Ops::RANGE)
        for (auto& s : u->src)
          for (const UOp* x : toposort(s))
            if (!map_.count(x)) emit(x);
    std::vector<const UOp*> globals;
    for (const UOp* u : topo_)
      if (u->op == Ops::RANGE && !owner_.count(u)) globals.push_back(u);
    std::sort(globals.begin(), globals.end(),
              [](const UOp* a, const UOp* b) { return a->get<int64_t>() < b->get<int64_t>(); });
    for (const UOp* r : globals) emit(r);
    for (const UOp* u : topo_) {
      if (map_.count(u) || u->op == Ops::SINK || u->op == Ops::RANGE || nest_of(u) >= 0 || is_acc(u)) continue;
      if (group_of_.count(u)) emit_group(group_of_.at(u));
      else emit(u);
    }
    for (auto it = globals.rbegin(); it != globals.rend(); ++it)
      push(UOp::make(Ops::ENDRANGE, dtypes::void_, {map_.at(*it)}));
    return out_;
  }

 private:
  struct Group {
    std::vector<const UOp*> ranges;   // the reduce loops, outermost first
    std::vector<const UOp*> members;  // the ASSIGNs of its accumulators, in graph order
    bool done = false;
  };
  std::vector<const UOp*> topo_;
  std::unordered_map<const UOp*, size_t> order_;
  std::vector<Group> groups_;
  std::unordered_map<const UOp*, int> group_of_;                  // an accumulator's ASSIGN -> group
  std::unordered_map<const UOp*, int> owner_;                     // reduce range -> group
  std::unordered_map<const UOp*, int> update_of_;                 // a node of an ASSIGN's update chain -> group
  std::unordered_map<const UOp*, std::vector<const UOp*>> chain_;  // ASSIGN -> its update chain, innermost first
  std::unordered_map<const UOp*, std::vector<const UOp*>> deps_;  // ranges a node depends on
  std::unordered_map<const UOp*, UOpPtr> map_;                    // lowered node -> emitted node
  std::vector<UOpPtr> out_;
  std::unordered_set<const UOp*> emitted_;
  int64_t acc_count_ = 0;

  // An accumulator of codegen/reduce_to_acc.h: DEFINE_ACC(init, the ranges it sums over..).
  static bool is_acc(const UOp* u) { return u->op == Ops::DEFINE_ACC && u->src.size() > 1; }

  // The groups: accumulators summing over the same ranges share one loop nest. An ASSIGN's update chain (the
  // nodes between it and its accumulator: op(acc, x), or ((acc + x0) + x1) ..) runs at the end of the nest's body.
  void find_groups() {
    std::map<std::vector<const UOp*>, int> by_ranges;
    for (const UOp* u : topo_) {
      if (u->op == Ops::REDUCE) throw Error("linearize: a REDUCE left (codegen/reduce_to_acc.h turns them into accumulators)");
      if (u->op != Ops::ASSIGN || !is_acc(u->src[0].get())) continue;
      const UOp* acc = u->src[0].get();
      std::vector<const UOp*> rs;
      for (size_t i = 1; i < acc->src.size(); i++) rs.push_back(acc->src[i].get());
      auto [it, fresh] = by_ranges.emplace(rs, int(groups_.size()));
      if (fresh) groups_.push_back(Group{rs, {}, false});
      groups_[size_t(it->second)].members.push_back(u);
      group_of_[u] = it->second;
      for (const UOp* r : rs) {
        auto [o, added] = owner_.emplace(r, it->second);
        if (!added && o->second != it->second)
          throw Error("linearize: a reduce range is shared by accumulators over different range sets");
      }
      std::vector<const UOp*> chain;  // down the first operands to the accumulator
      const UOp* down = u->src[1].get();
      for (; down != acc && is_alu(down->op); down = down->src[0].get()) chain.push_back(down);
      if (down != acc) chain.clear();  // a folded tensor-core lane: the update is the lane itself
      std::reverse(chain.begin(), chain.end());
      for (const UOp* x : chain) update_of_[x] = it->second;
      chain_[u] = std::move(chain);
    }
  }

  // Ranges a node depends on: an accumulator does not depend on the loops it sums over, and its ASSIGN's value is
  // the one after them.
  void compute_deps() {
    for (const UOp* u : topo_) {
      std::vector<const UOp*> d;
      if (u->op == Ops::RANGE) d.push_back(u);
      const size_t last = is_acc(u) ? 1 : u->src.size();
      for (size_t i = 0; i < last; i++)
        for (const UOp* r : deps_.at(u->src[i].get()))
          if (std::find(d.begin(), d.end(), r) == d.end()) d.push_back(r);
      if (auto g = group_of_.find(u); g != group_of_.end())
        for (const UOp* r : groups_[size_t(g->second)].ranges) d.erase(std::remove(d.begin(), d.end(), r), d.end());
      deps_[u] = std::move(d);
    }
  }

  // The group whose loops a node must sit in, or -1 (the SINK: it gathers the kernel's statements, whatever loops
  // they sit in).
  int nest_of(const UOp* u) const {
    if (u->op == Ops::SINK) return -1;
    if (auto it = update_of_.find(u); it != update_of_.end()) return it->second;
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
    UOpPtr n = UOp::make(u->op, u->dtype, std::move(srcs), u->arg);
    map_[u] = n;
    push(n);
  }

  // Everything the group's accumulators and the other nodes inside its loops (a PREFETCH no accumulator reads)
  // need from outside those loops, in graph order.
  void emit_outside_ancestors(const Group& g, int gi) {
    std::unordered_set<const UOp*> anc;
    std::vector<const UOp*> stack(g.members.begin(), g.members.end());
    for (const UOp* v : topo_)
      if (nest_of(v) == gi) stack.push_back(v);
    while (!stack.empty()) {
      const UOp* u = stack.back();
      stack.pop_back();
      for (auto& s : u->src)
        if (!map_.count(s.get()) && anc.insert(s.get()).second) stack.push_back(s.get());
    }
    std::vector<const UOp*> todo(anc.begin(), anc.end());
    std::sort(todo.begin(), todo.end(), [&](const UOp* a, const UOp* b) { return order_.at(a) < order_.at(b); });
    for (const UOp* v : todo) {
      if (map_.count(v) || v->op == Ops::RANGE || nest_of(v) >= 0 || is_acc(v)) continue;
      if (group_of_.count(v)) emit_group(group_of_.at(v));
      else emit(v);
    }
  }

  // The accumulator declared (numbered in emission order, its ranges dropped) after its starting value.
  void emit_acc(const UOp* acc) {
    const UOp* init = acc->src[0].get();
    for (auto& s : init->src)
      if (!map_.count(s.get())) emit(s.get());
    if (!map_.count(init)) emit(init);
    UOpPtr n = UOp::make(Ops::DEFINE_ACC, acc->dtype, {map_.at(init)}, acc_count_++);
    map_[acc] = n;
    push(n);
  }

  void emit_group(int gi) {
    Group& g = groups_[size_t(gi)];
    if (g.done) return;
    g.done = true;
    emit_outside_ancestors(g, gi);
    for (const UOp* a : g.members) emit_acc(a->src[0].get());
    for (const UOp* rng : g.ranges) emit(rng);
    for (const UOp* v : topo_) {
      if (map_.count(v) || v->op == Ops::RANGE || nest_of(v) != gi || update_of_.count(v)) continue;
      if (group_of_.count(v)) throw Error("linearize: an accumulator inside another one's loops");
      emit(v);
    }
    for (const UOp* a : g.members) {
      for (const UOp* x : chain_.at(a)) emit(x);
      emit(a);
    }
    for (size_t i = g.ranges.size(); i-- > 0;) push(UOp::make(Ops::ENDRANGE, dtypes::void_, {map_.at(g.ranges[i])}));
  }
};

}  // namespace

std::vector<UOpPtr> linearize_kernel(const UOpPtr& sink, const LinearizeOptions& opts) {
  const UOpPtr accs = reduce_to_acc(sink, opts.sequential_sums);
  ScopedPass pass("linearize");
  std::vector<UOpPtr> out = Linearizer().run(accs);
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
