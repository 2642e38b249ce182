// Ordering the lowered graph into loops, accumulators and statements.
#include "codegen/linearize.h"

#include <algorithm>
#include <limits>
#include <unordered_map>
#include <unordered_set>

#include "tg/error.h"

namespace tg {
namespace {

UOpPtr reduce_identity(Ops op, DType dt) {
  if (op == Ops::ADD) return UOp::const_(dt, 0);
  if (op == Ops::MUL) return UOp::const_(dt, 1);
  if (op == Ops::MAX) {
    if (dt.is_float()) return UOp::const_(dt, -std::numeric_limits<double>::infinity());
    return dt.is_bool() ? UOp::const_(dt, 0) : UOp::const_int(int64_t(dt.min()), dt);
  }
  throw Error(std::string("linearize: no identity for reduce op ") + op_name(op));
}

class Linearizer {
 public:
  std::vector<UOpPtr> run(const UOpPtr& sink) {
    topo_ = toposort(sink);
    compute_deps();
    // Buffers, variables and constants first: they are loop invariant and RANGE bounds need them.
    for (const UOp* u : topo_)
      if (u->op == Ops::DEFINE_GLOBAL || u->op == Ops::DEFINE_VAR) emit(u);
    for (const UOp* u : topo_)
      if (u->op == Ops::CONST) emit(u);
    std::vector<const UOp*> globals;
    for (const UOp* u : topo_)
      if (u->op == Ops::RANGE && !owner_.count(u)) globals.push_back(u);
    std::sort(globals.begin(), globals.end(),
              [](const UOp* a, const UOp* b) { return a->get<int64_t>() < b->get<int64_t>(); });
    for (const UOp* r : globals) emit(r);
    for (const UOp* u : topo_) {
      if (map_.count(u) || u->op == Ops::SINK || u->op == Ops::RANGE || nest_of(u)) continue;
      if (u->op == Ops::REDUCE) emit_reduce(u);
      else emit(u);
    }
    for (auto it = globals.rbegin(); it != globals.rend(); ++it)
      push(UOp::make(Ops::ENDRANGE, dtypes::void_, {map_.at(*it)}));
    return out_;
  }

 private:
  std::vector<const UOp*> topo_;
  std::unordered_map<const UOp*, std::vector<const UOp*>> deps_;  // ranges a node depends on
  std::unordered_map<const UOp*, const UOp*> owner_;              // reduce range -> its REDUCE
  std::unordered_map<const UOp*, UOpPtr> map_;                    // lowered node -> emitted node
  std::vector<UOpPtr> out_;
  std::unordered_set<const UOp*> emitted_;
  int64_t acc_count_ = 0;

  void compute_deps() {
    for (const UOp* u : topo_) {
      std::vector<const UOp*> d;
      if (u->op == Ops::RANGE) d.push_back(u);
      size_t first = 0, last = u->src.size();
      if (u->op == Ops::REDUCE) last = 1;
      for (size_t i = first; i < last; i++)
        for (const UOp* r : deps_.at(u->src[i].get()))
          if (std::find(d.begin(), d.end(), r) == d.end()) d.push_back(r);
      if (u->op == Ops::REDUCE)
        for (size_t i = 1; i < u->src.size(); i++) {
          owner_[u->src[i].get()] = u;
          d.erase(std::remove(d.begin(), d.end(), u->src[i].get()), d.end());
        }
      deps_[u] = std::move(d);
    }
  }

  // The REDUCE whose loops a node must sit in, or nullptr.
  const UOp* nest_of(const UOp* u) const {
    if (u->op == Ops::RANGE) return owner_.count(u) ? owner_.at(u) : nullptr;
    for (const UOp* r : deps_.at(u))
      if (auto it = owner_.find(r); it != owner_.end()) return it->second;
    return nullptr;
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

  void emit_reduce(const UOp* r) {
    Ops op = static_cast<Ops>(r->get<int64_t>());
    UOpPtr init = reduce_identity(op, r->dtype);
    push(init);
    UOpPtr acc = UOp::make(Ops::DEFINE_ACC, r->dtype, {init}, acc_count_++);
    push(acc);
    for (size_t i = 1; i < r->src.size(); i++) emit(r->src[i].get());
    for (const UOp* v : topo_)
      if (!map_.count(v) && v->op != Ops::RANGE && nest_of(v) == r) emit(v);
    UOpPtr update = UOp::make(op, r->dtype, {acc, map_.at(r->src[0].get())});
    push(update);
    UOpPtr assign = UOp::make(Ops::ASSIGN, r->dtype, {acc, update});
    push(assign);
    for (size_t i = r->src.size() - 1; i >= 1; i--) push(UOp::make(Ops::ENDRANGE, dtypes::void_, {map_.at(r->src[i].get())}));
    map_[r] = assign;
  }
};

}  // namespace

std::vector<UOpPtr> linearize_kernel(const UOpPtr& sink) { return Linearizer().run(sink); }

int64_t estimate_flops(const std::vector<UOpPtr>& uops) {
  int64_t total = 0, mult = 1;
  std::vector<int64_t> trips;
  for (auto& u : uops) {
    if (u->op == Ops::RANGE) {
      const UOp& end = *u->src[1];
      int64_t n = end.op == Ops::CONST ? end.const_int_value() - u->src[0]->vmin : end.vmax;
      trips.push_back(std::max<int64_t>(n, 0));
      mult *= trips.back();
    } else if (u->op == Ops::ENDRANGE) {
      mult = 1;
      trips.pop_back();
      for (int64_t t : trips) mult *= t;
    } else if (is_alu(u->op) && u->op != Ops::CAST && u->op != Ops::BITCAST) {
      total += mult;
    }
  }
  return total;
}

}  // namespace tg
