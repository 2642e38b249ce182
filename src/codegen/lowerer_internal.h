#pragma once
// The lowering passes' typed context and their rules, as free functions over it (private to codegen/):
//   lower_dims.cpp    which dims are loops, launch indices or upcast placeholders; the index dtype (LowerCtx)
//   lower_lanes.cpp   combinations of upcast values, and values as scalars, vectors or lanes
//   lower_memory.cpp  index math of views, loads and stores (vector accesses and runs)
//   lowerer.cpp       the passes (reduce_ranges, expand, symbolic) and the expand rules of leaves, ALU ops, stores
//   lower_reduce.cpp  reduces: accumulation loops, nested reduces, grouped reduces through shared memory
//   lower_tc.cpp      tensor-core reduces: WMMA (mma.sync) and WGMMA tiles
// See lowerer.cpp for how lowering works.
#include <array>
#include <optional>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "codegen/kernel.h"
#include "codegen/staging.h"
#include "uop/pattern.h"

namespace tg::lowering {

// A node's value at one setting of the (non-vector) upcast dims.
struct Val {
  UOpPtr one;                 // the same for every vector lane (a scalar), or one vector node
  std::vector<UOpPtr> lanes;  // W scalars, when `one` is null
};

// A lowered value, unpacked from its UNROLL node (see unroll / unpack).
struct Unrolled {
  uint64_t mask = 0;      // the upcast dims (LowerCtx::upcasts bits) the value depends on
  std::vector<Val> vals;  // one per combination of those dims' values (mixed radix, upcasts order)
};

// An upcast dim other than the vector dim: a placeholder RANGE substituted by each of its values.
struct UpcastDim {
  UOpPtr placeholder;
  int64_t size;
  size_t dim;  // in the full shape
};

using Combo = std::vector<int64_t>;  // a value per upcast dim

bool contains(const UOpPtr& root, const UOp* x);

// On a GPU renderer, which dims are launch indices: the innermost three LOOP dims are the grid (gidx0 the
// innermost: blockIdx.x allows 2^31-1 blocks, y and z only 65535, so a dim too large for them stays a loop),
// the LOCAL dims are the threads of a block (lidx0 the innermost, so a warp's threads are neighbours).
// No axis: a loop (RANGE).
// A tensor core's lane dims g and t share lidx0 (threadIdx.x = the lane 4g + t), so a kernel may have warps
// along two more dims; see lane_dims.
std::vector<std::optional<SpecialArg>> launch_axes(const Kernel& k);

// The dtype of this kernel's index math: int32 where every index it computes provably fits (cheaper, and
// what GPUs index with natively), int64 where one may not. Bounds come from the shapes: a loop or launch
// dim's size; each view's reach, offset + sum((s-1)*stride) over its dims, which bounds every partial sum
// of idx*stride; and, for a view under another one (a reshape that could not merge), its row-major size,
// which bounds the linear index that is unravelled into it. Masks compare indices with bounds inside the
// shape, so they add nothing.
DType index_dtype(const Kernel& k, const UOpPtr& ast);

// The typed context of the lowering passes: the kernel's dims as loops, launch indices or upcast placeholders
// (planned once, lower_dims.cpp), and what the passes learn on the way (staged loads, shared-memory temps,
// fresh loops, tensor-core registers).
struct LowerCtx {
  LowerCtx(const Kernel& kernel, const UOpPtr& ast);
  const Kernel& k;
  const Renderer& ren;
  const DType idx_dt;  // int32 or int64: see index_dtype
  UOpPtr ci(int64_t v) const { return UOp::const_int(v, idx_dt); }

