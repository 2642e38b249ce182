// CUDARenderer: CUDA C++ for NVRTC (see cuda.h).
//
// Semantics are those of exec_alu, as in the C renderer: float16/bfloat16 values live in float registers
// and are rounded back to their format after every op (buffers hold cuda_fp16/cuda_bf16 types), integer
// division and shifts never trap, float->int conversions out of range give 0. Math functions are CUDA's
// (exp2f, log2f, sinf, sqrtf ...), compiled without fast-math.
#include "renderer/cuda.h"

#include <cstdlib>
#include <utility>

#include "tg/context.h"
#include "tg/error.h"
#include "uop/exec_alu.h"

namespace tg {
namespace {

// float <-> 16-bit conversions and the round-to-format helpers. __double2half / __double2bfloat16 round
// once from double, so sources wider than float never round twice.
const char* kHalfHelpers = R"(__device__ inline float tg_rh(float x) { return __half2float(__float2half_rn(x)); }
)";
const char* kBf16Helpers =
    R"(__device__ inline float tg_rbf(float x) { return __bfloat162float(__float2bfloat16_rn(x)); }
)";

// A double rounded once to dt's 16-bit format (__double2half / __double2bfloat16), as the float that holds it.
std::string from_double16(DType dt, const std::string& x) {
  return dt.scalar == Scalar::Float16 ? "__half2float(__double2half(" + x + "))"
                                      : "__bfloat162float(__double2bfloat16(" + x + "))";
}

}  // namespace

CUDARenderer::CUDARenderer(std::string arch)
    : CStyleRenderer(Dialect{.helper_qualifier = "__device__ inline",
                             .math_prefix = "",
                             .launch_index = {"blockIdx.%", "threadIdx.%", "(blockIdx.%*blockDim.%+threadIdx.%)"},
                             .barrier = "__syncthreads();",
                             .lane_prefix = ".",
                             .lane_names = "xyzw",
                             .vector_open = "make_",
                             .vector_mid = "(",
                             .vector_close = ")",
                             .buffer_types = {{Scalar::Float16, "half"}, {Scalar::BFloat16, "__nv_bfloat16"}}}),
      arch_(std::move(arch)) {
  // MULACC: exec_alu rounds a*b+c once (computed in double); float would round twice. fma is exact too.
  rules_[int(Ops::MULACC)] = [](const UOp& u, const std::vector<std::string>& a,
                                Prelude&) -> std::optional<std::string> {
    const DType dt = u.dtype;
    if (!dt.is_float() || dt.scalar == Scalar::Float64) return std::nullopt;
    std::string e = "fma((double)" + a[0] + ", (double)" + a[1] + ", (double)" + a[2] + ")";
    return is_16bit_float(dt) ? from_double16(dt, e) : "((float)" + e + ")";
  };
  // DOT4: one dp4a (sm_61+), unsigned bytes of a times signed bytes of b.
  rules_[int(Ops::DOT4)] = [this](const UOp&, const std::vector<std::string>& a,
                                  Prelude& pre) -> std::optional<std::string> {
    pre.need("tg_dot4", [&] {
      return dialect_.helper_qualifier +
             " int tg_dot4(int a, int b, int c) {\n"
             "  int d; asm(\"dp4a.u32.s32 %0, %1, %2, %3;\" : \"=r\"(d) : \"r\"(a), \"r\"(b), \"r\"(c)); return d;\n}";
    });
    return "tg_dot4(" + a[0] + ", " + a[1] + ", " + a[2] + ")";
  };
  rules_[int(Ops::IDIV)] = [](const UOp& u, const std::vector<std::string>& a, Prelude&) -> std::optional<std::string> {
    const DType dt = u.dtype;
    if (!is_16bit_float(dt)) return std::nullopt;
    std::string e = "trunc((double)" + a[0] + "/" + a[1] + ")";
    return from_double16(dt, e);
  };
  // 16-bit vectors are structs of the raw values: lanes are float registers, rounded once into them, and read back
  // converted to float.
  rules_[int(Ops::VECTORIZE)] = [this](const UOp& u, const std::vector<std::string>& elems,
                                       Prelude&) -> std::optional<std::string> {
    const DType dt = u.dtype;
    if (!is_16bit_float(dt)) return std::nullopt;
    std::string s = type_name(dt) + "{{";
    for (size_t i = 0; i < elems.size(); i++)
      s += (i ? "," : "") + std::string(is_half(dt) ? "__float2half_rn(" : "__float2bfloat16_rn(") +
           strip_parens(elems[i]) + ")";
    return s + "}}";
  };
  rules_[int(Ops::GEP)] = [](const UOp& u, const std::vector<std::string>& a, Prelude&) -> std::optional<std::string> {
    const DType vec = u.src.at(0)->dtype;
    if (!is_16bit_float(vec)) return std::nullopt;
    return std::string(is_half(vec) ? "__half2float(" : "__bfloat162float(") + a[0] + ".v[" +
           std::to_string(u.get<int64_t>()) + "])";
  };
}

