// Which dims of a kernel's full shape become loops, launch indices (SPECIAL) or upcast placeholders is decided by
// LowerCtx's constructor from these two facts: the GPU launch axis of each dim, and the index dtype.
#include <algorithm>

#include "codegen/lowerer_internal.h"
#include "shape/indexing.h"
#include "tg/context.h"
#include "tg/error.h"
#include "uop/pattern.h"
#include "uop/symbolic.h"
#include "uop/symbolic_linear.h"

namespace tg::lowering {

std::vector<std::optional<SpecialArg>> launch_axes(const Kernel& k) {
  const Shape& fs = k.full_shape();
  std::vector<std::optional<SpecialArg>> axes(fs.size());
  if (!k.renderer().has_local()) return axes;
  const int lane_t = k.dim_of(TcRole::LANE_T), lane_g = k.dim_of(TcRole::LANE_G);
  int g = 0, l = lane_t >= 0 ? 1 : 0;
  for (size_t d = fs.size(); d-- > 0;) {
    if (int(d) == lane_t || int(d) == lane_g)
      axes[d] = SpecialArg{LaunchAxis::LOCAL, 0, TensorCore::kLanes};
    else if (k.kinds()[d] == AxisKind::LOCAL || k.kinds()[d] == AxisKind::GROUP)
      axes[d] = SpecialArg{LaunchAxis::LOCAL, l++, fs[d]};
    // (a symbolic output dim was padded to its largest size by the Kernel: launch dims are numbers)
    if (k.kinds()[d] == AxisKind::LOOP && g < 3 && fs[d] <= (g == 0 ? int64_t(INT32_MAX) : 65535))
      axes[d] = SpecialArg{LaunchAxis::GROUP, g++, fs[d]};
  }
  return axes;
}

// TC_SWIZZLE=n: blocks of a tensor-core kernel start in groups of n block rows (0: row by row), where a row has
// at least 4n blocks. Default 8, with per-thread copies: H100, fp16 8192^3 (32 blocks of 128 x 256 a row, one
// block an SM): 562 TFLOPS row by row, 581 with n = 8, 578 with 16, 573 with 4. At 4096 (16 a row: the ~132 blocks
// resident at once already span 8 rows) it gained nothing (498-507 -> 496-497; bf16 505 -> 490), hence the 4n.
// Default 0 where the renderer copies WGMMA operands with TMA: H200, fp16 x @ w with TMA, 8192^3: 643 TFLOPS row
// by row, 517 with n = 2, 522 with 8, 640 with 16; at 4096 n = 2 gave 451 against 581 (x @ w.T: no change).
static ContextVar TC_SWIZZLE("TC_SWIZZLE", -1);

void swizzle_block_order(LowerCtx& ctx, const std::vector<std::optional<SpecialArg>>& launch) {
  const int64_t group = TC_SWIZZLE >= 0 ? int64_t(TC_SWIZZLE) : ctx.k.renderer().tma() ? 0 : 8;
  int dx = -1, dy = -1;  // the dims of gidx0 and gidx1
  for (size_t d = 0; d < launch.size(); d++)
    if (launch[d] && launch[d]->axis == LaunchAxis::GROUP && launch[d]->dim < 2)
      (launch[d]->dim == 0 ? dx : dy) = int(d);
  if (group < 2 || dx < 0 || dy < 0) return;
  const int64_t g0 = launch[size_t(dx)]->size, g1 = launch[size_t(dy)]->size;
  if (g0 < 4 * group || g1 % group != 0 || g1 == group) return;
  // The hardware starts blocks in the order of pid = y * g0 + x. Within each group of `group` block rows, pid's
  // offset q = (y % group) * g0 + x runs down a column of the group first: (x', y') = (q / group, q % group). A
  // wave of resident blocks then covers `group` rows and few columns, whose operand tiles share L2, instead of
  // one row and all of B's columns.
  const UOpPtr x = ctx.dims[size_t(dx)], y = ctx.dims[size_t(dy)];
  const UOpPtr q = mod(y, ctx.ci(group)) * ctx.ci(g0) + x;
  ctx.dims[size_t(dx)] = simplify(idiv(q, ctx.ci(group)));
  ctx.dims[size_t(dy)] = simplify(idiv(y, ctx.ci(group)) * ctx.ci(group) + mod(q, ctx.ci(group)));
}

namespace {
// Whether every index and size of a symbolic tracker stays within int32 for every value of its variables: the
// index math's own bounds over index ranges [0, size) at the largest sizes.
bool symbolic_view_fits(const ShapeTracker& st) {
  constexpr int64_t lim = INT32_MAX;
  std::vector<UOpPtr> idxs;
  for (size_t i = 0; i < st.shape().size(); i++)
    idxs.push_back(
        UOp::make(Ops::DEFINE_VAR, dtypes::int64, {},
                  NamedRange{"fidx" + std::to_string(i), 0, std::max<int64_t>(0, st.shape()[i].vmax() - 1)}));
  auto [idx, valid] = to_indexed_uops(st, idxs, dtypes::int64);
  for (const View& v : st.views)
    if (prod(v.shape).vmax() > lim) return false;
  return idx->vmin >= -lim && idx->vmax <= lim;
}
}  // namespace

DType index_dtype(const Kernel& k, const UOpPtr& ast) {
  constexpr int64_t lim = INT32_MAX;
  auto fits = [](int64_t v) { return v <= lim && v >= -lim; };
  for (const sint& s : k.full_shape())
    if (!fits(s.vmax())) return dtypes::int64;
  for (const UOp* u : toposort(ast)) {
    if (u->op != Ops::VIEW) continue;
    if (u->get<ShapeTracker>().symbolic()) {
      if (!symbolic_view_fits(u->get<ShapeTracker>())) return dtypes::int64;
      continue;
    }
    const auto& views = u->get<ShapeTracker>().views;
    for (size_t i = 0; i < views.size(); i++) {
      const View& v = views[i];
      if (i + 1 < views.size() && !fits(prod(v.shape))) return dtypes::int64;
      int64_t lo = v.offset, hi = v.offset;
      for (size_t d = 0; d < v.shape.size(); d++) {
        if (v.shape[d] == 0) break;  // an empty view reads nothing
        // |(s-1)*stride| of a checked shape and its strides stays far below int64's overflow for any real
        // buffer; __int128 keeps a forged view from wrapping into a small value.
        __int128 ext = __int128(v.shape[d] - 1) * v.strides[d];
        __int128 nl = __int128(lo) + (ext < 0 ? ext : 0), nh = __int128(hi) + (ext > 0 ? ext : 0);
        if (nl < -lim || nh > lim) return dtypes::int64;
        lo = int64_t(nl), hi = int64_t(nh);
      }
    }
  }
  return dtypes::int32;
}

namespace {
// The ops a kernel AST is made of (schedule/): anything else is a bug upstream, named here.
bool is_ast_op(Ops op) {
  static const std::vector<Ops> ast_ops{Ops::SINK,          Ops::STORE,      Ops::LOAD,        Ops::VIEW, Ops::CONST,
                                        Ops::DEFINE_GLOBAL, Ops::DEFINE_VAR, Ops::REDUCE_AXIS, Ops::CAST, Ops::BITCAST};
  return is_alu(op) || std::find(ast_ops.begin(), ast_ops.end(), op) != ast_ops.end();
}
}  // namespace

// GPU launch: the innermost LOOP dims are the grid, LOCAL/GROUP dims the threads of a block; a tensor core's
// two lane dims share threadIdx.x. Loads that a workgroup shares in a matmul go through shared memory
// (codegen/staging.h): their values are loads of the staged tile, or LDMATRIX fragments for a tensor core.
LowerCtx::LowerCtx(const Kernel& kernel, const UOpPtr& ast)
    : k(kernel), ren(kernel.renderer()), idx_dt(index_dtype(kernel, ast)) {
  LowerCtx& ctx = *this;
  const Shape& fs = k.full_shape();
  const auto& kinds = k.kinds();
  const int vdim = k.vector_dim();
  const std::vector<std::optional<SpecialArg>> launch = launch_axes(k);
  for (size_t d = 0; d < fs.size(); d++) {
    UOpPtr r = UOp::make(Ops::RANGE, ctx.idx_dt, {ctx.ci(0), sint_to_uop(fs[d], ctx.idx_dt)}, int64_t(d));
    switch (kinds[d]) {
      case AxisKind::THREAD:
        r = UOp::make(Ops::SPECIAL, ctx.idx_dt, {}, SpecialArg{LaunchAxis::CORE, 0, fs[d]});
        break;
      case AxisKind::LOOP:
      case AxisKind::LOCAL:
      case AxisKind::GROUP:
        if (launch[d]) r = UOp::make(Ops::SPECIAL, ctx.idx_dt, {}, *launch[d]);
        if (int(d) == k.dim_of(TcRole::LANE_T)) r = mod(r, ctx.ci(4));  // lane = 4g + t
        if (int(d) == k.dim_of(TcRole::LANE_G)) r = idiv(r, ctx.ci(4));
        if (kinds[d] == AxisKind::GROUP) ctx.group_dims.push_back(d);
        if (kinds[d] != AxisKind::LOOP) ctx.thread_dims.push_back(d);
        break;
      case AxisKind::REDUCE:
        ctx.reduce_ranges.push_back(r);
        break;
      case AxisKind::UNROLL:
      case AxisKind::UPCAST:
        // A placeholder: substituted by each of its values before anything is built from it.
        if (int(d) == vdim) {
          ctx.vector_placeholder = r;
          ctx.vector_width = fs[d];
          ctx.vector_unrolled = kinds[d] == AxisKind::UNROLL;
        } else {
          if (kinds[d] == AxisKind::UNROLL) ctx.unroll_mask |= uint64_t(1) << ctx.upcasts.size();
          ctx.upcasts.push_back({r, fs[d], d});
        }
        break;
    }
    ctx.dims.push_back(r);
  }
  if (ctx.upcasts.size() > 60) throw Error("lower: too many upcast dims");
  // Dims of size 0: an empty output has nothing to store; a reduce over nothing is its identity and reads
  // nothing. (The loops alone would not be enough: a RANGE over nothing simplifies away, and the loads in
  // it would run once, out of bounds.)
  for (size_t d = 0; d < fs.size(); d++) {
    bool reduced = kinds[d] == AxisKind::REDUCE || kinds[d] == AxisKind::GROUP || kinds[d] == AxisKind::UNROLL;
    if (fs[d] == 0) (reduced ? ctx.empty_reduce : ctx.empty_output) = true;
  }
  if (k.tensor_core() && ctx.ren.async_copies()) flatten_reduce_loops(ctx);
  if (k.tensor_core()) swizzle_block_order(ctx, launch);
  for (const UOp* u : toposort(ast)) {
    if (!is_ast_op(u->op)) throw Error(std::string("lower: unexpected ") + op_name(u->op) + " in a kernel AST");
    if (u->op == Ops::DEFINE_GLOBAL) ctx.globals.push_back(u->ptr());
  }
  find_nested_reduces(ctx, ast);
  if (k.tensor_core()) find_tc_loads(ctx, ast);
}

}  // namespace tg::lowering
