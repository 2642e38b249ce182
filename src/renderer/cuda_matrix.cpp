// CUDARenderer's MatrixSyntax (renderer/matrix_syntax.h): the tensor cores (mma.sync, wgmma) and the copies that
// feed them (cp.async, ldmatrix, TMA bulk tensor copies and their mbarriers), as inline PTX.
#include <string>
#include <vector>

#include "renderer/cuda.h"
#include "tg/error.h"

namespace tg {

// mma.sync m16n8k16 with float32 (or float16) accumulation (renderer/tensor_core.h has the register layout): the
// 16-bit registers go in pairs, the lower index in the low half, as 32-bit registers; a pair an LDMATRIX loaded is
// passed as the register it is.
std::string CUDARenderer::wmma(const UOp& u, const std::vector<std::string>& a, const std::vector<bool>& raw,
                               const std::vector<std::string>& packed, Prelude& pre) const {
  const std::string& name = u.get<std::string>();
  const TensorCore* tc = TensorCore::from_name(name);
  if (!tc || a.size() != size_t(tc->a_regs() + tc->b_regs() + TensorCore::kC))
    throw Error("render: CUDA has no tensor core " + u.arg_repr());
  if (tc->tf32()) return wmma_tf32(*tc, a, pre);
  constexpr size_t n16 = 12;  // A's 8 and B's 4 16-bit registers
  if (packed.size() != n16 / 2)
    throw Error("render: WMMA " + name + " with " + std::to_string(packed.size()) + " pairs");
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
             "(unsigned a0, unsigned a1, unsigned a2, unsigned a3, unsigned b0, unsigned b1, float c0, float c1, float "
             "c2, "
             "float c3) {\n"
             "  unsigned d01 = tg_pack_f16(__float2half_rn(c0), __float2half_rn(c1)), d23 = "
             "tg_pack_f16(__float2half_rn(c2), __float2half_rn(c3));\n"
             "  asm(\"mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16 {%0, %1}, {%2, %3, %4, %5}, {%6, %7}, {%0, "
             "%1};\"\n"
             "      : \"+r\"(d01), \"+r\"(d23) : \"r\"(a0), \"r\"(a1), \"r\"(a2), \"r\"(a3), \"r\"(b0), \"r\"(b1));\n"
             "  tg_half4 d;\n  memcpy(&d.v[0], &d01, 4);\n  memcpy(&d.v[2], &d23, 4);\n  return d;\n}";
    return "__device__ inline float4 " + name +
           "(unsigned a0, unsigned a1, unsigned a2, unsigned a3, unsigned b0, unsigned b1, float c0, float c1, float "
           "c2, "
           "float c3) {\n"
           "  float4 d = make_float4(c0, c1, c2, c3);\n"
           "  asm(\"mma.sync.aligned.m16n8k16.row.col.f32." +
           ty + "." + ty +
           ".f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
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
    call +=
        (p ? ", " : "") + (packed[p].empty() ? pack + "(" + reg16(2 * p) + ", " + reg16(2 * p + 1) + ")" : packed[p]);
  for (size_t k = n16; k < a.size(); k++) call += ", " + strip_parens(a[k]);
  return call + ")";
}

// mma.sync m16n8k8 on float32 values rounded to tf32 (cvt.rna: to nearest, ties away from zero).
std::string CUDARenderer::wmma_tf32(const TensorCore& tc, const std::vector<std::string>& a, Prelude& pre) const {
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
           "      : \"r\"(tg_tf32(a0)), \"r\"(tg_tf32(a1)), \"r\"(tg_tf32(a2)), \"r\"(tg_tf32(a3)), "
           "\"r\"(tg_tf32(b0)), "
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
std::string CUDARenderer::cp_async(const std::string& dst, const std::string& dst_idx, const std::string& src,
                                   const std::string& src_idx, const std::string& gate, const std::string& valid,
                                   int64_t n, DType dt) const {
  if (n * dt.itemsize() != 16)
    throw Error("render: CUDA cp.async of " + std::to_string(n) + " x " + dt.repr() + " (16 bytes only)");
  const std::string to = "\"r\"((unsigned)__cvta_generic_to_shared(" + dst + " + (" + dst_idx + ")))";
  // masked: a source size of 0 bytes fills the 16 with zeros and reads nothing (from the buffer's start, never an
  // address outside it); gated off: the copy does not run (its address is the buffer's start too)
  const std::string cond = valid.empty() ? gate : gate.empty() ? valid : "(" + gate + ")&&(" + valid + ")";
  const std::string from =
      "\"l\"(" + src + " + " + (cond.empty() ? src_idx : "(" + cond + " ? " + src_idx + " : 0)") + ")";
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

std::string CUDARenderer::async_commit() const { return "asm volatile(\"cp.async.commit_group;\" ::: \"memory\");"; }

// n >= 256: the copies are then read by wgmma, through the async proxy, which must be told of them.
std::string CUDARenderer::async_wait(int64_t n) const {
  return "asm volatile(\"cp.async.wait_group " + std::to_string(n % 256) + ";" +
         (n >= 256 ? " fence.proxy.async.shared::cta;" : "") + "\" ::: \"memory\");";
}

// TMA (renderer/tensor_map.h) and the mbarriers that count its bytes. Copies and announcements in the reduce loop
// are predicated instructions (no branch: see cp_async); the wait spins on try_wait inside its asm.
std::string CUDARenderer::bulk_copy(const UOp& u, const std::vector<std::string>& a, Prelude& pre) const {
  pre.need("tg_tensor_map", [] {
    return "struct __align__(64) tg_tensor_map { unsigned long long v[16]; };  // a CUtensorMap, by value";
  });
  auto smem = [&](size_t buf) {
    return "\"r\"((unsigned)__cvta_generic_to_shared(" + a.at(buf) + " + (" + a.at(buf + 1) + ")))";
  };
  auto predicated = [](const std::string& instr, const std::string& gate_operand) {
    return "{ .reg .pred p; setp.ne.b32 p, " + gate_operand + ", 0; @p " + instr + " }";
  };
  switch (u.op) {
    case Ops::MBAR_INIT:
      return "if (" + a.at(2) + ") asm volatile(\"mbarrier.init.shared::cta.b64 [%0], " +
             std::to_string(u.get<int64_t>()) + "; fence.mbarrier_init.release.cluster;\" :: " + smem(0) +
             " : \"memory\");";
    case Ops::MBAR_EXPECT:
      return "asm volatile(\"" +
             predicated("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], " + std::to_string(u.get<int64_t>()) + ";",
                        "%1") +
             "\" :: " + smem(0) + ", \"r\"(int(" + a.at(2) + ")) : \"memory\");";
    case Ops::MBAR_WAIT:
      return "asm volatile(\"{ .reg .pred p; tg_wait: mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1; @!p bra "
             "tg_wait; }\" :: " +
             smem(0) + ", \"r\"(unsigned(" + a.at(2) + ")) : \"memory\");";
    case Ops::TMA_LOAD:
      return "asm volatile(\"" +
             predicated(
                 "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, "
                 "{%2, %3}], [%4];",
                 "%5") +
             "\" :: " + smem(0) + ", \"l\"((unsigned long long)&" + a.at(2) + "), \"r\"(int(" + a.at(3) +
             ")), \"r\"(int(" + a.at(4) + ")), " + smem(5) + ", \"r\"(int(" + a.at(7) + ")) : \"memory\");";
    default:
      throw Error(std::string("render: CUDA bulk copy of a ") + op_name(u.op));
  }
}

// wgmma.mma_async on the lanes of a fresh array (C's values copied in), A and B by descriptor: start address, LBO
// and SBO, all >> 4, and the swizzle mode (renderer/tensor_core.h has the layouts). The fence, commit and wait
// the arg asks for go around it.
std::string CUDARenderer::wgmma_step(const UOp& u, const std::string& name, const std::vector<std::string>& a,
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

std::string CUDARenderer::wgmma_drain(const std::string& name, int lanes) const {
  std::string outs;
  for (int q = 0; q < lanes; q++)
    outs += std::string(q ? ", " : "") + "\"+f\"(" + name + "[" + std::to_string(q) + "])";
  return "asm volatile(\"wgmma.wait_group.sync.aligned 0;\" ::: \"memory\");\nasm volatile(\"\" : " + outs +
         " :: \"memory\");";
}

// ldmatrix into `count` 32-bit registers: `unsigned name[count]`.
std::string CUDARenderer::ldmatrix(const std::string& name, const std::string& local, const std::string& idx,
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

std::string CUDARenderer::ldmatrix_lane(const std::string& name, int64_t i, DType dt) const {
  std::string bits =
      "(unsigned short)(" + name + "[" + std::to_string(i / 2) + "] >> " + std::to_string(16 * (i % 2)) + ")";
  return is_bf16(dt) ? "__bfloat162float(__ushort_as_bfloat16(" + bits + "))"
                     : "__half2float(__ushort_as_half(" + bits + "))";
}

std::string CUDARenderer::ldmatrix_reg(const std::string& name, int64_t q) const {
  return name + "[" + std::to_string(q) + "]";
}

std::string CUDARenderer::raw16_lane(const std::string& vec, int64_t i) const {
  return vec + ".v[" + std::to_string(i) + "]";
}

}  // namespace tg
