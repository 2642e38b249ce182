// OpenCLRenderer: OpenCL C for the CL device (see opencl.h).
#include "renderer/opencl.h"

#include "tg/error.h"

namespace tg {
namespace {

// Rounding a double to a narrow float format, bit by bit: the algorithm of exec_alu (and of the C renderer's
// helper), so every backend agrees on subnormals, overflow to inf and NaN. Needs cl_khr_fp64.
const char* kNarrowHelper = R"(inline uint tg_narrow(double x, int E, int M) {
  ulong b = as_ulong(x);
  uint sign = (uint)(b >> 63) << (E + M), exp_all = (1u << E) - 1;
  if (x != x) return sign | (exp_all << M) | (1u << (M - 1));
  int dexp = (int)((b >> 52) & 0x7ff);
  if (dexp == 0x7ff) return sign | (exp_all << M);
  if (dexp == 0) return sign;
  int e = dexp - 1023, bias = (1 << (E - 1)) - 1, min_e = 1 - bias, normal = e >= min_e;
  int shift = 52 - M + (normal ? 0 : min_e - e);
  if (shift > 60) return sign;
  ulong m = ((ulong)1 << 52) | (b & (((ulong)1 << 52) - 1));
  ulong r = m >> shift, rem = m & (((ulong)1 << shift) - 1), mid = (ulong)1 << (shift - 1);
  if (rem > mid || (rem == mid && (r & 1))) r++;
  ulong mag = normal ? ((ulong)(e + bias) << M) + (r - ((ulong)1 << M)) : r;
  if (mag >= ((ulong)exp_all << M)) mag = (ulong)exp_all << M;
  return sign | (uint)mag;
}
)";

// float16: the bits of a float's value rounded to float16 (vstore_half_rte, core OpenCL; a NaN becomes the quiet
// NaN exec_alu makes, whatever the device would keep of its payload), the float a float16 pattern holds, and the
// round trip that keeps a float register inside the format. tg_dh rounds a double once.
const char* kHalfHelpers = R"(inline ushort tg_h_bits(float x) {
  if (x != x) return (ushort)(((as_uint(x) >> 16) & 0x8000u) | 0x7e00u);
  ushort u; vstore_half_rte(x, 0, (half*)&u); return u;
}
inline float tg_h_from_bits(ushort u) { return vload_half(0, (const half*)&u); }
inline float tg_rh(float x) { return tg_h_from_bits(tg_h_bits(x)); }
inline float tg_dh(double x) { return tg_h_from_bits((ushort)tg_narrow(x, 5, 10)); }
)";

// bfloat16 as ushort bits: the top half of a float, rounded to nearest even (NaNs stay quiet NaNs).
const char* kBf16Helpers = R"(inline ushort tg_bf_bits(float x) {
  uint bits = as_uint(x);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return (ushort)((bits >> 16) | 0x40u);
  return (ushort)((bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16);
}
inline float tg_bf_from_bits(ushort b) { return as_float((uint)b << 16); }
inline float tg_rbf(float x) { return tg_bf_from_bits(tg_bf_bits(x)); }
inline float tg_dbf(double x) { return tg_bf_from_bits((ushort)tg_narrow(x, 8, 7)); }
)";

std::string round16(DType dt, const std::string& e) {
  return (dt.scalar == Scalar::Float16 ? "tg_rh(" : "tg_rbf(") + e + ")";
}
std::string round16_from_double(DType dt, const std::string& e) {
  return (dt.scalar == Scalar::Float16 ? "tg_dh(" : "tg_dbf(") + e + ")";
}

}  // namespace

OpenCLRenderer::OpenCLRenderer(Limits limits)
    : CStyleRenderer(
          Dialect{.kernel_prefix = "__kernel ",
                  .buffer_qualifier = "__global ",
                  .helper_qualifier = "inline",
                  .int64_suffix = "L",
                  .math_prefix = "",  // (overloaded by type)
                  .math_float_suffix = false,
                  .launch_index = {"((int)get_group_id(%))", "((int)get_local_id(%))", "((int)get_global_id(%))"},
                  .launch_dims = "012",
                  .barrier = "barrier(CLK_LOCAL_MEM_FENCE);",
                  .lane_prefix = ".s",
                  .lane_names = "0123456789abcdef",
                  .vector_mid = ")(",
                  .vector_close = "))",
                  .strip_vector_elems = true,
                  .buffer_types = gpu_buffer_types()}),
      limits_(limits) {
  // MULACC: exec_alu rounds a*b+c once from double (the product of two floats is exact there).
  rules_[int(Ops::MULACC)] = [](const UOp& u, const std::vector<std::string>& a,
                                Prelude&) -> std::optional<std::string> {
    const DType dt = u.dtype;
    if (dt.count != 1 || !dt.is_float() || dt.scalar == Scalar::Float64) return std::nullopt;
    std::string e = "(((double)" + a[0] + "*" + a[1] + ")+" + a[2] + ")";
    return is_16bit_float(dt) ? round16_from_double(dt, e) : "((float)" + e + ")";
  };
  // IDIV of 16-bit floats: the integer trunc((double)a/b) may be past 2^24, so it rounds once, from double.
  rules_[int(Ops::IDIV)] = [](const UOp& u, const std::vector<std::string>& a, Prelude&) -> std::optional<std::string> {
    if (u.dtype.count != 1 || !is_16bit_float(u.dtype)) return std::nullopt;
    return round16_from_double(u.dtype, "trunc((double)" + a[0] + "/" + a[1] + ")");
  };
}

