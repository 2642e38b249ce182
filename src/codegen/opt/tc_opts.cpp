// The tensor-core heuristic (hand_coded_optimizations' first step where the renderer has tensor cores): OptOps.TC
// (codegen/opt/tensor_cores.cpp), then a register tile of warp tiles, warps (whole warpgroups for WGMMA) and K steps,
// each tile measured on an H100/H200 and tunable with TC_TILE.
#include <algorithm>

#include "codegen/opt/heuristic.h"
#include "codegen/opt/tile_knob.h"
#include "tg/context.h"

namespace tg {

namespace {

ContextVar TC("TC", 1);  // TC=0: no tensor cores

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

// K steps per reduce iteration beyond the tensor core's 16 (a longer shared-memory stage); a loop stays, for the
// stages to rotate through. The innermost reduce loop: the tensor core's K where there are several (a
// convolution's kernel rows are outer loops).
void unroll_k(const Kernel& k, int amount, const TryOpt& try_opt) {
  for (int d = int(k.full_shape().size()) - 1; d >= k.first_reduce() && amount > 1; d--)
    if (k.kinds()[size_t(d)] == AxisKind::REDUCE) {
      for (int amt : {amount, 2})
        if (amt > 1 && amt <= amount && k.full_shape()[size_t(d)] % amt == 0 && k.full_shape()[size_t(d)] > amt &&
            try_opt({OptOps::UNROLL, d - k.first_reduce(), amt}))
          break;
      break;
    }
}

}  // namespace

bool tensor_core_opts(const Kernel& k, const TryOpt& try_opt) {
  if (TC <= 0 || k.renderer().tensor_cores().empty() || !try_opt({OptOps::TC, 0, 0})) return false;
  const std::optional<TcSetup>& tc = k.tensor_core();
  // The output loops along M (B does not read them) and N (A does not), innermost first.
  // A register tile of warp tiles sharing each lane's registers (32 x 64 per warp by default), 4 x 2 warps (a 128 x
  // 128 block), K unrolled 4 times (64 per step of the reduce loop, one shared-memory stage); see kTcTile.
  // (Dims are looked up again after every opt: a dim split down to 1 is dropped and the later ones move.)
  auto m = [&] { return loop_along(k, tc->a, tc->b); };
  auto n = [&] { return loop_along(k, tc->b, tc->a); };
  auto apply = [&](OptOps op, int d, std::initializer_list<int> amts) {
    if (d >= 0)
      for (int amt : amts)
        if (amt > 1 && k.full_shape()[size_t(d)] % amt == 0 && try_opt({op, d, amt})) return true;
    return false;
  };
  // wgmma reads its operands from shared memory: only where both can be staged in 16-byte units (a strided last
  // view; the views below it, a pad's mask say, keep such units whole: codegen/staging.h)
  auto stageable = [&](size_t i) { return k.sts()[i].lower_views_keep_runs(8); };
  // (float16 accumulation, a float16 sum, and tf32 take mma.sync: the WGMMA lowering keeps float32 lanes and 16-bit
  // operands)
  if (k.renderer().wgmma() && tc->tc.acc == dtypes::float32 && !tc->tc.tf32() && stageable(tc->a) &&
      stageable(tc->b)) {
    int64_t outputs = 1;  // (the tensor core's lane and register dims included)
    for (size_t d = 0; d < k.full_shape().size(); d++)
      if (k.kinds()[d] == AxisKind::LOOP || k.kinds()[d] == AxisKind::LOCAL || k.kinds()[d] == AxisKind::UPCAST)
        outputs *= k.full_shape()[d];
    const bool wide = outputs / (128 * 256) >= kWideBlocks;
    const MatmulTile tile = matmul_tile("TC_TILE", wide ? kWgmmaWideTile : kWgmmaTile, 64);
    // Warps right above M_HI (the innermost thread dim but the lanes), whole warpgroups, or no WGMMA. Where A is
    // M-major, a warpgroup's 4 warps, then the warpgroups as a dim of their own outside it: the 128-byte swizzle
    // gives each warpgroup's 64 rows an atom (codegen/staging.h). (H100 x.T @ w 4096: 354-358 -> 636-637 TFLOPS;
    // elsewhere one dim of 8 warps: a 3x3 conv measured 91-94 split against 93-96.)
    const bool m_major_a = k.last_view_stride(tc->a, k.dim_of(TcRole::LANE_G)) == 1;
    if (m_major_a ? tile.threads_m % 4 == 0 && apply(OptOps::LOCAL, m(), {4})
                  : apply(OptOps::LOCAL, m(), {tile.threads_m, 4})) {
      if (m_major_a && apply(OptOps::LOCAL, m(), {tile.threads_m / 4})) {
        std::vector<int> warps;  // the two LOCAL dims, the warpgroups' last (a new LOCAL goes inside the others)
        for (size_t d = 0; d < k.full_shape().size(); d++)
          if (k.kinds()[d] == AxisKind::LOCAL && k.roles()[d] == TcRole::NONE) warps.push_back(int(d));
        if (warps.size() == 2) try_opt({OptOps::SWAP, warps[0], warps[1]});
      }
      apply(OptOps::UPCAST, m(), {tile.upcast_m});
      // n-tiles: 8 (64 columns, one 128-byte swizzled row of an N-major B), then the rest as a second dim
      const int nt = std::min(tile.upcast_n, 8);
      if (apply(OptOps::UPCAST, n(), {nt, 4, 2}) && tile.upcast_n > nt)
        apply(OptOps::UPCAST, n(), {tile.upcast_n / nt, 2});
      if (tile.threads_n > 1) apply(OptOps::LOCAL, n(), {tile.threads_n, 2});
      unroll_k(k, tile.unroll_k, try_opt);
      return true;
    }
  }
  const MatmulTile tile = matmul_tile("TC_TILE", tc->tc.tf32() ? kTf32Tile : kTcTile, 64);
  apply(OptOps::UPCAST, m(), {tile.upcast_m, 2});
  apply(OptOps::UPCAST, n(), {tile.upcast_n, 16, 8, 4, 2});
  if (tile.threads_n > 1) apply(OptOps::LOCAL, n(), {tile.threads_n, 2});
  // Warps: along M where it is left, else along the innermost other output loop (a convolution's pixels).
  if (!apply(OptOps::LOCAL, m(), {tile.threads_m, 2}))
    for (int d = k.first_reduce() - 1; d >= 0; d--)
      if (k.kinds()[size_t(d)] == AxisKind::LOOP && apply(OptOps::LOCAL, d, {tile.threads_m, 2})) break;
  unroll_k(k, tile.unroll_k, try_opt);
  return true;
}

}  // namespace tg
