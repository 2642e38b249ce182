// MetalRenderer: Metal Shading Language, source only (see metal.h).
#include "renderer/metal.h"

#include "tg/error.h"

namespace tg {
namespace {

// An integer as a float rounded to odd at 24 bits (the bits shifted out leave a sticky 1): rounding that float
// once more to float16 or bfloat16 (11 or 8 bits) gives the integer rounded once, as exec_alu's double does.
const char* kIntToFloatOdd = R"(inline float tg_u2f_odd(ulong m) {
  if (m < (1ul << 24)) return (float)m;
  int s = 40 - (int)clz(m);
  ulong r = m >> s;
  if ((r << s) != m) r |= 1ul;
  return ldexp((float)r, s);
}
inline float tg_i2f_odd(long x) { return x < 0 ? -tg_u2f_odd((ulong)0 - (ulong)x) : tg_u2f_odd((ulong)x); }
)";

// float16 is Metal's half (conversions round to nearest even); bfloat16 is kept as ushort bits.
const char* kHalfHelpers = "inline float tg_rh(float x) { return (float)(half)x; }\n";
const char* kBf16Helpers = R"(inline ushort tg_bf_bits(float x) {
  uint bits = as_type<uint>(x);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return (ushort)((bits >> 16) | 0x40u);
  return (ushort)((bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16);
}
inline float tg_bf_from_bits(ushort b) { return as_type<float>((uint)b << 16); }
inline float tg_rbf(float x) { return tg_bf_from_bits(tg_bf_bits(x)); }
)";

// float -> integer: 0 for NaN and values past 64 bits, wrapped as exec_alu's (in float: Metal has no double).
const char* kFtoi = R"(inline long tg_ftoi(float x) {
  if (!(x > -0x1p64f && x < 0x1p64f)) return 0;
  float t = trunc(x);
  if (t >= 0x1p63f) return (long)(ulong)t;
  if (t < -0x1p63f) return (long)((ulong)0 - (ulong)(-t));
  return (long)t;
}
)";

std::string round16(DType dt, const std::string& e) {
  return (dt.scalar == Scalar::Float16 ? "tg_rh(" : "tg_rbf(") + e + ")";
}

}  // namespace

// Metal compiles with fast math unless told otherwise; metal::precise has the IEEE-accurate functions.
MetalRenderer::MetalRenderer()
    : CStyleRenderer(Dialect{.helper_qualifier = "inline",
                             .int64_suffix = "L",  // (long is 64 bits in Metal)
                             .math_prefix = "precise::",
                             .math_float_suffix = false,
                             .launch_index = {"(int)tg_gid.%", "(int)tg_lid.%", "(int)tg_tid.%"},
                             .barrier = "threadgroup_barrier(mem_flags::mem_threadgroup);",
                             .lane_prefix = ".",
                             .lane_names = "xyzw",
                             .vector_open = "",
                             .vector_mid = "(",
                             .vector_close = ")",
                             .strip_vector_elems = true,
                             .buffer_types = gpu_buffer_types()}) {
  // a*b+c and float IDIV in float, rounded once to float (see metal.h)
  rules_[int(Ops::MULACC)] = [](const UOp& u, const std::vector<std::string>& a,
                                Prelude&) -> std::optional<std::string> {
    if (u.dtype.count != 1 || !u.dtype.is_float()) return std::nullopt;
    std::string e = "fma(" + a[0] + ", " + a[1] + ", " + a[2] + ")";
    return is_16bit_float(u.dtype) ? round16(u.dtype, e) : e;
  };
  rules_[int(Ops::IDIV)] = [](const UOp& u, const std::vector<std::string>& a, Prelude&) -> std::optional<std::string> {
    if (u.dtype.count != 1 || !u.dtype.is_float()) return std::nullopt;
    std::string e = "trunc(" + a[0] + "/" + a[1] + ")";
    return is_16bit_float(u.dtype) ? round16(u.dtype, e) : e;
  };
}

std::string MetalRenderer::type_name(DType dt) const {
  if (dt.scalar == Scalar::Float64) throw Error("render: METAL has no float64 (" + dt.repr() + ")");
  if (dt.count > 1) {
    if (dt.scalar != Scalar::Float32 || dt.count > 4)
      throw Error("render: METAL vectors of " + dt.repr() + " are not supported (devectorize them)");
    return "float" + std::to_string(dt.count);
  }
  return gpu_scalar_name(dt);
}