  // ---- the dims ----
  std::vector<UOpPtr> dims;  // per dim: RANGE, SPECIAL or placeholder
  std::vector<UOpPtr> reduce_ranges;
  bool empty_reduce = false;        // some reduce dim has size 0
  bool empty_output = false;        // some output dim has size 0
  std::vector<size_t> group_dims;   // GROUP dims: a reduce split across a workgroup's threads
  std::vector<size_t> thread_dims;  // LOCAL and GROUP dims (the threads of a workgroup), in dim order
  std::vector<UpcastDim> upcasts;   // upcast dims other than the vector dim
  uint64_t unroll_mask = 0;         // the upcasts that are UNROLL (reduced) dims
  UOpPtr vector_placeholder;        // the vector dim's placeholder (null: no vector dim)
  int64_t vector_width = 1;
  bool vector_unrolled = false;     // the vector dim is an UNROLL dim
  std::vector<UOpPtr> globals;      // the AST's DEFINE_GLOBALs, in toposort order

  // ---- learned on the way ----
  std::unordered_set<const UOp*> nested;            // REDUCE_AXIS nodes inside another one's source: loops of their own
  int64_t fresh_ids = 0;                            // RANGE args made so far, so each is distinct
  int group_temps = 0;                              // shared-memory buffers of grouped reduces made so far
  std::optional<Staging> staging;                   // loads read through shared memory (no 16-bit tensor core)
  std::unordered_map<const UOp*, size_t> staged;    // such a LOAD -> its operand in staging
  const UOp *tc_a = nullptr, *tc_b = nullptr;       // a tensor-core kernel's A and B loads (AST nodes)
  std::unordered_map<const UOp*, UOpPtr> tc_regs;   // their expansions (the register values of A and B)
};

// The passes, in order: reduce_ranges, expand, symbolic (lowerer.cpp).
UOpPtr lower(LowerCtx& ctx, const UOpPtr& ast);

// ---- the dims (lower_dims.cpp) ----
// A tensor-core kernel's blocks run in groups of TC_SWIZZLE block rows (gidx1), a column of the group after
// another, so the blocks resident at once share their operand tiles in L2. Only where a row holds many blocks:
// else the blocks resident at once span enough rows already.
void swizzle_block_order(LowerCtx& ctx, const std::vector<std::optional<SpecialArg>>& launch);

// ---- reduces (lower_reduce.cpp) ----
// Several reduce loops become one over their product, each dim read back by division: the shared-memory ring
// (codegen/staging.h) steps through one loop. (A convolution over a flattened image reduces over kernel rows
// and, inside, columns x channels.)
void flatten_reduce_loops(LowerCtx& ctx);
// A multi-reduce kernel (schedule: a reduce computed in its consumer's kernel, as softmax's max inside the sum
// of exp(x - max)) has REDUCE_AXIS nodes over the same dims inside another one's source. Each such inner reduce
// runs its own loops to completion before the outer loop needs its value, so its ranges are fresh copies.
void find_nested_reduces(LowerCtx& ctx, const UOpPtr& ast);
inline int64_t fresh_id(LowerCtx& ctx) { return int64_t(ctx.k.full_shape().size()) * 2 + ctx.fresh_ids++; }
// REDUCE_AXIS(x) -> REDUCE_AXIS(x, ranges...): the kernel's reduce ranges, or fresh ones for a nested reduce.
UOpPtr add_reduce_ranges(LowerCtx& ctx, const UOpPtr& reduce);
UOpPtr with_ranges(const LowerCtx& ctx, const UOpPtr& x, const std::vector<UOpPtr>& ranges);
// REDUCE_AXIS(x, ranges...): x reduced over the UNROLL values, then over the ranges (REDUCE).
UOpPtr lower_reduce(LowerCtx& ctx, const UOpPtr& u);
// The second stage of a grouped reduce. Every thread holds the partial `part` of its GROUP index; the
// partials go to shared memory (one slot per thread of the workgroup), and after a barrier each thread
// reduces the slots of its GROUP siblings: the slot index with the GROUP ids replaced by new loops.
// (Every thread gets the total; only GROUP index 0 stores it, see lower_store.)
UOpPtr group_reduce(LowerCtx& ctx, Ops op, const UOpPtr& part);
// A buffer of shared memory per store (a second grouped reduce, another output lane, or a reduce that reads
// this one's total, must not overwrite partials that sibling threads may still be reading); `x` is stored at
// the thread's slot (where `gate` holds), and the result is the barrier after the store.
UOpPtr shared_partials(LowerCtx& ctx, const UOpPtr& x, const UOpPtr& slot, const UOpPtr& gate);
// The shared buffer behind such a barrier (BARRIER(STORE(temp, ...))).
inline const UOpPtr& partials_buffer(const UOpPtr& barrier) { return barrier->src.at(0)->src.at(0); }
// The value a sibling stored before `barrier`: the slot with the thread's own index `g` (of the last GROUP
// dim) replaced by `sibling`.
UOpPtr load_sibling(LowerCtx& ctx, const UOpPtr& barrier, const UOpPtr& slot, DType dt, const UOpPtr& g,
                    const UOpPtr& sibling);
// Every thread reduces the values its siblings stored before `barrier`: the first `n` indices of the last
// GROUP dim and every index of the others. The last dim's siblings are read `unroll` at a time and combined
// in a tree (one dependent load-and-add per value kept an H100's rows waiting).
UOpPtr sibling_reduce(LowerCtx& ctx, Ops op, const UOpPtr& barrier, const UOpPtr& slot, DType dt, int64_t n);

// ---- combinations of upcast values, and values (lower_lanes.cpp) ----
int64_t combo_count(const LowerCtx& ctx, uint64_t mask);
int64_t combo_key(const LowerCtx& ctx, uint64_t mask, const Combo& c);
Combo decode_combo(const LowerCtx& ctx, uint64_t mask, int64_t key);
uint64_t upcast_deps(const LowerCtx& ctx, const UOpPtr& e);  // the upcast dims e depends on
// e with the upcast placeholders set to the combination (and the vector dim to `lane`, if >= 0).
UOpPtr at_combo(const LowerCtx& ctx, const UOpPtr& e, const Combo& c, int64_t lane = -1);
inline Val value_at(const LowerCtx& ctx, const Unrolled& in, const Combo& c) {
  return in.vals.at(size_t(combo_key(ctx, in.mask, c)));
}
// UNROLL(values..., arg mask) of dtype dt: a Val is its one node, or VECTORIZE(lanes).
UOpPtr unroll(DType dt, const Unrolled& in);
// The values of an UNROLL node; any other node is one value at every combination.
Unrolled unpack(const UOpPtr& x);
inline bool varying(const Val& v) { return !v.one || v.one->dtype.count > 1; }
UOpPtr lane(const LowerCtx& ctx, const Val& v, int64_t i);
UOpPtr as_vec(const LowerCtx& ctx, const Val& v);
bool vec_ok(const LowerCtx& ctx, Ops op, DType dt);
Val alu(const LowerCtx& ctx, Ops op, DType dt, const std::vector<Val>& srcs, const Arg& arg = {});
// A balanced tree of `op` over xs: ((x0 op x1) op (x2 op x3)) ...
Val tree(const LowerCtx& ctx, Ops op, DType dt, std::vector<Val> xs);

// ---- memory (lower_memory.cpp) ----
inline bool always(const UOpPtr& valid) { return valid->op == Ops::CONST && valid->const_value() != 0; }
// Index and validity of a view, with placeholders for the upcast dims.
std::pair<UOpPtr, UOpPtr> index_of(const LowerCtx& ctx, const UOp* view);
// The index at vector lane 0 when idx steps by exactly 1 along the vector dim and valid does not depend
// on it (one vector access covers the lanes); nullptr otherwise.
UOpPtr contiguous_base(const LowerCtx& ctx, const UOpPtr& idx, const UOpPtr& valid, const Combo& c);
// On a GPU, a load (store) that is one scalar per combination but steps by exactly 1 along an upcast dim other
// than the vector dim (a matmul's A tile along K, while the vector dim runs along N; a tensor core's output
// pairs) is read (written) as runs of `width` values (float4, half8: one 16-byte access instead of four or
// eight), each loaded value a GEP of its run's load.
struct AccessRun {
  size_t upcast = 0;  // the upcast dim (index into LowerCtx::upcasts) the run steps along
  int64_t width = 1;  // 1: no runs
};
AccessRun access_run(const LowerCtx& ctx, Ops op, const UOpPtr& idx, const UOpPtr& valid, uint64_t mask, DType dt);
// Whether idx gives every combination of the mask's upcast values its own address (then stores may be
// grouped into runs in any order).
bool distinct_addresses(const LowerCtx& ctx, const UOpPtr& idx, uint64_t mask);
// The vector store of the run starting at combination `start`, or nullptr where its lanes are not all scalars
// or its base is not aligned.
UOpPtr run_store(const LowerCtx& ctx, const UOpPtr& buf, const Unrolled& value, const AccessRun& run,
                 const Combo& start, const UOpPtr& base, const UOpPtr& valid);
// Whether index `base` is a provable multiple of `width` (GPUs read a vector only from an address aligned to
// its size; buffers themselves start aligned).
bool aligned(const LowerCtx& ctx, const UOpPtr& base, int64_t width);
// `after`: the node a load of shared memory waits for (its third source); such loads are never gated.
UOpPtr load(const UOpPtr& buf, DType dt, const UOpPtr& idx, const UOpPtr& valid, const UOpPtr& alt,
            const UOpPtr& after = nullptr);
// Loads under the reduce that the threads of a workgroup share (a matmul's A and B: some thread dim does not
// move them) go through shared memory where the kernel allows it (codegen/staging.h).
void stage_shared_loads(LowerCtx& ctx, const UOpPtr& ast);

// ---- expand: a rule per kind of node, each returning the node's UNROLL (lowerer.cpp, lower_memory.cpp) ----
// A CONST leaf with a view: its value where the view is valid, 0 elsewhere.
UOpPtr lower_const(LowerCtx& ctx, const UOpPtr& u);
// A LOAD of a global buffer, or of its shared-memory stage: one load per combination of the upcast values its
// index depends on, a vector along the vector dim where contiguous, runs along another upcast dim (access_run).
UOpPtr lower_load(LowerCtx& ctx, const UOpPtr& u);
// An ALU op, CAST or BITCAST with some source an UNROLL: the op at each combination of its sources' dims.
UOpPtr lower_alu(const LowerCtx& ctx, const UOpPtr& u);
// STORE(buf, view, value): an UNROLL of the stores at each combination (void), runs along an upcast dim as
// vector stores where every combination has its own address (access_run).
UOpPtr lower_store(LowerCtx& ctx, const UOpPtr& u);
// SINK of the stores' UNROLLs: SINK(stores..., every DEFINE_GLOBAL).
UOpPtr lower_sink(const LowerCtx& ctx, const UOpPtr& u);

// ---- tensor cores (lower_tc.cpp) ----
void find_tc_loads(LowerCtx& ctx, const UOpPtr& ast);
// The upcasts index of the register dim with `role` (or of dim d).
size_t upcast_of_dim(const LowerCtx& ctx, int d);
inline size_t upcast_of(const LowerCtx& ctx, TcRole role) { return upcast_of_dim(ctx, ctx.k.dim_of(role)); }
// A sum of A*B lowered to WMMA: per tile (the non-tensor-core upcast values), one WMMA per unrolled K step
// chained through its accumulator input, whose 4 lanes are C's registers M_HI * 2 + N_LO; each lane then
// accumulates over the reduce loops.
UOpPtr lower_tc_reduce(LowerCtx& ctx, const UOpPtr& u);
// C's lanes for one warpgroup tile: WGMMA(A, B in shared memory, C) over the unrolled K values outside the
// tensor core, the first after a fence, the last waited for (renderer/tensor_core.h).
std::vector<UOpPtr> wgmma_tile(LowerCtx& ctx, const TcSetup& tcs, const Combo& base, uint64_t other_unroll,
                               const Staging& staging);
// C's 4 lanes for one tile: WMMA(A regs, B regs, C) over the unrolled K values outside the tensor core; `regs`:
// A's and B's expanded loads (read where the operands are not staged).
std::vector<UOpPtr> wmma_tile(LowerCtx& ctx, const TensorCore& tc, const Combo& base, uint64_t other_unroll,
                              std::array<size_t, 3> mhi_khi_klo, std::array<const Unrolled*, 2> regs,
                              const Staging* staging);

}  // namespace tg::lowering
