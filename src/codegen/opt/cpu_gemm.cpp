// Register-tiled matmul (and convolution) for CPUs, renderers without workgroups. A kernel that sums
// products of two loads, A and B, gets a tile of C in registers each iteration of its output loops:
// um values along M (a dim A reads and B does not: a matmul's rows, a conv's output channels) times nv
// vectors along N (a dim B and C are contiguous along and A does not read: a matmul's columns, a conv's
// output x), and for a conv also 2 or 4 rows of output y when that tile is small. The C compiler keeps the
// um * nv vectors as accumulators, loads nv vectors of B and broadcasts um scalars of A per reduce step, and
// with FMA contraction (runtime/ops_cpu.cpp) emits one fused multiply-add per vector product (AVX-512:
// vfmadd231ps with an embedded broadcast; checked with objdump).
// Loop order: M outside N, so A's um rows (um * K floats) stay in L1/L2 while B streams through. For a
// large matmul, B arrives packed in 32-column panels (tensor/matmul_pack.cpp): one contiguous stream per
// panel, which the hardware prefetcher follows. Threads split the outermost output loop.
#include <algorithm>
#include <tuple>

#include "codegen/kernel.h"
#include "helpers/env.h"
#include "renderer/cpu_isa.h"
#include "tg/error.h"

