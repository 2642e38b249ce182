// Memory: views to index math (with the upcast placeholders), loads and stores at each combination of upcast values
// (vectors along the vector dim where contiguous, runs along another upcast dim on GPUs), and loads staged through
// shared memory.
#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "codegen/lowerer_internal.h"
#include "shape/indexing.h"
#include "tg/error.h"
#include "uop/symbolic.h"
#include "uop/symbolic_linear.h"

namespace tg::lowering {

void stage_shared_loads(LowerCtx& ctx, const UOpPtr& ast) {
  const auto& kinds = ctx.k.kinds();
  if (Staging::fragments(ctx.k) || ctx.reduce_ranges.size() != 1 || !ctx.group_dims.empty() ||
      !ctx.ren.async_copies() || ctx.k.reduce_count() != 1)
    return;
  const UOp* reduce = ctx.k.reduce();
  if (!reduce) return;
  std::vector<const UOp*> loads;
  StagingInput in{ctx.k, ctx.dims, ctx.reduce_ranges[0], {}, {}};
  for (const UOp* x : toposort(ast)) {
    if (x->op != Ops::REDUCE_AXIS) continue;
    for (const UOp* l : toposort(x->src.at(0))) {
      if (l->op != Ops::LOAD) continue;
      const ShapeTracker& st = l->src.at(1)->get<ShapeTracker>();
      if (st.views.size() != 1) return;
      bool shared = false;
      for (size_t d = 0; d < kinds.size(); d++)
        shared |= kinds[d] == AxisKind::LOCAL && st.views[0].strides[d] == 0 && ctx.k.full_shape()[d] > 1;
      if (!shared) return;  // all the reduce's loads, or none
      size_t view = 0;
      while (view < ctx.k.sts().size() && !(ctx.k.sts()[view] == st)) view++;
      loads.push_back(l);
      in.views.push_back(view);
      in.bufs.push_back(l->src.at(0));
    }
  }
  if (loads.empty() || !(ctx.staging = Staging::plan(in))) return;
  for (size_t i = 0; i < loads.size(); i++) ctx.staged[loads[i]] = i;
}

std::pair<UOpPtr, UOpPtr> index_of(const LowerCtx& ctx, const UOp* view) {
  const ShapeTracker& st = view->get<ShapeTracker>();
  std::vector<UOpPtr> idxs;
  for (size_t d = 0; d < st.shape().size(); d++) idxs.push_back(st.shape()[d] == 1 ? ctx.ci(0) : ctx.dims.at(d));
  return to_indexed_uops(st, idxs, ctx.idx_dt);
}

UOpPtr contiguous_base(const LowerCtx& ctx, const UOpPtr& idx, const UOpPtr& valid, const Combo& c) {
  if (contains(valid, ctx.vector_placeholder.get())) return nullptr;
  auto lin = linearize(idx);
  if (!lin) return nullptr;
  int hits = 0;
  for (auto& t : lin->terms) {
    if (t.x == ctx.vector_placeholder) {
      if (t.coef != 1) return nullptr;
      hits++;
    } else if (contains(t.x, ctx.vector_placeholder.get())) {
      return nullptr;
    }
  }
  if (hits != 1) return nullptr;
  UOpPtr base = at_combo(ctx, idx, c, 0);
  return aligned(ctx, base, ctx.vector_width) ? base : nullptr;
}

AccessRun access_run(const LowerCtx& ctx, Ops op, const UOpPtr& idx, const UOpPtr& valid, uint64_t mask,
                                       DType dt) {
  if (!ctx.ren.has_local() || dt.count != 1 || dt.ptr || !ctx.ren.vectorizes(op, dt)) return {};
  auto lin = linearize(idx);
  if (!lin) return {};
  for (size_t i = 0; i < ctx.upcasts.size(); i++) {
    if (!(mask >> i & 1) || contains(valid, ctx.upcasts[i].placeholder.get())) continue;
    int64_t coef = 0;
    bool other = false;
    for (auto& t : lin->terms) {
      if (t.x == ctx.upcasts[i].placeholder)
        coef = t.coef;
      else
        other |= contains(t.x, ctx.upcasts[i].placeholder.get());
    }
    if (coef != 1 || other) continue;
    for (int64_t w : {16 / int64_t(dt.itemsize()), int64_t(4), int64_t(2)})
      if (w > 1 && ctx.upcasts[i].size % w == 0 && ctx.ren.vector_width_ok(int(w), dt)) return {i, w};
  }
  return {};
}

bool distinct_addresses(const LowerCtx& ctx, const UOpPtr& idx, uint64_t mask) {
  auto lin = linearize(idx);
  if (!lin) return false;
  std::vector<int64_t> coef(ctx.upcasts.size(), 0);
  for (auto& t : lin->terms)
    for (size_t i = 0; i < ctx.upcasts.size(); i++)
      if (mask >> i & 1) {
        if (t.x == ctx.upcasts[i].placeholder) coef[i] += t.coef;
        else if (contains(t.x, ctx.upcasts[i].placeholder.get())) return false;  // not linear in it
      }
  std::unordered_set<int64_t> seen;
  for (int64_t k = 0; k < combo_count(ctx, mask); k++) {
    const Combo cb = decode_combo(ctx, mask, k);
    int64_t off = 0;
    for (size_t i = 0; i < ctx.upcasts.size(); i++) off += coef[i] * cb[i];
    if (!seen.insert(off).second) return false;
  }
  return true;
}

UOpPtr run_store(const LowerCtx& ctx, const UOpPtr& buf, const Unrolled& value, const AccessRun& run,
                 const Combo& start, const UOpPtr& base, const UOpPtr& valid) {
  if (!aligned(ctx, base, run.width)) return nullptr;
  std::vector<UOpPtr> lanes;
  for (int64_t j = 0; j < run.width; j++) {
    Combo m = start;
    m[run.upcast] += j;
    const Val v = value_at(ctx, value, m);
    if (varying(v)) return nullptr;
    lanes.push_back(v.one);
  }
  const DType vdt = lanes[0]->dtype.vec(int(run.width));
  UOpPtr vec = UOp::make(Ops::VECTORIZE, vdt, std::move(lanes));
  if (always(valid)) return UOp::make(Ops::STORE, dtypes::void_, {buf, base, vec});
  return UOp::make(Ops::STORE, dtypes::void_, {buf, base, vec, valid});
}

bool aligned(const LowerCtx& ctx, const UOpPtr& base, int64_t width) {
  if (!ctx.ren.aligned_vectors()) return true;
  auto bl = linearize(base);
  if (!bl || bl->c % width != 0) return false;
  for (auto& t : bl->terms)
    if (t.coef % width != 0) return false;
  return true;
}

UOpPtr load(const UOpPtr& buf, DType dt, const UOpPtr& idx, const UOpPtr& valid, const UOpPtr& alt,
                     const UOpPtr& after) {
  if (after) return UOp::make(Ops::LOAD, dt, {buf, idx, after});
  if (always(valid)) return UOp::make(Ops::LOAD, dt, {buf, idx});
  return UOp::make(Ops::LOAD, dt, {buf, idx, valid, alt});
}

// A CONST or DEFINE_VAR leaf seen through a view: the value where the view is valid, 0 elsewhere.
UOpPtr lower_const(LowerCtx& ctx, const UOpPtr& u) {
  auto c = UOp::make(u->op, u->dtype, {}, u->arg);
  auto [idx, valid] = index_of(ctx, u->src[0].get());
  if (always(valid)) return c;
  Unrolled in{upcast_deps(ctx, valid), {}};
  UOpPtr zero = UOp::const_(u->dtype, 0);
  for (int64_t k = 0; k < combo_count(ctx, in.mask); k++) {
    Combo cb = decode_combo(ctx, in.mask, k);
    UOpPtr vc = at_combo(ctx, valid, cb);
    if (!contains(vc, ctx.vector_placeholder.get())) {
      in.vals.push_back(Val{simplify(where(vc, c, zero)), {}});
      continue;
    }
    Val v;
    for (int64_t i = 0; i < ctx.vector_width; i++)
      v.lanes.push_back(simplify(where(at_combo(ctx, vc, cb, i), c, zero)));
    in.vals.push_back(std::move(v));
  }
  return unroll(u->dtype, in);
}

UOpPtr lower_load(LowerCtx& ctx, const UOpPtr& u) {
  auto [idx, valid] = index_of(ctx, u->src[1].get());
  UOpPtr buf = u->src[0];
  UOpPtr after;  // a staged load reads shared memory once its step's copies are in (codegen/staging.h)
  if (auto it = ctx.staged.find(u.get()); it != ctx.staged.end()) {
    buf = ctx.staging->buffer(it->second);
    idx = ctx.staging->index(it->second);
    valid = UOp::const_(dtypes::bool_, 1);
    after = ctx.staging->after();
  }
  Unrolled in{upcast_deps(ctx, idx) | upcast_deps(ctx, valid), {}};
  UOpPtr zero = UOp::const_(u->dtype, 0);
  const AccessRun run = access_run(ctx, Ops::LOAD, idx, valid, in.mask, u->dtype);
  std::unordered_map<int64_t, UOpPtr> run_loads;  // the combination at a run's start -> its vector load
  for (int64_t k = 0; k < combo_count(ctx, in.mask); k++) {
    Combo cb = decode_combo(ctx, in.mask, k);
    UOpPtr ic = at_combo(ctx, idx, cb), vc = at_combo(ctx, valid, cb);
    if (vc->op == Ops::CONST && vc->const_value() == 0) {  // never valid here (the other side of a cat): no load
      in.vals.push_back(Val{zero, {}});
      continue;
    }
    if (!contains(ic, ctx.vector_placeholder.get()) && !contains(vc, ctx.vector_placeholder.get())) {
      if (run.width > 1) {
        Combo start = cb;
        start[run.upcast] -= cb[run.upcast] % run.width;
        auto [it, fresh] = run_loads.try_emplace(combo_key(ctx, in.mask, start));
        if (fresh) {
          UOpPtr base = cb == start ? ic : at_combo(ctx, idx, start);
          const DType vdt = u->dtype.vec(int(run.width));
          if (aligned(ctx, base, run.width))
            it->second = load(buf, vdt, base, vc,
                              UOp::make(Ops::VECTORIZE, vdt, std::vector<UOpPtr>(size_t(run.width), zero)), after);
        }
        if (it->second) {
          in.vals.push_back(Val{UOp::make(Ops::GEP, u->dtype, {it->second}, cb[run.upcast] % run.width), {}});
          continue;
        }
      }
      in.vals.push_back(Val{load(buf, u->dtype, ic, vc, zero, after), {}});
      continue;
    }
    if (vec_ok(ctx, Ops::LOAD, u->dtype))
      if (UOpPtr base = contiguous_base(ctx, ic, vc, cb)) {
        UOpPtr alt = as_vec(ctx, Val{zero, {}});
        in.vals.push_back(Val{load(buf, u->dtype.vec(int(ctx.vector_width)), base, vc, alt, after), {}});
        continue;
      }
    Val v;
    for (int64_t i = 0; i < ctx.vector_width; i++)
      v.lanes.push_back(load(buf, u->dtype, at_combo(ctx, ic, cb, i), at_combo(ctx, vc, cb, i), zero, after));
    in.vals.push_back(std::move(v));
  }
  UOpPtr out = unroll(u->dtype, in);
  if (u.get() == ctx.tc_a || u.get() == ctx.tc_b) ctx.tc_regs[u.get()] = out;
  return out;
}

UOpPtr lower_store(LowerCtx& ctx, const UOpPtr& u) {
  auto [idx, valid] = index_of(ctx, u->src[1].get());
  // After a grouped reduce every GROUP sibling holds the result; the one of GROUP index 0 writes it.
  for (size_t d : ctx.group_dims) valid = logical_and(valid, lt(ctx.dims[d], 1));  // lidx < 1: index 0
  valid = simplify(valid);
  const UOpPtr& buf = u->src[0];
  const Unrolled value = unpack(u->src[2]);
  const DType dt = u->src[2]->dtype;
  const uint64_t mask = upcast_deps(ctx, idx) | upcast_deps(ctx, valid) | value.mask;
  auto store = [&](const UOpPtr& i, const UOpPtr& v, const UOpPtr& g) {
    if (always(g)) return UOp::make(Ops::STORE, dtypes::void_, {buf, i, v});
    return UOp::make(Ops::STORE, dtypes::void_, {buf, i, v, g});
  };
  std::vector<UOpPtr> stores;
  // (a tensor core's output pairs as half2/float2: H100 fp16 4096^3 550 -> 624-632 TFLOPS, bf16 538-543 -> 643-647)
  AccessRun run = access_run(ctx, Ops::STORE, idx, valid, mask, dt);
  if (run.width > 1 && !distinct_addresses(ctx, idx, mask)) run = AccessRun{};
  std::unordered_set<int64_t> run_done;  // runs (by the key of their first combination) stored as one vector
  for (int64_t k = 0; k < combo_count(ctx, mask); k++) {
    Combo cb = decode_combo(ctx, mask, k);
    UOpPtr ic = at_combo(ctx, idx, cb), vc = at_combo(ctx, valid, cb);
    const Val v = value_at(ctx, value, cb);
    bool vdep = contains(ic, ctx.vector_placeholder.get()) || contains(vc, ctx.vector_placeholder.get());
    if (!vdep && !varying(v)) {
      if (run.width > 1) {
        Combo start = cb;
        start[run.upcast] -= cb[run.upcast] % run.width;
        if (cb == start)
          if (UOpPtr vs = run_store(ctx, buf, value, run, start, ic, vc)) {
            stores.push_back(vs);
            run_done.insert(combo_key(ctx, mask, start));
            continue;
          }
        if (run_done.count(combo_key(ctx, mask, start))) continue;
      }
      stores.push_back(store(ic, v.one, vc));
      continue;
    }
    if (vdep && vec_ok(ctx, Ops::STORE, dt))
      if (UOpPtr base = contiguous_base(ctx, ic, vc, cb)) {
        stores.push_back(store(base, as_vec(ctx, v), vc));
        continue;
      }
    // lane by lane, in order (where lanes write one address, the last wins, as the loop would)
    for (int64_t i = 0; i < ctx.vector_width; i++)
      stores.push_back(store(at_combo(ctx, ic, cb, i), lane(ctx, v, i), at_combo(ctx, vc, cb, i)));
  }
  return UOp::make(Ops::UNROLL, dtypes::void_, std::move(stores), int64_t(mask));
}

}  // namespace tg::lowering
