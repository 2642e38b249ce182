#pragma once
// Tensor cores a renderer offers: one warp-wide matrix multiply-accumulate D = A·B + C of an (m x k) A, a
// (k x n) B and an (m x n) C, each spread over the 32 lanes of a warp, a few elements per lane (the
// lane's "registers"). The layout (which lane holds which element) is the hardware's: codegen follows it
// to give each lane its operands (OptOps.TC, codegen/opt/tensor_cores.cpp), the renderer names the instruction,
// and the interpreter emulates the op with it (so CI runs tensor-core kernels without a GPU).
//
// The shapes here are PTX's mma.sync.aligned.m16n8k16.row.col with float32 accumulation, for float16 and
// bfloat16 inputs, and float16 accumulation for float16 (a sum asked for in float16, Tensor::sum(.., dtype));
// and m16n8k8 with float32 inputs read as tf32 (10-bit mantissas), float32 accumulation, behind ALLOW_TF32=1.
// A lane holds k_lo() elements of K side by side (a 16-bit pair in one 32-bit register, or one tf32), so with
// KL = k_lo() and lane l = 4 * g + t (g = l / 4 the "group", t = l % 4):
//   A (16 x k): register i holds row g + 8 * (i / KL % 2), col KL * t + i % KL + 4 KL * (i / (2 KL)) (4 KL registers)
//   B (k x 8):  register i holds row KL * t + i % KL + 4 KL * (i / KL), col g                      (2 KL registers)
//   C, D (16 x 8): register i holds row g + 8 * (i / 2), col 2 * t + i % 2                         (4 registers)
// (m16n8k16: A's register i is row g + 8 ((i / 2) % 2), col 2 t + i % 2 + 8 (i / 4); B's row 2 t + i % 2 + 8 (i / 2).)
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "tg/dtype.h"
#include "uop/uop.h"

namespace tg {

struct TensorCore {
  int m = 16, n = 8, k = 16;
  DType in;   // A and B: float16, bfloat16, or float32 (read as tf32)
  DType acc;  // C and D: float32, or float16 for float16 inputs
  static constexpr int kLanes = 32, kC = 4;  // lanes of a warp, C's registers per lane

  bool tf32() const { return in == dtypes::float32; }
  int k_lo() const { return tf32() ? 1 : 2; }  // K elements a lane holds side by side
  int a_regs() const { return 4 * k_lo(); }
  int b_regs() const { return 2 * k_lo(); }
  // (row, col) of the element a lane holds in register i.
  std::pair<int, int> a_elem(int lane, int i) const {
    const int kl = k_lo();
    return {lane / 4 + 8 * (i / kl % 2), kl * (lane % 4) + i % kl + 4 * kl * (i / (2 * kl))};
  }
  std::pair<int, int> b_elem(int lane, int i) const {
    const int kl = k_lo();
    return {kl * (lane % 4) + i % kl + 4 * kl * (i / kl), lane / 4};
  }
  static std::pair<int, int> c_elem(int lane, int i) { return {lane / 4 + 8 * (i / 2), 2 * (lane % 4) + i % 2}; }

