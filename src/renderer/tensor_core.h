#pragma once
// Tensor cores a renderer offers: one warp-wide matrix multiply-accumulate D = A·B + C of an (m x k) A, a
// (k x n) B and an (m x n) C, each spread over the 32 lanes of a warp, a few elements per lane (the
// lane's "registers"). The layout (which lane holds which element) is the hardware's: codegen follows it
// to give each lane its operands (OptOps.TC, codegen/opt/tensor_cores.cpp), the renderer names the instruction,
// and the interpreter emulates the op with it (so CI runs tensor-core kernels without a GPU).
//
// The one shape here is PTX's mma.sync.aligned.m16n8k16.row.col with float32 accumulation, for float16 and
// bfloat16 inputs. Lane l = 4 * g + t (g = l / 4 the "group", t = l % 4):
//   A (16 x 16): register i holds row g + 8 * ((i / 2) % 2), col 2 * t + i % 2 + 8 * (i / 4)   (8 registers)
//   B (16 x 8):  register i holds row 2 * t + i % 2 + 8 * (i / 2), col g                       (4 registers)
//   C, D (16 x 8): register i holds row g + 8 * (i / 2), col 2 * t + i % 2                    (4 registers)
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "tg/dtype.h"

namespace tg {

struct TensorCore {
  int m = 16, n = 8, k = 16;
  DType in;   // A and B: float16 or bfloat16
  DType acc;  // C and D: float32
  static constexpr int kLanes = 32, kA = 8, kB = 4, kC = 4;  // lanes of a warp, registers per lane

  // (row, col) of the element a lane holds in register i.
  static std::pair<int, int> a_elem(int lane, int i) { return {lane / 4 + 8 * (i / 2 % 2), 2 * (lane % 4) + i % 2 + 8 * (i / 4)}; }
  static std::pair<int, int> b_elem(int lane, int i) { return {2 * (lane % 4) + i % 2 + 8 * (i / 2), lane / 4}; }
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

// The tensor cores of NVIDIA GPUs from sm_80 on (Ampere, Hopper): fp16 and bf16 in, fp32 accumulation.
const std::vector<TensorCore>& cuda_tensor_cores();

// One warp's multiply-accumulate as the hardware computes it, from the lanes' registers: a[lane][i] (kA per
// lane), b[lane][i] (kB), c[lane][i] (kC), all as doubles holding the exact input values; returns d[lane][i]
// in float32 (products are exact, sums in float32 in k order).
std::vector<std::vector<double>> emulate_mma(const std::vector<std::vector<double>>& a,
                                             const std::vector<std::vector<double>>& b,
                                             const std::vector<std::vector<double>>& c);

}  // namespace tg
