// ClangRenderer: the CPU's C dialect (see c.h).
#include "renderer/c.h"

#include <algorithm>
#include <thread>

#include "tg/context.h"
#include "tg/error.h"
#include "uop/exec_alu.h"

namespace tg {
namespace {


// Rounding a double to a narrow float format, bit by bit (the same algorithm as exec_alu's, so both agree
// on every value including subnormals, overflow to inf and NaN).
const char* kNarrowHelper = R"(static inline unsigned int tg_narrow(double x, int E, int M) {
  unsigned long long b; __builtin_memcpy(&b, &x, 8);
  unsigned int sign = (unsigned int)(b >> 63) << (E + M), exp_all = (1u << E) - 1;
  if (x != x) return sign | (exp_all << M) | (1u << (M - 1));
  int dexp = (int)((b >> 52) & 0x7ff);
  if (dexp == 0x7ff) return sign | (exp_all << M);
  if (dexp == 0) return sign;
  int e = dexp - 1023, bias = (1 << (E - 1)) - 1, min_e = 1 - bias, normal = e >= min_e;
  int shift = 52 - M + (normal ? 0 : min_e - e);
  if (shift > 60) return sign;
  unsigned long long m = (1ull << 52) | (b & ((1ull << 52) - 1));
  unsigned long long r = m >> shift, rem = m & ((1ull << shift) - 1), half = 1ull << (shift - 1);
  if (rem > half || (rem == half && (r & 1))) r++;
  unsigned long long mag = normal ? ((unsigned long long)(e + bias) << M) + (r - (1ull << M)) : r;
  if (mag >= ((unsigned long long)exp_all << M)) mag = (unsigned long long)exp_all << M;
  return sign | (unsigned int)mag;
}
)";

// GCC 12 on a CPU with AVX512-FP16 (-march=native) vectorizes tg_rh's float -> _Float16 -> float round trip into
// nothing: four float16 roundings in a float4 came back unrounded (-63178.516 stayed, not -63168; under CC=gcc,
// DtypeOps.FloatToHalfRoundsToNearestEven, on a Sapphire Rapids box). Without AVX512-FP16 it converts with F16C,
// correctly; clang is unaffected. The pragma covers the functions after it: the kernel, whose values are floats.
const char* kHalfHelpersGccTarget = R"(#if defined(__GNUC__) && !defined(__clang__) && defined(__AVX512FP16__)
#pragma GCC target("no-avx512fp16")
#endif
)";

const char* kHalfHelpers = R"(typedef unsigned short tg_half;  /* float16 bits; values are computed in float */
static inline tg_half tg_d2h(double x) { return (tg_half)tg_narrow(x, 5, 10); }
#if defined(__FLT16_MAX__)
static inline float tg_h2f(tg_half h) { _Float16 f; __builtin_memcpy(&f, &h, 2); return (float)f; }
static inline tg_half tg_f2h(float x) { _Float16 f = (_Float16)x; tg_half h; __builtin_memcpy(&h, &f, 2); return h; }
#else
static inline float tg_h2f(tg_half h) {
  unsigned int e = (h >> 10) & 31u, m = h & 1023u, s = (unsigned int)(h >> 15) << 31, bits;
  if (e == 0) { float v = (float)m * 0x1p-24f; return s ? -v : v; }
  bits = s | (e == 31 ? 0x7f800000u : (e + 112u) << 23) | (m << 13);
  float f; __builtin_memcpy(&f, &bits, 4); return f;
}
static inline tg_half tg_f2h(float x) { return tg_d2h(x); }
#endif
static inline float tg_rh(float x) { return tg_h2f(tg_f2h(x)); }
)";

