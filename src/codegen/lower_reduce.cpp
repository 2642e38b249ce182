// Reduces: the accumulation over the reduce loops (REDUCE nodes the linearizer turns into accumulators),
// nested reduces of a multi-reduce kernel with loops of their own, and GROUP reduces that meet their sibling
// threads' partials in shared memory.
#include <algorithm>

#include "codegen/linearize.h"
#include "codegen/lowerer_internal.h"
#include "tg/error.h"
#include "uop/pattern.h"
#include "uop/symbolic.h"
#include "uop/symbolic_linear.h"

namespace tg::lowering {

void Lowerer::flatten_reduce_loops() {
  if (reduce_ranges_.size() < 2) return;
  int64_t total = 1;
  for (const UOpPtr& r : reduce_ranges_) total *= r->src.at(1)->const_int_value();
  if (total == 0) return;
  UOpPtr flat = UOp::make(Ops::RANGE, idx_dt_, {ci(0), ci(total)}, reduce_ranges_[0]->get<int64_t>());
  int64_t inner = total;
  for (UOpPtr& d : dims_) {
    auto it = std::find(reduce_ranges_.begin(), reduce_ranges_.end(), d);
    if (it == reduce_ranges_.end()) continue;
    const int64_t size = d->src.at(1)->const_int_value();
    inner /= size;
    UOpPtr v = inner == 1 ? flat : idiv(flat, ci(inner));
    d = inner * size == total ? v : mod(v, ci(size));
  }
  reduce_ranges_ = {flat};
}

void Lowerer::find_nested_reduces(const UOpPtr& ast) {
  for (const UOp* x : toposort(ast))
    if (x->op == Ops::REDUCE_AXIS)
      for (const UOp* y : toposort(x->src.at(0)))
        if (y != x && y->op == Ops::REDUCE_AXIS) nested_.insert(y);
}

UOpPtr Lowerer::add_reduce_ranges(const UOpPtr& reduce) {
  if (reduce_ranges_.empty()) return nullptr;
  std::vector<UOpPtr> srcs{reduce->src.at(0)};
  for (const UOpPtr& r : reduce_ranges_)
    srcs.push_back(nested_.count(reduce.get()) ? UOp::make(Ops::RANGE, r->dtype, r->src, fresh_id()) : r);
  return UOp::make(Ops::REDUCE_AXIS, reduce->dtype, std::move(srcs), reduce->arg);
}

UOpPtr Lowerer::with_ranges(const UOpPtr& x, const std::vector<UOpPtr>& ranges) const {
  if (ranges == reduce_ranges_) return x;
  std::unordered_map<const UOp*, UOpPtr> to;
  for (size_t i = 0; i < ranges.size(); i++) to[reduce_ranges_[i].get()] = ranges[i];
  return substitute(x, [&](const UOp* u) -> UOpPtr {
    auto it = to.find(u);
    return it == to.end() ? nullptr : it->second;
  });
}

UOpPtr Lowerer::lower_reduce(const UOpPtr& u) {
  if (k_.tensor_core()) return lower_tc_reduce(u);
  const Ops op = u->get<ReduceArg>().op;
  const DType dt = u->dtype;
  if (empty_reduce_) return reduce_identity(op, dt);
  const Info src = unpack(u->src[0]);
  const std::vector<UOpPtr> ranges(u->src.begin() + 1, u->src.end());
  Info in{src.mask & ~unroll_mask_, {}};
  for (int64_t k = 0; k < count(in.mask); k++) {
    Combo cb = decode(in.mask, k);
    // every UNROLL value counts, whether or not the source depends on it
    std::vector<Val> xs;
    for (int64_t j = 0; j < count(unroll_mask_); j++) {
      Combo uc = decode(unroll_mask_, j);
      Combo full = cb;
      for (size_t i = 0; i < ua_.size(); i++)
        if (unroll_mask_ >> i & 1) full[i] = uc[i];
      xs.push_back(val(src, full));
    }
    Val value = tree(op, dt, std::move(xs));
    if (vunroll_ && !varying(value)) {  // each vector lane accumulates the value
      if (vec_ok(op, dt))
        value = Val{as_vec(value), {}};
      else
        value = Val{nullptr, std::vector<UOpPtr>(size_t(W_), value.one)};
    }
    if (value.one && value.one->dtype.count > 1 && !vec_ok(op, dt)) {  // the accumulator update is per lane
      Val l;
      for (int64_t i = 0; i < W_; i++) l.lanes.push_back(lane(value, i));
      value = std::move(l);
    }
    Val r = value;
    if (!ranges.empty()) {
      auto reduce = [&](const UOpPtr& x) {
        std::vector<UOpPtr> s{with_ranges(x, ranges)};
        s.insert(s.end(), ranges.begin(), ranges.end());
        return UOp::make(Ops::REDUCE, x->dtype, std::move(s), int64_t(op));
      };
      if (value.one) {
        r = Val{reduce(value.one), {}};
      } else {
        r = Val{};
        for (auto& l : value.lanes) r.lanes.push_back(reduce(l));
      }
    }
    if (vunroll_) {
      std::vector<Val> ls;
      for (int64_t i = 0; i < W_; i++) ls.push_back(Val{lane(r, i), {}});
      r = tree(op, dt, std::move(ls));
    }
    // after the lanes are summed: one partial per thread meets its group siblings in shared memory
    if (!group_dims_.empty()) r = Val{group_reduce(op, r.one), {}};
    in.vals.push_back(std::move(r));
  }
  return unroll(dt, in);
}

UOpPtr Lowerer::group_reduce(Ops op, const UOpPtr& part) {
  if (!part) throw Error("lower: a grouped reduce with vector lanes");
  const Shape& fs = k_.full_shape();
  UOpPtr slot = ci(0);
  for (size_t d : thread_dims_) slot = slot * ci(fs[d]) + dims_[d];
  slot = simplify(slot);
  UOpPtr partials = shared_partials(part, slot, nullptr);
  const size_t last = group_dims_.back();
  // One GROUP dim of many siblings (a row of 256 threads): every thread reading all 256 partials is 256
  // shared loads per warp and reduce, which an H100's softmax rows spent most of their time on. Instead the
  // first `n1` threads each reduce `n2` partials (thread i: i, i + n1, ...; neighbouring threads read
  // neighbouring banks) into a second buffer, and after a barrier every thread reads those n1: n1 + n2 loads.
  if (group_dims_.size() == 1 && fs[last] >= 64) {
    const int64_t n = fs[last], n2 = n >= 256 ? 16 : 8, n1 = n / n2;
    if (n % n2 == 0) {
      const UOpPtr& g = dims_[last];
      std::vector<Val> run;
      for (int64_t j = 0; j < n2; j++)
        run.push_back(Val{load_sibling(partials, slot, part->dtype, g, mod(g, ci(n1)) + ci(n1 * j)), {}});
      UOpPtr runs = shared_partials(tree(op, part->dtype, std::move(run)).one, slot, lt(g, n1));
      return sibling_reduce(op, runs, slot, part->dtype, n1);
    }
  }
  return sibling_reduce(op, partials, slot, part->dtype, fs[last]);
}

UOpPtr Lowerer::shared_partials(const UOpPtr& x, const UOpPtr& slot, const UOpPtr& gate) {
  UOpPtr temp = UOp::make(Ops::DEFINE_LOCAL, x->dtype.pointer(true), {},
                          NamedRange{"temp" + std::to_string(group_temps_++), 0, k_.local_size() - 1});
  std::vector<UOpPtr> s{temp, slot, x};
  if (gate) s.push_back(simplify(gate));
  return UOp::make(Ops::BARRIER, dtypes::void_, {UOp::make(Ops::STORE, dtypes::void_, std::move(s))});
}

UOpPtr Lowerer::load_sibling(const UOpPtr& barrier, const UOpPtr& slot, DType dt, const UOpPtr& g,
                             const UOpPtr& sibling) {
  UOpPtr idx = simplify(substitute(slot, [&](const UOp* u) -> UOpPtr { return u == g.get() ? sibling : nullptr; }));
  return UOp::make(Ops::LOAD, dt, {partials_buffer(barrier), idx, barrier});
}

UOpPtr Lowerer::sibling_reduce(Ops op, const UOpPtr& barrier, const UOpPtr& slot, DType dt, int64_t n) {
  const Shape& fs = k_.full_shape();
  const size_t last = group_dims_.back();
  int64_t unroll = 1;
  for (int64_t u : {16, 8, 4, 2})
    if (n % u == 0 && n >= u) {
      unroll = u;
      break;
    }
  std::vector<UOpPtr> loops;
  std::unordered_map<const UOp*, UOpPtr> to_loop;
  for (size_t d : group_dims_) {
    const int64_t size = d == last ? n / unroll : fs[d].value();
    if (size == 1 && d == last) continue;  // the unrolled values cover it
    loops.push_back(UOp::make(Ops::RANGE, idx_dt_, {ci(0), ci(size)}, fresh_id()));
    to_loop[dims_[d].get()] = loops.back();
  }
  const UOp* g = dims_[last].get();
  std::vector<Val> loads;
  for (int64_t j = 0; j < unroll; j++) {
    UOpPtr idx = simplify(substitute(slot, [&](const UOp* u) -> UOpPtr {
      if (u == g) return to_loop.count(g) ? to_loop[g] * ci(unroll) + ci(j) : ci(j);
      auto it = to_loop.find(u);
      return it == to_loop.end() ? nullptr : it->second;
    }));
    loads.push_back(Val{UOp::make(Ops::LOAD, dt, {partials_buffer(barrier), idx, barrier}), {}});
  }
  UOpPtr value = tree(op, dt, std::move(loads)).one;
  if (loops.empty()) return value;
  std::vector<UOpPtr> s{value};
  s.insert(s.end(), loops.begin(), loops.end());
  return UOp::make(Ops::REDUCE, dt, std::move(s), int64_t(op));
}

}  // namespace tg::lowering