namespace {
int sm_version(const std::string& arch) { return arch.rfind("sm_", 0) == 0 ? std::atoi(arch.c_str() + 3) : 0; }
}  // namespace

bool CUDARenderer::async_copies() const { return sm_version(arch_) >= 80; }

// wgmma exists on sm_90 only (as sm_90a features, which later architectures do not have). WGMMA=0: mma.sync.
static ContextVar WGMMA("WGMMA", 1);
bool CUDARenderer::wgmma() const { return sm_version(arch_) == 90 && WGMMA > 0; }
// TMA=0: WGMMA operands staged by per-thread cp.async instead of bulk tensor copies.
static ContextVar TMA("TMA", 1);
bool CUDARenderer::tma() const { return wgmma() && TMA > 0; }

int64_t CUDARenderer::shared_memory() const {
  const int sm = sm_version(arch_);
  if (sm >= 90) return 227 * 1024;
  if (sm == 80 || sm == 87) return 163 * 1024;
  if (sm >= 86) return 99 * 1024;
  return 48 * 1024;
}

// Every local lives in the launch's dynamic shared memory (the runtime passes shared_bytes of the kernel), so a
// kernel may use more than the 48 KiB a static __shared__ array may; 16-byte aligned for vector copies and
// ldmatrix rows.
std::string CUDARenderer::render_define_local(const std::string& name, DType dt, int64_t, int64_t offset,
                                              Prelude& pre) const {
  pre.need("tg_smem", [] { return "extern __shared__ __align__(1024) unsigned char tg_smem[];"; });
  const std::string T = buffer_type_name(dt);
  return T + "* " + name + " = reinterpret_cast<" + T + "*>(tg_smem + " + std::to_string(offset) + ")";
}

bool CUDARenderer::supports(Ops op) const { return op != Ops::WMMA && CStyleRenderer::supports(op); }

// float2/float4 and 16-bit float vectors (tg_half2/4/8, tg_bf16_2/4/8: one 4- to 16-byte access) for loads and
// stores (aligned: see aligned_vectors); CUDA's vector types have no arithmetic, so ALU ops and accumulators
// work lane by lane (.x .y .z .w, or .v[i] converted to float).
bool CUDARenderer::vectorizes(Ops op, DType scalar) const {
  const bool wide = scalar == dtypes::float32 || scalar == dtypes::float16 || scalar == dtypes::bfloat16;
  return wide && (op == Ops::LOAD || op == Ops::STORE);
}

std::string CUDARenderer::type_name(DType dt) const {
  if (dt.count > 1 && is_16bit_float(dt) && (dt.count == 2 || dt.count == 4 || dt.count == 8))
    return (is_half(dt) ? "tg_half" : "tg_bf16_") + std::to_string(dt.count);  // structs of the raw 16-bit values
  if (dt.count > 1 && (dt.is_bool() || is_16bit_float(dt)))
    throw Error("render: CUDA vectors of " + dt.scalar_type().repr() + " are not supported (devectorize them)");
  if (dt.count == 1 && is_16bit_float(dt)) return "float";  // values in registers; see buffer_type_name
  if (dt.count == 1 && dt.scalar == Scalar::Int64) return "long long";
  if (dt.count == 1 && dt.scalar == Scalar::UInt64) return "unsigned long long";
  return CStyleRenderer::type_name(dt);
}

std::string CUDARenderer::render_cast(DType to, DType from, const std::string& x, Prelude& pre) const {
  if (to == from) return x;
  if (is_16bit_float(to)) {
    // From double or wide integers, round once from double; from float, narrower ints and the other 16-bit
    // format, float holds the value exactly.
    if (needs_double_path(from, to))
      return from_double16(to, "(double)(" + x + ")");
    return (is_half(to) ? "tg_rh((float)(" : "tg_rbf((float)(") + x + "))";
  }
  return CStyleRenderer::render_cast(to, is_16bit_float(from) ? dtypes::float32 : from, x, pre);
}

