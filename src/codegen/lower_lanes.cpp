// Combinations of upcast values (a value per upcast dim, keyed in mixed radix) and lowered values: a node's value
// at each combination is one node (a scalar the same in every vector lane, or a vector) or lanes of scalars, and
// ALU ops on them are vector nodes where the renderer takes vectors of the op and dtype, lanes otherwise.
#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "codegen/lowerer_internal.h"
#include "shape/indexing.h"
#include "tg/error.h"
#include "uop/symbolic.h"
#include "uop/symbolic_linear.h"

namespace tg::lowering {

UOpPtr unroll(DType dt, const Unrolled& in) {
  std::vector<UOpPtr> srcs;
  for (const Val& v : in.vals)
    srcs.push_back(v.one ? v.one : UOp::make(Ops::VECTORIZE, v.lanes[0]->dtype.vec(int(v.lanes.size())), v.lanes));
  return UOp::make(Ops::UNROLL, dt, std::move(srcs), int64_t(in.mask));
}

Unrolled unpack(const UOpPtr& x) {
  if (x->op != Ops::UNROLL) return Unrolled{0, {Val{x, {}}}};
  Unrolled in{uint64_t(x->get<int64_t>()), {}};
  for (const UOpPtr& v : x->src) in.vals.push_back(v->op == Ops::VECTORIZE ? Val{nullptr, v->src} : Val{v, {}});
  return in;
}

int64_t combo_count(const LowerCtx& ctx, uint64_t mask) {
  int64_t n = 1;
  for (size_t i = 0; i < ctx.upcasts.size(); i++)
    if (mask >> i & 1) n *= ctx.upcasts[i].size;
  return n;
}

int64_t combo_key(const LowerCtx& ctx, uint64_t mask, const Combo& c) {
  int64_t k = 0;
  for (size_t i = 0; i < ctx.upcasts.size(); i++)
    if (mask >> i & 1) k = k * ctx.upcasts[i].size + c[i];
  return k;
}

Combo decode_combo(const LowerCtx& ctx, uint64_t mask, int64_t k) {
  Combo c(ctx.upcasts.size(), 0);
  for (size_t i = ctx.upcasts.size(); i-- > 0;)
    if (mask >> i & 1) {
      c[i] = k % ctx.upcasts[i].size;
      k /= ctx.upcasts[i].size;
    }
  return c;
}

uint64_t upcast_deps(const LowerCtx& ctx, const UOpPtr& e) {
  uint64_t m = 0;
  auto topo = toposort(e);
  for (size_t i = 0; i < ctx.upcasts.size(); i++)
    for (const UOp* u : topo)
      if (u == ctx.upcasts[i].placeholder.get()) m |= uint64_t(1) << i;
  return m;
}

UOpPtr at_combo(const LowerCtx& ctx, const UOpPtr& e, const Combo& c, int64_t lane) {
  return simplify(substitute(e, [&](const UOp* u) -> UOpPtr {
    if (u->op != Ops::RANGE) return nullptr;
    for (size_t i = 0; i < ctx.upcasts.size(); i++)
      if (u == ctx.upcasts[i].placeholder.get()) return ctx.ci(c[i]);
    if (lane >= 0 && u == ctx.vector_placeholder.get()) return ctx.ci(lane);
    return nullptr;
  }));
}

UOpPtr lane(const LowerCtx& ctx, const Val& v, int64_t i) {
  if (!v.one) return v.lanes.at(size_t(i));
  if (v.one->dtype.count == 1) return v.one;
  if (v.one->op == Ops::VECTORIZE) return v.one->src.at(size_t(i));
  return UOp::make(Ops::GEP, v.one->dtype.scalar_type(), {v.one}, i);
}

UOpPtr as_vec(const LowerCtx& ctx, const Val& v) {
  if (v.one && v.one->dtype.count > 1) return v.one;
  std::vector<UOpPtr> l;
  for (int64_t i = 0; i < ctx.vector_width; i++) l.push_back(lane(ctx, v, i));
  DType dt = l[0]->dtype.vec(int(ctx.vector_width));
  return UOp::make(Ops::VECTORIZE, dt, std::move(l));
}

bool vec_ok(const LowerCtx& ctx, Ops op, DType dt) {
  return ctx.vector_width > 1 && dt.count == 1 && !dt.ptr && ctx.ren.vectorizes(op, dt) &&
         ctx.ren.vector_width_ok(int(ctx.vector_width), dt);
}

Val alu(const LowerCtx& ctx, Ops op, DType dt, const std::vector<Val>& srcs, const Arg& arg) {
  bool any = false, same = true;
  for (auto& s : srcs) {
    any |= varying(s);
    DType sd = s.one ? s.one->dtype.scalar_type() : s.lanes[0]->dtype;
    same &= sd == dt;
  }
  if (!any) {
    std::vector<UOpPtr> o;
    for (auto& s : srcs) o.push_back(s.one);
    return Val{UOp::make(op, dt, std::move(o), arg), {}};
  }
  // A conversion of a vector the backend converts whole (bytes to floats: __builtin_convertvector).
  const bool vec_cast = op == Ops::CAST && srcs.size() == 1 && srcs[0].one &&
                        srcs[0].one->dtype.count == ctx.vector_width && dt.count == 1 &&
                        ctx.ren.vectorizes_cast(srcs[0].one->dtype.scalar_type(), dt) &&
                        ctx.ren.vector_width_ok(int(ctx.vector_width), dt);
  if ((same && vec_ok(ctx, op, dt)) || vec_cast) {
    std::vector<UOpPtr> o;
    for (auto& s : srcs) o.push_back(as_vec(ctx, s));
    return Val{UOp::make(op, dt.vec(int(ctx.vector_width)), std::move(o), arg), {}};
  }
  Val r;
  for (int64_t i = 0; i < ctx.vector_width; i++) {
    std::vector<UOpPtr> o;
    for (auto& s : srcs) o.push_back(lane(ctx, s, i));
    r.lanes.push_back(UOp::make(op, dt, std::move(o), arg));
  }
  return r;
}

Val tree(const LowerCtx& ctx, Ops op, DType dt, std::vector<Val> xs) {
  while (xs.size() > 1) {
    std::vector<Val> next;
    for (size_t i = 0; i + 1 < xs.size(); i += 2) next.push_back(alu(ctx, op, dt, {xs[i], xs[i + 1]}));
    if (xs.size() % 2) next.push_back(xs.back());
    xs = std::move(next);
  }
  return xs.at(0);
}

}  // namespace tg::lowering
