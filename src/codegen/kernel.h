#pragma once
// Kernel: a kernel AST plus one ShapeTracker per buffer view, all reshaped to one full shape. Every dim
// of the full shape has a kind, and the dims are kept in this order of kinds:
//
//   THREAD  (at most one)  split across CPU threads: the lowerer indexes it with SPECIAL core_id
//   LOOP                   an output loop (RANGE); on GPUs the innermost three are the launch grid
//                          (SPECIAL gidx0..2, blockIdx) instead
//   LOCAL                  (GPU) threads of a workgroup: SPECIAL lidx0..2 (threadIdx)
//   GROUP                  (GPU) a reduce dim split across the threads of a workgroup (lidx too): each
//                          thread reduces its part, the partials meet in shared memory after a barrier
//   REDUCE                 a reduce loop (RANGE owned by the REDUCE)
//   UNROLL / UPCAST        not loops: every value of the dim gets its own code ("lanes"). UNROLL dims are
//                          reduced (the unrolled part of a reduce), UPCAST dims are output dims. They stay
//                          in the order they were made; the last UPCAST dim may become a vector (float4).
//
// Optimizations (Opt, as tinygrad's apply_opt) reshape and permute these trackers; the kernel name
// (E_16, r_2, r_64_16_256_4_16_4 ...) is read off the final shape and colored by kind.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "renderer/renderer.h"
#include "renderer/tensor_core.h"
#include "tg/error.h"
#include "uop/uop.h"

namespace tg {

enum class OptOps { UPCAST, UNROLL, LOCAL, GROUP, GROUPTOP, TC, PADTO, NOLOCALS, SWAP, THREAD };
struct Opt {
  OptOps op;
  int axis;
  int amount;
  std::string repr() const;  // Opt(op=OptOps.UPCAST, axis=0, amount=4)
  bool operator==(const Opt&) const = default;
};

// An Opt that does not apply to this kernel (bad axis, amount that does not divide, unsupported op).
struct KernelOptError : Error {
  using Error::Error;
};

enum class AxisKind : uint8_t { THREAD, LOOP, LOCAL, GROUP, REDUCE, UNROLL, UPCAST };

// What a dim is to a tensor core (OptOps.TC, codegen/opt/tensor_cores.cpp): the lane dims (LOCAL: g, t of lane
// 4g + t) and the register dims (UPCAST: M_HI, N_LO; UNROLL: K_HI, K_MID, K_LO) of one warp-wide op.
enum class TcRole : uint8_t { NONE, LANE_G, LANE_T, M_HI, N_LO, K_HI, K_MID, K_LO };
struct TcSetup {
  TensorCore tc;
  size_t a, b;  // the views (sts() indices) of the A and B operands
};

class Kernel {
 public:
  Kernel(const UOpPtr& ast, const Renderer& renderer);

  const UOpPtr& ast() const { return ast_; }
  const Renderer& renderer() const { return renderer_; }
  const Shape& full_shape() const { return full_shape_; }
  const std::vector<AxisKind>& kinds() const { return kinds_; }
  int first_reduce() const;  // index of the first GROUP or REDUCE dim (== the number of output dims)
  int first_upcast() const;  // index of the first UNROLL/UPCAST dim (== shape length when none)
  bool has_reduce() const { return reduce_ != nullptr; }
  const UOp* reduce() const { return reduce_; }
  // REDUCE_AXIS nodes in the AST: more than one in a multi-reduce kernel (softmax's max inside its sum).
  int reduce_count() const { return reduce_count_; }
  const std::vector<ShapeTracker>& sts() const { return sts_; }
  const std::vector<Opt>& applied_opts() const { return applied_; }
  // The tensor core the kernel was given (OptOps.TC), and each dim's role in it (NONE when there is none).
  const std::optional<TcSetup>& tensor_core() const { return tc_; }
  const std::vector<TcRole>& roles() const { return roles_; }
  int dim_of(TcRole role) const;  // the dim with that role, -1 when none
  // Stride of dim d in the last view of tracker i, whatever views lie below it (-1 when that view is masked).
  int64_t last_view_stride(size_t i, int d) const;
  // Stride of dim d in tracker i's only view (0 for a dim of size 1), or -1 when a mask or a view below makes it
  // not a plain stride.
  int64_t stride_of(size_t i, int d) const;
  // The tracker index (into sts()) of one of the AST's VIEW nodes; sts().size() when it is not one.
  size_t view_index(const UOp* view) const;
  // The AST's VIEW nodes, parallel to sts() (the output's first), and whether view i is a LOAD's (not the store's
  // or a CONST's).
  const std::vector<const UOp*>& views() const { return views_; }
  bool is_load(size_t i) const { return is_load_.at(i); }
  // Whether some load does not move along output dim d (a matmul's B along M): upcasting d shares that load.
  bool is_expanded_in_some_load(int d) const;
  // Product of the UNROLL/UPCAST dims: how many copies of the body the lowerer writes (before vectors).
  int64_t upcast_size() const;
  int64_t max_upcast() const;
  int64_t local_size() const;  // threads of one workgroup: the product of the LOCAL and GROUP dims