  // "WMMA_16_8_16_half_float": the WMMA node's arg, which the renderers and the interpreter read back.
  std::string name() const;
  static const TensorCore* from_name(const std::string& name);  // nullptr when no tensor core has the name
};

// LDMATRIX's arg (codegen/program.h): the warp-wide load of 8x8 16-bit matrices that feeds tensor cores.
struct LdmatrixArg {
  int count = 4;       // 8x8 matrices: 1, 2 or 4
  bool trans = false;  // each lane gets a column pair instead of a row pair
  int64_t pack() const { return int64_t(count) | int64_t(trans) << 8; }
  static LdmatrixArg unpack(int64_t v) { return {int(v & 0xff), bool(v >> 8 & 1)}; }
};

// WGMMA's arg (codegen/program.h): Hopper's warpgroup-wide D (64 x n, float32) = A (64 x 16) · B (16 x n) + D,
// A and B read from shared memory. An operand's element (r, c), r along M (or N), c along K, lies at
//   unswizzled, K-major:  offset + (r / 8) mn_stride + (c / 8) k_stride + 8 (r % 8) + c % 8
//   unswizzled, MN-major: offset + (r / 8) mn_stride + (c / 8) k_stride + 8 (c % 8) + r % 8
//     ("core matrices" of 8 rows x 8 16-bit elements, the 128 bytes contiguous)
//   128-byte swizzle, K-major:  s(offset + (r / 8) mn_stride + 64 (r % 8) + c)
//   128-byte swizzle, MN-major: s(offset + (r / 64) mn_stride + (c / 8) k_stride + 64 (c % 8) + r % 64)
//     (rows of 128 bytes in atoms of 8 rows; s(e) = e ^ 8 ((e / 64) % 8) moves each 16-byte chunk within its row,
//     so a buffer holding swizzled operands starts 1024-byte aligned)
// in elements of the buffer. The renderer turns these numbers into the hardware's descriptors, the interpreter
// reads the elements with them.
// Thread 32 w + 4 g + t of the warpgroup holds D's lanes 4 j + i at row 16 w + g + 8 (i / 2), column
// 8 j + 2 t + i % 2: the m16n8 C layout (above) for each 8 columns j.
struct WgmmaOperand {
  bool trans = false;    // MN-major
  bool swizzle = false;  // the 128-byte swizzle
  int64_t k_stride = 0, mn_stride = 0;
  bool operator==(const WgmmaOperand&) const = default;
  int64_t element(int64_t offset, int64_t r, int64_t c) const;  // the formulas above
};
struct WgmmaArg {
  int n = 8;                // 8 .. 256, a multiple of 8
  bool bf16 = false;        // inputs bfloat16 (else float16)
  WgmmaOperand a, b;
  bool fence = false;       // wgmma.fence first: D's registers were last written by other instructions
  bool wait = false;        // commit and wait for the warpgroup's wgmmas after it: D is read next
  bool defer = false;       // with wait: leave this commit group in flight (wait for the ones before it); the
                            // loop it is in waits for all after its end
  std::vector<int64_t> pack() const;
  static WgmmaArg unpack(const std::vector<int64_t>& v);  // throws on a malformed arg
  static WgmmaArg of(const UOp& wgmma) { return unpack(wgmma.get<std::vector<int64_t>>()); }  // a WGMMA node's
  bool operator==(const WgmmaArg&) const = default;
};

// The tensor cores of NVIDIA GPUs from sm_80 on (Ampere, Hopper): fp16 and bf16 in, fp32 accumulation; fp16 in,
// fp16 accumulation; tf32 (float32 in, only where ALLOW_TF32=1: codegen/opt/tensor_cores.cpp).
const std::vector<TensorCore>& cuda_tensor_cores();

// One warp's multiply-accumulate as the hardware computes it, from the lanes' registers: a[lane][i] (a_regs() per
// lane), b[lane][i] (b_regs()), c[lane][i] (kC), all as doubles holding the input values; returns d[lane][i] in
// the accumulator dtype (tf32 inputs rounded to 10-bit mantissas first, products exact, sums in float32 in k
// order, a float16 D rounded once at the end).
// One warpgroup's WGMMA: d (64 x n, row-major) = a (64 x 16) · b (16 x n) + d, products exact, sums in float32
// in k order (as emulate_mma).
void emulate_wgmma(const std::vector<double>& a, const std::vector<double>& b, std::vector<double>& d, int n);

std::vector<std::vector<double>> emulate_mma(const std::vector<std::vector<double>>& a,
                                             const std::vector<std::vector<double>>& b,
                                             const std::vector<std::vector<double>>& c, const TensorCore& tc);
// x rounded to tf32 as cvt.rna.tf32.f32 does: to 10 mantissa bits, ties away from zero (inf and NaN kept).
double round_tf32(double x);

}  // namespace tg
