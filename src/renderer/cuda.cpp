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

}  // namespace

CUDARenderer::CUDARenderer(std::string arch) : arch_(std::move(arch)) {}

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

std::string CUDARenderer::math_fn(const char* base, DType dt) const {
  std::string b = base;
  if (b.rfind("__builtin_", 0) == 0) b = b.substr(10);
  return b + (dt.scalar == Scalar::Float64 ? "" : "f");
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

std::string CUDARenderer::buffer_type_name(DType dt) const {
  if (is_half(dt)) return "half";
  if (is_bf16(dt)) return "__nv_bfloat16";
  return type_name(dt);
}

std::string CUDARenderer::render_alu(const UOp& u, const std::vector<std::string>& a, Prelude& pre) const {
  DType dt = u.dtype;
  // MULACC: exec_alu rounds a*b+c once (computed in double); float would round twice. fma is exact too.
  if (u.op == Ops::MULACC && dt.is_float() && dt.scalar != Scalar::Float64) {
    std::string e = "fma((double)" + a[0] + ", (double)" + a[1] + ", (double)" + a[2] + ")";
    if (is_half(dt)) return "__half2float(__double2half(" + e + "))";
    if (is_bf16(dt)) return "__bfloat162float(__double2bfloat16(" + e + "))";
    return "((float)" + e + ")";
  }
  // DOT4: one dp4a (sm_61+), unsigned bytes of a times signed bytes of b.
  if (u.op == Ops::DOT4) {
    pre.need("tg_dot4", [&] {
      return helper_qualifier() +
             " int tg_dot4(int a, int b, int c) {\n"
             "  int d; asm(\"dp4a.u32.s32 %0, %1, %2, %3;\" : \"=r\"(d) : \"r\"(a), \"r\"(b), \"r\"(c)); return d;\n}";
    });
    return "tg_dot4(" + a[0] + ", " + a[1] + ", " + a[2] + ")";
  }
  if (u.op == Ops::IDIV && is_16bit_float(dt)) {
    std::string e = "trunc((double)" + a[0] + "/" + a[1] + ")";
    return is_half(dt) ? "__half2float(__double2half(" + e + "))" : "__bfloat162float(__double2bfloat16(" + e + "))";
  }
  std::string e = CStyleRenderer::render_alu(u, a, pre);
  if (is_16bit_float(dt) && rounds_16bit(u.op)) return (is_half(dt) ? "tg_rh(" : "tg_rbf(") + strip_parens(e) + ")";
  return e;
}

std::string CUDARenderer::render_cast(DType to, DType from, const std::string& x, Prelude& pre) const {
  if (to == from) return x;
  if (is_16bit_float(to)) {
    // From double or wide integers, round once from double; from float, narrower ints and the other 16-bit
    // format, float holds the value exactly.
    if (needs_double_path(from, to))
      return is_half(to) ? "__half2float(__double2half((double)(" + x + ")))"
                         : "__bfloat162float(__double2bfloat16((double)(" + x + ")))";
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

std::string CUDARenderer::render_vectorize(DType dt, const std::vector<std::string>& elems, Prelude& pre) const {
  if (is_16bit_float(dt)) {  // lanes are float registers: rounded once, into the struct's 16-bit values
    std::string s = type_name(dt) + "{{";
    for (size_t i = 0; i < elems.size(); i++)
      s += (i ? "," : "") + std::string(is_half(dt) ? "__float2half_rn(" : "__float2bfloat16_rn(") + strip_parens(elems[i]) + ")";
    return s + "}}";
  }
  std::string s = "make_" + type_name(dt) + "(";
  for (size_t i = 0; i < elems.size(); i++) s += (i ? "," : "") + elems[i];
  return s + ")";
}

// mma.sync m16n8k16 with float32 (or float16) accumulation (renderer/tensor_core.h has the register layout): the
// 16-bit registers go in pairs, the lower index in the low half, as 32-bit registers; a pair an LDMATRIX loaded is
// passed as the register it is.
std::string CUDARenderer::render_wmma(const UOp& u, const std::vector<std::string>& a, const std::vector<bool>& raw,
                                     const std::vector<std::string>& packed, Prelude& pre) const {
  const std::string& name = u.get<std::string>();
  const TensorCore* tc = TensorCore::from_name(name);
  if (!tc || a.size() != size_t(tc->a_regs() + tc->b_regs() + TensorCore::kC))
    throw Error("render: CUDA has no tensor core " + u.arg_repr());
  if (tc->tf32()) return render_wmma_tf32(*tc, a, pre);
  constexpr size_t n16 = 12;  // A's 8 and B's 4 16-bit registers
  if (packed.size() != n16 / 2) throw Error("render: WMMA " + name + " with " + std::to_string(packed.size()) + " pairs");
  const bool bf = tc->in == dtypes::bfloat16;
  const std::string T = bf ? "__nv_bfloat16" : "half", ty = bf ? "bf16" : "f16";
  const std::string pack = bf ? "tg_pack_bf16" : "tg_pack_f16";
  pre.need(pack, [&] {
    const std::string T2 = bf ? "__nv_bfloat162" : "__half2", mk = bf ? "__halves2bfloat162" : "__halves2half2";
    return "__device__ inline unsigned " + pack + "(" + T + " lo, " + T + " hi) { " + T2 + " v = " + mk +
           "(lo, hi); return *reinterpret_cast<unsigned*>(&v); }";
  });
  pre.need(name, [&] {
    if (tc->acc == dtypes::float16)  // C and D as two registers of half pairs
      return "__device__ inline tg_half4 " + name +
             "(unsigned a0, unsigned a1, unsigned a2, unsigned a3, unsigned b0, unsigned b1, float c0, float c1, float c2, "
             "float c3) {\n"
             "  unsigned d01 = tg_pack_f16(__float2half_rn(c0), __float2half_rn(c1)), d23 = "
             "tg_pack_f16(__float2half_rn(c2), __float2half_rn(c3));\n"
             "  asm(\"mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16 {%0, %1}, {%2, %3, %4, %5}, {%6, %7}, {%0, %1};\"\n"
             "      : \"+r\"(d01), \"+r\"(d23) : \"r\"(a0), \"r\"(a1), \"r\"(a2), \"r\"(a3), \"r\"(b0), \"r\"(b1));\n"
             "  tg_half4 d;\n  memcpy(&d.v[0], &d01, 4);\n  memcpy(&d.v[2], &d23, 4);\n  return d;\n}";
    return "__device__ inline float4 " + name +
           "(unsigned a0, unsigned a1, unsigned a2, unsigned a3, unsigned b0, unsigned b1, float c0, float c1, float c2, "
           "float c3) {\n"
           "  float4 d = make_float4(c0, c1, c2, c3);\n"
           "  asm(\"mma.sync.aligned.m16n8k16.row.col.f32." + ty + "." + ty + ".f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
           "{%8, %9}, {%0, %1, %2, %3};\"\n"
           "      : \"+f\"(d.x), \"+f\"(d.y), \"+f\"(d.z), \"+f\"(d.w)\n"
           "      : \"r\"(a0), \"r\"(a1), \"r\"(a2), \"r\"(a3), \"r\"(b0), \"r\"(b1));\n"
           "  return d;\n}";
  });
  auto reg16 = [&](size_t k) {
    std::string x = strip_parens(a[k]);
    return raw[k] ? x : (bf ? "__float2bfloat16_rn(" : "__float2half_rn(") + x + ")";
  };
  std::string call = name + "(";
  for (size_t p = 0; p < n16 / 2; p++)
    call += (p ? ", " : "") + (packed[p].empty() ? pack + "(" + reg16(2 * p) + ", " + reg16(2 * p + 1) + ")" : packed[p]);
  for (size_t k = n16; k < a.size(); k++) call += ", " + strip_parens(a[k]);
  return call + ")";
}

// mma.sync m16n8k8 on float32 values rounded to tf32 (cvt.rna: to nearest, ties away from zero).
std::string CUDARenderer::render_wmma_tf32(const TensorCore& tc, const std::vector<std::string>& a, Prelude& pre) const {
  const std::string name = tc.name();
  pre.need("tg_tf32", [] {
    return "__device__ inline unsigned tg_tf32(float x) { unsigned r; asm(\"cvt.rna.tf32.f32 %0, %1;\" : \"=r\"(r) : "
           "\"f\"(x)); return r; }";
  });
  pre.need(name, [&] {
    return "__device__ inline float4 " + name +
           "(float a0, float a1, float a2, float a3, float b0, float b1, float c0, float c1, float c2, float c3) {\n"
           "  float4 d = make_float4(c0, c1, c2, c3);\n"
           "  asm(\"mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
           "{%0, %1, %2, %3};\"\n"
           "      : \"+f\"(d.x), \"+f\"(d.y), \"+f\"(d.z), \"+f\"(d.w)\n"
           "      : \"r\"(tg_tf32(a0)), \"r\"(tg_tf32(a1)), \"r\"(tg_tf32(a2)), \"r\"(tg_tf32(a3)), \"r\"(tg_tf32(b0)), "
           "\"r\"(tg_tf32(b1)));\n"
           "  return d;\n}";
  });
  std::string call = name + "(";
  for (size_t k = 0; k < a.size(); k++) call += (k ? ", " : "") + strip_parens(a[k]);
  return call + ")";
}

// cp.async.cg: 16 bytes global -> shared, bypassing L1 (the tile is read from shared memory, not again from
// global). A gated copy (`gate` not empty) is one predicated instruction, not a branch around it: a branch in the
// reduce loop made ptxas serialize the wgmmas of a loop that leaves them in flight across steps (info C7514).
std::string CUDARenderer::render_cp_async(const std::string& dst, const std::string& dst_idx, const std::string& src,
                                          const std::string& src_idx, const std::string& gate, const std::string& valid,
                                          int64_t n, DType dt) const {
  if (n * dt.itemsize() != 16)
    throw Error("render: CUDA cp.async of " + std::to_string(n) + " x " + dt.repr() + " (16 bytes only)");
  const std::string to = "\"r\"((unsigned)__cvta_generic_to_shared(" + dst + " + (" + dst_idx + ")))";
  // masked: a source size of 0 bytes fills the 16 with zeros and reads nothing (from the buffer's start, never an
  // address outside it); gated off: the copy does not run (its address is the buffer's start too)
  const std::string cond = valid.empty() ? gate : gate.empty() ? valid : "(" + gate + ")&&(" + valid + ")";
  const std::string from = "\"l\"(" + src + " + " + (cond.empty() ? src_idx : "(" + cond + " ? " + src_idx + " : 0)") + ")";
  std::string copy = "cp.async.cg.shared.global [%0], [%1], 16" + std::string(valid.empty() ? "" : ", %2") + ";";
  std::string args = to + ", " + from;
  if (!valid.empty()) args += ", \"r\"(" + valid + " ? 16 : 0)";
  if (!gate.empty()) {
    const std::string p = valid.empty() ? "%2" : "%3";
    copy = "{ .reg .pred p; setp.ne.b32 p, " + p + ", 0; @p " + copy + " }";
    args += ", \"r\"(int(" + gate + "))";
  }
  return "asm volatile(\"" + copy + "\" :: " + args + " : \"memory\");";
}

std::string CUDARenderer::render_async_commit() const { return "asm volatile(\"cp.async.commit_group;\" ::: \"memory\");"; }

// n >= 256: the copies are then read by wgmma, through the async proxy, which must be told of them.
std::string CUDARenderer::render_async_wait(int64_t n) const {
  return "asm volatile(\"cp.async.wait_group " + std::to_string(n % 256) + ";" +
         (n >= 256 ? " fence.proxy.async.shared::cta;" : "") + "\" ::: \"memory\");";
}

// TMA (renderer/tensor_map.h) and the mbarriers that count its bytes. Copies and announcements in the reduce loop
// are predicated instructions (no branch: see render_cp_async); the wait spins on try_wait inside its asm.
std::string CUDARenderer::render_bulk_copy(const UOp& u, const std::vector<std::string>& a, Prelude& pre) const {
  pre.need("tg_tensor_map", [] {
    return "struct __align__(64) tg_tensor_map { unsigned long long v[16]; };  // a CUtensorMap, by value";
  });
  auto smem = [&](size_t buf) { return "\"r\"((unsigned)__cvta_generic_to_shared(" + a.at(buf) + " + (" + a.at(buf + 1) + ")))"; };
  auto predicated = [](const std::string& instr, const std::string& gate_operand) {
    return "{ .reg .pred p; setp.ne.b32 p, " + gate_operand + ", 0; @p " + instr + " }";
  };
  switch (u.op) {
    case Ops::MBAR_INIT:
      return "if (" + a.at(2) + ") asm volatile(\"mbarrier.init.shared::cta.b64 [%0], " + std::to_string(u.get<int64_t>()) +
             "; fence.mbarrier_init.release.cluster;\" :: " + smem(0) + " : \"memory\");";
    case Ops::MBAR_EXPECT:
      return "asm volatile(\"" +
             predicated("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], " + std::to_string(u.get<int64_t>()) + ";", "%1") +
             "\" :: " + smem(0) + ", \"r\"(int(" + a.at(2) + ")) : \"memory\");";
    case Ops::MBAR_WAIT:
      return "asm volatile(\"{ .reg .pred p; tg_wait: mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1; @!p bra "
             "tg_wait; }\" :: " + smem(0) + ", \"r\"(unsigned(" + a.at(2) + ")) : \"memory\");";
    case Ops::TMA_LOAD:
      return "asm volatile(\"" +
             predicated("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, "
                        "{%2, %3}], [%4];", "%5") +
             "\" :: " + smem(0) + ", \"l\"((unsigned long long)&" + a.at(2) + "), \"r\"(int(" + a.at(3) +
             ")), \"r\"(int(" + a.at(4) + ")), " + smem(5) + ", \"r\"(int(" + a.at(7) + ")) : \"memory\");";
    default:
      return CStyleRenderer::render_bulk_copy(u, a, pre);
  }
}

// wgmma.mma_async on the lanes of a fresh array (C's values copied in), A and B by descriptor: start address, LBO
// and SBO, all >> 4, and the swizzle mode (renderer/tensor_core.h has the layouts). The fence, commit and wait
// the arg asks for go around it.
std::string CUDARenderer::render_wgmma(const UOp& u, const std::string& name, const std::vector<std::string>& a,
                                       bool in_place, Prelude& pre) const {
  const WgmmaArg w = WgmmaArg::of(u);
  const size_t lanes = size_t(w.n / 2);
  if (a.size() != 5 + lanes) throw Error("render: WGMMA with " + std::to_string(a.size()) + " operands");
  pre.need("tg_wgmma_desc", [] {
    return "__device__ inline unsigned long long tg_wgmma_desc(const void* p, unsigned lbo, unsigned sbo, unsigned "
           "long long mode) {\n"
           "  unsigned long long s = (unsigned)__cvta_generic_to_shared(p);\n"
           "  return ((s & 0x3FFFF) >> 4) | (unsigned long long)((lbo & 0x3FFFF) >> 4) << 16 |\n"
           "         (unsigned long long)((sbo & 0x3FFFF) >> 4) << 32 | mode << 62;\n}";
  });
  // LBO and SBO in bytes: unswizzled, the strides between core matrices along K and along M or N; swizzled
  // K-major, unused (16) and the stride between 8-row groups; swizzled MN-major, the strides between 64-wide
  // atoms along M or N and between 8-row groups along K
  auto desc = [&](const std::string& buf, const std::string& idx, const WgmmaOperand& o) {
    int64_t lbo = 2 * o.k_stride, sbo = 2 * o.mn_stride;
    if (o.swizzle && !o.trans) lbo = 16;
    if (o.swizzle && o.trans) lbo = 2 * o.mn_stride, sbo = 2 * o.k_stride;
    return "tg_wgmma_desc(" + buf + " + (" + idx + "), " + std::to_string(lbo) + "u, " + std::to_string(sbo) + "u, " +
           (o.swizzle ? "1ull" : "0ull") + ")";
  };
  std::string s;
  if (!in_place) {
    s = "float " + name + "[" + std::to_string(lanes) + "] = {";
    for (size_t q = 0; q < lanes; q++) s += (q ? ", " : "") + strip_parens(a[5 + q]);
    s += "};\n";
  }
  const std::string ty = w.bf16 ? "bf16" : "f16";
  std::string regs, outs;
  for (size_t q = 0; q < lanes; q++) {
    regs += (q ? ", %" : "%") + std::to_string(q);
    outs += std::string(q ? ", " : "") + "\"+f\"(" + name + "[" + std::to_string(q) + "])";
  }
  // (an empty asm on the lanes pins them: the compiler may not move their writes past the fence, nor their reads
  // before the wait)
  const std::string pin = "asm volatile(\"\" : " + outs + " :: \"memory\");";
  if (w.fence) s += pin + "\nasm volatile(\"wgmma.fence.sync.aligned;\" ::: \"memory\");\n";
  const std::string na = std::to_string(lanes), nb = std::to_string(lanes + 1), np = std::to_string(lanes + 2);
  s += "asm volatile(\"{ .reg .pred p; setp.ne.b32 p, %" + np + ", 0; wgmma.mma_async.sync.aligned.m64n" +
       std::to_string(w.n) + "k16.f32." + ty + "." + ty + " {" + regs + "}, %" + na + ", %" + nb + ", p, 1, 1, " +
       (w.a.trans ? "1" : "0") + ", " + (w.b.trans ? "1" : "0") + "; }\" : " + outs + " : \"l\"(" +
       desc(a[0], a[1], w.a) + "), \"l\"(" + desc(a[2], a[3], w.b) + "), \"r\"(1) : \"memory\");";
  // (deferred: this step's group stays in flight, the one before it is waited for; the loop's end drains it)
  if (w.wait)
    s += "\nasm volatile(\"wgmma.commit_group.sync.aligned; wgmma.wait_group.sync.aligned " +
         std::string(w.defer ? "1" : "0") + ";\" ::: \"memory\");\n" + pin;
  return s;
}

std::string CUDARenderer::render_wgmma_drain(const std::string& name, int lanes) const {
  std::string outs;
  for (int q = 0; q < lanes; q++) outs += std::string(q ? ", " : "") + "\"+f\"(" + name + "[" + std::to_string(q) + "])";
  return "asm volatile(\"wgmma.wait_group.sync.aligned 0;\" ::: \"memory\");\nasm volatile(\"\" : " + outs +
         " :: \"memory\");";
}

// ldmatrix into `count` 32-bit registers: `unsigned name[count]`.
std::string CUDARenderer::render_ldmatrix(const std::string& name, const std::string& local, const std::string& idx,
                                          const UOp& u) const {
  const LdmatrixArg arg = LdmatrixArg::unpack(u.get<int64_t>());
  std::string regs, outs;
  for (int q = 0; q < arg.count; q++) {
    regs += (q ? ", %" : "%") + std::to_string(q);
    outs += std::string(q ? ", " : "") + "\"=r\"(" + name + "[" + std::to_string(q) + "])";
  }
  return "unsigned " + name + "[" + std::to_string(arg.count) + "]; asm volatile(\"ldmatrix.sync.aligned.m8n8.x" +
         std::to_string(arg.count) + (arg.trans ? ".trans" : "") + ".shared.b16 {" + regs + "}, [%" +
         std::to_string(arg.count) + "];\" : " + outs + " : \"r\"((unsigned)__cvta_generic_to_shared(" + local + " + " +
         idx + ")));";
}

std::string CUDARenderer::render_ldmatrix_lane(const std::string& name, int64_t i, DType dt) const {
  std::string bits = "(unsigned short)(" + name + "[" + std::to_string(i / 2) + "] >> " + std::to_string(16 * (i % 2)) + ")";
  return is_bf16(dt) ? "__bfloat162float(__ushort_as_bfloat16(" + bits + "))" : "__half2float(__ushort_as_half(" + bits + "))";
}

std::string CUDARenderer::render_ldmatrix_reg(const std::string& name, int64_t q) const {
  return name + "[" + std::to_string(q) + "]";
}

std::string CUDARenderer::render_gep(const std::string& vec, int64_t i, DType vec_dtype) const {
  if (!is_16bit_float(vec_dtype)) return render_gep(vec, i);
  return std::string(is_half(vec_dtype) ? "__half2float(" : "__bfloat162float(") + vec + ".v[" + std::to_string(i) + "])";
}

std::string CUDARenderer::render_raw16_gep(const std::string& vec, int64_t i) const {
  return vec + ".v[" + std::to_string(i) + "]";
}

std::string CUDARenderer::render_gep(const std::string& vec, int64_t i) const {
  if (i < 0 || i > 3) throw Error("render: CUDA vector lane " + std::to_string(i) + " (CUDA vectors have x, y, z, w)");
  return vec + "." + "xyzw"[i];
}

std::string CUDARenderer::render_special(const SpecialArg& s) const {
  if (s.dim < 0 || s.dim > 2 || s.axis == LaunchAxis::CORE)
    throw Error("render: CUDA SPECIAL " + s.name() + " (expected a block, thread or global index along x, y or z)");
  const std::string dim(1, "xyz"[s.dim]);
  if (s.axis == LaunchAxis::GROUP) return "blockIdx." + dim;
  if (s.axis == LaunchAxis::LOCAL) return "threadIdx." + dim;
  return "(blockIdx." + dim + "*blockDim." + dim + "+threadIdx." + dim + ")";
}

std::string CUDARenderer::param_decl(const Param& p) const {
  if (p.is_tensor_map) return "const __grid_constant__ tg_tensor_map " + p.name;
  if (!p.is_buffer) return type_name(p.dtype) + " " + p.name;
  // No __restrict__ where a kernel may start before its predecessor ends: NVCC reads a const __restrict__ buffer
  // through the non-coherent cache (ld.global.nc), which is only right for memory that stays unchanged while the
  // kernel is resident, and a dependent kernel is resident while the one before it still writes (JIT training steps
  // read stale values with it).
  const char* ptr = dependent_launch() ? "* " : "* __restrict__ ";
  return std::string(p.written ? "" : "const ") + buffer_type_name(p.dtype.base().scalar_type()) + ptr + p.name;
}

std::string CUDARenderer::kernel_signature(const std::string& name, const std::vector<Param>& params,
                                           const Prelude& pre) const {
  std::string s =
      "extern \"C\" __global__ void __launch_bounds__(" + std::to_string(pre.local_threads) + ") " + name + "(";
  for (size_t i = 0; i < params.size(); i++) s += (i ? ", " : "") + param_decl(params[i]);
  return s + ")";
}

// PDL=0: kernels neither let the next one start early nor wait for the one before (plain stream order).
static ContextVar PDL("PDL", 1);
bool CUDARenderer::dependent_launch() const { return sm_version(arch_) >= 90 && PDL > 0; }

// The next kernel may start (its blocks take the SMs this one leaves free and wait in their own prologue); then this
// one waits until the kernel before it has finished and its writes are visible, before it touches memory.
static const char kDependentPrologue[] =
    "  asm volatile(\"griddepcontrol.launch_dependents;\" ::: \"memory\");\n"
    "  asm volatile(\"griddepcontrol.wait;\" ::: \"memory\");\n";

std::string CUDARenderer::kernel_prologue() const { return dependent_launch() ? kDependentPrologue : ""; }

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
