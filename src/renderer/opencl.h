#pragma once
// OpenCLRenderer: OpenCL C 1.2 for clBuildProgram (the CL device, runtime/ops_cl.cpp). A kernel is one
// `__kernel` function whose parameters are the buffers (`__global` pointers, in DEFINE_GLOBAL order), then the
// DEFINE_VARs (int, by value):
//
//   __kernel void r_64_32(__global float* restrict data0, __global const float* restrict data1, int n) {
//     int gidx0 = get_group_id(0); int lidx0 = get_local_id(0); ...
//   }
//
// The runtime enqueues it with local size = spec.local_size and global size = spec.global_size * local size
// (OpenCL counts work items, CUDA blocks). SPECIAL gidxN is get_group_id, lidxN get_local_id, idxN
// get_global_id. Locals are `__local` arrays of the kernel, barriers barrier(CLK_LOCAL_MEM_FENCE).
//
// Semantics are exec_alu's, as in the C and CUDA renderers: float16/bfloat16 buffers hold the 16-bit formats
// (half through vload_half/vstore_half_rte, which OpenCL has without cl_khr_fp16; bfloat16 as ushort bits),
// values live in float registers and are rounded back after every op; FP_CONTRACT is off, so no product is
// fused into a sum the interpreter rounds twice; integer division and shifts never trap. Conversions that must
// round once from double use cl_khr_fp64, which the device is expected to have (float64 tensors need it anyway).
#include <cstdint>
#include <string>

#include "renderer/cstyle.h"

namespace tg {

class OpenCLRenderer : public CStyleRenderer {
 public:
  // What the device allows, read by the runtime from clGetDeviceInfo.
  struct Limits {
    int64_t max_work_group_size = 256;  // CL_DEVICE_MAX_WORK_GROUP_SIZE
    int64_t local_mem_bytes = 0;        // CL_DEVICE_LOCAL_MEM_SIZE
  };
  OpenCLRenderer() : OpenCLRenderer(Limits{}) {}
  explicit OpenCLRenderer(Limits limits);
  std::string device() const override { return "CL"; }
  bool has_local() const override { return true; }
  int64_t max_local_size() const override { return limits_.max_work_group_size; }
  int64_t shared_memory() const override { return limits_.local_mem_bytes; }
  bool supports(Ops op) const override { return op != Ops::WMMA && CStyleRenderer::supports(op); }
  bool vectorizes(Ops op, DType scalar) const override;
  bool vector_width_ok(int width, DType scalar) const override { return width == 2 || width == 4 || width == 8; }
  bool aligned_vectors() const override { return true; }
  // The build options every kernel is compiled with (the compiler's cache key includes them).
  static const char* build_options();

 protected:
  std::string type_name(DType dt) const override;
  std::string render_cast(DType to, DType from, const std::string& x, Prelude& pre) const override;
  std::string render_bitcast(DType to, DType from, const std::string& x, Prelude& pre) const override;
  std::string render_load(const std::string& buf, const std::string& idx, DType dt, Prelude& pre) const override;
  std::string render_store(const std::string& buf, const std::string& idx, const std::string& value, DType dt,
                           Prelude& pre) const override;
  std::string render_define_local(const std::string& name, DType dt, int64_t size, int64_t offset,
                                  Prelude& pre) const override;
  std::string prefix(const Prelude& pre) const override;

 private:
  Limits limits_;
};

}  // namespace tg
