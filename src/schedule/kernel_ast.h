#pragma once
// One kernel's AST, built for a realized node by inlining every node below it that is not realized
// (schedule/schedule.cpp decides what is realized and groups the graph; it builds each kernel with this). Private
// to the scheduler.
#include <algorithm>
#include <deque>
#include <functional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "schedule/schedule.h"
#include "tg/error.h"
#include "uop/movement.h"

namespace tg::kernel_ast {

// Do two reduces run the same loops: one input shape, reduced over the same axes?
inline bool same_loops(const UOp* a, const UOp* b) {
  return a->src[0]->shape == b->src[0]->shape && a->get<ReduceArg>().axes == b->get<ReduceArg>().axes;
}

inline bool is_base_compute(const UOp* u) {
  return u->op != Ops::BUFFER && u->op != Ops::CONST && u->op != Ops::BIND && u->op != Ops::DEVICE &&
         u->op != Ops::VIEW && u->op != Ops::SINK;
}

// A kernel that cannot be built with `must_realize` inline: the scheduler realizes it (for the reason `why`) and
// builds again.
struct KernelFailure {
  const UOp* must_realize;
  uint32_t why;  // realize_why
};
// A realized reduce that a kernel began to compute itself but also reads through another view: it may not be
// hosted (see AstBuilder::can_host).
struct HostFailure {
  const UOp* reduce;
};

// Builds one kernel's AST for the realized node `root`, inlining every non-realized node below it.
class AstBuilder {
 public:
  // hostable: realized nodes this kernel may compute itself (see can_host), each with the reduce its own kernel
  // nests in.
  AstBuilder(const UOp* root, const std::unordered_set<const UOp*>& realize,
             const std::unordered_map<const UOp*, const UOp*>& hostable)
      : root_(root), realize_(realize), hostable_(hostable), kernel_reduce_(nest_reduce(root)) {}

  // The AST of `root` seen through `root_st`. Depth-first with an explicit stack (a fused chain can be long),
  // visiting sources in order so that inputs are numbered as a recursive walk would number them. Trackers
  // are interned per kernel and passed around by id: most nodes see the same one as their user.
  UOpPtr build(const UOpPtr& root, const ShapeTracker& root_st) {
    struct Frame {
      UOpPtr node;
      size_t st;                  // id of the tracker the node is seen through
      std::vector<UOpPtr> built;  // the sources' ASTs so far
    };
    std::vector<Frame> stack;
    UOpPtr leaf;  // set when visit() finishes a node at once (memoized, input or constant)
    auto visit = [&](const UOpPtr& node, size_t st) {
      auto key = std::make_pair(node.get(), st);
      if (auto it = memo_.find(key); it != memo_.end()) return leaf = it->second, true;
      if (can_host(node.get(), trackers_[st])) {
        if (std::find(hosted.begin(), hosted.end(), node.get()) == hosted.end()) hosted.push_back(node.get());
      } else if (is_input(node.get())) {
        if (is_hosted(node.get())) throw HostFailure{node.get()};
        return leaf = memo_[key] = load(node, trackers_[st]), true;
      }
      if (node->op == Ops::CONST) {
        auto view = UOp::make(Ops::VIEW, dtypes::void_, {}, trackers_[st]);
        return leaf = memo_[key] = UOp::make(Ops::CONST, node->dtype, {view}, node->arg), true;
      }
      if (node->op == Ops::BIND) {  // the kernel reads the variable, unbound; its value goes with the item
        bind(*node);
        auto view = UOp::make(Ops::VIEW, dtypes::void_, {}, trackers_[st]);
        return leaf = memo_[key] = UOp::make(Ops::DEFINE_VAR, node->dtype, {view}, node->src[0]->arg), true;
      }
      enter(node, trackers_[st]);
      stack.push_back({node, st, {}});
      return false;
    };
    if (visit(root, intern(root_st))) return leaf;
    while (true) {
      Frame& f = stack.back();
      if (size_t i = f.built.size(); i < source_count(*f.node)) {
        const UOp& node = *f.node;
        if (visit(node.src[node.op == Ops::REDUCE_AXIS || node.op == Ops::VIEW ? 0 : i], source_tracker(node, f.st)))
          stack.back().built.push_back(leaf);  // `f` may have moved: visit() can push
        continue;
      }
      UOpPtr out = memo_[{f.node.get(), f.st}] = finish(*f.node, f.built);
      stack.pop_back();
      if (stack.empty()) return out;
      stack.back().built.push_back(std::move(out));
    }
  }

