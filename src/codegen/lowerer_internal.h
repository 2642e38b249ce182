#pragma once
// The Lowerer's parts, shared by the files that implement it (private to codegen/):
//   lower_dims.cpp    which dims are loops, launch indices or upcast placeholders; the index dtype
//   lowerer.cpp       the walk over the AST, upcast combinations, vectors, loads and stores
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

// The typed context of the lowering passes (see lowerer.cpp): the kernel's dims as loops, launch indices or
// upcast placeholders, and what the passes learn on the way (staged loads, shared-memory temps, fresh loops).
class Lowerer {
 public:
  Lowerer(const Kernel& k, const UOpPtr& ast);

  // The passes, in order: reduce_ranges, expand, symbolic.
  UOpPtr lower(const UOpPtr& ast);

 private:
  struct UAxis {
    UOpPtr ph;  // placeholder
    int64_t size;
    size_t dim;  // in the full shape
  };
  // A lowered value, unpacked from its UNROLL node (see unroll / unpack).
  struct Info {
    uint64_t mask = 0;      // the upcast dims (ua_ bits) the value depends on
    std::vector<Val> vals;  // one per combination of those dims' values (mixed radix, ua_ order)
  };

  const Kernel& k_;
  const Renderer& ren_;
  const DType idx_dt_;  // int32 or int64: see index_dtype
  UOpPtr ci(int64_t v) const { return UOp::const_int(v, idx_dt_); }
  std::vector<UOpPtr> dims_;  // per dim: RANGE, SPECIAL or placeholder
  std::vector<UOpPtr> reduce_ranges_;
  bool empty_reduce_ = false;        // some reduce dim has size 0
  bool empty_output_ = false;        // some output dim has size 0
  std::vector<size_t> group_dims_;   // GROUP dims: a reduce split across a workgroup's threads
  std::vector<size_t> thread_dims_;  // LOCAL and GROUP dims (the threads of a workgroup), in dim order
  std::vector<UAxis> ua_;            // upcast dims other than the vector dim
  uint64_t unroll_mask_ = 0;
  UOpPtr vph_;  // the vector dim's placeholder (null: no vector dim)
  int64_t W_ = 1;
  bool vunroll_ = false;
  std::vector<UOpPtr> globals_;                     // the AST's DEFINE_GLOBALs, in toposort order
  std::unordered_set<const UOp*> nested_;           // REDUCE_AXIS nodes inside another one's source: loops of their own
  int64_t fresh_ids_ = 0;                           // RANGE args made so far, so each is distinct
  int group_temps_ = 0;                             // shared-memory buffers of grouped reduces made so far
  std::optional<Staging> staging_;                  // loads read through shared memory (no 16-bit tensor core)
  std::unordered_map<const UOp*, size_t> staged_;   // such a LOAD -> its operand in staging_
  const UOp *tc_a_ = nullptr, *tc_b_ = nullptr;     // a tensor-core kernel's A and B loads (AST nodes)
  std::unordered_map<const UOp*, UOpPtr> tc_regs_;  // their expansions (the register values of A and B)

  // A tensor-core kernel's blocks run in groups of TC_SWIZZLE block rows (gidx1), a column of the group after
  // another, so the blocks resident at once share their operand tiles in L2 (lower_dims.cpp). Only where a row
  // holds many blocks: else the blocks resident at once span enough rows already.
  void swizzle_block_order(const std::vector<std::optional<SpecialArg>>& launch);

  // ---- the passes' rules ----
  // reduce_ranges: each REDUCE_AXIS gets the RANGEs it reduces over as sources; a nested one fresh copies.
  static const TypedMatcher<Lowerer>& pm_reduce_ranges();
  // expand: every node becomes an UNROLL of its values at each combination of the upcast values it depends on;
  // a STORE an UNROLL of its stores; the SINK gathers the stores.
  static const TypedMatcher<Lowerer>& pm_expand();

  // Several reduce loops become one over their product, each dim read back by division: the shared-memory ring
  // (codegen/staging.h) steps through one loop. (A convolution over a flattened image reduces over kernel rows
  // and, inside, columns x channels.)
  void flatten_reduce_loops();

