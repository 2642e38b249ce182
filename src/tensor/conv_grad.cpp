// The gradient of a convolution, written by hand (see custom_gradient.h for why). Differentiated op by op,
// the forward graph (x's windows times w, summed) gives the input gradient as a sum over output channels into
// a (batch, cin, *o, *k) buffer folded back onto the input through div/mod index math, and the weight
// gradient as a reduce that no register tile fits. Written as convolutions, both take the tiled kernels:
//   dx = conv_transpose(dy, w): dy spread by the stride, padded, convolved with w flipped in space and its
//        channels swapped, so a stride-1 conv's input gradient is an ordinary conv (packed weights on the CPU);
//   dw[g, r, c, *k] = sum over (b, *o) of x's window [b, g, c, *o, *k] times dy[b, g, r, *o]: a matmul of the
//        windows (rows c, *k) with dy copied channels-last (columns r contiguous), the forward conv's tile with
//        batch and output positions as its reduce.
#include "tensor/conv_grad.h"

#include "shape/view.h"
#include "tensor/custom_gradient.h"
#include "tensor/window.h"

namespace tg {
namespace {

struct ConvGeometry {
  int64_t groups;
  std::vector<int64_t> stride, dil;
  PadArg pads;
};

std::vector<int64_t> iota(int64_t from, int64_t n) {
  std::vector<int64_t> v;
  for (int64_t i = 0; i < n; i++) v.push_back(from + i);
  return v;
}

// The images summed per step of a weight gradient: the largest divisor of the batch whose output gradient
// (bytes_per_image each) stays within 256 KiB, a quarter of a core's L2 here.
int64_t batch_chunk(int64_t bs, int64_t bytes_per_image) {
  constexpr int64_t kBytes = 256 << 10;
  int64_t best = 1;
  for (int64_t c = 1; c <= bs && c * bytes_per_image <= kBytes; c++)
    if (bs % c == 0) best = c;
  return best;
}

Tensor input_gradient(const Tensor& dy, const Tensor& x, const Tensor& w, const ConvGeometry& g) {
  const Shape xs = x.shape(), ws = w.shape(), ys = dy.shape();
  size_t dims = ws.size() - 2;
  // conv_transpose2d's padding in F.pad order (last dim first), and the output padding that gives back x's
  // size (rows past the last window get no gradient: they were never read)
  std::vector<int64_t> pad_arg, out_pad;
  for (size_t j = dims; j-- > 0;) pad_arg.insert(pad_arg.end(), {g.pads[j].first, g.pads[j].second});
  for (size_t j = 0; j < dims; j++)
    out_pad.push_back(xs[2 + j] - ((ys[2 + j] - 1) * g.stride[j] - g.pads[j].first - g.pads[j].second +
                                   g.dil[j] * (ws[2 + j] - 1) + 1));
  return dy.conv_transpose2d(w, std::nullopt, g.groups, g.stride, g.dil, pad_arg, out_pad);
}

Tensor weight_gradient(const Tensor& dy, const Tensor& x, const Tensor& w, const ConvGeometry& g) {
  const Shape ws = w.shape(), ys = dy.shape();
  const int64_t dims = int64_t(ws.size()) - 2, bs = ys[0], cin = ws[1], rcout = ws[0] / g.groups;
  const Shape k(ws.begin() + 2, ws.end()), o(ys.begin() + 2, ys.end());
  // x's windows (bs, G*cin, *o, *k) -> (G, cin, *k, 1, bs, *o)
  Tensor p = pool(pad_const(x, g.pads, 0), k, g.stride, g.dil);
  Shape split = {bs, g.groups, cin};
  split.insert(split.end(), o.begin(), o.end());
  split.insert(split.end(), k.begin(), k.end());
  std::vector<int64_t> order = {1, 2};
  for (int64_t j : iota(3 + dims, dims)) order.push_back(j);
  order.push_back(0);
  for (int64_t j : iota(3, dims)) order.push_back(j);
  Shape a = {g.groups, cin};
  a.insert(a.end(), k.begin(), k.end());
  a.push_back(1);
  a.push_back(bs);
  a.insert(a.end(), o.begin(), o.end());
  Tensor windows = p.reshape(split).permute(order).reshape(a);
  // dy channels-last (bs, *o, G*rcout) -> (G, 1, *1, rcout, bs, *o)
  std::vector<int64_t> last = {0};
  for (int64_t j : iota(2, dims)) last.push_back(j);
  last.push_back(1);
  Shape cl = {bs};
  cl.insert(cl.end(), o.begin(), o.end());
  cl.insert(cl.end(), {g.groups, rcout});
  std::vector<int64_t> to_b = {1 + dims, 2 + dims, 0};
  for (int64_t j : iota(1, dims)) to_b.push_back(j);
  Shape b = {g.groups, 1};
  b.insert(b.end(), size_t(dims), 1);
  b.push_back(rcout);
  b.push_back(bs);
  b.insert(b.end(), o.begin(), o.end());
  Tensor cols = dy.permute(last).contiguous().reshape(cl).permute(to_b).reshape(b);
  // sum over (bs, *o) -> (G, cin, *k, rcout), kept in that layout, read back as (G*rcout, cin, *k). The batch
  // is summed in two steps: chunks of images whose dy fits in L2 first, as an output dim of the products'
  // kernel (its outermost loop), so each tile row of the windows reads the chunk from L2, not all of dy from
  // memory (conv 512x32x24x24 -> 32, 5x5: 110 ms in one reduce, memory-bound on dy's 26 MB read 80 times).
  int64_t chunk = batch_chunk(bs, prod(o) * rcout * int64_t(dy.dtype().itemsize()));
  Tensor prods = windows * cols;
  if (chunk >= 2 && chunk < bs) {
    Shape split_b = prods.shape();
    size_t bdim = size_t(3 + dims);  // (G, cin, *k, rcout, bs, *o)
    split_b[bdim] = chunk;
    split_b.insert(split_b.begin() + int64_t(bdim), bs / chunk);
    std::vector<int64_t> outer = {int64_t(bdim)};
    for (int64_t j = 0; j < int64_t(bdim); j++) outer.push_back(j);
    for (int64_t j = int64_t(bdim) + 1; j < int64_t(split_b.size()); j++) outer.push_back(j);
    prods = prods.reshape(split_b).permute(outer);  // (bs/chunk, G, cin, *k, rcout, chunk, *o)
    prods = prods.sum(iota(-1 - dims, 1 + dims)).sum(0);
  } else {
    prods = prods.sum(iota(-1 - dims, 1 + dims));
  }
  Tensor dw = prods.contiguous();
  std::vector<int64_t> back = {0, 2 + dims, 1};
  for (int64_t j : iota(2, dims)) back.push_back(j);
  return dw.permute(back).reshape(ws);
}

}  // namespace

void set_conv_gradient(const Tensor& out, const Tensor& x, const Tensor& w, int64_t groups,
                       const std::vector<int64_t>& stride, const std::vector<int64_t>& dil, const PadArg& pads) {
  ConvGeometry g{groups, stride, dil, pads};
  set_custom_gradient(out, {x, w}, [g](const Tensor& dy, const std::vector<Tensor>& in) {
    std::vector<std::optional<Tensor>> grads(2);
    if (in[0].dtype().is_float()) grads[0] = input_gradient(dy, in[0], in[1], g);
    if (in[1].dtype().is_float()) grads[1] = weight_gradient(dy, in[0], in[1], g);
    return grads;
  });
}

}  // namespace tg