std::string MetalRenderer::render_cast(DType to, DType from, const std::string& x, Prelude& pre) const {
  if (to == from) return x;
  if (to.count > 1 || from.count > 1) throw Error("render: vector CAST " + from.repr() + " -> " + to.repr());
  if (is_16bit_float(to)) {
    if (needs_double_path(from, to)) {  // wide integers: round once, through a float rounded to odd
      pre.need("tg_u2f_odd", [] { return std::string(kIntToFloatOdd); });
      return round16(to, std::string(from.is_unsigned() ? "tg_u2f_odd((ulong)(" : "tg_i2f_odd((long)(") + x + "))");
    }
    return round16(to, "(float)(" + x + ")");
  }
  if (from.is_float() && to.is_int()) {
    pre.need("tg_ftoi", [] { return std::string(kFtoi); });
    return "((" + type_name(to) + ")tg_ftoi(" + x + "))";
  }
  return "((" + type_name(to) + ")(" + x + "))";
}

std::string MetalRenderer::render_bitcast(DType to, DType from, const std::string& x, Prelude&) const {
  if (to.itemsize() != from.itemsize())
    throw Error("render: BITCAST between sizes (" + from.repr() + " -> " + to.repr() + ")");
  if (is_16bit_float(to) || is_16bit_float(from)) {  // 16-bit floats are floats in registers: go through bits
    std::string bits = is_half(from)   ? "as_type<ushort>((half)(" + x + "))"
                       : is_bf16(from) ? "tg_bf_bits(" + x + ")"
                                       : "((ushort)(" + x + "))";
    if (is_half(to)) return "((float)as_type<half>(" + bits + "))";
    if (is_bf16(to)) return "tg_bf_from_bits(" + bits + ")";
    return "((" + type_name(to) + ")" + bits + ")";
  }
  return "as_type<" + type_name(to) + ">((" + type_name(from) + ")(" + x + "))";
}

std::string MetalRenderer::render_load(const std::string& buf, const std::string& idx, DType dt, Prelude& pre) const {
  if (dt.count > 1) throw Error("render: METAL vector load of " + dt.repr() + " (Metal kernels are scalar here)");
  std::string e = buf + "[" + idx + "]";
  if (is_half(dt)) return "((float)" + e + ")";
  if (is_bf16(dt)) return "tg_bf_from_bits(" + e + ")";
  return e;
}

std::string MetalRenderer::render_store(const std::string& buf, const std::string& idx, const std::string& value,
                                        DType dt, Prelude& pre) const {
  if (dt.count > 1) throw Error("render: METAL vector store of " + dt.repr() + " (Metal kernels are scalar here)");
  const std::string v = strip_parens(value);
  if (is_half(dt)) return buf + "[" + idx + "] = (half)(" + v + ");";
  if (is_bf16(dt)) return buf + "[" + idx + "] = tg_bf_bits(" + v + ");";
  return CStyleRenderer::render_store(buf, idx, value, dt, pre);
}

std::string MetalRenderer::render_define_local(const std::string& name, DType dt, int64_t size, int64_t,
                                               Prelude&) const {
  return "threadgroup " + buffer_type_name(dt) + " " + name + "[" + std::to_string(size) + "]";
}

std::string MetalRenderer::kernel_head(const std::string& name, const std::vector<Param>& params,
                                       const Prelude&) const {
  std::string s = "kernel void " + name + "(";
  for (size_t i = 0; i < params.size(); i++) {
    const Param& p = params[i];
    if (p.is_tensor_map) throw Error("render: METAL kernel parameter " + p.name + " is a tensor map (CUDA only)");
    const std::string at = " [[buffer(" + std::to_string(i) + ")]], ";
    if (p.is_buffer)
      s += std::string(p.written ? "" : "const ") + "device " + buffer_type_name(p.dtype.base().scalar_type()) + "* " +
           p.name + at;
    else
      s += "constant " + type_name(p.dtype) + "& " + p.name + at;
  }
  return s +
         "uint3 tg_gid [[threadgroup_position_in_grid]], uint3 tg_lid [[thread_position_in_threadgroup]], "
         "uint3 tg_tid [[thread_position_in_grid]]) {\n";
}

std::string MetalRenderer::prefix(const Prelude& pre) const {
  // (Metal compiles with fast math and contraction unless told: MSL 3.2's pragmas keep each op IEEE-rounded)
  std::string s =
      "#include <metal_stdlib>\nusing namespace metal;\n#pragma METAL fp math_mode(safe)\n#pragma METAL fp "
      "contract(off)\n";
  if (pre.half) s += kHalfHelpers;
  if (pre.bf16) s += kBf16Helpers;
  return s + CStyleRenderer::prefix(pre);
}

}  // namespace tg
