// OptOps.TC: give a matmul-shaped kernel a tensor core (renderer/tensor_core.h).
//
// The kernel must reduce (ADD, in the tensor core's accumulator dtype) products of two loads A and B of its
// input dtype, with an output dim M that B does not depend on, an output dim N that A does not depend on
// and a reduce dim K both do, each a multiple of the tensor core's size. Those dims are split as the
// hardware lays out one warp's work (lane 4g + t):
//
//   M = (.., M_HI 2 [UPCAST], g 8 [LOCAL])         m = 8 * M_HI + g
//   N = (.., t 4 [LOCAL], N_LO 2 [UPCAST])          n = 2 * t + N_LO
//   K = (.., K_HI 2, K_MID 4, K_LO 2 [UNROLL])      k = 8 * K_HI + 2 * K_MID + K_LO
//       (tf32, m16n8k8: no K_LO, k = 4 * K_HI + K_MID)
//
// which is C's layout: a lane holds C's register M_HI * 2 + N_LO at (m, n). A and B hold other elements in
// their registers, so their views are swizzled: in A's view the lane dim t walks K (by 2, as K_MID did)
// instead of N; in B's, g walks N (all 8 columns, as 2 * t + N_LO did) and t walks K. K_MID then indexes
// nothing: the hardware sums over it across the lanes. The lowerer gathers each lane's registers from the
// register dims and emits one WMMA per warp tile (codegen/lowerer.cpp).
#include <algorithm>

#include "codegen/kernel.h"
#include "codegen/opt/tile_knob.h"
#include "tg/context.h"