// A vector of float16 bits to a float vector: one instruction where clang converts _Float16 vectors (vcvtph2ps),
// else exact bit arithmetic (the magnitude's bits shifted into a float's are the value times 2^-112, subnormals
// included; inf and NaN keep an all-ones exponent). $N lanes, $B bytes of float16 bits, $W bytes of floats.
const char* kHalfVectorHelper = R"(typedef unsigned short tg_half$N_raw __attribute__((vector_size($B),aligned(2)));
static inline float$N tg_h2f_v$N(tg_half$N_raw h) {
#if defined(__clang__) && defined(__FLT16_MAX__)
  typedef _Float16 H __attribute__((vector_size($B)));
  return __builtin_convertvector((H)h, float$N);
#else
  typedef unsigned int U __attribute__((vector_size($W)));
  U u = __builtin_convertvector(h, U), em = u & 0x7fffu, bits = em << 13;
  U special = (U)(em >= 0x7c00u);
  U r = ((U)((float$N)bits * 0x1p112f) & ~special) | ((bits | 0x7f800000u) & special);
  return (float$N)(r | ((u & 0x8000u) << 16));
#endif
}
)";

std::string half_vector_helper(int n) {
  std::string s = kHalfVectorHelper;
  const std::pair<const char*, std::string> subs[] = {
      {"$N", std::to_string(n)}, {"$B", std::to_string(2 * n)}, {"$W", std::to_string(4 * n)}};
  for (const auto& [key, value] : subs)
    for (size_t at = s.find(key); at != std::string::npos; at = s.find(key, at + value.size()))
      s.replace(at, 2, value);
  return s;
}

const char* kBf16Helpers = R"(typedef unsigned short tg_bf16;  /* bfloat16 bits; values are computed in float */
static inline tg_bf16 tg_d2bf(double x) { return (tg_bf16)tg_narrow(x, 8, 7); }
static inline float tg_bf2f(tg_bf16 b) {
  unsigned int bits = (unsigned int)b << 16; float f; __builtin_memcpy(&f, &bits, 4); return f;
}
static inline tg_bf16 tg_f2bf(float x) {
  unsigned int bits; __builtin_memcpy(&bits, &x, 4);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return (tg_bf16)((bits >> 16) | 0x40u);
  return (tg_bf16)((bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16);
}
static inline float tg_rbf(float x) { return tg_bf2f(tg_f2bf(x)); }
)";


ContextVar THREADS("THREADS", 0);

// A double rounded once to dt's 16-bit format, as the float register that holds it.
std::string from_double16(DType dt, const std::string& x) {
  return dt.scalar == Scalar::Float16 ? "tg_h2f(tg_d2h(" + x + "))" : "tg_bf2f(tg_d2bf(" + x + "))";
}

// exp2 on a float vector T (int vector M of the same lanes): 2^x = 2^n * 2^f with n = round(x), f in
// [-0.5, 0.5], 2^f by Cephes' exp2f polynomial; 2^n as two factors 2^(n/2) * 2^(n - n/2) so each is a normal
// float and subnormal or infinite results round as one product would.
std::string exp2_helper(const std::string& q, const std::string& T, const std::string& M, const std::string& name) {
  auto sel = [&](const std::string& m, const std::string& a, const std::string& b) {
    return "(" + T + ")(((" + M + ")(" + a + ") & (" + m + ")) | ((" + M + ")(" + b + ") & ~(" + m + ")))";
  };
  return q + " " + T + " " + name + "(" + T + " x) {\n" + "  " + T +
         " c = " + sel("x > 128.0f", "(" + T + "){} + 128.0f", sel("x < -150.0f", "(" + T + "){} - 150.0f", "x")) +
         ";\n" + "  " + T + " n = (c + 12582912.0f) - 12582912.0f, f = c - n;\n" + "  " + T +
         " p = ((((1.535336188319500e-4f * f + 1.339887440266574e-3f) * f + 9.618437357674640e-3f) * f +"
         " 5.550332471162809e-2f) * f + 2.402264791363012e-1f) * f + 6.931472028550421e-1f;\n"
         "  p = p * f + 1.0f;\n" +
         "  " + M + " i = __builtin_convertvector(n, " + M + "), h = i >> 1;\n" + "  " + T + " r = p * (" + T +
         ")((h + 127) << 23) * (" + T + ")((i - h + 127) << 23);\n" + "  return " + sel("x != x", "x", "r") + ";\n}";
}

