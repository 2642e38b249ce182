// AST -> index math, with upcast dims expanded: named passes (graph_rewrite) whose typed context is LowerCtx
// (codegen/lowerer_internal.h), their rules free functions over it.
//   reduce_ranges  each REDUCE_AXIS gets the RANGEs it reduces over as sources (fresh ones when nested)
//   expand         views -> index math; every node -> UNROLL(its values at each combination of upcast values)
//   symbolic       index math simplified
// The dims become RANGEs and SPECIALs (lower_dims.cpp), each view's tracker a buffer index and a validity
// (shape/indexing.h); how upcast dims become lanes is told at pm_expand below.
#include "codegen/lowerer.h"

#include <algorithm>
#include <unordered_set>

#include "codegen/linearize.h"
#include "codegen/lowerer_internal.h"
#include "shape/indexing.h"
#include "tg/error.h"
#include "uop/pass_log.h"
#include "uop/pattern.h"
#include "uop/symbolic.h"
#include "uop/symbolic_linear.h"

namespace tg::lowering {

namespace {
std::vector<Ops> alu_and_casts() {
  std::vector<Ops> out{Ops::CAST, Ops::BITCAST};
  for (int i = 0; i < kNumOps; i++)
    if (is_alu(Ops(i))) out.push_back(Ops(i));
  return out;
}

bool has_unroll_src(const UOpPtr& u) {
  return std::any_of(u->src.begin(), u->src.end(), [](const UOpPtr& s) { return s->op == Ops::UNROLL; });
}
}  // namespace

bool contains(const UOpPtr& root, const UOp* x) {
  if (!x) return false;
  for (const UOp* u : toposort(root))
    if (u == x) return true;
  return false;
}

namespace {
// A rule that hands the matched node (captured as "x") and the context to a lowering function.
template <class F>
std::pair<UPat, TypedMatcher<LowerCtx>::Fn> on(UPat pat, F f) {
  return {pat.named("x"), [f](const Captures& m, LowerCtx& ctx) { return f(ctx, m["x"]); }};
}

// reduce_ranges: each REDUCE_AXIS gets the RANGEs it reduces over as sources; a nested one fresh copies.
const TypedMatcher<LowerCtx>& pm_reduce_ranges() {
  // (bottom up: a nested reduce is still the AST's node when its rule runs, so ctx.nested knows it)
  static const TypedMatcher<LowerCtx> pm({on(UPat::op(Ops::REDUCE_AXIS, {UPat::any()}), add_reduce_ranges)});
  return pm;
}

// UNROLL/UPCAST dims are not loops. The expander writes the AST once per value of them ("lanes"): every
// node is lowered once per combination of the upcast values it depends on (a load that does not depend
// on an upcast dim is shared by all of them), and stands in the graph as an UNROLL node holding those values
// (arg: the dims, a bit mask), which its users' rules read. A rule fires only on AST nodes or on nodes with an
// UNROLL source, so the lowered nodes it makes are final. The kernel's vector dim (Kernel::vector_dim) is kept
// together: a node that depends on it is one vector node (float4 ...) where the renderer takes vectors of
// that op and dtype, and vector_width scalar lanes otherwise (VECTORIZE(lanes) inside an UNROLL), with the same
// arithmetic per lane either way. Vectors are chosen by what the renderer takes as they are made, so no
// devectorize pass follows.
//
// expand: every node becomes an UNROLL of its values at each combination of the upcast values it depends on;
// a STORE an UNROLL of its stores; the SINK gathers the stores.
const TypedMatcher<LowerCtx>& pm_expand() {
  static const UPat view = UPat::ops_of({Ops::VIEW}), global = UPat::ops_of({Ops::DEFINE_GLOBAL});
  static const TypedMatcher<LowerCtx> pm({
      // leaves: views become index math, one value per combination of the upcast values they depend on
      on(UPat::op(Ops::CONST, {view}), lower_const),
      on(UPat::op(Ops::DEFINE_VAR, {view}), lower_const),  // a variable: a value known at launch
      on(UPat::op(Ops::LOAD, {global, view}), lower_load),
      // compute: per combination of the sources' upcast values (lowered nodes have no UNROLL source: no match)
      on(UPat::ops_of(alu_and_casts()), lower_alu),
      // reduces: over the UNROLL values, then the ranges (tensor cores, GROUP partials: lower_reduce.cpp)
      on(UPat::ops_of({Ops::REDUCE_AXIS}), lower_reduce),
      // stores, and the SINK that gathers them
      on(UPat::op(Ops::STORE, {global, view, UPat::any()}), lower_store),
      on(UPat::ops_of({Ops::SINK}), lower_sink),
  });
  return pm;
}

}  // namespace

UOpPtr lower(LowerCtx& ctx, const UOpPtr& ast) {
  // Every buffer stays a parameter even when simplification drops its last load (WHERE(c, x, x) -> x),
  // so the kernel's signature always matches the schedule item's buffers.
  if (ctx.empty_output) return UOp::make(Ops::SINK, dtypes::void_, ctx.globals);
  if (!ctx.empty_reduce) stage_shared_loads(ctx, ast);
  UOpPtr x = graph_rewrite("reduce_ranges", ast, pm_reduce_ranges(), ctx, /*bottom_up=*/true);
  x = graph_rewrite("expand", x, pm_expand(), ctx);
  return graph_rewrite("symbolic", x, symbolic());
}

UOpPtr lower_alu(const LowerCtx& ctx, const UOpPtr& u) {
  if (!has_unroll_src(u)) return nullptr;
  std::vector<Unrolled> srcs;
  Unrolled in;
  for (const UOpPtr& s : u->src) {
    srcs.push_back(unpack(s));
    in.mask |= srcs.back().mask;
  }
  for (int64_t k = 0; k < combo_count(ctx, in.mask); k++) {
    Combo cb = decode_combo(ctx, in.mask, k);
    std::vector<Val> vs;
    for (const Unrolled& s : srcs) vs.push_back(value_at(ctx, s, cb));
    in.vals.push_back(alu(ctx, u->op, u->dtype, vs, u->arg));
  }
  return unroll(u->dtype, in);
}

UOpPtr lower_sink(const LowerCtx& ctx, const UOpPtr& u) {
  if (!has_unroll_src(u)) return nullptr;
  std::vector<UOpPtr> out;
  for (const UOpPtr& s : u->src) {
    if (s->op != Ops::UNROLL) throw Error(std::string("lower: the kernel's SINK holds a ") + op_name(s->op));
    out.insert(out.end(), s->src.begin(), s->src.end());
  }
  out.insert(out.end(), ctx.globals.begin(), ctx.globals.end());
  return UOp::make(Ops::SINK, dtypes::void_, std::move(out));
}

}  // namespace tg::lowering