namespace tg {
namespace {

const UOp* strip_cast(const UOp* u) { return u->op == Ops::CAST ? u->src.at(0).get() : u; }

}  // namespace

bool Kernel::cpu_gemm_opts(const std::function<bool(const Opt&)>& try_opt) {
  if (renderer_.has_local() || !reduce_ || reduce_count_ != 1 || reduce_->get<ReduceArg>().op != Ops::ADD) return false;
  const UOp* mul = strip_cast(reduce_->src.at(0).get());
  if (mul->op != Ops::MUL || mul->dtype != dtypes::float32 || reduce_->dtype != dtypes::float32) return false;
  const UOp *la = strip_cast(mul->src.at(0).get()), *lb = strip_cast(mul->src.at(1).get());
  if (la->op != Ops::LOAD || lb->op != Ops::LOAD) return false;
  auto view_index = [&](const UOp* load) {
    return size_t(std::find(views_.begin(), views_.end(), load->src.at(1).get()) - views_.begin());
  };
  size_t ia = view_index(la), ib = view_index(lb);
  if (ia == ib || ia >= views_.size() || ib >= views_.size()) return false;
  const int fr = first_reduce(), nred = first_upcast() - fr;
  if (nred < 1 || kinds_[size_t(fr)] != AxisKind::REDUCE) return false;
  // (the last view's strides: whether a load moves along a dim, and by 1, even under padding masks)
  auto moves = [&](size_t i, int d) { return full_shape_[size_t(d)] > 1 && last_view_stride(i, d) != 0; };
  // contiguous: 2 = B and C are contiguous along the dim, 1 = B is (C's lanes are then stored one by one)
  auto along = [&](size_t reads, size_t ignores, int contiguous) {
    for (int d = fr - 1; d >= 0; d--)
      if (kinds_[size_t(d)] == AxisKind::LOOP && moves(reads, d) && !moves(ignores, d) &&
          (contiguous == 0 || (stride_of(reads, d) == 1 && (contiguous == 1 || stride_of(0, d) == 1))))
        return d;
    return -1;
  };
  // The orientation: which load is B (vectors along N) and whether C is contiguous along N too. The widest
  // vector wins, then a contiguous C: a 5x5 conv's 20-wide output rows take float4 vectors along x, while its
  // weights, packed output-channel-last, give 16-float vectors along 32 output channels (conv 512x32x24x24 ->
  // 32, 5x5: 109 GFLOPS with the rows, see the commit for the channels).
  auto vector_floats = [&](int d) {
    int64_t vw = cpu_isa().vector_floats(), n = full_shape_[size_t(d)];
    while (vw > 4 && n % vw != 0) vw /= 2;
    return n % vw == 0 ? vw : 0;
  };
  int contiguous = 0;
  int64_t vw = 0;
  for (auto [a, b] : {std::pair{ia, ib}, std::pair{ib, ia}})
    for (int c : {2, 1}) {
      int n = along(b, a, c);
      if (n < 0 || along(a, b, 0) < 0) continue;
      if (int64_t w = vector_floats(n); w > vw || (w == vw && w > 0 && c > contiguous)) {
        std::tie(ia, ib, contiguous, vw) = std::tuple{a, b, c, w};
      }
    }
  if (contiguous == 0) return false;
  // (UPCAST and UNROLL add dims after the output loops: mi and ni stay the loops' indices)
  const int mi = along(ia, ib, 0), ni = along(ib, ia, contiguous);
  // CPU_GEMM_TILE=um,nv,uk for tuning: um values along M, nv vectors along N, the reduce unrolled by uk.
  // Defaults: 4 rows for a matmul (2048^3 on 2 threads: 4,2,2 218-225 GFLOPS, 8,2,2 134); 8 output x for a conv
  // whose output is strided along N, where the tile's weights come from L2 (2 threads: 8,2,2 170-174, 4,2,2
  // 141-144, 7,2,2 161-194, 14,1,2 160).
  // With 16 vector registers (AVX2, SSE) a conv keeps 4 rows too: 8 x 2 accumulators and the loads they wait for
  // spilled to the stack.
  const bool few_registers = cpu_isa().vector_registers < 32;
  const auto t = getenv_ints("CPU_GEMM_TILE", {contiguous == 2 || few_registers ? 4 : 8, 2, 2}, 1, 64);
  const int64_t M = full_shape_[size_t(mi)], N = full_shape_[size_t(ni)], K = full_shape_[size_t(fr + nred - 1)];
  int64_t macs = 1;
  for (int64_t s : full_shape_) macs *= s;
  int64_t um = t[0], nv = t[1], uk = t[2];
  // the largest tile that divides the dims (odd sizes keep smaller tiles, or fall back to the heuristic)
  while (um > 1 && M % um != 0) um--;
  while (nv > 1 && N % (vw * nv) != 0) nv--;
  if (um < 2 && M * nv <= 16) um = M;  // a short prime dim (a 5-wide kernel's taps in a weight gradient) whole
  if (N % vw != 0 || um < 2 || macs < (int64_t(1) << 18)) return false;
  // A small tile (a 56-wide conv row against x takes one vector): 2 or 4 rows of B's other output dim.
  std::vector<std::pair<int, int64_t>> ups = {{ni, vw}, {ni, nv}, {mi, um}};
  const int max_accumulators = few_registers ? 8 : 16;
  for (int d = fr - 1, acc = int(um * nv); d >= 0 && acc < 8; d--)
    if (d != ni && d != mi && kinds_[size_t(d)] == AxisKind::LOOP && moves(ib, d) && !moves(ia, d))
      for (int64_t amt : {4, 2})
        if (acc * amt <= max_accumulators && full_shape_[size_t(d)] % amt == 0) {
          ups.push_back({d, amt});
          acc *= int(amt);
          break;
        }
  // (an UPCAST that takes a whole dim removes it and moves the dims after it: the last dims go first)
  std::stable_sort(ups.begin(), ups.end(), [](auto& a, auto& b) { return a.first > b.first; });
  bool ok = true;
  for (auto [d, amt] : ups) ok = ok && (amt == 1 || try_opt({OptOps::UPCAST, d, int(amt)}));
  // (the unroll is optional: a tile from the knob may leave no room for it)
  if (ok && K <= 4)
    try_opt({OptOps::UNROLL, nred - 1, 0});
  else if (ok && uk > 1 && K % uk == 0)
    try_opt({OptOps::UNROLL, nred - 1, int(uk)});
  if (!ok)
    throw Error("CPU_GEMM_TILE=" + getenv_str("CPU_GEMM_TILE") + ": a tile of " + std::to_string(um) + " x " +
                std::to_string(nv) + " vectors does not fit " + name() + " (at most 1024 values a thread)");
  // B in panels (tensor/matmul_pack.cpp: its N loop steps over whole K x 32 panels): the panel loop goes
  // outside M, so one panel (256 KiB at K = 2048) stays in L2 while this thread's rows of A stream past it,
  // instead of every panel streaming from L3 once per 4 rows (2 threads, fastest of 5: 1024^3 206-207 ->
  // 213-214 GFLOPS, 2048^3 207-209 -> 212-215). Where the tile is narrower than the panel (8-float vectors: two
  // tiles a panel) a third loop, the tile within the panel, stays innermost.
  std::vector<int> loops;
  for (int d = 0; d < first_reduce(); d++)
    if (kinds_[size_t(d)] == AxisKind::LOOP) loops.push_back(d);
  if (loops.size() >= 2 && moves(ib, loops[1]) && !moves(ia, loops[1]) && stride_of(ib, loops[1]) >= K * vw * nv)
    try_opt({OptOps::SWAP, loops[0], loops[1]});
  // Threads over the outermost output loop that divides evenly (M for a matmul, the batch for a conv).
  for (int th = renderer_.threads(); th >= 2; th--)
    for (int d = 0; d < first_reduce(); d++)
      if (kinds_[size_t(d)] == AxisKind::LOOP && full_shape_[size_t(d)] % th == 0 && try_opt({OptOps::THREAD, d, th}))
        return true;
  return true;
}

}  // namespace tg
