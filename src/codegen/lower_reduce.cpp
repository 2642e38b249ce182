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

void flatten_reduce_loops(LowerCtx& ctx) {
  if (ctx.reduce_ranges.size() < 2) return;
  int64_t total = 1;
  for (const UOpPtr& r : ctx.reduce_ranges) total *= r->src.at(1)->const_int_value();
  if (total == 0) return;
  UOpPtr flat = UOp::make(Ops::RANGE, ctx.idx_dt, {ctx.ci(0), ctx.ci(total)}, ctx.reduce_ranges[0]->get<int64_t>());
  int64_t inner = total;
  for (UOpPtr& d : ctx.dims) {
    auto it = std::find(ctx.reduce_ranges.begin(), ctx.reduce_ranges.end(), d);
    if (it == ctx.reduce_ranges.end()) continue;
    const int64_t size = d->src.at(1)->const_int_value();
    inner /= size;
    UOpPtr v = inner == 1 ? flat : idiv(flat, ctx.ci(inner));
    d = inner * size == total ? v : mod(v, ctx.ci(size));
  }
  ctx.reduce_ranges = {flat};
}

void find_nested_reduces(LowerCtx& ctx, const UOpPtr& ast) {
  for (const UOp* x : toposort(ast))
    if (x->op == Ops::REDUCE_AXIS)
      for (const UOp* y : toposort(x->src.at(0)))
        if (y != x && y->op == Ops::REDUCE_AXIS) ctx.nested.insert(y);
}

UOpPtr add_reduce_ranges(LowerCtx& ctx, const UOpPtr& reduce) {
  if (ctx.reduce_ranges.empty()) return nullptr;
  std::vector<UOpPtr> srcs{reduce->src.at(0)};
  for (const UOpPtr& r : ctx.reduce_ranges)
    srcs.push_back(ctx.nested.count(reduce.get()) ? UOp::make(Ops::RANGE, r->dtype, r->src, fresh_id(ctx)) : r);
  return UOp::make(Ops::REDUCE_AXIS, reduce->dtype, std::move(srcs), reduce->arg);
}

UOpPtr with_ranges(const LowerCtx& ctx, const UOpPtr& x, const std::vector<UOpPtr>& ranges) {
  if (ranges == ctx.reduce_ranges) return x;
  std::unordered_map<const UOp*, UOpPtr> to;
  for (size_t i = 0; i < ranges.size(); i++) to[ctx.reduce_ranges[i].get()] = ranges[i];
  return substitute(x, [&](const UOp* u) -> UOpPtr {
    auto it = to.find(u);
    return it == to.end() ? nullptr : it->second;
  });
}

