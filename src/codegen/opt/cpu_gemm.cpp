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
#include "codegen/opt/heuristic.h"

#include <algorithm>
#include <optional>
#include <tuple>
#include <utility>
#include <vector>

#include "helpers/env.h"
#include "renderer/cpu_isa.h"
#include "tg/error.h"

namespace tg {
namespace {

using TryOpt = std::function<bool(const Opt&)>;

const UOp* strip_cast(const UOp* u) { return u->op == Ops::CAST ? u->src.at(0).get() : u; }

// The product's operands and where they move: A (broadcast scalars along M) and B (vectors along N).
struct GemmOperands {
  size_t ia = 0, ib = 0;  // the views (sts() indices) of A and B
  int contiguous = 0;     // 2: B and C are contiguous along N; 1: only B is (C's lanes are stored one by one)
  int64_t vw = 0;         // floats a vector
  int mi = -1, ni = -1;   // the M and N dims
  int64_t K = 0;          // the innermost reduce dim's size
  int nred = 0;           // reduce dims
};

// Questions about one kernel's dims, asked while its opts are chosen.
struct Dims {
  const Kernel& k;
  int fr = 0;  // the first reduce dim
  // (the last view's strides: whether a load moves along a dim, and by 1, even under padding masks)
  bool moves(size_t i, int d) const { return k.full_shape()[size_t(d)] > 1 && k.last_view_stride(i, d) != 0; }
  bool loop(int d) const { return k.kinds()[size_t(d)] == AxisKind::LOOP; }
  // The innermost output loop that `reads` moves along and `ignores` does not; with contiguous 1 (2) `reads` (and C)
  // steps by 1 along it. -1 when none.
  int along(size_t reads, size_t ignores, int contiguous) const {
    for (int d = fr - 1; d >= 0; d--)
      if (loop(d) && moves(reads, d) && !moves(ignores, d) &&
          (contiguous == 0 || (k.stride_of(reads, d) == 1 && (contiguous == 1 || k.stride_of(0, d) == 1))))
        return d;
    return -1;
  }
  // The widest vector (at most the ISA's, at least 4 floats) that divides dim d; 0 when none.
  int64_t vector_floats(int d) const {
    int64_t vw = cpu_isa().vector_floats(), n = k.full_shape()[size_t(d)];
    while (vw > 4 && n % vw != 0) vw /= 2;
    return n % vw == 0 ? vw : 0;
  }
};

// A sum of products of two loads, oriented: which load is B (vectors along N) and whether C is contiguous along N
// too. The widest vector wins, then a contiguous C: a 5x5 conv's 20-wide output rows take float4 vectors along x,
// while its weights, packed output-channel-last, give 16-float vectors along 32 output channels (conv 512x32x24x24
// -> 32, 5x5: 109 GFLOPS with the rows, see the commit for the channels).
std::optional<GemmOperands> find_operands(const Kernel& k, const Dims& dims) {
  const UOp* reduce = k.reduce();
  if (k.renderer().has_local() || !reduce || k.reduce_count() != 1 || reduce->get<ReduceArg>().op != Ops::ADD)
    return std::nullopt;
  const UOp* mul = strip_cast(reduce->src.at(0).get());
  if (mul->op != Ops::MUL || mul->dtype != dtypes::float32 || reduce->dtype != dtypes::float32) return std::nullopt;
  const UOp *la = strip_cast(mul->src.at(0).get()), *lb = strip_cast(mul->src.at(1).get());
  if (la->op != Ops::LOAD || lb->op != Ops::LOAD) return std::nullopt;
  const size_t views = k.sts().size(), a0 = k.view_index(la->src.at(1).get()), b0 = k.view_index(lb->src.at(1).get());
  if (a0 == b0 || a0 >= views || b0 >= views) return std::nullopt;
  const int nred = k.first_upcast() - dims.fr;
  if (nred < 1 || k.kinds()[size_t(dims.fr)] != AxisKind::REDUCE) return std::nullopt;
  GemmOperands g{a0, b0};
  g.nred = nred;
  g.K = k.full_shape()[size_t(dims.fr + nred - 1)];
  for (auto [a, b] : {std::pair{a0, b0}, std::pair{b0, a0}})
    for (int c : {2, 1}) {
      int n = dims.along(b, a, c);
      if (n < 0 || dims.along(a, b, 0) < 0) continue;
      if (int64_t w = dims.vector_floats(n); w > g.vw || (w == g.vw && w > 0 && c > g.contiguous))
        std::tie(g.ia, g.ib, g.contiguous, g.vw) = std::tuple{a, b, c, w};
    }
  if (g.contiguous == 0) return std::nullopt;
  // (UPCAST and UNROLL add dims after the output loops: mi and ni stay the loops' indices)
  g.mi = dims.along(g.ia, g.ib, 0);
  g.ni = dims.along(g.ib, g.ia, g.contiguous);
  return g;
}

// The register tile: UPCASTs of N (a vector, then nv of them) and M (um rows), and the reduce unrolled by uk.
struct GemmTile {
  int64_t um = 1, nv = 1;
  int64_t uk = 1;                                // 0: the whole reduce dim
  std::vector<std::pair<int, int64_t>> upcasts;  // (dim, amount), applied last dim first
};

// CPU_GEMM_TILE=um,nv,uk for tuning: um values along M, nv vectors along N, the reduce unrolled by uk.
// Defaults: 4 rows for a matmul (2048^3 on 2 threads: 4,2,2 218-225 GFLOPS, 8,2,2 134); 8 output x for a conv
// whose output is strided along N, where the tile's weights come from L2 (2 threads: 8,2,2 170-174, 4,2,2
// 141-144, 7,2,2 161-194, 14,1,2 160).
// With 16 vector registers (AVX2, SSE) a conv keeps 4 rows too: 8 x 2 accumulators and the loads they wait for
// spilled to the stack.
std::optional<GemmTile> choose_tile(const Kernel& k, const Dims& dims, const GemmOperands& g) {
  const Shape& fs = k.full_shape();
  const bool few_registers = cpu_isa().vector_registers < 32;
  const auto t = getenv_ints("CPU_GEMM_TILE", {g.contiguous == 2 || few_registers ? 4 : 8, 2, 2}, 1, 64);
  const int64_t M = fs[size_t(g.mi)], N = fs[size_t(g.ni)], K = g.K;
  int64_t macs = 1;
  for (int64_t s : fs) macs *= s;
  int64_t um = t[0], nv = t[1];
  // the largest tile that divides the dims (odd sizes keep smaller tiles, or fall back to the heuristic)
  while (um > 1 && M % um != 0) um--;
  while (nv > 1 && N % (g.vw * nv) != 0) nv--;
  if (um < 2 && M * nv <= 16) um = M;  // a short prime dim (a 5-wide kernel's taps in a weight gradient) whole
  if (N % g.vw != 0 || um < 2 || macs < (int64_t(1) << 18)) return std::nullopt;
  GemmTile tile{um, nv, K <= 4 ? 0 : (K % t[2] == 0 ? t[2] : 1), {{g.ni, g.vw}, {g.ni, nv}, {g.mi, um}}};
  // A small tile (a 56-wide conv row against x takes one vector): 2 or 4 rows of B's other output dim.
  const int max_accumulators = few_registers ? 8 : 16;
  for (int d = dims.fr - 1, acc = int(um * nv); d >= 0 && acc < 8; d--)
    if (d != g.ni && d != g.mi && dims.loop(d) && dims.moves(g.ib, d) && !dims.moves(g.ia, d))
      for (int64_t amt : {4, 2})
        if (acc * amt <= max_accumulators && fs[size_t(d)] % amt == 0) {
          tile.upcasts.push_back({d, amt});
          acc *= int(amt);
          break;
        }
  // (an UPCAST that takes a whole dim removes it and moves the dims after it: the last dims go first)
  std::stable_sort(tile.upcasts.begin(), tile.upcasts.end(), [](auto& a, auto& b) { return a.first > b.first; });
  return tile;
}

void apply_tile(const Kernel& k, const GemmOperands& g, const GemmTile& tile, const TryOpt& try_opt) {
  bool ok = true;
  for (auto [d, amt] : tile.upcasts) ok = ok && (amt == 1 || try_opt({OptOps::UPCAST, d, int(amt)}));
  if (!ok)
    throw Error("CPU_GEMM_TILE=" + getenv_str("CPU_GEMM_TILE") + ": a tile of " + std::to_string(tile.um) + " x " +
                std::to_string(tile.nv) + " vectors does not fit " + k.name() + " (at most 1024 values a thread)");
  // (the unroll is optional: a tile from the knob may leave no room for it)
  if (tile.uk != 1) try_opt({OptOps::UNROLL, g.nred - 1, int(tile.uk)});
}

// B in panels (tensor/matmul_pack.cpp: its N loop steps over whole K x 32 panels): the panel loop goes outside M,
// so one panel (256 KiB at K = 2048) stays in L2 while this thread's rows of A stream past it, instead of every
// panel streaming from L3 once per 4 rows (2 threads, fastest of 5: 1024^3 206-207 -> 213-214 GFLOPS, 2048^3
// 207-209 -> 212-215). Where the tile is narrower than the panel (8-float vectors: two tiles a panel) a third
// loop, the tile within the panel, stays innermost.
void panel_loop_outside(const Kernel& k, const Dims& dims, const GemmOperands& g, int64_t nv, const TryOpt& try_opt) {
  std::vector<int> loops;
  for (int d = 0; d < k.first_reduce(); d++)
    if (dims.loop(d)) loops.push_back(d);
  if (loops.size() >= 2 && dims.moves(g.ib, loops[1]) && !dims.moves(g.ia, loops[1]) &&
      k.stride_of(g.ib, loops[1]) >= g.K * g.vw * nv)
    try_opt({OptOps::SWAP, loops[0], loops[1]});
}

// Threads over the outermost output loop that divides evenly (M for a matmul, the batch for a conv).
void split_threads(const Kernel& k, const Dims& dims, const TryOpt& try_opt) {
  for (int th = k.renderer().threads(); th >= 2; th--)
    for (int d = 0; d < k.first_reduce(); d++)
      if (dims.loop(d) && k.full_shape()[size_t(d)] % th == 0 && try_opt({OptOps::THREAD, d, th})) return;
}

}  // namespace

bool cpu_gemm_opts(const Kernel& k, const TryOpt& try_opt) {
  const Dims before{k, k.first_reduce()};
  const std::optional<GemmOperands> g = find_operands(k, before);
  if (!g) return false;
  const std::optional<GemmTile> tile = choose_tile(k, before, *g);
  if (!tile) return false;
  apply_tile(k, *g, *tile, try_opt);
  const Dims after{k, k.first_reduce()};
  panel_loop_outside(k, after, *g, tile->nv, try_opt);
  split_threads(k, after, try_opt);
  return true;
}

}  // namespace tg
