// A 2-D convolution as one matmul over a flattened image, for devices with tensor cores.
//
// In NCHW a conv's input window is a masked view (the padding) whose taps shift along the contiguous W dim by
// one element: no 16-byte copy into shared memory is aligned, and no tensor-core layout fits (conv2d 3x3 fp16
// 32x64x56x56 -> 64 ran on mma.sync with scalar global loads at 15 TFLOPS on an H100, torch 95). Here the input
// is first copied channels-last and zero-padded, (N, Hp, Wp, C), then flattened to rows of pixels (P, C) with
// P = N * Hp * Wp. Output pixel (n, y, x) is flat row p = (n * Hp + y) * Wp + x, and its tap (ky, kx) reads row
// p + ky * Wp + kx: for every tap a shift of the whole row axis. So the window is one strided view with no mask,
//
//   A[p, ky, kx * C + c] = flat[p + ky * Wp + kx, c]       strides (C, Wp * C, 1)
//   B[o, ky, kx * C + c] = w[o, c, ky, kx]                 (w copied to (O, kh, kw, C))
//   out[o, p] = sum over ky and (kx, c) of A * B           M = p, N = o, K = (kx, c) contiguous in both
//
// a matmul with K-major operands (x @ W.T's shape). The padding stays a view: A's copies into shared memory
// read a whole pixel's 8 channels at once, valid or zeros (codegen/staging.h). The price: outputs at the
// padding's rows and columns (and across image borders) are computed and dropped, (Hp * Wp) / (Ho * Wo) of the
// work, a channels-last copy of the input, and an output in (O, N, Hp, Wp) that is read back as a view. P is
// rounded up to whole 128-row tiles; the flat input has zero rows past its end for the taps of the last rows.
#include "tensor/conv_flat.h"

#include "engine/device_facts.h"
#include "tg/context.h"
#include "uop/device_set.h"

namespace tg {
namespace {

// 0: off; 1: where it pays (the default); 2: wherever it applies, however small (tests)
ContextVar CONV_FLAT("CONV_FLAT", 1);

constexpr int64_t kMinMacs = int64_t(1) << 26;  // below this the two copies cost more than the tensor cores save
constexpr double kMaxWaste = 1.5;               // computed outputs / kept outputs
constexpr int64_t kRowTile = 128;               // P rounds up to this (the tensor-core kernels' M tile)

int64_t round_up(int64_t a, int64_t b) { return (a + b - 1) / b * b; }

}  // namespace

std::optional<Tensor> flat_window_conv2d(const Tensor& x, const Tensor& w, const PadArg& pads, int64_t groups,
                                         const std::vector<int64_t>& stride, const std::vector<int64_t>& dil) {
  const Shape xs = x.shape(), ws = w.shape();
  if (CONV_FLAT.value() == 0 || xs.size() != 4 || groups != 1 || x.dtype() != w.dtype() || x.device() != w.device())
    return std::nullopt;
  // Not over several devices: its rows run across the batch (padded, flattened), so a batch split over devices
  // would be gathered onto each of them.
  if (is_device_set(x.device())) return std::nullopt;
  for (size_t j = 0; j < 2; j++)
    if (stride[j] != 1 || dil[j] != 1 || pads[j].first < 0 || pads[j].second < 0) return std::nullopt;
  const int64_t n = xs[0], c = xs[1], o = ws[0], kh = ws[2], kw = ws[3];
  const int64_t hp = xs[2] + pads[0].first + pads[0].second, wp = xs[3] + pads[1].first + pads[1].second;
  const int64_t ho = hp - kh + 1, wo = wp - kw + 1;
  // 16-byte pixels and whole 8-column tensor-core tiles of output channels
  if (c % 8 != 0 || o % 8 != 0 || ho <= 0 || wo <= 0 || !has_staged_tensor_cores(x.device(), x.dtype())) return std::nullopt;
  // It does not pay where a gradient flows back through it: it has no hand-written gradient (tensor/conv_grad.cpp),
  // and differentiated op by op its overlapping window view is a scatter over the taps (beautiful_mnist's second
  // conv on an H200: the weight's gradient took 59.7 ms through the window, 6.1 ms through the generic conv).
  const bool pays = n * ho * wo * o * c * kh * kw >= kMinMacs && double(hp * wp) <= kMaxWaste * double(ho * wo) &&
                    !x.requires_grad() && !w.requires_grad();
  if (!pays && CONV_FLAT.value() < 2) return std::nullopt;

  const int64_t rows = n * hp * wp, p = round_up(rows, kRowTile), taps = kh * wp;  // taps: (ky, whole padded row)
  // (len, C): channels-last (a copy), padded and flattened (views: the conv's copies into shared memory read the
  // padding as zeros), with zero images past the end for the last rows' taps (padding whole images keeps the
  // pad one view below the window: a pad of the flat rows would not merge with it)
  const int64_t image = hp * wp, extra = (p + taps - 1 - rows + image - 1) / image, len = (n + extra) * image;
  Tensor flat = x.permute({0, 2, 3, 1}).contiguous().pad({{0, extra}, pads[0], pads[1], {0, 0}}).reshape({len, c});
  // window[c, p, t] = flat[p + t, c] (tinygrad's pool trick for one dim with stride 1: repeat the row, read it
  // with a pitch one longer)
  const int64_t rep = (taps * (len + 1) + len - 1) / len;
  Tensor win = flat.permute({1, 0}).reshape({c, 1, len}).expand({c, rep, len}).reshape({c, rep * len});
  win = win.shrink({{0, c}, {0, taps * (len + 1)}}).reshape({c, taps, len + 1}).shrink({{0, c}, {0, taps}, {0, p}});
  // (1, P, kh, kw * C): taps (ky, kx < kw), channels innermost
  Tensor a = win.reshape({c, taps / wp, wp, p}).shrink({{0, c}, {0, kh}, {0, kw}, {0, p}}).permute({3, 1, 2, 0});
  a = a.reshape({1, p, kh, kw * c});
  Tensor b = w.permute({0, 2, 3, 1}).contiguous().reshape({o, 1, kh, kw * c});
  // (O, P), realized in the input dtype: a consumer (bias, relu) reads it back as a view, in half the bytes
  Tensor out = (a * b).sum({-1, -2}).contiguous();
  return out.shrink({{0, o}, {0, rows}})
      .reshape({o, n, hp, wp})
      .shrink({{0, o}, {0, n}, {0, ho}, {0, wo}})
      .permute({1, 0, 2, 3});
}

}  // namespace tg
