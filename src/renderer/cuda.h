#pragma once
// CUDARenderer: CUDA C++ for NVRTC. A kernel is one `extern "C" __global__` function whose parameters are
// the buffers (device pointers, in DEFINE_GLOBAL order), the DEFINE_VARs (int, by value), then the TENSOR_MAPs
// (a 128-byte tg_tensor_map each, by value, in their order: renderer/tensor_map.h):
//
//   extern "C" __global__ void __launch_bounds__(128) r_64_32(float* data0, const float* data1, int n) {
//     int gidx0 = blockIdx.x; int lidx0 = threadIdx.x; ...
//   }
//
// The runtime launches it with grid = spec.global_size (blocks) and block = spec.local_size (threads), and
// passes cuLaunchKernel's kernelParams as pointers to each argument in that order. SPECIAL gidxN is
// blockIdx, lidxN threadIdx, idxN the absolute thread id (blockIdx * blockDim + threadIdx).
//
// half and bfloat16 are cuda_fp16.h / cuda_bf16.h types (the source includes them; NVRTC needs the
// toolkit's include folder on its path, see CUDARenderer::include_dir).
#include <string>

#include "renderer/cstyle.h"
#include "renderer/matrix_syntax.h"

namespace tg {

class CUDARenderer : public CStyleRenderer, private MatrixSyntax {
 public:
  using Prelude = CStyleRenderer::Prelude;
  // arch: the target, "sm_90" for H100/H200; only used to pick what the source may use.
  explicit CUDARenderer(std::string arch = "sm_90");
  std::string device() const override { return "CUDA"; }
  bool has_local() const override { return true; }
  int64_t max_local_size() const override { return kMaxLocal; }
  bool supports(Ops op) const override;
  bool vectorizes(Ops op, DType scalar) const override;
  // float2/float4, and 2, 4 or 8 16-bit floats (tg_half8 ...: 4, 8 or 16 bytes)
  bool vector_width_ok(int width, DType scalar) const override {
    return (width == 2 || width == 4 || (width == 8 && scalar.itemsize() == 2));
  }
  bool aligned_vectors() const override { return true; }
  const std::vector<TensorCore>& tensor_cores() const override { return cuda_tensor_cores(); }
  const std::string& arch() const { return arch_; }
  int64_t shared_memory() const override;  // what a block may opt into on the arch (dynamic shared memory)
  bool async_copies() const override;      // sm_80 and later
  bool wgmma() const override;             // sm_90 (compiled as sm_90a); WGMMA=0 turns it off
  bool tma() const override;               // with wgmma; TMA=0 turns it off
  // sm_90+ (PDL=0 turns it off): programmatic dependent launch. A kernel lets the next one in its stream start
  // (its blocks take free SMs and wait), then waits until the one before it has finished and its writes are
  // visible, before touching memory (kernel_head); launched plainly, both instructions do nothing.
  bool dependent_launch() const;
  // Whether a rendered kernel waits for its predecessor, so a runtime may launch it as a programmatic dependent.
  static bool waits_for_predecessor(const std::string& src);
  // Most threads a block may have, and the most threads the heuristics put in one block.
  static constexpr int kMaxLocal = 1024;

 protected:
  std::string type_name(DType dt) const override;
  std::string render_cast(DType to, DType from, const std::string& x, Prelude& pre) const override;
  std::string render_bitcast(DType to, DType from, const std::string& x, Prelude& pre) const override;
  std::string render_load(const std::string& buf, const std::string& idx, DType dt, Prelude& pre) const override;
  std::string render_store(const std::string& buf, const std::string& idx, const std::string& value, DType dt,
                           Prelude& pre) const override;
  std::string render_define_local(const std::string& name, DType dt, int64_t size, int64_t offset,
                                  Prelude& pre) const override;
  // extern "C" __global__, the launch bounds, and the prologue of a dependent launch
  std::string kernel_head(const std::string& name, const std::vector<Param>& params, const Prelude& pre) const override;
  std::string prefix(const Prelude& pre) const override;
  const MatrixSyntax* matrix_syntax() const override { return this; }

  // ---- MatrixSyntax (renderer/cuda_matrix.cpp): mma.sync, cp.async, ldmatrix, wgmma, TMA ----
  std::string wmma(const UOp& u, const std::vector<std::string>& operands, const std::vector<bool>& raw,
                   const std::vector<std::string>& packed, Prelude& pre) const override;
  std::string wmma_tf32(const TensorCore& tc, const std::vector<std::string>& a, Prelude& pre) const;
  std::string raw16_lane(const std::string& vec, int64_t i) const override;
  std::string cp_async(const std::string& dst, const std::string& dst_idx, const std::string& src,
                       const std::string& src_idx, const std::string& gate, const std::string& valid, int64_t n,
                       DType dt) const override;
  std::string async_commit() const override;
  std::string async_wait(int64_t n) const override;
  std::string ldmatrix(const std::string& name, const std::string& local, const std::string& idx,
                       const UOp& u) const override;
  std::string ldmatrix_lane(const std::string& name, int64_t i, DType dt) const override;
  std::string ldmatrix_reg(const std::string& name, int64_t q) const override;
  std::string wgmma_step(const UOp& u, const std::string& name, const std::vector<std::string>& operands, bool in_place,
                         Prelude& pre) const override;
  std::string wgmma_drain(const std::string& name, int lanes) const override;
  std::string bulk_copy(const UOp& u, const std::vector<std::string>& operands, Prelude& pre) const override;

 private:
  std::string arch_;
};

}  // namespace tg