// DOT4 on int32 vectors T (U: the unsigned lanes): c + the unsigned bytes of a times the signed bytes of b, lane by
// lane; sums wrap, as exec_alu's. Three ways, by what the compiler targets:
// - AVX512-VNNI (or AVX-VNNI for 4 and 8 lanes): one vpdpbusd.
// - other x86-64: pmaddwd on 16-bit lanes (AVX2's 32-byte registers, else SSE2's 16), the even bytes and the odd
//   ones apart: a's bytes zero-extended, b's sign-extended, so each product and each pair's sum is exact (not
//   pmaddubsw, which saturates its 16-bit sums: 255 * 127 * 2 does not fit). Five instructions for 8 lanes where the
//   shifts and multiplies below take 24, four of them a slow vpmulld.
// - elsewhere: shifts and multiplies on the vectors.
std::string dot4_helper(const std::string& q, const std::string& T, const std::string& U, int lanes,
                        const std::string& name) {
  // the intrinsic for this width: _mm512_ / _mm256_ / _mm_ on __m512i / __m256i / __m128i
  const std::string bits = std::to_string(32 * lanes), mm = lanes == 4 ? "_mm" : "_mm" + bits;
  const std::string args = "((__m" + bits + "i)c, (__m" + bits + "i)a, (__m" + bits + "i)b);\n";
  std::string vnni;
  if (lanes == 16) vnni = "#if defined(__AVX512VNNI__)\n  return (" + T + ")" + mm + "_dpbusd_epi32" + args;
  if (lanes == 8 || lanes == 4)
    vnni = "#if defined(__AVX512VNNI__) && defined(__AVX512VL__)\n  return (" + T + ")" + mm + "_dpbusd_epi32" + args +
           "#elif defined(__AVXVNNI__)\n  return (" + T + ")" + mm + "_dpbusd_avx_epi32" + args;
  // x86-64 without VNNI: the vector in chunks of the widest integer register, pmaddwd twice a chunk
  auto madd_chunks = [&](const std::string& p, const std::string& w) {
    const std::string V = "__m" + w + "i", chunk = "sizeof(" + V + ")";
    auto part = [&](const std::string& var, const std::string& of) {
      return "    __builtin_memcpy(&" + var + ", (const char*)&" + of + " + i * " + chunk + ", " + chunk + ");\n";
    };
    return "  " + T + " r;\n  for (int i = 0; i < (int)(sizeof(" + T + ") / " + chunk + "); i++) {\n    " + V +
           " x, y, z;\n" + part("x", "a") + part("y", "b") + part("z", "c") + "    " + V + " even = " + p +
           "_madd_epi16(" + p + "_and_si" + w + "(x, " + p + "_set1_epi16(255)), " + p + "_srai_epi16(" + p +
           "_slli_epi16(y, 8), 8));\n    " + V + " odd = " + p + "_madd_epi16(" + p + "_srli_epi16(x, 8), " + p +
           "_srai_epi16(y, 8));\n    z = " + p + "_add_epi32(z, " + p + "_add_epi32(even, odd));\n" +
           "    __builtin_memcpy((char*)&r + i * " + chunk + ", &z, " + chunk + ");\n  }\n  return r;\n";
  };
  std::string x86;
  if (lanes >= 8) x86 += "#elif defined(__x86_64__) && defined(__AVX2__)\n" + madd_chunks("_mm256", "256");
  if (lanes >= 4) x86 += "#elif defined(__x86_64__)\n" + madd_chunks("_mm", "128");
  if (vnni.empty() && !x86.empty()) x86 = "#if" + x86.substr(5);  // (the first condition)
  const std::string generic = "  " + U + " s = (" + U + ")c, ua = (" + U + ")a, ub = (" + U + ")b;\n" +
                              "  for (int k = 0; k < 32; k += 8) s += (" + U + ")(((" + T +
                              ")((ua >> k) & 255u)) * (((" + T + ")(ub << (24 - k))) >> 24));\n  return (" + T +
                              ")s;\n";
  const std::string head = "#if defined(__x86_64__)\n#include <immintrin.h>\n#endif\n";
  const std::string cases = vnni + x86;
  return head + q + " " + T + " " + name + "(" + T + " a, " + T + " b, " + T + " c) {\n" +
         (cases.empty() ? generic : cases + "#else\n" + generic + "#endif\n") + "}";
}

}  // namespace

