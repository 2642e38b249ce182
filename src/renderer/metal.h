#pragma once
// MetalRenderer: Metal Shading Language for Apple GPUs, source only (these machines have no Metal compiler or
// runtime; DEV=INTERP EMULATE=METAL renders every kernel as MSL while the interpreter runs it, and DEBUG=4 prints
// the source). A kernel is one `kernel` function whose parameters are the buffers (`device` pointers at
// [[buffer(i)]] in DEFINE_GLOBAL order), the DEFINE_VARs (`constant int&`), then the launch indices:
//
//   kernel void r_64_32(device float* data0 [[buffer(0)]], const device float* data1 [[buffer(1)]],
//                       uint3 tg_gid [[threadgroup_position_in_grid]], uint3 tg_lid [[thread_position_in_threadgroup]],
//                       uint3 tg_tid [[thread_position_in_grid]]) { int gidx0 = (int)tg_gid.x; ... }
//
// A runtime would dispatch spec.global_size threadgroups of spec.local_size threads (dispatchThreadgroups), as CUDA.
//
// Semantics follow exec_alu as far as Metal allows: float16/bfloat16 values are floats rounded back to their format
// after every op (half is Metal's own type; bfloat16 is kept as ushort bits), math is metal::precise (Metal
// compiles with fast math by default), integer division and shifts never trap. Metal has no float64: a kernel
// with doubles is an error, and the conversions the other backends round once through double round once through
// integer arithmetic here (tg_i2f_odd), except a*b+c and float IDIV, computed in float (exec_alu's double would
// round a 16-bit result once, float may round it twice in rare ties).
#include <string>

#include "renderer/cstyle.h"

namespace tg {

class MetalRenderer : public CStyleRenderer {
 public:
  MetalRenderer();
  std::string device() const override { return "METAL"; }
  bool has_local() const override { return true; }
  int64_t max_local_size() const override { return 1024; }      // threads a threadgroup (Apple GPUs)
  int64_t shared_memory() const override { return 32 * 1024; }  // threadgroup memory (Apple GPUs)
  bool supports(Ops op) const override { return op != Ops::WMMA && CStyleRenderer::supports(op); }
  bool supports_dtype(DType dt) const override { return dt.scalar != Scalar::Float64; }
  // Scalar loads and stores: a float4 access needs a pointer cast in the buffer's address space (device or
  // threadgroup), which the renderer is not told; vectors stay lanes (vectorizes() is false).

 protected:
  std::string type_name(DType dt) const override;
  std::string render_cast(DType to, DType from, const std::string& x, Prelude& pre) const override;
  std::string render_bitcast(DType to, DType from, const std::string& x, Prelude& pre) const override;
  std::string render_load(const std::string& buf, const std::string& idx, DType dt, Prelude& pre) const override;
  std::string render_store(const std::string& buf, const std::string& idx, const std::string& value, DType dt,
                           Prelude& pre) const override;
  std::string render_define_local(const std::string& name, DType dt, int64_t size, int64_t offset,
                                  Prelude& pre) const override;
  std::string kernel_head(const std::string& name, const std::vector<Param>& params, const Prelude& pre) const override;
  std::string prefix(const Prelude& pre) const override;
};

}  // namespace tg