namespace tg {
namespace {

// tf32 tensor cores for float32 matmuls (10-bit mantissas in the products), as tinygrad's ALLOW_TF32
ContextVar ALLOW_TF32("ALLOW_TF32", 0);

const UOp* strip_cast(const UOp* u) { return u->op == Ops::CAST ? u->src.at(0).get() : u; }

}  // namespace

bool allow_tf32() { return ALLOW_TF32 > 0; }

int64_t Kernel::last_view_stride(size_t i, int d) const {
  const View& v = sts_[i].views.back();
  if (v.mask) return -1;
  if (full_shape_[size_t(d)] == 1) return 0;
  return v.strides[size_t(d)].is_int() ? v.strides[size_t(d)].value() : -1;  // (a stride over variables: none)
}

void Kernel::apply_tc(const Opt& opt) {
  auto fail = [&](const std::string& why) { throw KernelOptError("apply_opt " + opt.repr() + " on " + name() + ": " + why); };
  if (!applied_.empty()) fail("a tensor core must be the first opt");
  if (opt.axis != 0) fail("axis picks the tensor core and must be 0");
  if (!reduce_ || reduce_->get<ReduceArg>().op != Ops::ADD) fail("needs a sum");
  if (reduce_count_ != 1) fail("a multi-reduce kernel");
  for (const ShapeTracker& st : sts_)
    if (st.symbolic()) fail("a view's size or mask depends on a variable");
  // SUM(CAST(MUL(a, b))) or SUM(MUL(CAST(a), CAST(b))) of two loads
  const UOp* mul = strip_cast(reduce_->src.at(0).get());
  if (mul->op != Ops::MUL) fail("needs a sum of products");
  const UOp* la = strip_cast(mul->src.at(0).get());
  const UOp* lb = strip_cast(mul->src.at(1).get());
  if (la->op != Ops::LOAD || lb->op != Ops::LOAD) fail("needs products of two loads");
  const TensorCore* tc = nullptr;
  for (const TensorCore& t : renderer_.tensor_cores())
    if (t.in == la->dtype && t.in == lb->dtype && t.acc == reduce_->dtype && (!t.tf32() || allow_tf32())) tc = &t;
  if (!tc)
    fail("no tensor core for " + la->dtype.repr() + " x " + lb->dtype.repr() + " -> " + reduce_->dtype.repr() +
         (la->dtype == dtypes::float32 ? " (float32 takes tf32 ones with ALLOW_TF32=1)" : ""));
  size_t ia = view_index(la->src.at(1).get()), ib = view_index(lb->src.at(1).get());
  if (ia == ib) fail("A and B read through the same view");
  // The swizzle permutes strides of the last view (the index into the views below it, which may be masked,
  // as a convolution's padded input is): that view must have no mask of its own.
  for (size_t i : {size_t(0), ia, ib})
    if (sts_[i].views.back().mask) fail("needs operands whose last view has no mask");
  if (sts_[0].views.size() != 1) fail("needs a plainly strided output");
  auto stride = [&](size_t i, int d) { return last_view_stride(i, d); };
  // The innermost dims that fit each role.
  int m = -1, n = -1, k = -1;
  for (int d = 0; d < first_reduce(); d++) {
    int64_t sa = stride(ia, d), sb = stride(ib, d), s = full_shape_[size_t(d)];
    if (s <= 0 || stride(0, d) <= 0) continue;
    if (sb == 0 && sa > 0 && s % tc->m == 0) m = d;
    if (sa == 0 && sb > 0 && s % tc->n == 0) n = d;
  }
  for (int d = first_reduce(); d < int(full_shape_.size()); d++)
    if (stride(ia, d) > 0 && stride(ib, d) > 0 && full_shape_[size_t(d)] % tc->k == 0 && full_shape_[size_t(d)] > 0)
      k = d;
  if (m < 0 || n < 0 || k < 0)
    fail("needs M, N and K dims that are multiples of " + std::to_string(tc->m) + ", " + std::to_string(tc->n) + ", " +
         std::to_string(tc->k) + " in " + name());
  split_tc_dims(*tc, ia, ib, m, n, k);
  tc_ = TcSetup{*tc, ia, ib};
  applied_.push_back(opt);
}

// The M, N and K dims split as the warp lays out its work, then A's and B's views swizzled to their registers
// (the comment at the top).
void Kernel::split_tc_dims(const TensorCore& tc, size_t ia, size_t ib, int m, int n, int k) {
  // Split K, then the later of M and N, then the earlier: a split moves only dims after the one split (its
  // new dims join the LOCAL/UPCAST/UNROLL regions after the loops, a remainder of 1 is dropped).
  if (tc.k_lo() > 1) shift_to(k, tc.k_lo(), false, AxisKind::UNROLL, TcRole::K_LO);
  shift_to(k, 4, false, AxisKind::UNROLL, TcRole::K_MID);
  shift_to(k, 2, false, AxisKind::UNROLL, TcRole::K_HI);
  auto split_m = [&] {
    shift_to(m, 8, false, AxisKind::LOCAL, TcRole::LANE_G);
    shift_to(m, 2, false, AxisKind::UPCAST, TcRole::M_HI);
  };
  auto split_n = [&] {
    shift_to(n, 2, false, AxisKind::UPCAST, TcRole::N_LO);
    shift_to(n, 4, false, AxisKind::LOCAL, TcRole::LANE_T);
  };
  if (m > n) split_m(), split_n();
  else split_n(), split_m();
  for (TcRole r : {TcRole::LANE_G, TcRole::LANE_T, TcRole::M_HI, TcRole::N_LO, TcRole::K_HI, TcRole::K_MID, TcRole::K_LO})
    if (dim_of(r) < 0 && (r != TcRole::K_LO || tc.k_lo() > 1))
      throw Error("apply_tc: lost the tensor core dim " + std::to_string(int(r)) + " in " + name());

  // Swizzle A and B to their register layouts.
  const size_t g = size_t(dim_of(TcRole::LANE_G)), t = size_t(dim_of(TcRole::LANE_T));
  const size_t nlo = size_t(dim_of(TcRole::N_LO)), kmid = size_t(dim_of(TcRole::K_MID));
  auto swizzle = [&](size_t i, bool is_b) {
    const View v = sts_[i].views.back();
    Shape st = v.strides;
    st[t] = st[kmid];
    st[kmid] = 0;
    if (is_b) {
      st[g] = st[nlo];
      st[nlo] = 0;
    }
    sts_[i].views.back() = View::create(v.shape, st, v.offset);
  };
  swizzle(ia, false);
  swizzle(ib, true);
}

}  // namespace tg