// C for the CPU: the dialect's defaults (renderer/cstyle.h), a thread index parameter, 16-bit floats as bits.
ClangRenderer::ClangRenderer()
    : CStyleRenderer(Dialect{.core_id_param = true,
                             .buffer_types = {{Scalar::Float16, "tg_half"}, {Scalar::BFloat16, "tg_bf16"}}}) {
  const std::string& q = dialect_.helper_qualifier;
  // MAX of vectors: C has no ?: on vectors, so select through the comparison's lane mask (a NaN in either operand
  // wins, as in the scalar `a<b || b!=b ? b : a`).
  rules_[int(Ops::MAX)] = [this, q](const UOp& u, const std::vector<std::string>& a,
                                    Prelude& pre) -> std::optional<std::string> {
    const DType dt = u.dtype;
    if (dt.count == 1) return std::nullopt;
    const DType mask = (dt.itemsize() / dt.count == 8 ? dtypes::int64 : dtypes::int32).vec(dt.count);
    pre.need_vector_type(mask);
    const std::string T = type_name(dt), M = type_name(mask), name = "tg_max_" + T;
    pre.need(name, [&] {
      return q + " " + T + " " + name + "(" + T + " a, " + T + " b) { " + M + " m = (a < b) | (b != b); return (" + T +
             ")(((" + M + ")b & m) | ((" + M + ")a & ~m)); }";
    });
    return name + "(" + a[0] + ", " + a[1] + ")";
  };
  // EXP2 of float vectors: a polynomial on vectors (libm's exp2f is one call per lane). Within 2 ulp of exp2 (the
  // interpreter's is correctly rounded); inf, 0, NaN and subnormal results as exp2's.
  rules_[int(Ops::EXP2)] = [this, q](const UOp& u, const std::vector<std::string>& a,
                                     Prelude& pre) -> std::optional<std::string> {
    if (u.dtype.count == 1) return std::nullopt;
    const DType mask = dtypes::int32.vec(u.dtype.count);
    pre.need_vector_type(mask);
    const std::string T = type_name(u.dtype), M = type_name(mask), name = "tg_exp2_" + T;
    pre.need(name, [&] { return exp2_helper(q, T, M, name); });
    return name + "(" + a[0] + ")";
  };
  rules_[int(Ops::DOT4)] = [this, q](const UOp& u, const std::vector<std::string>& a,
                                     Prelude& pre) -> std::optional<std::string> {
    const DType dt = u.dtype;
    if (dt.count == 1) return std::nullopt;
    const DType unsigned_lanes = dtypes::uint32.vec(dt.count);
    pre.need_vector_type(unsigned_lanes);
    const std::string T = type_name(dt), name = "tg_dot4_" + T;
    pre.need(name, [&] { return dot4_helper(q, T, type_name(unsigned_lanes), dt.count, name); });
    return name + "(" + a[0] + ", " + a[1] + ", " + a[2] + ")";
  };
  rules_[int(Ops::MULACC)] = [q](const UOp& u, const std::vector<std::string>& a,
                                 Prelude& pre) -> std::optional<std::string> {
    const DType dt = u.dtype;
    if (dt.count != 1 || !dt.is_float()) return std::nullopt;
    // float64: exec_alu rounds the product, then the sum; a*b+c in one expression would be one fused multiply-add
    // under -ffp-contract=on, so the product is a call (contraction stays within an expression)
    if (dt.scalar == Scalar::Float64) {
      pre.need("tg_mul64", [&] { return q + " double tg_mul64(double a, double b) { return a * b; }"; });
      return "(tg_mul64(" + a[0] + ", " + a[1] + ")+" + a[2] + ")";
    }
    // narrower: exec_alu rounds a*b+c once (computed in double); C in float would round twice
    std::string e = "(((double)" + a[0] + "*" + a[1] + ")+" + a[2] + ")";
    return is_16bit_float(dt) ? from_double16(dt, e) : "((float)" + e + ")";
  };
  // IDIV of 16-bit floats: the integer trunc((double)a/b) may be past 2^24, so it must not round through float first.
  rules_[int(Ops::IDIV)] = [](const UOp& u, const std::vector<std::string>& a, Prelude&) -> std::optional<std::string> {
    const DType dt = u.dtype;
    if (dt.count != 1 || !is_16bit_float(dt)) return std::nullopt;
    std::string e = "__builtin_trunc((double)" + a[0] + "/" + a[1] + ")";
    return from_double16(dt, e);
  };
}