  // A multi-reduce kernel (schedule: a reduce computed in its consumer's kernel, as softmax's max inside the sum
  // of exp(x - max)) has REDUCE_AXIS nodes over the same dims inside another one's source. Each such inner reduce
  // runs its own loops to completion before the outer loop needs its value, so its ranges are fresh copies.
  void find_nested_reduces(const UOpPtr& ast);
  int64_t fresh_id() { return int64_t(k_.full_shape().size()) * 2 + fresh_ids_++; }
  // REDUCE_AXIS(x) -> REDUCE_AXIS(x, ranges...): the kernel's reduce ranges, or fresh ones for a nested reduce.
  UOpPtr add_reduce_ranges(const UOpPtr& reduce);
  UOpPtr with_ranges(const UOpPtr& x, const std::vector<UOpPtr>& ranges) const;

  // Loads under the reduce that the threads of a workgroup share (a matmul's A and B: some thread dim does not
  // move them) go through shared memory where the kernel allows it (codegen/staging.h).
  void stage_shared_loads(const UOpPtr& ast);
  void find_tc_loads(const UOpPtr& ast);

  // ---- combinations of upcast values ----
  using Combo = std::vector<int64_t>;  // a value per ua_ entry
  int64_t count(uint64_t mask) const;
  int64_t key(uint64_t mask, const Combo& c) const;
  Combo decode(uint64_t mask, int64_t k) const;
  uint64_t deps(const UOpPtr& e) const;
  // e with the upcast placeholders set to the combination (and the vector dim to `lane`, if >= 0).
  UOpPtr subst(const UOpPtr& e, const Combo& c, int64_t lane = -1) const;
  Val val(const Info& in, const Combo& c) const { return in.vals.at(size_t(key(in.mask, c))); }

  // ---- lowered values as graph nodes ----
  // UNROLL(values..., arg mask) of dtype dt: a Val is its one node, or VECTORIZE(lanes).
  static UOpPtr unroll(DType dt, const Info& in);
  // The values of an UNROLL node; any other node is one value at every combination.
  static Info unpack(const UOpPtr& x);

  // ---- values ----
  static bool varying(const Val& v) { return !v.one || v.one->dtype.count > 1; }
  UOpPtr lane(const Val& v, int64_t i) const;
  UOpPtr as_vec(const Val& v) const;
  bool vec_ok(Ops op, DType dt) const;

  Val alu(Ops op, DType dt, const std::vector<Val>& srcs, const Arg& arg = {}) const;
  // A balanced tree of `op` over xs: ((x0 op x1) op (x2 op x3)) ...
  Val tree(Ops op, DType dt, std::vector<Val> xs) const;

  // ---- memory ----
  static bool always(const UOpPtr& valid) { return valid->op == Ops::CONST && valid->const_value() != 0; }

  // Index and validity of a view, with placeholders for the upcast dims.
  std::pair<UOpPtr, UOpPtr> index_of(const UOp* view) const;

  // The index at vector lane 0 when idx steps by exactly 1 along the vector dim and valid does not depend
  // on it (one vector access covers the lanes); nullptr otherwise.
  UOpPtr contiguous_base(const UOpPtr& idx, const UOpPtr& valid, const Combo& c) const;

  // On a GPU, a load (store) that is one scalar per combination but steps by exactly 1 along an upcast dim other
  // than the vector dim (a matmul's A tile along K, while the vector dim runs along N; a tensor core's output
  // pairs) is read (written) as runs of `width` values (float4, half8: one 16-byte access instead of four or
  // eight), each loaded value a GEP of its run's load.
  struct AccessRun {
    size_t ua = 0;      // the upcast dim (ua_ index) the run steps along
    int64_t width = 1;  // 1: no runs
  };
  AccessRun access_run(Ops op, const UOpPtr& idx, const UOpPtr& valid, uint64_t mask, DType dt) const;
  // Whether idx gives every combination of the mask's upcast values its own address (then stores may be
  // grouped into runs in any order).
  bool distinct_addresses(const UOpPtr& idx, uint64_t mask) const;
  // The vector store of the run starting at combination `start`, or nullptr where its lanes are not all scalars
  // or its base is not aligned.
  UOpPtr run_store(const UOpPtr& buf, const Info& value, const AccessRun& run, const Combo& start, const UOpPtr& base,
                   const UOpPtr& valid) const;
  // Whether index `base` is a provable multiple of `width` (GPUs read a vector only from an address aligned to
  // its size; buffers themselves start aligned).
  bool aligned(const UOpPtr& base, int64_t width) const;

  // `after`: the node a load of shared memory waits for (its third source); such loads are never gated.
  static UOpPtr load(const UOpPtr& buf, DType dt, const UOpPtr& idx, const UOpPtr& valid, const UOpPtr& alt,
                     const UOpPtr& after = nullptr);