  // The kernel's iteration shape: the root's shape, unless a reduce is reached through elementwise ops and
  // reshapes only; then the reduce's output shape (1s at the reduced axes), so its loops nest directly.
  Shape iteration_shape() const { return kernel_reduce_ ? kernel_reduce_->shape : root_->shape; }
  const UOp* kernel_reduce() const { return kernel_reduce_; }

  std::vector<const UOp*> inputs;                           // realized nodes / BUFFERs loaded, DEFINE_GLOBAL 1.. in order
  std::vector<const UOp*> hosted;                           // realized reduces this kernel computes and stores too
  std::vector<VarValue> vars;                               // the values of the variables it reads

  // A variable bound twice in one kernel must have one value (and one range).
  void bind(const UOp& b) {
    const auto& var = b.src[0]->get<NamedRange>();
    const int64_t value = b.get<int64_t>();
    for (const VarValue& v : vars)
      if (v.var.name == var.name) {
        if (v.var == var && v.value == value) return;
        throw Error("schedule: variable " + var.name + " bound to " + std::to_string(v.value) + " and " +
                    std::to_string(value) + " (or with two ranges) in one kernel");
      }
    vars.push_back({var, value});
  }

 private:
  const UOp* root_;
  const std::unordered_set<const UOp*>& realize_;
  const std::unordered_map<const UOp*, const UOp*>& hostable_;
  const UOp* kernel_reduce_;  // the reduce whose loops the kernel's output nests in, if any
  const UOp* reduce_ = nullptr;

  // A multi-reduce kernel: a realized reduce R is computed in this kernel (and stored as a second output) when it
  // reduces the same input shape over the same axes as the kernel's own reduce, and the kernel reads it whole at
  // its own shape (beside the kernel's reduce) or expanded back over the reduced axes (inside that reduce's
  // source). Softmax's max feeds the sum of exp(x - max) this way: one read of x per row, not two kernels.
  // (R may be a reduce followed by elementwise ops, as a mean.)
  bool can_host(const UOp* u, const ShapeTracker& st) const {
    if (u == root_ || !kernel_reduce_) return false;
    auto it = hostable_.find(u);
    if (it == hostable_.end()) return false;
    const UOp* r = it->second;
    if (r == kernel_reduce_ || !same_loops(r, kernel_reduce_)) return false;
    if (std::find(inputs.begin(), inputs.end(), u) != inputs.end()) throw HostFailure{u};  // already loaded
    // (the trackers have the kernel's shape, r's; u may be a reshape of it of the same size)
    const ShapeTracker whole = ShapeTracker::from_shape(r->shape);
    return st == whole || st == whole.expand(r->src[0]->shape);
  }
  bool is_hosted(const UOp* u) const { return std::find(hosted.begin(), hosted.end(), u) != hosted.end(); }

  // The reduce whose loops a kernel computing `top` nests its output in: reached from it through elementwise ops,
  // DETACH, CONTIGUOUS and reshapes only (not through inputs); null when there is none.
  const UOp* nest_reduce(const UOp* top) const {
    std::vector<const UOp*> stack{top};
    std::unordered_set<const UOp*> seen{top};
    while (!stack.empty()) {
      const UOp* u = stack.back();
      stack.pop_back();
      if (u != top && is_input(u)) continue;
      if (u->op == Ops::REDUCE_AXIS) return u;
      bool through = is_alu(u->op) || u->op == Ops::CAST || u->op == Ops::BITCAST || u->op == Ops::CONTIGUOUS ||
                     u->op == Ops::DETACH;
      if (u->op == Ops::VIEW) {
        const ShapeTracker& st = u->get<ShapeTracker>();
        through = st.contiguous() && st.size() == prod(u->src[0]->shape);
      }
      if (!through) continue;
      for (auto& s : u->src)
        if (seen.insert(s.get()).second) stack.push_back(s.get());
    }
    return nullptr;
  }
  std::deque<ShapeTracker> trackers_;                            // by id
  std::unordered_map<size_t, std::vector<size_t>> tracker_ids_;  // hash -> ids
  struct KeyHash {
    size_t operator()(const std::pair<const UOp*, size_t>& k) const {
      return std::hash<const UOp*>()(k.first) ^ (k.second * 0x9e3779b97f4a7c15ULL);
    }
  };
  std::unordered_map<std::pair<const UOp*, size_t>, UOpPtr, KeyHash> memo_;  // (node, tracker id) -> AST

 public:
  // Every node the walk reached: computed inline, loaded or constant.
  template <class F>
  void for_each_reached(F f) const {
    for (const auto& entry : memo_) f(entry.first.first);
  }

 private:

  size_t intern(ShapeTracker st) {
    auto& ids = tracker_ids_[st.hash()];
    for (size_t id : ids)
      if (trackers_[id] == st) return id;
    ids.push_back(trackers_.size());
    trackers_.push_back(std::move(st));
    return ids.back();
  }

