// Register-tiled matmul for GPUs that stage operands through shared memory (codegen/staging.h), for kernels
// without a tensor core (float32): each thread computes an um x un tile of outputs (un as float4 vectors),
// lm x ln threads a block, the reduce loop steps uk along K, so one shared-memory stage holds uk columns of
// A's block rows and uk rows of B's block columns.
#include <algorithm>

#include "codegen/opt/heuristic.h"
#include "codegen/opt/tile_knob.h"
#include "tg/error.h"

namespace tg {
namespace {

// GEMM_TILE=um,un,lm,ln,uk, for tuning; the default is the measured best (H100, float32 4096^3, 2026-11-25:
// 8,8,8,16,16 42.8 TFLOPS; 8,8,16,16,8 40.6; 16,8,8,16,8 40.7; 8,8,8,8,8 36.0; torch 50.5).
constexpr MatmulTile kGemmTile{8, 8, 8, 16, 16};

const UOp* strip_cast(const UOp* u) { return u->op == Ops::CAST ? u->src.at(0).get() : u; }

}  // namespace

bool gemm_opts(const Kernel& k, const TryOpt& try_opt) {
  if (!k.renderer().has_local() || !k.renderer().async_copies() || !k.reduce() || k.reduce_count() != 1 ||
      k.reduce()->get<ReduceArg>().op != Ops::ADD)
    return false;
  const UOp* mul = strip_cast(k.reduce()->src.at(0).get());
  if (mul->op != Ops::MUL || !mul->dtype.is_float()) return false;
  const UOp *la = strip_cast(mul->src.at(0).get()), *lb = strip_cast(mul->src.at(1).get());
  if (la->op != Ops::LOAD || lb->op != Ops::LOAD) return false;
  const size_t ia = k.view_index(la->src.at(1).get()), ib = k.view_index(lb->src.at(1).get());
  if (ia == ib || ia >= k.views().size() || ib >= k.views().size()) return false;
  // one reduce dim, and output loops along M (B does not read them) and N (A does not)
  if (k.first_upcast() - k.first_reduce() != 1 || k.kinds()[size_t(k.first_reduce())] != AxisKind::REDUCE) return false;
  auto m = [&] { return loop_along(k, ia, ib); };
  auto n = [&] { return loop_along(k, ib, ia); };
  const MatmulTile t = matmul_tile("GEMM_TILE", kGemmTile, 256);
  const int64_t um = t.upcast_m, un = t.upcast_n, lm = t.threads_m, ln = t.threads_n, uk = t.unroll_k;
  // (a tile the kernel's limits refuse is the knob's error, caught before any opt is applied)
  if (um * un * uk > 1024 || lm * ln > k.renderer().max_local_size())
    throw Error("GEMM_TILE=" + getenv_str("GEMM_TILE") + ": " + std::to_string(um * un * uk) +
                " values a thread (um*un*uk, at most 1024) and " + std::to_string(lm * ln) +
                " threads a block (lm*ln, at most " + std::to_string(k.renderer().max_local_size()) + ")");
  if (m() < 0 || n() < 0 || k.full_shape()[size_t(m())] % (um * lm) != 0 ||
      k.full_shape()[size_t(n())] % (un * ln) != 0 || un % 4 != 0 ||
      k.full_shape()[size_t(k.first_reduce())] % uk != 0 || k.full_shape()[size_t(k.first_reduce())] <= uk)
    return false;
  // (each opt moves the dims after the one it splits: look them up again)
  bool ok = try_opt({OptOps::UPCAST, m(), int(um)}) && try_opt({OptOps::UPCAST, n(), 4}) &&
            try_opt({OptOps::LOCAL, m(), int(lm)}) && try_opt({OptOps::LOCAL, n(), int(ln)}) &&
            (un == 4 || try_opt({OptOps::UPCAST, n(), int(un / 4)})) && try_opt({OptOps::UNROLL, 0, int(uk)});
  if (!ok) throw Error("gemm_opts: a tile opt did not apply to " + k.name());
  return true;
}

}  // namespace tg