namespace tg {

static ContextVar TC("TC", 1);

namespace {

// The register tile and warps of a tensor-core kernel: TC_TILE=um,un,wm,wn,uk (upcast M and N by um, un
// warp tiles, wm x wn warps, K unrolled uk times), for tuning; the default is the measured best.
// (H100, fp16 4096^3 with operands staged through shared memory, 2026-11-25: 2,8,4,2,4 gives 290 TFLOPS;
// 4,8,2,2,2: 279; 2,16,4,1,2: 273; 256 x 128 blocks (4,8,4,2,2 or 2,16,8,1,2): 260; 2,16,4,1,1: 222.)
constexpr MatmulTile kTcTile{2, 8, 4, 2, 4};
// tf32 (mma.sync m16n8k8, operands plain loads of the staged tiles): 4 x 8 tiles of 2 x 2 warps, K steps of 16
// (H200, 4096^3, 2026-11-26: 4,8,2,2,2 141 TFLOPS; 2,8,4,2,4 125; 4,4,2,4,2 120; 2,8,2,4,4 116; 2,8,4,2,2 111;
// 2,4,4,2,4 96; 2,16,4,1,2 73)
constexpr MatmulTile kTf32Tile{4, 8, 2, 2, 2};
// With Hopper's WGMMA (Renderer::wgmma): warps along M only, right above the tensor core's M (4 warps are one
// warpgroup's 64 rows), N's register tile one warpgroup op wide (n = 8 x upcast_n, at most 256), M's register
// tile of separate ops above the warps (codegen/staging.h). Default: 2 warpgroups x 64 x 128, K steps of 64;
// where the output has at least kWideBlocks blocks of 128 x 256, 2 warpgroups x 64 x 256 (one block an SM, 4
// stages, its wgmmas deferred: H100, fp16 4096^3 448 -> 500 TFLOPS, 8192^3 458 -> 553, 2026-11-26; 3072^3, 288
// such blocks, 2.2 waves of 132, was not measured with it and keeps 128 x 128).
constexpr MatmulTile kWgmmaTile{1, 16, 8, 1, 4};
constexpr MatmulTile kWgmmaWideTile{1, 32, 8, 1, 4};
constexpr int64_t kWideBlocks = 384;

}  // namespace

bool Kernel::tensor_core_opts(const std::function<bool(const Opt&)>& try_opt) {
  if (TC <= 0 || renderer_.tensor_cores().empty() || !try_opt({OptOps::TC, 0, 0})) return false;
  // The output loops along M (B does not read them) and N (A does not), innermost first.
  auto along = [&](size_t reads, size_t ignores) {
    for (int d = first_reduce() - 1; d >= 0; d--)
      if (kinds_[size_t(d)] == AxisKind::LOOP && last_view_stride(reads, d) > 0 && last_view_stride(ignores, d) == 0)
        return d;
    return -1;
  };
  // A register tile of warp tiles sharing each lane's registers (32 x 64 per warp by default), 4 x 2 warps (a 128 x
  // 128 block), K unrolled 4 times (64 per step of the reduce loop, one shared-memory stage); see kTcTile.
  // (Dims are looked up again after every opt: a dim split down to 1 is dropped and the later ones move.)
  auto m = [&] { return along(tc_->a, tc_->b); };
  auto n = [&] { return along(tc_->b, tc_->a); };
  auto apply = [&](OptOps op, int d, std::initializer_list<int> amts) {
    if (d >= 0)
      for (int amt : amts)
        if (amt > 1 && full_shape_[size_t(d)] % amt == 0 && try_opt({op, d, amt})) return true;
    return false;
  };
  // wgmma reads its operands from shared memory: only where both can be staged in 16-byte units (a strided last
  // view; the views below it, a pad's mask say, keep such units whole: codegen/staging.h)
  auto stageable = [&](size_t i) { return sts_[i].lower_views_keep_runs(8); };
  // (float16 accumulation, a float16 sum, and tf32 take mma.sync: the WGMMA lowering keeps float32 lanes and 16-bit
  // operands)
  if (renderer_.wgmma() && tc_->tc.acc == dtypes::float32 && !tc_->tc.tf32() && stageable(tc_->a) &&
      stageable(tc_->b)) {
    int64_t outputs = 1;  // (the tensor core's lane and register dims included)
    for (size_t d = 0; d < full_shape_.size(); d++)
      if (kinds_[d] == AxisKind::LOOP || kinds_[d] == AxisKind::LOCAL || kinds_[d] == AxisKind::UPCAST)
        outputs *= full_shape_[d];
    const bool wide = outputs / (128 * 256) >= kWideBlocks;
    const MatmulTile tile = matmul_tile("TC_TILE", wide ? kWgmmaWideTile : kWgmmaTile, 64);
    // Warps right above M_HI (the innermost thread dim but the lanes), whole warpgroups, or no WGMMA. Where A is
    // M-major, a warpgroup's 4 warps, then the warpgroups as a dim of their own outside it: the 128-byte swizzle
    // gives each warpgroup's 64 rows an atom (codegen/staging.h). (H100 x.T @ w 4096: 354-358 -> 636-637 TFLOPS;
    // elsewhere one dim of 8 warps: a 3x3 conv measured 91-94 split against 93-96.)
    const bool m_major_a = last_view_stride(tc_->a, dim_of(TcRole::LANE_G)) == 1;
    if (m_major_a ? tile.threads_m % 4 == 0 && apply(OptOps::LOCAL, m(), {4})
                  : apply(OptOps::LOCAL, m(), {tile.threads_m, 4})) {
      if (m_major_a && apply(OptOps::LOCAL, m(), {tile.threads_m / 4})) {
        std::vector<int> warps;  // the two LOCAL dims, the warpgroups' last (a new LOCAL goes inside the others)
        for (size_t d = 0; d < full_shape_.size(); d++)
          if (kinds_[d] == AxisKind::LOCAL && roles_[d] == TcRole::NONE) warps.push_back(int(d));
        if (warps.size() == 2) try_opt({OptOps::SWAP, warps[0], warps[1]});
      }
      apply(OptOps::UPCAST, m(), {tile.upcast_m});
      // n-tiles: 8 (64 columns, one 128-byte swizzled row of an N-major B), then the rest as a second dim
      const int nt = std::min(tile.upcast_n, 8);
      if (apply(OptOps::UPCAST, n(), {nt, 4, 2}) && tile.upcast_n > nt) apply(OptOps::UPCAST, n(), {tile.upcast_n / nt, 2});
      if (tile.threads_n > 1) apply(OptOps::LOCAL, n(), {tile.threads_n, 2});
      unroll_k(tile.unroll_k, try_opt);
      return true;
    }
  }
  const MatmulTile tile = matmul_tile("TC_TILE", tc_->tc.tf32() ? kTf32Tile : kTcTile, 64);
  apply(OptOps::UPCAST, m(), {tile.upcast_m, 2});
  apply(OptOps::UPCAST, n(), {tile.upcast_n, 16, 8, 4, 2});
  if (tile.threads_n > 1) apply(OptOps::LOCAL, n(), {tile.threads_n, 2});
  // Warps: along M where it is left, else along the innermost other output loop (a convolution's pixels).
  if (!apply(OptOps::LOCAL, m(), {tile.threads_m, 2}))
    for (int d = first_reduce() - 1; d >= 0; d--)
      if (kinds_[size_t(d)] == AxisKind::LOOP && apply(OptOps::LOCAL, d, {tile.threads_m, 2})) break;
  unroll_k(tile.unroll_k, try_opt);
  return true;
}

// K steps per reduce iteration beyond the tensor core's 16 (a longer shared-memory stage); a loop stays, for the
// stages to rotate through. The innermost reduce loop: the tensor core's K where there are several (a
// convolution's kernel rows are outer loops).
void Kernel::unroll_k(int amount, const std::function<bool(const Opt&)>& try_opt) {
  for (int d = int(full_shape_.size()) - 1; d >= first_reduce() && amount > 1; d--)
    if (kinds_[size_t(d)] == AxisKind::REDUCE) {
      for (int amt : {amount, 2})
        if (amt > 1 && amt <= amount && full_shape_[size_t(d)] % amt == 0 && full_shape_[size_t(d)] > amt &&
            try_opt({OptOps::UNROLL, d - first_reduce(), amt}))
          break;
      break;
    }
}

}  // namespace tg