  // The tracker a node's sources are read through: a VIEW composes its own with the one it is seen through,
  // a reduce reads its source whole, everything else passes the view on.
  size_t source_tracker(const UOp& node, size_t st) {
    if (node.op == Ops::VIEW) return intern(node.get<ShapeTracker>() + trackers_[st]);
    if (node.op == Ops::REDUCE_AXIS) return intern(ShapeTracker::from_shape(node.src[0]->shape));
    return st;
  }

  bool is_input(const UOp* u) const {
    return u != root_ && (u->op == Ops::BUFFER || (realize_.count(u) && !is_hosted(u)));
  }

  UOpPtr load(const UOpPtr& node, const ShapeTracker& st) {
    auto it = std::find(inputs.begin(), inputs.end(), node.get());
    int64_t idx = 1 + (it - inputs.begin());
    if (it == inputs.end()) inputs.push_back(node.get());
    auto buf = UOp::make(Ops::DEFINE_GLOBAL, node->dtype.pointer(), {}, idx);
    auto view = UOp::make(Ops::VIEW, dtypes::void_, {}, st);
    return UOp::make(Ops::LOAD, node->dtype, {buf, view});
  }

  // What to realize before a zero-padded view of `u` can be computed inline: `u` itself when some inlined op maps
  // 0 to non-zero (exp2, reciprocal, ...); else a reduce computed inline below it (its loops cannot run under the
  // pad's mask): realizing the reduce, not `u`, lets the elementwise ops above it fuse on through the pad (rope's
  // halves over a matmul's output, then their cat stacked into a KV cache: one kernel, not three). Null: safe.
  const UOp* pad_blocker(const UOp* u) const {
    std::vector<const UOp*> stack{u};
    std::unordered_set<const UOp*> seen{u};
    const UOp* reduce = nullptr;
    while (!stack.empty()) {
      const UOp* x = stack.back();
      stack.pop_back();
      if (x != u && is_input(x)) continue;
      if ((is_alu(x->op) || x->op == Ops::CAST) && !is_zero_preserving(x->op)) return u;
      if (x->op == Ops::REDUCE_AXIS) {
        if (!reduce) reduce = x;
        continue;
      }
      for (auto& s : x->src)
        if (seen.insert(s.get()).second) stack.push_back(s.get());
    }
    return reduce;
  }

  // Checks made when the walk reaches a (non-input, non-constant) node, before its sources.
  void enter(const UOpPtr& node, const ShapeTracker& st) {
    switch (node->op) {
      case Ops::VIEW: {
        const UOp* base = node->src[0].get();
        if (node->get<ShapeTracker>().has_mask() && is_base_compute(base) && !is_input(base))
          if (const UOp* blocker = pad_blocker(base)) throw KernelFailure{blocker, realize_why::kPadded};
        return;
      }
      case Ops::REDUCE_AXIS: {
        // Several reduces share a kernel when they run the same loops and each is read whole, or expanded back
        // over the reduced axes inside another's source (a multi-reduce kernel: the inner one runs first).
        const bool whole = st.contiguous() && st.shape() == node->shape;
        const bool expanded = kernel_reduce_ && same_loops(node.get(), kernel_reduce_) &&
                              st == ShapeTracker::from_shape(node->shape).expand(node->src[0]->shape);
        if (!whole && !expanded) throw KernelFailure{node.get(), realize_why::kReduceView};
        if (reduce_ && reduce_ != node.get() && !same_loops(node.get(), reduce_))
          throw KernelFailure{node.get(), realize_why::kReduceLoops};
        if (!reduce_) reduce_ = node.get();
        return;
      }
      case Ops::CONTIGUOUS: case Ops::DETACH: return;
      default:
        if (is_alu(node->op) || node->op == Ops::CAST || node->op == Ops::BITCAST) return;
        throw Error(std::string("schedule: cannot fuse a ") + op_name(node->op) + " into a kernel");
    }
  }

  static size_t source_count(const UOp& node) {
    return node.op == Ops::VIEW || node.op == Ops::REDUCE_AXIS || node.op == Ops::CONTIGUOUS ||
                   node.op == Ops::DETACH
               ? 1
               : node.src.size();
  }

  static UOpPtr finish(const UOp& node, std::vector<UOpPtr>& built) {
    switch (node.op) {
      case Ops::VIEW: case Ops::CONTIGUOUS: case Ops::DETACH: return built.at(0);
      default: return UOp::make(node.op, node.dtype, std::move(built), node.arg);
    }
  }
};

}  // namespace tg::kernel_ast