// Division and square root correctly rounded (OpenCL allows 2.5 and 3 ulp otherwise), as exec_alu computes them;
// no warnings (PoCL prints its compiler's to stderr; generated code is checked by tests, not by warnings).
const char* OpenCLRenderer::build_options() { return "-cl-std=CL1.2 -cl-fp32-correctly-rounded-divide-sqrt -w"; }

// float2/4/8 and float16 loads and stores (vloadN / vload_halfN, whose float16 lanes arrive as floats); ALU ops
// work lane by lane.
bool OpenCLRenderer::vectorizes(Ops op, DType scalar) const {
  return (scalar == dtypes::float32 || scalar == dtypes::float16) && (op == Ops::LOAD || op == Ops::STORE);
}

std::string OpenCLRenderer::type_name(DType dt) const {
  if (dt.count > 1) {
    if (dt.scalar == Scalar::Float16 || dt.scalar == Scalar::Float32) return "float" + std::to_string(dt.count);
    if (dt.is_bool() || is_bf16(dt))
      throw Error("render: CL vectors of " + dt.scalar_type().repr() + " are not supported (devectorize them)");
    return CStyleRenderer::type_name(dt);  // int4, uchar16 ... (OpenCL's own names)
  }
  return gpu_scalar_name(dt);
}

std::string OpenCLRenderer::render_cast(DType to, DType from, const std::string& x, Prelude& pre) const {
  if (to == from) return x;
  if (is_16bit_float(to)) {
    // From double and wide integers, round once from double; float holds every other source exactly.
    if (needs_double_path(from, to)) return round16_from_double(to, "(double)(" + x + ")");
    return round16(to, "(float)(" + x + ")");
  }
  return CStyleRenderer::render_cast(to, is_16bit_float(from) ? dtypes::float32 : from, x, pre);
}

std::string OpenCLRenderer::render_bitcast(DType to, DType from, const std::string& x, Prelude& pre) const {
  if (to.itemsize() != from.itemsize())
    throw Error("render: BITCAST between sizes (" + from.repr() + " -> " + to.repr() + ")");
  if (is_16bit_float(to) || is_16bit_float(from)) {  // 16-bit floats are floats in registers: go through bits
    std::string bits = is_half(from)   ? "tg_h_bits(" + x + ")"
                       : is_bf16(from) ? "tg_bf_bits(" + x + ")"
                                       : "((ushort)(" + x + "))";
    if (is_half(to)) return "tg_h_from_bits(" + bits + ")";
    if (is_bf16(to)) return "tg_bf_from_bits(" + bits + ")";
    return "((" + type_name(to) + ")" + bits + ")";
  }
  if (to.is_bool() || from.is_bool()) return "((" + type_name(to) + ")(" + x + "))";  // one byte either way
  return "as_" + type_name(to) + "((" + type_name(from) + ")(" + x + "))";
}

std::string OpenCLRenderer::render_load(const std::string& buf, const std::string& idx, DType dt, Prelude&) const {
  const std::string n = std::to_string(dt.count);
  if (dt.count > 1) return (is_half(dt) ? "vload_half" : "vload") + n + "(0, " + buf + "+" + idx + ")";
  if (is_half(dt)) return "vload_half(" + idx + ", " + buf + ")";
  if (is_bf16(dt)) return "tg_bf_from_bits(" + buf + "[" + idx + "])";
  return buf + "[" + idx + "]";
}

std::string OpenCLRenderer::render_store(const std::string& buf, const std::string& idx, const std::string& value,
                                         DType dt, Prelude& pre) const {
  const std::string v = strip_parens(value), n = std::to_string(dt.count);
  if (dt.count > 1)
    return (is_half(dt) ? "vstore_half" + n + "_rte(" : "vstore" + n + "(") + v + ", 0, " + buf + "+" + idx + ");";
  if (is_half(dt)) return "vstore_half_rte(" + v + ", " + idx + ", " + buf + ");";
  if (is_bf16(dt)) return buf + "[" + idx + "] = tg_bf_bits(" + v + ");";
  return CStyleRenderer::render_store(buf, idx, value, dt, pre);
}

// A __local array of half needs cl_khr_fp16 (a pointer to half does not): float16 locals are ushort bits seen
// through a half pointer, as a buffer is.
std::string OpenCLRenderer::render_define_local(const std::string& name, DType dt, int64_t size, int64_t,
                                                Prelude&) const {
  const std::string n = "[" + std::to_string(size) + "] __attribute__((aligned(16)))";
  if (is_half(dt))
    return "__local ushort " + name + "_bits" + n + "; __local half* " + name + " = (__local half*)" + name + "_bits";
  return "__local " + buffer_type_name(dt) + " " + name + n;
}

// No contraction of a*b+c into one fma (exec_alu rounds both), doubles for the conversions that round once
// from double and for float64 tensors.
std::string OpenCLRenderer::prefix(const Prelude& pre) const {
  std::string s = "#pragma OPENCL FP_CONTRACT OFF\n#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n";
  if (pre.half || pre.bf16) s += kNarrowHelper;
  if (pre.half) s += kHalfHelpers;
  if (pre.bf16) s += kBf16Helpers;
  return s + CStyleRenderer::prefix(pre);
}

}  // namespace tg