int ClangRenderer::cpu_threads() {
  if (THREADS.value() < 0)
    throw Error("THREADS=" + std::to_string(THREADS.value()) + ": expected a thread count >= 1 (0: the machine's)");
  if (THREADS.value() > 0) return int(std::min<long>(THREADS.value(), 256));
  static const int hw = std::max(1, int(std::thread::hardware_concurrency()));
  return hw;
}

namespace {
bool is_small_int(DType d) {
  return d == dtypes::int8 || d == dtypes::uint8 || d == dtypes::int16 || d == dtypes::uint16 || d == dtypes::int32 ||
         d == dtypes::uint32;
}
}  // namespace

// Vectors of floats and doubles for arithmetic; of integers for loads and bit operations (unpacking a quantized
// block's bytes: 16 bytes a load, nibbles by & and >>, converted whole); float16 loads (converted to floats as they
// are read, see half_vector_helper).
bool ClangRenderer::cpu_vectorizes(Ops op, DType scalar) {
  if (is_small_int(scalar))
    return op == Ops::LOAD || op == Ops::STORE || op == Ops::AND || op == Ops::OR || op == Ops::XOR || op == Ops::SHR ||
           op == Ops::SHL || op == Ops::ADD || op == Ops::SUB || op == Ops::MUL ||  // (lanes wrap)
           (op == Ops::DOT4 && scalar == dtypes::int32);                            // vpdpbusd where the CPU has it
  if (scalar == dtypes::float16) return op == Ops::LOAD;
  if (scalar != dtypes::float32 && scalar != dtypes::float64) return false;
  switch (op) {
    case Ops::LOAD: case Ops::STORE: case Ops::DEFINE_ACC:
    case Ops::ADD: case Ops::SUB: case Ops::MUL: case Ops::FDIV: case Ops::NEG: case Ops::MAX: return true;
    case Ops::EXP2: return scalar == dtypes::float32;  // tg_exp2_floatN below
    default: return false;
  }
}

// Integers to float32 (exact up to 2^24, rounded as the scalar conversion beyond), and float16 vectors, which are
// float vectors in registers already.
bool ClangRenderer::cpu_vectorizes_cast(DType from, DType to) {
  return to == dtypes::float32 && (is_small_int(from) || from == dtypes::float16);
}

std::string ClangRenderer::type_name(DType dt) const {
  if (dt.count > 1 && is_half(dt)) return CStyleRenderer::type_name(dtypes::float32.vec(dt.count));  // in registers
  if (dt.count > 1 && (dt.is_bool() || is_16bit_float(dt)))
    throw Error("render: CPU vectors of " + dt.scalar_type().repr() + " are not supported (devectorize them)");
  if (dt.count == 1 && dt.is_bool()) return "_Bool";  // C has no `bool` without <stdbool.h>
  if (dt.count == 1 && is_16bit_float(dt)) return "float";  // values in registers; see buffer_type_name
  return CStyleRenderer::type_name(dt);
}

std::string ClangRenderer::render_cast(DType to, DType from, const std::string& x, Prelude& pre) const {
  if (to == from) return x;
  if (to.count > 1 && is_half(from)) return x;  // float16 vectors are float vectors in registers
  if (to.count > 1) return "__builtin_convertvector(" + x + ", " + type_name(to) + ")";
  if (is_16bit_float(to)) {
    if (needs_double_path(from, to)) return from_double16(to, x);
    return (is_half(to) ? "tg_rh(" : "tg_rbf(") + x + ")";
  }
  // A 16-bit float already is a float in registers.
  return CStyleRenderer::render_cast(to, is_16bit_float(from) ? dtypes::float32 : from, x, pre);
}