  // Apply one optimization (tinygrad's apply_opt). Axis numbering:
  //   UPCAST, THREAD, LOCAL: an index into full_shape() that must be a LOOP dim.
  //   UNROLL, GROUP, GROUPTOP: the n-th reduce dim (axis 0 is full_shape()[first_reduce()]).
  //   SWAP: exchanges the LOOP dims `axis` and `amount` (the order of the output loops), or two LOCAL dims that
  //         are not a tensor core's lanes (which one is threadIdx.y, which threadIdx.z).
  //   PADTO: an index into full_shape() (a LOOP or REDUCE dim), padded up to a multiple of `amount`.
  // amount 0 means the whole dim. THREAD splits the dim as (amount, size/amount): thread t takes the
  // t-th contiguous chunk. Throws KernelOptError (the kernel is unchanged) when the opt does not apply.
  void apply_opt(const Opt& opt);
  void apply_opts(const std::vector<Opt>& opts) {
    for (auto& o : opts) apply_opt(o);
  }

  // The AST with every VIEW replaced by this kernel's (reshaped) tracker and the reduce axes renumbered
  // (all REDUCE and UNROLL dims).
  UOpPtr optimized_ast() const;
  // The dim the lowerer makes a vector (or lanes of one): the last UPCAST dim when the output is
  // contiguous along it and its size is 2, 4, 8 or 16; -1 when none. Fixed by the kernel, so a renderer
  // without vectors computes exactly the same lanes.
  int vector_dim() const;
  bool some_load_contiguous_along(int d) const;
  // "r_2", "E_16": the plain name (not yet made unique) and the colored one for DEBUG output.
  std::string name() const;
  std::string colored_name() const;

 private:
  UOpPtr ast_;
  const Renderer& renderer_;
  std::vector<const UOp*> views_;  // the AST's VIEW nodes, output first, in a fixed order
  std::vector<ShapeTracker> sts_;  // their trackers, as reshaped by the kernel
  std::vector<bool> is_load_;      // per view: it is a LOAD's (not the store's or a CONST's)
  const UOp* reduce_ = nullptr;
  int reduce_count_ = 0;
  Shape full_shape_;
  std::vector<AxisKind> kinds_;
  std::vector<TcRole> roles_;  // parallel to kinds_
  std::optional<TcSetup> tc_;
  std::vector<Opt> applied_;

  void permute_reduce_last();
  void merge_dims();
  void drop_ones();
  // Split dim d into (size/amount, amount) (or (amount, size/amount) when top) and give the part of size
  // `amount` the kind `kind`; then restore the order of kinds.
  void shift_to(int d, int64_t amount, bool top, AxisKind kind, TcRole role = TcRole::NONE);
  // OptOps.TC (codegen/opt/tensor_cores.cpp): the matmul's M, N, K dims split into a warp's lanes and registers,
  // A's and B's views swizzled to the tensor core's register layout. Throws KernelOptError when it does not apply.
  void apply_tc(const Opt& opt);
  void split_tc_dims(const TensorCore& tc, size_t ia, size_t ib, int m, int n, int k);
  // OptOps.PADTO (codegen/opt/padto.cpp): pad dim `axis` of every view up to a multiple of `amount`.
  void apply_padto(const Opt& opt);
  // GPUs (from the constructor): every symbolic output dim padded to its largest size (a launch size is fixed when
  // the kernel is compiled); the padding's mask ends at the symbolic size, so its threads neither read nor write.
  // Then opts may split it like any other dim.
  void pad_symbolic_outputs();
};

// ALLOW_TF32=1: float32 matmuls may take tf32 tensor cores (10-bit mantissas in the products). It changes what a
// kernel computes, so the method cache keys on it.
bool allow_tf32();

}  // namespace tg