// A REDUCE_AXIS at one output lane reduces its source over the UNROLL values in a balanced tree
// ((x0+x1)+(x2+x3)), then accumulates that across the reduce loops (REDUCE(value, ranges...)). When the
// vector dim is an UNROLL dim, each of its lanes accumulates separately and the lanes are added in a tree
// after the loop. (On GPUs the linearizer then adds the tree's terms to the accumulator one by one: see
// LinearizeOptions::sequential_sums.)
UOpPtr lower_reduce(LowerCtx& ctx, const UOpPtr& u) {
  if (ctx.k.tensor_core()) return lower_tc_reduce(ctx, u);
  const Ops op = u->get<ReduceArg>().op;
  const DType dt = u->dtype;
  if (ctx.empty_reduce) return reduce_identity(op, dt);
  const Unrolled src = unpack(u->src[0]);
  const std::vector<UOpPtr> ranges(u->src.begin() + 1, u->src.end());
  Unrolled in{src.mask & ~ctx.unroll_mask, {}};
  for (int64_t k = 0; k < combo_count(ctx, in.mask); k++) {
    Combo cb = decode_combo(ctx, in.mask, k);
    // every UNROLL value counts, whether or not the source depends on it
    std::vector<Val> xs;
    for (int64_t j = 0; j < combo_count(ctx, ctx.unroll_mask); j++) {
      Combo uc = decode_combo(ctx, ctx.unroll_mask, j);
      Combo full = cb;
      for (size_t i = 0; i < ctx.upcasts.size(); i++)
        if (ctx.unroll_mask >> i & 1) full[i] = uc[i];
      xs.push_back(value_at(ctx, src, full));
    }
    Val value = tree(ctx, op, dt, std::move(xs));
    if (ctx.vector_unrolled && !varying(value)) {  // each vector lane accumulates the value
      if (vec_ok(ctx, op, dt))
        value = Val{as_vec(ctx, value), {}};
      else
        value = Val{nullptr, std::vector<UOpPtr>(size_t(ctx.vector_width), value.one)};
    }
    if (value.one && value.one->dtype.count > 1 && !vec_ok(ctx, op, dt)) {  // the accumulator update is per lane
      Val l;
      for (int64_t i = 0; i < ctx.vector_width; i++) l.lanes.push_back(lane(ctx, value, i));
      value = std::move(l);
    }
    Val r = value;
    if (!ranges.empty()) {
      auto reduce = [&](const UOpPtr& x) {
        std::vector<UOpPtr> s{with_ranges(ctx, x, ranges)};
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
    if (ctx.vector_unrolled) {
      std::vector<Val> ls;
      for (int64_t i = 0; i < ctx.vector_width; i++) ls.push_back(Val{lane(ctx, r, i), {}});
      r = tree(ctx, op, dt, std::move(ls));
    }
    // after the lanes are summed: one partial per thread meets its group siblings in shared memory
    if (!ctx.group_dims.empty()) r = Val{group_reduce(ctx, op, r.one), {}};
    in.vals.push_back(std::move(r));
  }
  return unroll(dt, in);
}

UOpPtr group_reduce(LowerCtx& ctx, Ops op, const UOpPtr& part) {
  if (!part) throw Error("lower: a grouped reduce with vector lanes");
  const Shape& fs = ctx.k.full_shape();
  UOpPtr slot = ctx.ci(0);
  for (size_t d : ctx.thread_dims) slot = slot * ctx.ci(fs[d]) + ctx.dims[d];
  slot = simplify(slot);
  UOpPtr partials = shared_partials(ctx, part, slot, nullptr);
  const size_t last = ctx.group_dims.back();
  // One GROUP dim of many siblings (a row of 256 threads): every thread reading all 256 partials is 256
  // shared loads per warp and reduce, which an H100's softmax rows spent most of their time on. Instead the
  // first `n1` threads each reduce `n2` partials (thread i: i, i + n1, ...; neighbouring threads read
  // neighbouring banks) into a second buffer, and after a barrier every thread reads those n1: n1 + n2 loads.
  if (ctx.group_dims.size() == 1 && fs[last] >= 64) {
    const int64_t n = fs[last], n2 = n >= 256 ? 16 : 8, n1 = n / n2;
    if (n % n2 == 0) {
      const UOpPtr& g = ctx.dims[last];
      std::vector<Val> run;
      for (int64_t j = 0; j < n2; j++)
        run.push_back(Val{load_sibling(ctx, partials, slot, part->dtype, g, mod(g, ctx.ci(n1)) + ctx.ci(n1 * j)), {}});
      UOpPtr runs = shared_partials(ctx, tree(ctx, op, part->dtype, std::move(run)).one, slot, lt(g, n1));
      return sibling_reduce(ctx, op, runs, slot, part->dtype, n1);
    }
  }
  return sibling_reduce(ctx, op, partials, slot, part->dtype, fs[last]);
}

UOpPtr shared_partials(LowerCtx& ctx, const UOpPtr& x, const UOpPtr& slot, const UOpPtr& gate) {
  UOpPtr temp = UOp::make(Ops::DEFINE_LOCAL, x->dtype.pointer(true), {},
                          NamedRange{"temp" + std::to_string(ctx.group_temps++), 0, ctx.k.local_size() - 1});
  std::vector<UOpPtr> s{temp, slot, x};
  if (gate) s.push_back(simplify(gate));
  return UOp::make(Ops::BARRIER, dtypes::void_, {UOp::make(Ops::STORE, dtypes::void_, std::move(s))});
}

UOpPtr load_sibling(LowerCtx& ctx, const UOpPtr& barrier, const UOpPtr& slot, DType dt, const UOpPtr& g,
                             const UOpPtr& sibling) {
  UOpPtr idx = simplify(substitute(slot, [&](const UOp* u) -> UOpPtr { return u == g.get() ? sibling : nullptr; }));
  return UOp::make(Ops::LOAD, dt, {partials_buffer(barrier), idx, barrier});
}

UOpPtr sibling_reduce(LowerCtx& ctx, Ops op, const UOpPtr& barrier, const UOpPtr& slot, DType dt, int64_t n) {
  const Shape& fs = ctx.k.full_shape();
  const size_t last = ctx.group_dims.back();
  int64_t unroll = 1;
  for (int64_t u : {16, 8, 4, 2})
    if (n % u == 0 && n >= u) {
      unroll = u;
      break;
    }
  std::vector<UOpPtr> loops;
  std::unordered_map<const UOp*, UOpPtr> to_loop;
  for (size_t d : ctx.group_dims) {
    const int64_t size = d == last ? n / unroll : fs[d].value();
    if (size == 1 && d == last) continue;  // the unrolled values cover it
    loops.push_back(UOp::make(Ops::RANGE, ctx.idx_dt, {ctx.ci(0), ctx.ci(size)}, fresh_id(ctx)));
    to_loop[ctx.dims[d].get()] = loops.back();
  }
  const UOp* g = ctx.dims[last].get();
  std::vector<Val> loads;
  for (int64_t j = 0; j < unroll; j++) {
    UOpPtr idx = simplify(substitute(slot, [&](const UOp* u) -> UOpPtr {
      if (u == g) return to_loop.count(g) ? to_loop[g] * ctx.ci(unroll) + ctx.ci(j) : ctx.ci(j);
      auto it = to_loop.find(u);
      return it == to_loop.end() ? nullptr : it->second;
    }));
    loads.push_back(Val{UOp::make(Ops::LOAD, dt, {partials_buffer(barrier), idx, barrier}), {}});
  }
  UOpPtr value = tree(ctx, op, dt, std::move(loads)).one;
  if (loops.empty()) return value;
  std::vector<UOpPtr> s{value};
  s.insert(s.end(), loops.begin(), loops.end());
  return UOp::make(Ops::REDUCE, dt, std::move(s), int64_t(op));
}

}  // namespace tg::lowering
