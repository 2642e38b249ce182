#pragma once
// Shared-memory staging of a reduce's operands (GPU renderers with async_copies()): the A and B of a tensor
// core, or the loads of a matmul-shaped reduce that threads of a workgroup share.
//
// Without it every thread reads its operands straight from global memory. With it, each reduce step's tile of
// an operand (the elements the workgroup reads in one iteration of the reduce loop) is copied to shared memory
// by the whole workgroup, 16 bytes per thread and copy (cp.async, which does not wait for the data), S steps
// ahead of its use: a ring of S stages per operand. The threads then read their values from shared memory: a
// tensor core's warps with LDMATRIX, one instruction for a whole A fragment (8 registers) or two B fragments,
// other kernels with plain loads (the lowerer's, vectorized where they are contiguous).
//
//   before the loop:  copy steps 0 .. S-2 into stages 0 .. S-2, one commit each
//   each step r:      wait until step r has landed (at most S-2 groups in flight); BARRIER (everyone's copies
//                     of step r are visible, and everyone is done reading stage (r-1) % S);
//                     copy step r+S-1 into stage (r+S-1) % S (= the one read in step r-1), commit;
//                     LDMATRIX from stage r % S; the WMMAs
//
// With deferred WGMMAs (deferred(), Hopper) a step's wgmmas are still running when the next step begins, so the
// copies run one step less ahead (S-2: steps 0 .. S-3 before the loop, step r+S-2 into stage (r+S-2) % S, whose
// wgmmas, step r-2's, the wait at step r-1's end saw done).
//
// A tile's layout in shared memory: its dims ordered by their stride in global memory, the innermost run that
// is contiguous there kept contiguous (the rows the copies write 16 bytes at a time), rows padded so that
// their pitch is an odd multiple of 16 bytes (the 8 rows an LDMATRIX reads hit 8 different bank groups).
// LDMATRIX reads row pairs (K contiguous, as A of a row-major x or B of x @ w.T) or, with .trans, column pairs
// (M or N contiguous, as B of a row-major w). An operand whose view is masked, stacked, not 16-byte aligned
// or whose tile does not split into 16-byte copies over the workgroup is not staged (nor are the others).
//
// Where the renderer has bulk tensor copies (Renderer::tma, Hopper) and both WGMMA operands take the 128-byte
// swizzle, one thread copies a whole stage with TMA_LOADs instead (codegen/staging_tma.cpp): each operand's tile
// is one or a few boxes of a tensor map, and a barrier per stage (MBAR_*) counts their bytes:
//
//   before the loop:  thread 0 sets up S barriers; BARRIER; thread 0 announces and copies steps 0 .. ahead-1
//   each step r:      wait for barrier r % S's phase (r / S) % 2; BARRIER (everyone is done reading the stage
//                     the copies overwrite); thread 0 announces and copies step r+ahead; the WGMMAs
//
// On Hopper (Renderer::wgmma) a tensor-core kernel shaped for it is staged for WGMMA instead: the warpgroup's
// op reads A and B straight from shared memory, laid out in core matrices (renderer/tensor_core.h): a core
// matrix is (K_LO, t) x g (K-major: the operand is contiguous along K in global memory) or g x (K_LO, t)
// (MN-major), K_HI steps to the next core matrix along K, and M_HI then the warps (A), or the n-tile dim (B),
// along M or N. The shape it needs: a LOCAL dim of warps along M right above M_HI (a multiple of 4, the
// innermost warp dim: a warpgroup is 4 warps of consecutive ids) and an UPCAST dim of n-tiles along N right
// above t (n = 8 x its size, at most 256). The copies then write one core-matrix row each, 8 consecutive rows
// by 8 consecutive threads (conflict-free).
#include <array>
#include <optional>
#include <vector>

#include "codegen/kernel.h"
#include "uop/uop.h"

namespace tg {

// What the lowerer knows about the kernel's dims, and the operands to stage.
struct StagingInput {
  const Kernel& k;
  const std::vector<UOpPtr>& dims;  // per dim of the full shape: SPECIAL, RANGE, or an upcast dim's placeholder
  UOpPtr reduce_range;              // the kernel's one reduce loop
  std::vector<size_t> views;        // the operands' views (Kernel::sts() indices); a tensor core's: A, B
  std::vector<UOpPtr> bufs;         // their DEFINE_GLOBALs
};

class Staging {
 public:
  // The staging plan and its copies, or nullopt when the kernel cannot take one (or STAGES=0). With a tensor
  // core, fragments come from LDMATRIX (regs); without, index() gives each operand's address in shared memory.
  static std::optional<Staging> plan(const StagingInput& in);
  // Whether the kernel's tensor core reads fragments (LDMATRIX, WGMMA) of the staged tiles: 16-bit inputs.
  static bool fragments(const Kernel& k);
  // The shared buffer of operand i, and the index of its value in it as an expression of the kernel's dims (in
  // the stage of the current reduce step), for loads that wait for `after()`.
  const UOpPtr& buffer(size_t i) const { return smem_.at(i); }
  const UOpPtr& index(size_t i) const { return index_.at(i); }
  const UOpPtr& after() const { return after_; }
  // The operand of a view, -1 when not staged.
  int operand_of(size_t view) const;

