// Kernel setup: collect the views, move reduce dims last, merge dims that are contiguous in every view.
#include "codegen/kernel.h"

#include <algorithm>
#include <unordered_map>

#include "helpers/debug.h"
#include "tg/error.h"

namespace tg {

std::string Opt::repr() const {
  static const char* names[] = {"UPCAST", "UNROLL", "LOCAL", "GROUP", "GROUPTOP", "TC", "PADTO", "NOLOCALS", "SWAP",
                                "THREAD"};
  return std::string("Opt(op=OptOps.") + names[int(op)] + ", axis=" + std::to_string(axis) +
         ", amount=" + std::to_string(amount) + ")";
}

Kernel::Kernel(const UOpPtr& ast, const Renderer& renderer) : ast_(ast), renderer_(renderer) {
  for (const UOp* u : toposort(ast)) {
    if (u->op == Ops::VIEW) views_.push_back(u);
    if (u->op == Ops::REDUCE_AXIS) {
      if (reduce_) throw Error("Kernel: more than one REDUCE_AXIS in a kernel");
      reduce_ = u;
    }
  }
  // The output view first, so sts_[0] is the store's tracker.
  const UOp* out_view = ast->src.at(0)->src.at(1).get();
  std::stable_partition(views_.begin(), views_.end(), [&](const UOp* v) { return v == out_view; });
  for (const UOp* v : views_) sts_.push_back(v->get<ShapeTracker>());
  // The full shape is the largest per dim (loads before the reduce have the reduce dims' sizes).
  full_shape_ = sts_[0].shape();
  for (auto& st : sts_) {
    if (st.shape().size() != full_shape_.size()) throw Error("Kernel: views of different rank in one kernel");
    for (size_t d = 0; d < full_shape_.size(); d++)
      if (st.shape()[d] != full_shape_[d] && full_shape_[d] == 1) full_shape_[d] = st.shape()[d];
  }
  first_reduce_ = int(full_shape_.size());
  permute_reduce_last();
  merge_dims();
}

void Kernel::permute_reduce_last() {
  if (!reduce_) return;
  const auto& axes = reduce_->get<ReduceArg>().axes;
  std::vector<int64_t> order;
  for (int64_t d = 0; d < int64_t(full_shape_.size()); d++)
    if (std::find(axes.begin(), axes.end(), d) == axes.end()) order.push_back(d);
  first_reduce_ = int(order.size());
  for (int64_t a : axes) order.push_back(a);
  for (auto& st : sts_) st = st.permute(order);
  Shape fs;
  for (int64_t d : order) fs.push_back(full_shape_[size_t(d)]);
  full_shape_ = fs;
}

void Kernel::merge_dims() {
  // Drop size-1 dims, then merge neighbours of the same kind (global/reduce) when every tracker can take
  // the merge without stacking a new view.
  auto shape_without = [](const Shape& s, size_t d) {
    Shape r = s;
    r.erase(r.begin() + int64_t(d));
    return r;
  };
  for (size_t d = 0; d < full_shape_.size();) {
    if (full_shape_[d] != 1) {
      d++;
      continue;
    }
    for (auto& st : sts_) st = st.reshape(shape_without(st.shape(), d));
    full_shape_.erase(full_shape_.begin() + int64_t(d));
    if (int(d) < first_reduce_) first_reduce_--;
  }
  for (size_t d = 0; d + 1 < full_shape_.size();) {
    bool same_kind = (int(d) < first_reduce_) == (int(d + 1) < first_reduce_);
    bool ok = same_kind;
    std::vector<ShapeTracker> merged;
    for (auto& st : sts_) {
      if (!ok) break;
      Shape s = st.shape();
      Shape m = s;
      m[d] = s[d] * s[d + 1];
      m.erase(m.begin() + int64_t(d) + 1);
      ShapeTracker r = st.reshape(m);
      ok = r.views.size() == st.views.size();
      merged.push_back(r);
    }
    if (!ok) {
      d++;
      continue;
    }
    sts_ = merged;
    full_shape_[d] *= full_shape_[d + 1];
    full_shape_.erase(full_shape_.begin() + int64_t(d) + 1);
    if (int(d) + 1 < first_reduce_) first_reduce_--;
  }
}

void Kernel::hand_coded_optimizations() {
  // The optimizer is its own piece of work; the default here is the merged loop nest as it is.
}

UOpPtr Kernel::optimized_ast() const {
  std::unordered_map<const UOp*, size_t> index;
  for (size_t i = 0; i < views_.size(); i++) index[views_[i]] = i;
  std::vector<int64_t> reduce_axes;  // after the permute and merges, the reduce dims are the last ones
  for (int d = first_reduce_; d < int(full_shape_.size()); d++) reduce_axes.push_back(d);
  std::unordered_map<const UOp*, UOpPtr> done;
  for (const UOp* u : toposort(ast_)) {
    std::vector<UOpPtr> srcs;
    for (auto& s : u->src) srcs.push_back(done.at(s.get()));
    Arg arg = u->arg;
    if (u->op == Ops::VIEW) arg = sts_[index.at(u)];
    if (u->op == Ops::REDUCE_AXIS) arg = ReduceArg{u->get<ReduceArg>().op, reduce_axes};
    done[u] = UOp::make(u->op, u->dtype, std::move(srcs), arg);
  }
  return done.at(ast_.get());
}

std::string Kernel::name() const {
  bool copy_only = true;
  for (const UOp* u : toposort(ast_))
    if (u->op != Ops::SINK && u->op != Ops::STORE && u->op != Ops::LOAD && u->op != Ops::VIEW &&
        u->op != Ops::DEFINE_GLOBAL)
      copy_only = false;
  std::string n = reduce_ ? "r" : copy_only ? "C" : "E";
  n += "_";
  for (size_t d = 0; d < full_shape_.size(); d++) n += (d ? "_" : "") + std::to_string(full_shape_[d]);
  return n;
}

std::string Kernel::colored_name() const {
  // Global dims blue, reduce dims red, as tinygrad colors them.
  std::string out = name().substr(0, 2);
  for (size_t d = 0; d < full_shape_.size(); d++) {
    if (d) out += colored("_", "black");
    out += colored(std::to_string(full_shape_[d]), int(d) < first_reduce_ ? "blue" : "red");
  }
  return out;
}

}  // namespace tg