std::string CUDARenderer::render_bitcast(DType to, DType from, const std::string& x, Prelude& pre) const {
  if (to.itemsize() != from.itemsize())
    throw Error("render: BITCAST between sizes (" + from.repr() + " -> " + to.repr() + ")");
  // 16-bit floats are floats in registers: go through their bit patterns.
  auto bits16 = [&](DType f, const std::string& v) -> std::string {
    if (is_half(f)) return "__half_as_ushort(__float2half_rn(" + v + "))";
    if (is_bf16(f)) return "__bfloat16_as_ushort(__float2bfloat16_rn(" + v + "))";
    return "((unsigned short)(" + v + "))";
  };
  if (is_16bit_float(to) || is_16bit_float(from)) {
    std::string b = bits16(from, x);
    if (is_half(to)) return "__half2float(__ushort_as_half(" + b + "))";
    if (is_bf16(to)) return "__bfloat162float(__ushort_as_bfloat16(" + b + "))";
    return "((" + type_name(to) + ")" + b + ")";
  }
  const std::string T = type_name(to), F = type_name(from);
  pre.need("tg_bitcast", [&] {
    return "template <class T, class F> __device__ inline T tg_bitcast(F f) { T t; memcpy(&t, &f, sizeof(T)); return "
           "t; }";
  });
  return "tg_bitcast<" + T + ", " + F + ">(" + x + ")";
}

std::string CUDARenderer::render_load(const std::string& buf, const std::string& idx, DType dt, Prelude& pre) const {
  if (dt.count > 1) return "(*((" + type_name(dt) + "*)(" + buf + "+" + idx + ")))";
  std::string e = buf + "[" + idx + "]";
  if (is_half(dt)) return "__half2float(" + e + ")";
  if (is_bf16(dt)) return "__bfloat162float(" + e + ")";
  return e;
}

std::string CUDARenderer::render_store(const std::string& buf, const std::string& idx, const std::string& value,
                                       DType dt, Prelude& pre) const {
  if (dt.count > 1) return "*((" + type_name(dt) + "*)(" + buf + "+" + idx + ")) = " + strip_parens(value) + ";";
  if (is_half(dt)) return buf + "[" + idx + "] = __float2half_rn(" + strip_parens(value) + ");";
  if (is_bf16(dt)) return buf + "[" + idx + "] = __float2bfloat16_rn(" + strip_parens(value) + ");";
  return CStyleRenderer::render_store(buf, idx, value, dt, pre);
}

// PDL=0: kernels neither let the next one start early nor wait for the one before (plain stream order).
static ContextVar PDL("PDL", 1);
bool CUDARenderer::dependent_launch() const { return sm_version(arch_) >= 90 && PDL > 0; }

// The next kernel may start (its blocks take the SMs this one leaves free and wait in their own prologue); then this
// one waits until the kernel before it has finished and its writes are visible, before it touches memory.
static const char kDependentPrologue[] =
    "  asm volatile(\"griddepcontrol.launch_dependents;\" ::: \"memory\");\n"
    "  asm volatile(\"griddepcontrol.wait;\" ::: \"memory\");\n";

std::string CUDARenderer::kernel_head(const std::string& name, const std::vector<Param>& params,
                                      const Prelude& pre) const {
  // No __restrict__ where a kernel may start before its predecessor ends: NVCC reads a const __restrict__ buffer
  // through the non-coherent cache (ld.global.nc), which is only right for memory that stays unchanged while the
  // kernel is resident, and a dependent kernel is resident while the one before it still writes (JIT training steps
  // read stale values with it).
  const bool dependent = dependent_launch();
  auto param = [&](const Param& p) {
    if (p.is_tensor_map) return "const __grid_constant__ tg_tensor_map " + p.name;
    if (!p.is_buffer) return type_name(p.dtype) + " " + p.name;
    return std::string(p.written ? "" : "const ") + buffer_type_name(p.dtype.base().scalar_type()) +
           (dependent ? "* " : "* __restrict__ ") + p.name;
  };
  std::string s =
      "extern \"C\" __global__ void __launch_bounds__(" + std::to_string(pre.local_threads) + ") " + name + "(";
  for (size_t i = 0; i < params.size(); i++) s += (i ? ", " : "") + param(params[i]);
  return s + ") {\n" + (dependent ? kDependentPrologue : "");
}

bool CUDARenderer::waits_for_predecessor(const std::string& src) {
  return src.find(kDependentPrologue) != std::string::npos;
}

std::string CUDARenderer::prefix(const Prelude& pre) const {
  std::string s;
  if (pre.inf) s += "#define INFINITY (__int_as_float(0x7f800000))\n";
  if (pre.nan) s += "#define NAN (__int_as_float(0x7fffffff))\n";
  if (pre.half) s += std::string("#include <cuda_fp16.h>\n") + kHalfHelpers;
  if (pre.bf16) s += std::string("#include <cuda_bf16.h>\n") + kBf16Helpers;
  for (DType v : pre.vector_types)  // 16-bit vectors: aligned structs, loaded and stored in one access
    if (v.count > 1 && is_16bit_float(v)) {
      const std::string T = is_half(v) ? "half" : "__nv_bfloat16";
      s += "struct __align__(" + std::to_string(2 * v.count) + ") " + type_name(v) + " { " + T + " v[" +
           std::to_string(v.count) + "]; };\n";
    }
  return s + CStyleRenderer::prefix(pre);
}

}  // namespace tg