  // An operand's registers for one tile (operand 0: A's 8, 1: B's 4), lanes of one LDMATRIX; they still hold
  // the placeholders of the upcast dims that are not the tensor core's (the lowerer substitutes them).
  // Where B has an upcast dim of even size along N (pair_dim() >= 0), one LDMATRIX x4 loads the B tiles of two
  // neighbouring values 2v, 2v + 1 of it: regs(1) has 8 lanes, those of value 2v + h being 4h .. 4h + 3, and
  // the placeholder of pair_dim() stands for 2v.
  const std::vector<UOpPtr>& regs(int operand) const { return regs_[size_t(operand)]; }
  int pair_dim() const { return pair_dim_; }
  int stages() const { return stages_; }

  // WGMMA staging: the warp dim along M, the n-tile dim along N (a placeholder dim of the lowerer), each operand's
  // core-matrix strides, and its offset in the current stage for the warpgroup's first row and column at K_HI 0
  // (still holding the placeholders of the upcast dims other than the tensor core's and the n-tile dim).
  bool wgmma() const { return wgmma_; }
  // WGMMA_DEFER: each step's wgmmas are waited for one step later (the copies run S-2 steps ahead).
  bool deferred() const { return deferred_; }
  // The stages are copied by TMA (see above).
  bool tma() const { return !tma_.empty(); }
  int warp_dim() const { return warp_dim_; }
  // the n-tile dims, innermost first (n = 8 x the product of their sizes; a second one past 64 columns, so the
  // 128-byte swizzle of an N-major B can give each 64 columns their own atom)
  const std::vector<int>& ntile_dims() const { return ntile_dims_; }
  const WgmmaOperand& wgmma_operand(int op) const { return wg_[size_t(op)]; }
  UOpPtr wgmma_offset(const StagingInput& in, int op) const;

 private:
  struct Layout {
    std::vector<int> dims;         // the tile's dims, outermost (largest global stride) first
    std::vector<int64_t> sstride;  // their strides in shared memory
    int64_t run = 0;               // elements of a row: the innermost dims, contiguous in global memory
    int64_t stage = 0;             // elements of one stage (rows x padded pitch)
    int64_t box = 0;               // elements of the tile (rows x run)
    bool trans = false;            // LDMATRIX .trans: the lane dim g is contiguous in shared memory
    bool swizzle = false;          // WGMMA's 128-byte swizzle on the index (renderer/tensor_core.h)
  };
  static std::optional<Layout> layout(const Kernel& k, size_t view, int64_t vec, bool ldmatrix);
  // The core-matrix layout of a WGMMA operand (0: A, 1: B), and its strides.
  static std::optional<std::pair<Layout, WgmmaOperand>> wgmma_layout(const Kernel& k, size_t view, int op,
                                                                     const std::vector<int>& warps,
                                                                     const std::vector<int>& ntile);
  static std::optional<std::pair<Layout, WgmmaOperand>> swizzled_layout(const Kernel& k, size_t view,
                                                                        const std::vector<int>& mn_dims);
  static std::optional<std::pair<Layout, WgmmaOperand>> swizzled_mn_layout(const Kernel& k, size_t view,
                                                                           const std::vector<int>& mn_dims);
  // One TMA operand: its tensor map, and per box of its tile (one or a few) the box's first element in the
  // stage and in the buffer (relative to the tile's first).
  struct TmaOperand {
    UOpPtr map;
    int64_t cols = 0;
    std::vector<int64_t> smem_offset, global_offset;
  };
  static std::optional<TmaOperand> tma_operand(const StagingInput& in, size_t op, const Layout& L);
  bool plan_tma(const StagingInput& in);
  void plan_tma_copies(const StagingInput& in, int64_t steps);
  UOpPtr tma_copies(const StagingInput& in, const UOpPtr& slot, const UOpPtr& step, const UOpPtr& gate,
                    const UOpPtr& after) const;
  bool plan_wgmma(const Kernel& k);
  // the thread's id in its workgroup (the LOCAL dims, the first one outermost)
  static UOpPtr thread_id(const StagingInput& in);
  // x with the reduce loop `r` replaced by `step` (a copy's step)
  static UOpPtr at_step(const UOpPtr& x, const UOpPtr& r, const UOpPtr& step);
  // The steps of plan: each operand's layout in shared memory; the ring's stages and buffers (false: it does not
  // fit); the copies around and in the reduce loop; mma.sync's fragments.
  bool plan_layouts(const StagingInput& in);
  bool plan_stages(const StagingInput& in, int64_t knob);
  void plan_copies(const StagingInput& in, int64_t steps);
  void plan_fragments(const StagingInput& in);
  std::vector<UOpPtr> copies(const StagingInput& in, size_t op, const UOpPtr& slot, const UOpPtr& step,
                             const UOpPtr& gate, const UOpPtr& after) const;
  std::vector<UOpPtr> fragment(const StagingInput& in, int op, const UOpPtr& commit) const;
  UOpPtr stage_index(const StagingInput& in, size_t op) const;

  std::vector<size_t> view_;  // per operand: its view (Kernel::sts() index)
  std::vector<int64_t> vec_;  // per operand: elements of a 16-byte copy
  std::vector<Layout> layout_;
  std::vector<UOpPtr> smem_, index_;
  UOpPtr after_;
  int stages_ = 0;
  int pair_dim_ = -1;
  std::array<std::vector<UOpPtr>, 2> regs_;
  bool wgmma_ = false;
  bool deferred_ = false;
  int warp_dim_ = -1;
  std::vector<int> ntile_dims_;
  std::array<WgmmaOperand, 2> wg_;
  std::vector<TmaOperand> tma_;
  UOpPtr bars_;    // TMA: a barrier per stage (uint64 in shared memory)
  UOpPtr leader_;  // TMA: whether this thread issues the copies (thread 0 of the workgroup)
};

}  // namespace tg
