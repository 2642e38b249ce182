// The default optimizations (skipped under NOOPT=1), tinygrad's hand_coded_optimizations: tensor cores where a
// kernel takes them, split reduces on GPUs, vector and register tiles, CPU threads and GPU workgroups. Each step
// reads the kernel through its public view and applies opts through try_opt.
#include <algorithm>
#include <functional>
#include <unordered_map>

#include "codegen/opt/heuristic.h"
#include "renderer/cpu_isa.h"

namespace tg {
namespace {

// (the steps' helpers, defined below where they are explained)
int64_t streamed_itemsize(const Kernel& k);
bool splits_across_threads(const Kernel& k);
void unroll_reduce(const Kernel& k, const TryOpt& try_opt, int vw, DType dtype_of_output, int64_t tile);
bool masks_along(const Kernel& k, int d);

// Whether upcasting output dim d shares loads between accumulators: some load broadcast along d (the B of a
// matmul along M) moves along a reduce dim, so each value it reads in a reduce step feeds every accumulator. A
// load constant over the whole reduce (a BatchNorm's per-channel mean in its gradient) is read once per thread
// anyway: upcasting for it only takes threads away (beautiful_mnist's BatchNorm partials ran on 4 blocks of an
// H100 with 8 accumulators a thread).
bool tile_shares_loads(const Kernel& k, int d) {
  for (size_t i = 1; i < k.sts().size(); i++) {
    if (!k.is_load(i) || k.stride_of(i, d) != 0) continue;
    for (int r = k.first_reduce(); r < k.first_upcast(); r++)
      if (k.full_shape()[size_t(r)] > 1 && k.stride_of(i, r) != 0) return true;
  }
  return false;
}

// Outputs below which a GPU reduce kernel has too few threads to fill the device with one thread per output
// (an H100: 132 SMs x 2048 threads; a quarter of that already covers its memory latency).
constexpr int64_t kFillThreads = 65536;
// Outputs up to which a matrix-vector product gives each output a block of 256 threads (group_gpu_reduce).
constexpr int64_t kBlockPerOutput = 4096;

// A multi-reduce kernel (softmax's max inside its sum, a mean inside its variance) reads its input once when the
// whole reduce dim stays in registers: up to 256 threads of a workgroup take neighbouring 16-byte vectors, each
// holding at most 32 elements (the rest unrolled, no reduce loop), and every reduce works on the loaded values.
// With a reduce loop the row is read again from memory for each reduce (an H100 read softmax's 8192-float rows
// twice when 8 rows of a block looped over them: 188 us, 1.4 TB/s, for the max and the sum).
bool resident_rows(const Kernel& k, const TryOpt& try_opt, int64_t rsize, int64_t itemsize) {
  const int64_t w = std::max<int64_t>(1, 16 / itemsize);
  const int last = k.first_upcast() - 1 - k.first_reduce();
  // (It runs first, on a kernel with no opts, so the steps below only fail where a device allows fewer threads:
  // then the kernel keeps what applied, still a valid kernel.)
  for (int64_t group : {256, 128, 64, 32}) {
    if (rsize % (w * group) != 0 || rsize / group > 32) continue;
    return (w == 1 || try_opt({OptOps::UNROLL, last, int(w)})) && try_opt({OptOps::GROUP, last, int(group)}) &&
           (rsize == w * group || try_opt({OptOps::UNROLL, last, 0}));
  }
  return false;
}

void group_gpu_reduce(const Kernel& k, const TryOpt& try_opt) {
  int64_t outputs = 1;
  for (int d = 0; d < k.first_reduce(); d++) outputs *= k.full_shape()[size_t(d)];
  const int rd = k.first_upcast() - 1;  // the innermost reduce dim
  const int last = rd - k.first_reduce();  // ... counted from first_reduce (the axis of UNROLL and GROUP)
  const int64_t rsize = k.full_shape()[size_t(rd)];
  // Whether some load runs along the reduce dim in memory order, and the element size of those it streams.
  const bool contiguous = k.some_load_contiguous_along(rd);
  const int64_t itemsize = streamed_itemsize(k);
  // A matmul-like kernel (an input broadcast along an output dim that another input moves along) keeps its
  // register tiles instead. A matrix-vector product (one input moves along no output dim: x of x @ W.T) is a
  // row reduce: a warp per output reads its row of W in 16-byte pieces (an H100 ran LLM-decode-shaped
  // 4096x4096 fp16 products with two blocks of 256 threads, each reading rows 4096 apart, before).
  // (Matmul-like: some input broadcast along one output dim moves along another, as A along N and M. The scale, offset
  // and quants of a quantized W all move along the same dim, and x along none: still a matrix-vector product.)
  bool matmul_like = false;
  for (size_t i = 1; i < k.sts().size(); i++) {
    if (!k.is_load(i)) continue;
    bool moves = false, broadcast = false;
    for (int d = 0; d < k.first_reduce(); d++) {
      if (k.full_shape()[size_t(d)] == 1) continue;
      (k.stride_of(i, d) != 0 ? moves : broadcast) = true;
    }
    matmul_like |= moves && broadcast;
  }
  int64_t reduce_total = 1;  // elements each output sums
  for (int d = k.first_reduce(); d < k.first_upcast(); d++) reduce_total *= k.full_shape()[size_t(d)];
  if (k.reduce_count() > 1 && contiguous && k.first_upcast() - k.first_reduce() == 1 &&
      resident_rows(k, try_opt, rsize, itemsize))
    return;
  if (contiguous && rsize >= 256 && (outputs <= 2048 || !matmul_like)) {
    // Few outputs: a block of 256 threads per output; many: a warp per output (LOCAL dims add outputs to the
    // block later). Each thread first reads 16 bytes at once (a vector of lanes that accumulate apart), and
    // the threads of a group take neighbouring vectors, so a warp reads one contiguous span. "Few" is up to
    // kBlockPerOutput: below it a warp per output leaves SMs idle (TinyLlama's 2560 q, k, v rows: 320 blocks of
    // 8 warps, 2.4 an SM). Where the group's 16-byte vectors do not tile the row (its down projection's 5632 = 11
    // x 512), the group narrows while the outputs still fill the device: 2-byte loads of 256 threads took 12.1 us
    // of an H100 for the 23 MB of that matrix, 64-thread groups of 16-byte vectors 11.1.
    int64_t group = outputs <= kBlockPerOutput ? 256 : 32;
    const int64_t w = std::max<int64_t>(1, std::min<int64_t>(8, 16 / itemsize));  // 16 bytes: float4, 8 halves
    while (group > 32 && rsize % (w * group) != 0 && outputs * group / 2 >= kFillThreads) group /= 2;
    if (w > 1 && rsize % (w * group) == 0) try_opt({OptOps::UNROLL, last, int(w)});
    const int64_t left = k.full_shape()[size_t(k.first_upcast() - 1)];
    for (int64_t amt = group; amt >= 16; amt /= 2)
      if (left % amt == 0 && try_opt({OptOps::GROUP, last, int(amt)})) return;
    return;
  }
  // A matrix-vector product over quantized blocks ((out, n_blocks, 32): a short contiguous reduce dim inside a long
  // reduce): a warp per output takes the elements of a block, a lane each, and loops over the blocks.
  if (!matmul_like && contiguous && rsize < 256 && reduce_total >= 256)
    for (int64_t amt : {32, 16})
      if (rsize % amt == 0 && try_opt({OptOps::GROUP, last, int(amt)})) return;
  // Few outputs along a strided reduce dim: threads of a workgroup still share the reduce.
  if (outputs <= 2048 && rsize >= 256)
    for (int amt : {256, 128, 64, 32, 16})
      if (rsize % amt == 0 && try_opt({OptOps::GROUP, last, amt})) return;
  bool tile = false;  // a matmul keeps its register tile (reduce_register_tile)
  for (int d = 0; d < k.first_reduce(); d++) tile |= k.kinds()[size_t(d)] == AxisKind::LOOP && tile_shares_loads(k, d);
  // A matmul-like kernel with too few outputs to fill the GPU, register tiles or not, and a long reduce: the
  // workgroup splits the reduce too, in parts of at least 16 steps (an MLP's 32 x 256 @ 256 x 256 ran as 4 blocks
  // of 256 threads, each thread looping over all 256 of K: 39 us on an H100).
  if (matmul_like && tile && outputs < kFillThreads)
    for (int amt : {16, 8, 4})
      if (rsize % amt == 0 && rsize / amt >= 16 && try_opt({OptOps::GROUP, last, amt})) return;
  // Too few outputs to fill the GPU with one thread each, and short reduce dims: the workgroup shares whichever
  // reduce dim takes the most threads (the innermost on a tie, for neighbouring reads). beautiful_mnist's
  // BatchNorm gradients (64 channels over 512 images x 36 pixels) ran as one block of 64 threads, 4-5 ms each
  // on an H100.
  if (outputs < kFillThreads && !tile) {
    int best = -1, best_amt = 1;
    for (int d = rd; d >= k.first_reduce(); d--)
      for (int amt : {256, 128, 64, 32, 16, 8, 4, 2})
        if (amt > best_amt && k.full_shape()[size_t(d)] % amt == 0) {
          best = d, best_amt = amt;
          break;
        }
    if (best >= 0) try_opt({OptOps::GROUP, best - k.first_reduce(), best_amt});
  }
}

// The element size of the loads a reduce kernel streams: those contiguous along its innermost reduce dim that also
// move along some output dim (W of x @ W.T, not x, which every output reads again from cache); the widest load's
// when none does (a full reduce). A float32 x beside a float16 W gave W 8-byte loads (4 lanes of the vector).
// Each load's VIEW -> the element size the LOAD reads.
std::unordered_map<const UOp*, int64_t> load_itemsizes(const Kernel& k) {
  std::unordered_map<const UOp*, int64_t> sizes;
  for (const UOp* u : toposort(k.ast()))
    if (u->op == Ops::LOAD) sizes[u->src.at(1).get()] = u->dtype.itemsize();
  return sizes;
}

int64_t streamed_itemsize(const Kernel& k) {
  const int rd = k.first_upcast() - 1;
  const std::unordered_map<const UOp*, int64_t> load_itemsize = load_itemsizes(k);
  int64_t widest = 1, streamed = 0;
  for (const auto& [view, size] : load_itemsize) widest = std::max(widest, size);
  for (size_t i = 1; i < k.sts().size(); i++) {
    if (!k.is_load(i) || k.stride_of(i, rd) != 1) continue;
    bool moves = false;
    for (int d = 0; d < k.first_reduce(); d++) moves |= k.full_shape()[size_t(d)] > 1 && k.stride_of(i, d) != 0;
    if (auto it = load_itemsize.find(k.views()[i]); moves && it != load_itemsize.end())
      streamed = std::max(streamed, it->second);
  }
  return streamed ? streamed : widest;
}

// Whether the loads a reduce streams run along its innermost reduce dim and none along output dim `vdim`
// (softmax's row sums, a split 2^24 sum's 16 partials 2^20 apart). Only streamed loads count: softmax's row
// max is contiguous along the rows but read once per row.
bool loads_stream_along_reduce(const Kernel& k, int vdim) {
  if (!k.has_reduce() || k.first_upcast() <= k.first_reduce()) return false;
  const int rd = k.first_upcast() - 1;
  bool along_reduce = false, along_output = false;
  for (size_t i = 1; i < k.sts().size(); i++) {
    along_reduce |= k.is_load(i) && k.stride_of(i, rd) == 1;
    along_output |= k.is_load(i) && k.stride_of(i, vdim) == 1 && k.stride_of(i, rd) != 0;
  }
  return along_reduce && !along_output;
}

// A transpose on a GPU (an elementwise kernel none of whose full-size inputs is read contiguously along its innermost
// loop or its vector, while another loop reads one): that loop goes innermost, so the warp's lanes (step 5) take
// consecutive elements of the input and each load of a warp reads one span; the stores keep their 16-byte vectors
// (channels-last copy of a conv's 32x64x56x56 fp16 input on an H100: 74 us with the lanes along the output's
// channels, a pixel per 8 lanes). Inputs broadcast along some dim (softmax's row sums) do not count.
void lanes_along_input(const Kernel& k, const TryOpt& try_opt) {
  int inner = -1;
  for (int d = 0; d < k.first_reduce(); d++)
    if (k.kinds()[size_t(d)] == AxisKind::LOOP) inner = d;
  auto full_size = [&](size_t i) {
    for (int d = 0; d < int(k.full_shape().size()); d++)
      if (k.full_shape()[size_t(d)] > 1 && k.stride_of(i, d) == 0) return false;
    return true;
  };
  auto read_along = [&](int d) {
    for (size_t i = 1; i < k.sts().size(); i++)
      if (k.is_load(i) && full_size(i) && k.stride_of(i, d) == 1) return true;
    return false;
  };
  if (inner < 0 || read_along(inner)) return;
  for (int d = k.first_upcast(); d < int(k.full_shape().size()); d++)
    if (read_along(d)) return;
  for (int d = inner - 1; d >= 0; d--)
    if (k.kinds()[size_t(d)] == AxisKind::LOOP && read_along(d) && k.full_shape()[size_t(d)] % 32 == 0 &&
        try_opt({OptOps::SWAP, d, inner}))
      return;
}

// hand_coded_optimizations' steps 2 and 3 for a reduce kernel: a register tile of outputs, the loop order, the
// reduce unrolled (vw: the vector width in elements).
void reduce_register_tile(const Kernel& k, const TryOpt& try_opt, int vw, DType dtype_of_output) {
  // 2. A register tile. Upcast output dims that some input does not depend on (the M of
  // a matmul: B is expanded along it), so one load feeds several accumulators.
  int64_t tile = 1;  // accumulators that are not the vector dim
  const int threads = k.renderer().threads();
  const bool threaded = splits_across_threads(k);
  for (int round = 0; round < 2; round++) {
    int best = -1;
    int64_t best_amt = 0;
    std::pair<int, int64_t> best_key{1 << 30, 0};
    for (int d = 0; d < k.first_reduce(); d++) {
      if (k.kinds()[size_t(d)] != AxisKind::LOOP || !k.is_expanded_in_some_load(d)) continue;
      // (On GPUs each accumulator is a thread fewer: only where a tile shares loads, see tile_shares_loads.)
      if (k.renderer().has_local() && !tile_shares_loads(k, d)) continue;
      for (int64_t amt : {4, 3, 2}) {
        // (8 accumulators in all: a multi-reduce kernel keeps one per reduce (SwiGLU's gate and up rows); 16 vector
        // accumulators and their operands spill out of AVX-512's 32 registers)
        if (k.full_shape()[size_t(d)] % amt != 0 || tile * amt * std::max(1, k.reduce_count()) > 8) continue;
        // (on a CPU that will split the kernel across threads, leave the dim divisible by them: 36 row groups as
        // 12 x 3, not 9 x 4, which step 4 could not split)
        if (threaded && k.full_shape()[size_t(d)] % threads == 0 && (k.full_shape()[size_t(d)] / amt) % threads != 0)
          continue;
        // fewest buffers that depend on the dim, then the smallest strides
        int n = 0;
        int64_t sum = 0;
        for (size_t i = 0; i < k.sts().size(); i++) {
          int64_t st = k.stride_of(i, d);
          if (st != 0) n++;
          sum += st < 0 ? 1 << 20 : st;
        }
        // the rest of the vector dim comes last: more rows share each vector load (a tall tile)
        const int vd = k.vector_dim();
        if (vd >= 0 && k.stride_of(0, d) == k.full_shape()[size_t(vd)]) n += 100;
        std::pair<int, int64_t> key{n, sum};
        if (key < best_key) best_key = key, best = d, best_amt = amt;
        break;
      }
    }
    if (best < 0 || !try_opt({OptOps::UPCAST, best, int(best_amt)})) break;
    tile *= best_amt;
  }
  // Loop order: consecutive iterations of the innermost output loop reuse the loads that do not depend
  // on it, and stream the ones that do. Stream along contiguous memory: when a load that depends on the
  // innermost loop is not contiguous along the innermost reduce dim (B of A@B), and another loop's loads
  // are, make that one innermost (for A@B, the M loop goes inside the N loop).
  if (k.first_upcast() > k.first_reduce()) {
    const int rd = k.first_upcast() - 1;
    auto streams_contiguously = [&](int d) {
      for (size_t i = 1; i < k.sts().size(); i++) {
        if (!k.is_load(i) || k.stride_of(i, d) == 0) continue;
        int64_t st = k.stride_of(i, rd);
        if (st != 0 && st != 1) return false;
      }
      return true;
    };
    const int inner = k.first_reduce() - 1;
    if (inner > 0 && k.kinds()[size_t(inner)] == AxisKind::LOOP && !streams_contiguously(inner) &&
        k.full_shape()[size_t(rd)] >= 64) {
      for (int d = inner - 1; d >= 0; d--)
        if (k.kinds()[size_t(d)] == AxisKind::LOOP && streams_contiguously(d) && try_opt({OptOps::SWAP, d, inner}))
          break;
    }
  }
  unroll_reduce(k, try_opt, vw, dtype_of_output, tile);
}

// hand_coded_optimizations' step 3: unroll the innermost reduce dim. With no vector output dim (on CPUs: or one no
// load is contiguous along, a matrix-vector product's rows) and a load contiguous along it, by a vector width (the
// lanes become vector accumulators); else whole when small, else by 4. `tile`: the accumulators step 2 made.
void unroll_reduce(const Kernel& k, const TryOpt& try_opt, int vw, DType dtype_of_output,
                           int64_t tile) {
  const int nred = k.first_upcast() - k.first_reduce();
  if (nred <= 0) return;
  const int rd = k.first_upcast() - 1;
  const int64_t s = k.full_shape()[size_t(rd)];
  const int vd = k.vector_dim();
  const bool free_lanes = vd < 0 || (!k.renderer().has_local() && !k.some_load_contiguous_along(vd));
  bool vectored = false;
  if (free_lanes && k.some_load_contiguous_along(rd) && dtype_of_output.is_float() && dtype_of_output.itemsize() >= 4)
    for (int w : {16, 8, 4})
      if (w <= vw && s % w == 0 && (vectored = try_opt({OptOps::UNROLL, nred - 1, w}))) break;
  if (!vectored) {
    if (s <= 8 && tile * s <= 64) try_opt({OptOps::UNROLL, nred - 1, 0});
    else if (s % 4 == 0 && tile * 4 <= 64) try_opt({OptOps::UNROLL, nred - 1, 4});
    return;
  }
  // The halves of a cat along a short reduce dim (a 4-bit block's low and high nibbles): unrolled whole, each copy
  // reads its own side with no select per element.
  for (int d = k.first_upcast() - 1; d >= k.first_reduce(); d--)
    if (k.full_shape()[size_t(d)] <= 4 && masks_along(k, d) && try_opt({OptOps::UNROLL, d - k.first_reduce(), 0}))
      return;
}

// Whether some load's view is masked along dim d (a pad, or one side of a cat).
bool masks_along(const Kernel& k, int d) {
  for (size_t i = 1; i < k.sts().size(); i++) {
    if (!k.is_load(i) || !k.sts()[i].views.back().mask) continue;
    const auto& [b, e] = (*k.sts()[i].views.back().mask)[size_t(d)];
    if (!(b == 0) || !(e == k.full_shape()[size_t(d)])) return true;
  }
  return false;
}

namespace {
// The dtype the kernel's (first) output stores.
DType output_dtype(const UOpPtr& ast) { return ast->src.at(0)->src.at(2)->dtype; }
// Vector width in elements of `dt`: on CPUs the widest registers of the chosen ISA level in floats (halves are
// computed as floats; doubles take half as many), 16 bytes of 1-byte integers (a quantized block's 16 bytes); on
// GPUs 16 bytes per thread (float4, 8 halves).
int vector_width(bool gpu, DType dt) {
  if (gpu) return std::max(1, 16 / dt.itemsize());
  const int floats = cpu_isa().vector_floats();
  return dt.itemsize() == 8 ? floats / 2 : dt.itemsize() == 1 ? 16 : floats;
}
}  // namespace

// Whether the kernel writes 1-byte integers: an elementwise one then vectorizes too (16-byte vectors; a quantized
// matrix's blocks compacted at load, 16 bytes of every 18 or 20, were copied a byte at a time at ~2.5 GB/s).
bool writes_bytes(const Kernel& k) {
  const DType out = output_dtype(k.ast());
  return out.itemsize() == 1 && !out.is_float() && out != dtypes::bool_;
}

// Bytes the loads read (each element once; a symbolic dim at its largest): a product of integer dot products has few
// elements (a row block each) but reads as much as the float one.
int64_t bytes_loaded(const Kernel& k) {
  const std::unordered_map<const UOp*, int64_t> load_itemsize = load_itemsizes(k);
  int64_t total = 0;
  for (size_t i = 1; i < k.sts().size(); i++) {
    if (!k.is_load(i)) continue;
    int64_t elements = 1;
    for (size_t d = 0; d < k.full_shape().size(); d++)
      if (k.stride_of(i, int(d)) != 0) elements *= k.full_shape()[d].vmax();
    auto it = load_itemsize.find(k.views()[i]);
    total += elements * (it == load_itemsize.end() ? 4 : it->second);
  }
  return total;
}

// Whether step 4 looks for a dim to split across the CPU's threads: there is enough work for each (elements, or bytes
// read).
bool splits_across_threads(const Kernel& k) {
  const int threads = k.renderer().threads();
  const int64_t enough = int64_t(threads) * (64 << 10);
  return !k.renderer().has_local() && threads > 1 &&
         (prod(k.full_shape()).vmax() >= enough || bytes_loaded(k) >= enough);
}

// hand_coded_optimizations' step 4 (CPUs).
void cpu_threads(const Kernel& k, const TryOpt& try_opt) {
  // 4. Threads: split the outermost loop dim that divides evenly, when there is enough work for each.
  const int threads = k.renderer().threads();
  // (a symbolic kernel at its largest size)
  if (splits_across_threads(k)) {
    for (int t = threads; t >= 2; t--) {
      bool done = false;
      for (int d = 0; d < k.first_reduce() && !done; d++)
        if (k.kinds()[size_t(d)] == AxisKind::LOOP && k.full_shape()[size_t(d)].is_int() &&
            k.full_shape()[size_t(d)] % t == 0)
          done = try_opt({OptOps::THREAD, d, t});
      if (done) break;
    }
  }
}

// A CPU kernel with a symbolic dim (attention over start_pos + 1 keys): vectors along its concrete dims only. The
// output's contiguous dim when some load runs along it too (probs @ V: 16 lanes of a V row per key), else the
// innermost reduce dim when it is concrete and some load runs along it (q . k over the head dim). Without them
// every product was a scalar and these two kernels took ~15% of a SmolLM2 decode step at 200 tokens.
void cpu_symbolic_vectors(const Kernel& k, const TryOpt& try_opt) {
  const DType out = output_dtype(k.ast());
  if (!out.is_float() || out.itemsize() < 4) return;
  const int vw = vector_width(false, out);
  auto vectorize = [&](int d, OptOps op, int axis) {
    for (int w : {16, 8, 4})
      if (w <= vw && k.full_shape()[size_t(d)].is_int() && k.full_shape()[size_t(d)] % w == 0 && try_opt({op, axis, w}))
        return true;
    return false;
  };
  for (int d = k.first_reduce() - 1; d >= 0; d--)
    if (k.kinds()[size_t(d)] == AxisKind::LOOP && k.stride_of(0, d) == 1 && k.some_load_contiguous_along(d))
      if (vectorize(d, OptOps::UPCAST, d)) return;
  const int nred = k.first_upcast() - k.first_reduce();
  if (nred > 0 && k.some_load_contiguous_along(k.first_upcast() - 1))
    vectorize(k.first_upcast() - 1, OptOps::UNROLL, nred - 1);
}

// hand_coded_optimizations' step 5 (GPUs).
void gpu_workgroups(const Kernel& k, const TryOpt& try_opt) {
  // 5. GPU workgroups: make the innermost output dims local (threads of one block), up to 256 threads;
  //    the innermost gets up to 32 so a warp reads consecutive elements.
  //    A kernel with one output loop (a flat elementwise op) gives it all 256: a block of one warp caps an SM at
  //    half its threads (add 2^28 on an H100: 2543 GB/s with 32).
  //    (The LOCAL made first, the innermost loop's, is the outermost thread index: tinygrad makes the innermost
  //    threadIdx.x, but the reduce kernels here ran slower that way on an H100: a 32x256 @ 256x256 step of an MLP
  //    150 us against 45, the channels-last copy of a conv's input 24 us against 20.)
  if (!k.has_reduce()) lanes_along_input(k, try_opt);
  int64_t budget = std::max<int64_t>(1, 256 / k.local_size());
  const bool one_loop = std::count(k.kinds().begin(), k.kinds().end(), AxisKind::LOOP) == 1;
  for (int d = k.first_reduce() - 1; d >= 0 && budget > 1; d--) {
    if (k.kinds()[size_t(d)] != AxisKind::LOOP) continue;
    for (int64_t amt : {256, 128, 64, 32, 16, 8, 4, 2}) {
      if (amt > 32 && !one_loop) continue;
      if (amt > budget || k.full_shape()[size_t(d)] % amt != 0) continue;
      if (try_opt({OptOps::LOCAL, d, int(amt)})) budget /= amt;
      break;
    }
  }
}

// hand_coded_optimizations' step 6 (GPUs): a sliding window. An output dim d along which some load reads elements
// that a reduce (or unrolled) dim e reads too (x[ow + kw]: spans that overlap; a convolution's weight gradient has
// kw as output and ow as reduce dim, its forward the other way round), while another load does not move along d
// but along e (dy of the gradient, w of the forward): d is upcast whole and e, when not unrolled yet, unrolled
// whole, so a thread's products share their loads (d + e - 1 values of the window, e of the other load). BEAM
// found these tiles for beautiful_mnist's convolutions on an H200: the weight gradient of its 32x32x5x5 conv
// 6.09 ms -> 0.66 ms, of the 64x64x3x3 one 6.18 ms -> 0.16 ms.
void window_tiles(const Kernel& k, const TryOpt& try_opt) {
  constexpr int64_t kMaxDim = 8, kMaxReduce = 32, kMaxAccumulators = 64;
  auto size = [&](int d) {
    return k.full_shape()[size_t(d)].is_int() ? int64_t(k.full_shape()[size_t(d)]) : int64_t(0);
  };
  // Whether load i reads overlapping spans along d and e (each one's step shorter than the other's whole span).
  auto overlap = [&](size_t i, int d, int e) {
    const int64_t sd = k.stride_of(i, d), se = k.stride_of(i, e);
    return sd > 0 && se > 0 && sd < se * size(e) && se < sd * size(d);
  };
  auto window = [&](int d, int e) {
    bool overlapping = false, shared = false;
    for (size_t i = 1; i < k.sts().size(); i++) {
      if (!k.is_load(i)) continue;
      overlapping |= overlap(i, d, e);
      shared |= k.stride_of(i, d) == 0 && k.stride_of(i, e) != 0;
    }
    return overlapping && shared;
  };
  int64_t accumulators = 1;
  for (size_t d = size_t(k.first_upcast()); d < k.full_shape().size(); d++)
    if (k.kinds()[d] == AxisKind::UPCAST) accumulators *= k.full_shape()[d];
  // (innermost output dims first: the window along contiguous memory)
  for (int d = k.first_reduce() - 1; d >= 0; d--) {
    if (k.kinds()[size_t(d)] != AxisKind::LOOP || size(d) < 2 || size(d) > kMaxDim) continue;
    if (accumulators * size(d) > kMaxAccumulators || k.upcast_size() * size(d) > k.max_upcast()) continue;
    // A reduce dim to unroll whole with it, innermost first; else one unrolled already.
    int unroll = -1;
    bool unrolled = false;
    for (int e = int(k.full_shape().size()) - 1; e >= k.first_reduce(); e--) {
      if (k.kinds()[size_t(e)] == AxisKind::UNROLL && window(d, e)) unrolled = true;
      if (unroll < 0 && k.kinds()[size_t(e)] == AxisKind::REDUCE && size(e) >= 2 && size(e) <= kMaxReduce &&
          k.upcast_size() * size(d) * size(e) <= k.max_upcast() && window(d, e))
        unroll = e - k.first_reduce();  // (a whole upcast leaves a dim of 1: the indices stay)
    }
    if (unroll < 0 && !unrolled) continue;
    if (try_opt({OptOps::UPCAST, d, 0}) && unroll >= 0) try_opt({OptOps::UNROLL, unroll, 0});
    return;
  }
}

}  // namespace

int loop_along(const Kernel& k, size_t reads, size_t ignores) {
  for (int d = k.first_reduce() - 1; d >= 0; d--)
    if (k.kinds()[size_t(d)] == AxisKind::LOOP && k.last_view_stride(reads, d) > 0 && k.last_view_stride(ignores, d) == 0)
      return d;
  return -1;
}

void hand_coded_optimizations(Kernel& k) {
  auto try_opt = [&](const Opt& o) {
    try {
      k.apply_opt(o);
      return true;
    } catch (const KernelOptError&) {
      return false;
    }
  };
  // A kernel with a symbolic dim: no opt may split a dim whose size is known only at launch, and the steps below
  // size their choices from the dims. Its concrete output dims still take threads: workgroups on GPUs (where the
  // constructor padded the symbolic output dims, so only a symbolic reduce is left: the probabilities @ V of
  // attention over start_pos keys), vectors along concrete dims and THREAD on CPUs.
  if (is_symbolic(k.full_shape())) {
    if (k.renderer().has_local()) {
      gpu_workgroups(k, try_opt);
    } else {
      cpu_symbolic_vectors(k, try_opt);
      cpu_threads(k, try_opt);
    }
    return;
  }
  // Tiny kernels keep their plain loops: nothing to win, and their code stays readable (r_2, E_16).
  if (prod(k.full_shape()) < 64) return;
  if (tensor_core_opts(k, try_opt) || gemm_opts(k, try_opt) || cpu_gemm_opts(k, try_opt)) return;
  const DType dtype_of_output = output_dtype(k.ast());
  const bool gpu = k.renderer().has_local();
  const int vw = vector_width(gpu, dtype_of_output);

  // 0. GPU reduces: split the reduce across the threads of a workgroup (partials meet in shared memory).
  if (gpu && k.has_reduce() && k.first_reduce() < int(k.full_shape().size()) &&
      k.kinds()[size_t(k.first_reduce())] == AxisKind::REDUCE)
    group_gpu_reduce(k, try_opt);
  // 1. Vectorize the output's contiguous dim: the widest vector that divides it (not wider than vw; on GPUs
  //    float32 and 16-bit floats, as 16-byte stores).
  int vdim = -1;
  for (int d = k.first_reduce() - 1; d >= 0; d--)
    if (k.kinds()[size_t(d)] == AxisKind::LOOP && k.stride_of(0, d) == 1) vdim = d;
  // (On GPUs only in elementwise kernels: in a reduce kernel the upcast would take threads from the grid; an
  // H100 ran beautiful_mnist's step at 203 ms with it against 169 ms without.)
  const bool vector_output =
      gpu ? (dtype_of_output == dtypes::float32 || dtype_of_output == dtypes::float16 ||
             dtype_of_output == dtypes::bfloat16) &&
                !k.has_reduce()
          : (dtype_of_output.is_float() && dtype_of_output.itemsize() >= 4) || (writes_bytes(k) && !k.has_reduce());
  // (A CPU reduce whose loads run along the reduce dim, not along this one, vectorizes the reduce instead
  // (step 3): a vector of outputs would gather one scalar from each row per step.)
  if (vdim >= 0 && vector_output && !gpu && loads_stream_along_reduce(k, vdim)) vdim = -1;
  if (vdim >= 0 && vector_output) {
    int64_t s = k.full_shape()[size_t(vdim)];
    for (int w : {16, 8, 4, 2}) {
      if (w > vw || s % w != 0) continue;
      if (try_opt({OptOps::UPCAST, vdim, w})) break;
    }
  }

  if (k.has_reduce()) reduce_register_tile(k, try_opt, vw, dtype_of_output);
  cpu_threads(k, try_opt);
  if (gpu) gpu_workgroups(k, try_opt);
  if (gpu && k.has_reduce()) window_tiles(k, try_opt);
}

}  // namespace tg
