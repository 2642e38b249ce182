#include "renderer/tensor_core.h"

#include <cstring>

#include "tg/error.h"
#include "uop/exec_alu.h"

namespace tg {

std::string TensorCore::name() const {
  return "WMMA_" + std::to_string(m) + "_" + std::to_string(n) + "_" + std::to_string(k) + "_" +
         (tf32() ? std::string("tf32") : in.repr().substr(7)) + "_" + acc.repr().substr(7);
}

const std::vector<TensorCore>& cuda_tensor_cores() {
  static const std::vector<TensorCore> tcs{{16, 8, 16, dtypes::float16, dtypes::float32},
                                           {16, 8, 16, dtypes::bfloat16, dtypes::float32},
                                           {16, 8, 16, dtypes::float16, dtypes::float16},
                                           {16, 8, 8, dtypes::float32, dtypes::float32}};
  return tcs;
}

const TensorCore* TensorCore::from_name(const std::string& name) {
  for (const TensorCore& tc : cuda_tensor_cores())
    if (tc.name() == name) return &tc;
  return nullptr;
}

std::vector<int64_t> WgmmaArg::pack() const {
  return {n,           bf16,        a.trans,     a.swizzle, a.k_stride, a.mn_stride, b.trans,
          b.swizzle,   b.k_stride,  b.mn_stride, fence,     wait,       defer};
}

WgmmaArg WgmmaArg::unpack(const std::vector<int64_t>& v) {
  if (v.size() != 13) throw Error("WGMMA: its arg needs 13 numbers, has " + std::to_string(v.size()));
  WgmmaArg w{int(v[0]), v[1] != 0, {v[2] != 0, v[3] != 0, v[4], v[5]}, {v[6] != 0, v[7] != 0, v[8], v[9]}, v[10] != 0,
             v[11] != 0, v[12] != 0};
  if (w.defer && !w.wait) throw Error("WGMMA: a deferred wait on a wgmma that does not wait");
  if (w.n < 8 || w.n > 256 || w.n % 8 != 0) throw Error("WGMMA: n " + std::to_string(w.n) + " (expected 8 .. 256, a multiple of 8)");
  for (const WgmmaOperand* o : {&w.a, &w.b}) {
    const bool k_unused = o->swizzle && !o->trans;  // a swizzled K-major row holds all of K
    if ((k_unused ? o->k_stride < 0 : o->k_stride <= 0) || o->mn_stride <= 0 || o->k_stride % 8 != 0 ||
        o->mn_stride % 8 != 0)
      throw Error("WGMMA: strides " + std::to_string(o->k_stride) + ", " + std::to_string(o->mn_stride) +
                  " (expected positive multiples of 8 elements)");
  }
  return w;
}

int64_t WgmmaOperand::element(int64_t offset, int64_t r, int64_t c) const {
  if (!swizzle)
    return offset + (r / 8) * mn_stride + (c / 8) * k_stride + (trans ? 8 * (c % 8) + r % 8 : 8 * (r % 8) + c % 8);
  const int64_t e = trans ? offset + (r / 64) * mn_stride + (c / 8) * k_stride + 64 * (c % 8) + r % 64
                          : offset + (r / 8) * mn_stride + 64 * (r % 8) + c;
  return e ^ (8 * ((e / 64) % 8));
}

void emulate_wgmma(const std::vector<double>& a, const std::vector<double>& b, std::vector<double>& d, int n) {
  for (size_t m = 0; m < 64; m++)
    for (size_t c = 0; c < size_t(n); c++) {
      float acc = float(d[m * size_t(n) + c]);
      for (size_t k = 0; k < 16; k++) acc = float(double(acc) + a[m * 16 + k] * b[k * size_t(n) + c]);
      d[m * size_t(n) + c] = acc;
    }
}

double round_tf32(double x) {
  float f = float(x);
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  if ((bits & 0x7f800000u) == 0x7f800000u) return f;  // inf, NaN
  bits = (bits + 0x1000u) & 0xffffe000u;               // half of the last kept bit: ties away from zero
  std::memcpy(&f, &bits, 4);
  return f;
}

std::vector<std::vector<double>> emulate_mma(const std::vector<std::vector<double>>& a,
                                             const std::vector<std::vector<double>>& b,
                                             const std::vector<std::vector<double>>& c, const TensorCore& tc) {
  if (a.size() != TensorCore::kLanes || b.size() != TensorCore::kLanes || c.size() != TensorCore::kLanes)
    throw Error("emulate_mma: needs the registers of 32 lanes");
  auto input = [&](double v) { return tc.tf32() ? round_tf32(v) : v; };
  std::vector<std::vector<double>> A(size_t(tc.m), std::vector<double>(size_t(tc.k)));
  std::vector<std::vector<double>> B(size_t(tc.k), std::vector<double>(size_t(tc.n)));
  std::vector<std::vector<double>> C(size_t(tc.m), std::vector<double>(size_t(tc.n)));
  for (int l = 0; l < TensorCore::kLanes; l++) {
    for (int i = 0; i < tc.a_regs(); i++) {
      auto [r, col] = tc.a_elem(l, i);
      A[size_t(r)][size_t(col)] = input(a[size_t(l)].at(size_t(i)));
    }
    for (int i = 0; i < tc.b_regs(); i++) {
      auto [r, col] = tc.b_elem(l, i);
      B[size_t(r)][size_t(col)] = input(b[size_t(l)].at(size_t(i)));
    }
    for (int i = 0; i < TensorCore::kC; i++) {
      auto [r, col] = TensorCore::c_elem(l, i);
      C[size_t(r)][size_t(col)] = c[size_t(l)].at(size_t(i));
    }
  }
  // (static_cast, not size_t(...): clang reads the functional casts as a function declaration)
  std::vector<std::vector<double>> d(static_cast<size_t>(TensorCore::kLanes),
                                     std::vector<double>(static_cast<size_t>(TensorCore::kC)));
  for (int l = 0; l < TensorCore::kLanes; l++)
    for (int i = 0; i < TensorCore::kC; i++) {
      auto [r, col] = TensorCore::c_elem(l, i);
      float acc = float(C[size_t(r)][size_t(col)]);
      for (int kk = 0; kk < tc.k; kk++) acc = float(double(acc) + A[size_t(r)][size_t(kk)] * B[size_t(kk)][size_t(col)]);
      d[size_t(l)][size_t(i)] = truncate_num(Num{0, double(acc)}, tc.acc).f;
    }
  return d;
}

}  // namespace tg
