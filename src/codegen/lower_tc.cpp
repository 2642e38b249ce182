// Tensor-core reduces (the kernel's TcSetup, codegen/opt/tensor_cores.cpp): a sum of A*B lowered to WMMA
// (mma.sync) tiles with operands in registers or LDMATRIX fragments, or on Hopper to WGMMA tiles reading shared
// memory (codegen/staging.h).
#include <algorithm>

#include "codegen/lowerer_internal.h"
#include "tg/error.h"
#include "uop/pattern.h"
#include "uop/symbolic.h"
#include "uop/symbolic_linear.h"

namespace tg::lowering {

size_t upcast_of_dim(const LowerCtx& ctx, int d) {
  for (size_t i = 0; i < ctx.upcasts.size(); i++)
    if (int(ctx.upcasts[i].dim) == d) return i;
  throw Error("lower: dim " + std::to_string(d) + " is not an upcast dim");
}

void find_tc_loads(LowerCtx& ctx, const UOpPtr& ast) {
  const TcSetup& tcs = *ctx.k.tensor_core();
  for (const UOp* x : toposort(ast))
    if (x->op == Ops::REDUCE_AXIS)
      for (const UOp* l : toposort(x->src.at(0)))
        if (l->op == Ops::LOAD) {
          if (l->src.at(1)->get<ShapeTracker>() == ctx.k.sts()[tcs.a])
            ctx.tc_a = l;
          else if (l->src.at(1)->get<ShapeTracker>() == ctx.k.sts()[tcs.b])
            ctx.tc_b = l;
        }
  if (!ctx.tc_a || !ctx.tc_b) throw Error("lower: the tensor core's loads are not under the reduce");
}

UOpPtr lower_tc_reduce(LowerCtx& ctx, const UOpPtr& u) {
  const TcSetup& tcs = *ctx.k.tensor_core();
  const UOp *la = ctx.tc_a, *lb = ctx.tc_b;
  if (!ctx.tc_regs.count(la) || !ctx.tc_regs.count(lb)) throw Error("lower: the tensor core's loads were not expanded");
  const Unrolled ia = unpack(ctx.tc_regs.at(la)), ib = unpack(ctx.tc_regs.at(lb));
  const size_t mhi = upcast_of(ctx, TcRole::M_HI), nlo = upcast_of(ctx, TcRole::N_LO);
  const bool has_klo = tcs.tc.k_lo() > 1;  // (tf32 has none)
  const size_t khi = upcast_of(ctx, TcRole::K_HI), kmid = upcast_of(ctx, TcRole::K_MID),
               klo = has_klo ? upcast_of(ctx, TcRole::K_LO) : kmid;
  const uint64_t tc_unroll = (uint64_t(1) << khi) | (uint64_t(1) << klo) | (uint64_t(1) << kmid);
  const uint64_t other_unroll = ctx.unroll_mask & ~tc_unroll;
  Unrolled in{((ia.mask | ib.mask) & ~ctx.unroll_mask) | (uint64_t(1) << mhi) | (uint64_t(1) << nlo), {}};
  // A and B through shared memory where the kernel allows (codegen/tc_staging.h)
  std::optional<Staging> staging;  // (a tf32 core's operands are staged as plain loads: stage_shared_loads)
  if (ctx.reduce_ranges.size() == 1 && Staging::fragments(ctx.k))
    staging = Staging::plan({ctx.k, ctx.dims, ctx.reduce_ranges[0], {tcs.a, tcs.b}, {la->src[0], lb->src[0]}});
  // WGMMA: one per warpgroup, tile and K step; its lanes are C's registers 4 j + 2 M_HI + N_LO (j: n-tile dim)
  const bool wg = staging && staging->wgmma();
  std::vector<size_t> jx;  // the n-tile dims (ctx.upcasts indices), innermost first
  if (wg)
    for (int d : staging->ntile_dims()) jx.push_back(upcast_of_dim(ctx, d));
  auto ntile = [&](const Combo& cb) {  // j, the 8-column tile of the WGMMA's n
    int64_t j = 0;
    for (size_t i = jx.size(); i-- > 0;) j = j * ctx.upcasts[jx[i]].size + cb[jx[i]];
    return j;
  };
  std::unordered_map<int64_t, std::vector<UOpPtr>> tiles;  // tile (M_HI = N_LO = 0) -> C's lanes
  for (int64_t k = 0; k < combo_count(ctx, in.mask); k++) {
    Combo cb = decode_combo(ctx, in.mask, k), base = cb;
    base[mhi] = base[nlo] = 0;
    for (size_t x : jx) base[x] = 0;
    auto [it, fresh] = tiles.try_emplace(combo_key(ctx, in.mask, base));
    if (fresh && wg)
      it->second = wgmma_tile(ctx, tcs, base, other_unroll, *staging);
    else if (fresh)
      it->second =
          wmma_tile(ctx, tcs.tc, base, other_unroll, {mhi, khi, klo}, {&ia, &ib}, staging ? &*staging : nullptr);
    UOpPtr v = it->second.at(size_t(cb[nlo] + 2 * cb[mhi] + 4 * ntile(cb)));
    if (!ctx.reduce_ranges.empty()) {
      std::vector<UOpPtr> s{v};
      s.insert(s.end(), ctx.reduce_ranges.begin(), ctx.reduce_ranges.end());
      v = UOp::make(Ops::REDUCE, v->dtype, std::move(s), int64_t(Ops::ADD));
    }
    in.vals.push_back(Val{v, {}});
  }
  return unroll(u->dtype, in);
}

std::vector<UOpPtr> wgmma_tile(LowerCtx& ctx, const TcSetup& tcs, const Combo& base, uint64_t other_unroll,
                                        const Staging& staging) {
  const StagingInput sin{ctx.k, ctx.dims, ctx.reduce_ranges[0], {tcs.a, tcs.b}, {ctx.tc_a->src[0], ctx.tc_b->src[0]}};
  const UOpPtr off_a = staging.wgmma_offset(sin, 0), off_b = staging.wgmma_offset(sin, 1);
  int n = 8;
  for (int d : staging.ntile_dims()) n *= int(ctx.k.full_shape()[size_t(d)]);
  std::vector<UOpPtr> c(size_t(n / 2), UOp::const_(tcs.tc.acc, 0));
  const int64_t steps = combo_count(ctx, other_unroll);
  for (int64_t j = 0; j < steps; j++) {
    Combo cb = base, uc = decode_combo(ctx, other_unroll, j);
    for (size_t i = 0; i < ctx.upcasts.size(); i++)
      if (other_unroll >> i & 1) cb[i] = uc[i];
    const bool last = j + 1 == steps;
    const WgmmaArg arg{n,    tcs.tc.in == dtypes::bfloat16, staging.wgmma_operand(0), staging.wgmma_operand(1), j == 0,
                       last, last && staging.deferred()};
    std::vector<UOpPtr> srcs{staging.buffer(0), at_combo(ctx, off_a, cb), staging.buffer(1), at_combo(ctx, off_b, cb),
                             staging.after()};
    srcs.insert(srcs.end(), c.begin(), c.end());
    UOpPtr w = UOp::make(Ops::WGMMA, tcs.tc.acc.vec(n / 2), std::move(srcs), arg.pack());
    for (int i = 0; i < n / 2; i++) c[size_t(i)] = UOp::make(Ops::GEP, tcs.tc.acc, {w}, int64_t(i));
  }
  return c;
}

std::vector<UOpPtr> wmma_tile(LowerCtx& ctx, const TensorCore& tc, const Combo& base, uint64_t other_unroll,
                                       std::array<size_t, 3> mhi_khi_klo, std::array<const Unrolled*, 2> regs,
                                       const Staging* staging) {
  // (plain variables, not structured bindings: lambdas below capture them, which clang accepts from 16 on)
  const size_t mhi = mhi_khi_klo[0], khi = mhi_khi_klo[1], klo = mhi_khi_klo[2];
  const int kl = tc.k_lo();  // (1: klo is not a dim of its own)
  std::vector<UOpPtr> c(TensorCore::kC, UOp::const_(tc.acc, 0));
  auto reg = [&](bool is_a, Combo cb) {
    if (staging) {  // register i of the LDMATRIX fragment, at this tile's other upcast values
      int i = is_a ? int(cb[klo] + 2 * cb[mhi] + 4 * cb[khi]) : int(cb[klo] + 2 * cb[khi]);
      if (!is_a && staging->pair_dim() >= 0) {  // B tiles 2v and 2v + 1 share one LDMATRIX x4
        const size_t p = upcast_of_dim(ctx, staging->pair_dim());
        i += 4 * int(cb[p] % 2);
        cb[p] -= cb[p] % 2;
      }
      return at_combo(ctx, staging->regs(is_a ? 0 : 1).at(size_t(i)), cb);
    }
    const Val v = value_at(ctx, *regs[is_a ? 0 : 1], cb);
    if (!v.one || v.one->dtype.count != 1) throw Error("lower: a tensor core register is not a scalar");
    return v.one;
  };
  for (int64_t j = 0; j < combo_count(ctx, other_unroll); j++) {
    Combo cb = base, uc = decode_combo(ctx, other_unroll, j);
    for (size_t i = 0; i < ctx.upcasts.size(); i++)
      if (other_unroll >> i & 1) cb[i] = uc[i];
    std::vector<UOpPtr> srcs;
    for (int i = 0; i < tc.a_regs(); i++) {  // A: (K_LO, M_HI, K_HI) = (i % kl, i / kl % 2, i / (2 kl))
      if (kl > 1) cb[klo] = i % kl;
      cb[mhi] = i / kl % 2, cb[khi] = i / (2 * kl);
      srcs.push_back(reg(true, cb));
    }
    cb[mhi] = 0;
    for (int i = 0; i < tc.b_regs(); i++) {  // B: (K_LO, K_HI) = (i % kl, i / kl)
      if (kl > 1) cb[klo] = i % kl;
      cb[khi] = i / kl;
      srcs.push_back(reg(false, cb));
    }
    srcs.insert(srcs.end(), c.begin(), c.end());
    UOpPtr w = UOp::make(Ops::WMMA, tc.acc.vec(TensorCore::kC), std::move(srcs), tc.name());
    for (int i = 0; i < TensorCore::kC; i++) c[size_t(i)] = UOp::make(Ops::GEP, tc.acc, {w}, int64_t(i));
  }
  return c;
}

}  // namespace tg::lowering
