// A float32 conv on the CPU reads its weights packed output-channel-last, (cin, *k, cout): the
// register-tiled kernel (codegen/opt/cpu_gemm.cpp) then loads 32 output channels' weights as two
// contiguous vectors per reduce step, broadcasts one input value (a masked scalar load under padding) into
// each, and 4 output x positions share the weight vectors; the output tile's lanes are stored one by one
// (NCHW, channels 3136 floats apart), once per tile. Unpacked, the vectors ran along output x, and every
// tap shifted by one column was gathered from 8 masked scalar loads (conv2d 8x32x56x56 -> 32, 3x3: 24
// GFLOPS against ~200). The copy is a small kernel of its own; the products and their order are unchanged.
#include "tensor/conv_pack.h"

#include "tensor/matmul_pack.h"

namespace tg {
namespace {

constexpr int64_t kMinMacs = int64_t(1) << 20;  // below this the copy does not pay

}  // namespace

std::optional<Tensor> cpu_packed_conv_weight(const Tensor& w, int64_t groups, int64_t macs) {
  const Shape ws = w.shape();
  if (!cpu_pack_enabled() || groups != 1 || !is_host_cpu_device(w.device()) || w.dtype() != dtypes::float32 || ws[0] % 16 != 0 ||
      macs < kMinMacs)
    return std::nullopt;
  std::vector<int64_t> to_packed, from_packed = {int64_t(ws.size()) - 1};
  for (size_t j = 1; j < ws.size(); j++) to_packed.push_back(int64_t(j));
  to_packed.push_back(0);
  for (size_t j = 0; j + 1 < ws.size(); j++) from_packed.push_back(int64_t(j));
  return w.permute(to_packed).contiguous().permute(from_packed);
}

}  // namespace tg