  // ---- expand: a rule per kind of node, each returning the node's UNROLL ----
  // A CONST leaf with a view: its value where the view is valid, 0 elsewhere.
  UOpPtr lower_const(const UOpPtr& u);
  // A LOAD of a global buffer, or of its shared-memory stage: one load per combination of the upcast values its
  // index depends on, a vector along the vector dim where contiguous, runs along another upcast dim (access_run).
  UOpPtr lower_load(const UOpPtr& u);
  // An ALU op, CAST or BITCAST with some source an UNROLL: the op at each combination of its sources' dims.
  UOpPtr lower_alu(const UOpPtr& u) const;
  // REDUCE_AXIS(x, ranges...): x reduced over the UNROLL values, then over the ranges (REDUCE).
  UOpPtr lower_reduce(const UOpPtr& u);
  // STORE(buf, view, value): an UNROLL of the stores at each combination (void), runs along an upcast dim as
  // vector stores where every combination has its own address (access_run).
  UOpPtr lower_store(const UOpPtr& u);
  // SINK of the stores' UNROLLs: SINK(stores..., every DEFINE_GLOBAL).
  UOpPtr lower_sink(const UOpPtr& u) const;

  // ---- tensor cores (codegen/opt/tensor_cores.cpp) ----
  // The ua_ index of the register dim with `role`.
  size_t ua_of(TcRole role) const { return ua_of_dim(k_.dim_of(role)); }
  size_t ua_of_dim(int d) const;

  // A sum of A*B lowered to WMMA: per tile (the non-tensor-core upcast values), one WMMA per unrolled K step
  // chained through its accumulator input, whose 4 lanes are C's registers M_HI * 2 + N_LO; each lane then
  // accumulates over the reduce loops.
  UOpPtr lower_tc_reduce(const UOpPtr& u);

  // C's lanes for one warpgroup tile: WGMMA(A, B in shared memory, C) over the unrolled K values outside the
  // tensor core, the first after a fence, the last waited for (renderer/tensor_core.h).
  std::vector<UOpPtr> wgmma_tile(const TcSetup& tcs, const Combo& base, uint64_t other_unroll, const Staging& staging);

  // C's 4 lanes for one tile: WMMA(A regs, B regs, C) over the unrolled K values outside the tensor core; `regs`:
  // A's and B's expanded loads (read where the operands are not staged).
  std::vector<UOpPtr> wmma_tile(const TensorCore& tc, const Combo& base, uint64_t other_unroll,
                                std::array<size_t, 3> mhi_khi_klo, std::array<const Info*, 2> regs,
                                const Staging* staging);

  // The second stage of a grouped reduce. Every thread holds the partial `part` of its GROUP index; the
  // partials go to shared memory (one slot per thread of the workgroup), and after a barrier each thread
  // reduces the slots of its GROUP siblings: the slot index with the GROUP ids replaced by new loops.
  // (Every thread gets the total; only GROUP index 0 stores it, see lower_store.)
  UOpPtr group_reduce(Ops op, const UOpPtr& part);

  // A buffer of shared memory per store (a second grouped reduce, another output lane, or a reduce that reads
  // this one's total, must not overwrite partials that sibling threads may still be reading); `x` is stored at
  // the thread's slot (where `gate` holds), and the result is the barrier after the store.
  UOpPtr shared_partials(const UOpPtr& x, const UOpPtr& slot, const UOpPtr& gate);
  // The shared buffer behind such a barrier (BARRIER(STORE(temp, ...))).
  static const UOpPtr& partials_buffer(const UOpPtr& barrier) { return barrier->src.at(0)->src.at(0); }
  // The value a sibling stored before `barrier`: the slot with the thread's own index `g` (of the last GROUP
  // dim) replaced by `sibling`.
  UOpPtr load_sibling(const UOpPtr& barrier, const UOpPtr& slot, DType dt, const UOpPtr& g, const UOpPtr& sibling);
  // Every thread reduces the values its siblings stored before `barrier`: the first `n` indices of the last
  // GROUP dim and every index of the others. The last dim's siblings are read `unroll` at a time and combined
  // in a tree (one dependent load-and-add per value kept an H100's rows waiting).
  UOpPtr sibling_reduce(Ops op, const UOpPtr& barrier, const UOpPtr& slot, DType dt, int64_t n);
};

}  // namespace tg::lowering