std::string ClangRenderer::render_bitcast(DType to, DType from, const std::string& x, Prelude& pre) const {
  if (!is_16bit_float(to) && !is_16bit_float(from)) return CStyleRenderer::render_bitcast(to, from, x, pre);
  if (to.itemsize() != from.itemsize() && !(is_16bit_float(to) && is_16bit_float(from)))
    throw Error("render: BITCAST between sizes (" + from.repr() + " -> " + to.repr() + ")");
  std::string bits = is_half(from) ? "tg_f2h(" + x + ")" : is_bf16(from) ? "tg_f2bf(" + x + ")"
                                                                           : "((unsigned short)(" + x + "))";
  if (is_half(to)) return "tg_h2f(" + bits + ")";
  if (is_bf16(to)) return "tg_bf2f(" + bits + ")";
  return "((" + type_name(to) + ")" + bits + ")";
}

std::string ClangRenderer::render_load(const std::string& buf, const std::string& idx, DType dt, Prelude& pre) const {
  if (dt.count > 1 && is_half(dt)) {
    const std::string n = std::to_string(dt.count);
    return "tg_h2f_v" + n + "(*((tg_half" + n + "_raw*)(" + buf + "+" + idx + ")))";
  }
  std::string e = CStyleRenderer::render_load(buf, idx, dt, pre);
  if (is_half(dt)) return "tg_h2f(" + e + ")";
  if (is_bf16(dt)) return "tg_bf2f(" + e + ")";
  return e;
}

std::string ClangRenderer::render_store(const std::string& buf, const std::string& idx, const std::string& value,
                                        DType dt, Prelude& pre) const {
  if (is_half(dt)) return CStyleRenderer::render_store(buf, idx, "tg_f2h(" + strip_parens(value) + ")", dt, pre);
  if (is_bf16(dt)) return CStyleRenderer::render_store(buf, idx, "tg_f2bf(" + strip_parens(value) + ")", dt, pre);
  return CStyleRenderer::render_store(buf, idx, value, dt, pre);
}

std::string ClangRenderer::prefix(const Prelude& pre) const {
  std::string s;
  if (pre.inf) s += "#define INFINITY (__builtin_inff())\n";
  if (pre.nan) s += "#define NAN (__builtin_nanf(\"\"))\n";
  if (pre.half || pre.bf16) s += kNarrowHelper;
  if (pre.half) s += kHalfHelpersGccTarget, s += kHalfHelpers;
  if (pre.bf16) s += kBf16Helpers;
  // GCC/Clang vector extensions; alignment of one element so loads at any element offset are valid.
  // vector_size must come first: GCC applies the attributes in order, and an aligned() before it is
  // overridden by the vector's natural (16-byte) alignment, so unaligned float4 loads became aligned
  // moves (SIGSEGV under CC=gcc). Clang honours either order.
  std::vector<DType> typed;  // (a float16 vector is a float vector in registers: one typedef for both)
  for (DType v : pre.vector_types) {
    DType reg = is_half(v) ? dtypes::float32.vec(v.count) : v;
    if (std::find(typed.begin(), typed.end(), reg) != typed.end()) continue;
    typed.push_back(reg);
    s += "typedef " + type_name(reg.scalar_type()) + " " + CStyleRenderer::type_name(reg) +
         " __attribute__((vector_size(" + std::to_string(reg.itemsize()) + "),aligned(" +
         std::to_string(reg.scalar_type().itemsize()) + ")));\n";
  }
  for (DType v : pre.vector_types)
    if (is_half(v)) s += half_vector_helper(v.count);
  return s + CStyleRenderer::prefix(pre);
}

std::string ClangRenderer::epilogue(const std::string& name, const std::vector<Param>& params) const {
  // One signature for every kernel, so the runtime can call any of them through dlsym.
  std::string call;
  int b = 0, v = 0;
  for (const Param& p : params) {
    if (!call.empty()) call += ", ";
    if (p.is_buffer)
      call += "(" + std::string(p.written ? "" : "const ") + buffer_type_name(p.dtype.base().scalar_type()) +
              "*)bufs[" + std::to_string(b++) + "]";
    else
      call += "(" + type_name(p.dtype) + ")vars[" + std::to_string(v++) + "]";
  }
  return "void " + name + "_entry(void** bufs, const long long* vars) {\n  " + name + "(" + call + ");\n}\n";
}

}  // namespace tg
