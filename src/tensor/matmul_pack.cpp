// A large float32 matmul on the CPU reads its right operand w (k, m) as column panels: w is first copied
// into (m/32, k, 32), so the register-tiled kernel (codegen/opt/cpu_gemm.cpp) reads each K step of a panel
// as two contiguous 64-byte vectors, and one panel is one contiguous stream. Unpacked, a 32-column strip of
// a 2048-wide row-major w is 2048 pieces 8 KiB apart: they map onto a few cache sets and are evicted
// before their reuse (sgemm 2048^3 ran at 45-70 GFLOPS unpacked, 205-225 packed, the copy ~1.5 ms of ~80).
// The copy is its own kernel (contiguous); the product is the same sum of the same products in the same
// order, so results do not change.
#include "tensor/matmul_pack.h"

#include "tg/context.h"
#include "uop/device_set.h"

namespace tg {
namespace {

constexpr int64_t kPanel = 32;                  // two AVX-512 vectors (cpu_gemm's default tile width)
constexpr int64_t kMinMacs = int64_t(1) << 24;  // below this the copy costs more than it saves
ContextVar CPU_PACK("CPU_PACK", 1);

}  // namespace

bool cpu_pack_enabled() { return CPU_PACK.value() != 0; }
// CPU, CPU:n and LLVM, and sets of them (a sharded tensor's kernels run on each member, with the same layouts).
bool is_host_cpu_device(const std::string& device) {
  for (const std::string& d : device_set_members(device))
    if (const std::string kind = d.substr(0, d.find(':')); kind != "CPU" && kind != "LLVM") return false;
  return true;
}

std::optional<Tensor> cpu_packed_dot(const Tensor& x, const Tensor& w) {
  const Shape a = x.shape(), b = w.shape();
  if (!cpu_pack_enabled() || is_symbolic(a) || is_symbolic(b) || a.size() < 2 || b.size() != 2 || !is_host_cpu_device(x.device()) || x.device() != w.device() ||
      x.dtype() != dtypes::float32 || w.dtype() != dtypes::float32)
    return std::nullopt;
  const int64_t k = b[0], m = b[1];
  int64_t rows = 1;
  for (size_t i = 0; i + 1 < a.size(); i++) rows *= a[i];
  if (a.back() != k || m % kPanel != 0 || k < 64 || rows < 16 || rows * m * k < kMinMacs) return std::nullopt;
  // panels (m/32, k, 32), read back as (m/32, 32, k) against x (..., n, 1, 1, k)
  Tensor panels = w.reshape({k, m / kPanel, kPanel}).permute({1, 0, 2}).contiguous().permute({0, 2, 1});
  Shape xs(a.begin(), a.end() - 1);
  xs.insert(xs.end(), {1, 1, k});
  Shape out(a.begin(), a.end() - 1);
  out.push_back(m);
  return (x.reshape(xs) * panels).sum(-1).reshape(out);
}

}  // namespace tg
