// Convolutions, pooling, linear and interpolate. Every window op is built on `pool`, which turns the last N
// dims into (output positions, kernel taps) with movement ops only, so a conv is one multiply + reduce over
// views of the input and the weight: the scheduler fuses it into a single reduce kernel, no im2col copy.
#include <algorithm>
#include <limits>

#include "tensor/conv_flat.h"
#include "tensor/conv_grad.h"
#include "tensor/conv_pack.h"
#include "tensor/matmul_pack.h"
#include "tensor/tensor_internal.h"
#include "tensor/window.h"

namespace tg {
namespace {

// Python's ceil division for a positive divisor (a may be negative).
int64_t ceildiv(int64_t a, int64_t b) { return a >= 0 ? (a + b - 1) / b : -((-a) / b); }

std::string fmt_vec(const std::vector<int64_t>& v) {
  std::string r = "[";
  for (size_t i = 0; i < v.size(); i++) r += (i ? ", " : "") + std::to_string(v[i]);
  return r + "]";
}

// One value per spatial dim from an argument given once (broadcast) or once per dim, all >= `min`.
std::vector<int64_t> per_dim(const std::string& op, const char* what, const std::vector<int64_t>& v, size_t dims,
                             int64_t min) {
  if (v.size() != 1 && v.size() != dims)
    throw Error(op + ": " + what + " " + fmt_vec(v) + " needs 1 or " + std::to_string(dims) + " entries for " +
                std::to_string(dims) + " spatial dims");
  std::vector<int64_t> out = v.size() == 1 ? std::vector<int64_t>(dims, v[0]) : v;
  for (int64_t x : out)
    if (x < min) throw Error(op + ": " + what + " " + fmt_vec(v) + " must be >= " + std::to_string(min));
  return out;
}

// (before, after) padding per spatial dim, as tinygrad's resolve_pool_pads: one int for all sides, one per dim
// (symmetric, in dim order), or 2*dims entries per side in F.pad order, last dim first: (left, right, top,
// bottom, ...).
PadArg resolve_pads(const std::string& op, const std::vector<int64_t>& p, size_t dims) {
  PadArg out(dims);
  if (p.size() == 1) {
    for (auto& pr : out) pr = {p[0], p[0]};
  } else if (p.size() == 2 * dims) {
    for (size_t i = 0; i < dims; i++) out[dims - 1 - i] = {p[2 * i], p[2 * i + 1]};
  } else if (p.size() == dims) {
    for (size_t i = 0; i < dims; i++) out[i] = {p[i], p[i]};
  } else {
    throw Error(op + ": padding " + fmt_vec(p) + " needs 1, " + std::to_string(dims) + " or " +
                std::to_string(2 * dims) + " entries for " + std::to_string(dims) + " spatial dims");
  }
  return out;
}

// A conv's bias (cout,) shaped to broadcast over (bs, cout, *spatial).
Tensor bias_of(const std::string& op, const Tensor& bias, int64_t cout, size_t dims) {
  if (bias.shape() != Shape{cout})
    throw Error(op + ": bias " + to_string(bias.shape()) + " does not match " + std::to_string(cout) +
                " output channels (expected " + to_string(Shape{cout}) + ")");
  Shape bshape = {1, cout};
  bshape.insert(bshape.end(), dims, 1);
  return bias.reshape(bshape);
}

// The N-d convolution behind conv2d and conv_transpose2d; `pads` is (before, after) per spatial dim, and may be
// negative.
Tensor conv(const std::string& op, const Tensor& x_in, const Tensor& w, const std::optional<Tensor>& bias,
            int64_t groups, const std::vector<int64_t>& stride, const std::vector<int64_t>& dil, const PadArg& pads) {
  // The products' dtype up front (uint8 images into float weights): the kernels then see float loads, and the
  // CPU's packed-weight tile applies (beautiful_mnist's first conv: 10 ms with the cast inside, 2.5 without).
  const DType dt = dtypes::promote(x_in.dtype(), w.dtype());
  const Tensor x = x_in.dtype() == dt ? x_in : x_in.cast(dt);
  Shape xs = x.shape(), ws = w.shape();
  size_t dims = ws.size() - 2;
  int64_t bs = xs[0], cin = ws[1], cout = ws[0], rcout = cout / groups;
  Shape k(ws.begin() + 2, ws.end());
  Shape padded = xs;
  for (size_t j = 0; j < dims; j++) padded[2 + j] += pads[j].first + pads[j].second;
  for (size_t j = 0; j < dims; j++)
    if (padded[2 + j] < dil[j] * (k[j] - 1) + 1)
      throw Error(op + ": kernel " + to_string(ws) + " with dilation " + fmt_vec(dil) + " is larger than the input " +
                  to_string(xs) + " padded to " + to_string(padded));
  if (dims == 2)
    if (auto flat = flat_window_conv2d(x, w, pads, groups, stride, dil))
      return bias ? *flat + bias_of(op, *bias, cout, dims) : *flat;
  Tensor p = pool(pad_const(x, pads, 0), k, stride, dil);  // (bs, cin*groups, *o, *k)
  Shape ps = p.shape();
  int64_t macs = cout;
  for (int64_t s : ps) macs *= s;
  std::optional<Tensor> packed;
  if (x.dtype() == dtypes::float32 && is_host_cpu_device(x.device())) packed = cpu_packed_conv_weight(w, groups, macs);
  const Tensor wk = packed.value_or(w);
  // A padded input is copied out with its zeros: the tile's masked scalar loads cost more than the copy (conv
  // 8x32x56x56 -> 32, 3x3, pad 1: 2.6 ms masked, 0.18 + 2.15 copied; the input gradient of a 5x5 conv, padded
  // by 4 on each side: 117 -> 73 ms).
  if (packed && padded != xs) p = pool(pad_const(x, pads, 0).contiguous(), k, stride, dil);
  Shape o(ps.begin() + 2, ps.begin() + 2 + int64_t(dims));

  // (bs, groups, cin, 1, *o, *k) -> expand rcout -> (bs, groups, rcout, *o, cin, *k); weight broadcasts over o.
  Shape r = {bs, groups, cin, 1}, e = {bs, groups, cin, rcout}, wr = {1, groups, rcout};
  r.insert(r.end(), o.begin(), o.end());
  r.insert(r.end(), k.begin(), k.end());
  e.insert(e.end(), o.begin(), o.end());
  e.insert(e.end(), k.begin(), k.end());
  std::vector<int64_t> order = {0, 1, 3};
  for (size_t j = 0; j < dims; j++) order.push_back(int64_t(4 + j));
  order.push_back(2);
  for (size_t j = 0; j < dims; j++) order.push_back(int64_t(4 + dims + j));
  wr.insert(wr.end(), dims, 1);
  wr.push_back(cin);
  wr.insert(wr.end(), k.begin(), k.end());
  Tensor win = p.reshape(r).expand(e).permute(order);
  std::vector<int64_t> red;
  for (size_t j = 0; j <= dims; j++) red.push_back(-1 - int64_t(j));
  Shape out = {bs, cout};
  out.insert(out.end(), o.begin(), o.end());
  Tensor ret = (win * wk.reshape(wr)).sum(red).reshape(out);
  bool cut = false;
  for (auto [b, e] : pads) cut |= b < 0 || e < 0;
  if (!cut) set_conv_gradient(ret, x, w, groups, stride, dil, pads);  // conv_grad.cpp: convs, not a fold
  return bias ? ret + bias_of(op, *bias, cout, dims) : ret;
}

void check_conv_shapes(const std::string& op, const Tensor& x, const Tensor& w, int64_t groups) {
  Shape xs = x.shape(), ws = w.shape();
  if (ws.size() < 3 || xs.size() != ws.size())
    throw Error(op + ": input " + to_string(xs) + " and weight " + to_string(ws) +
                " need the same rank >= 3: (N, C, *spatial) and (C_out, C_in/groups, *kernel)");
  if (groups < 1) throw Error(op + ": groups must be >= 1, got " + std::to_string(groups));
}

// Per-dim host index data for interpolate's gathers, as an int32 (out,) tensor on `device`.
Tensor index_tensor(const std::vector<int32_t>& idx, const std::string& device) {
  return Tensor(idx, {int64_t(idx.size())}, {.device = device});
}

// out[..., o, ...] = x[..., idx[o], ...] along `axis`: a where over a one-hot (out, in) mask and a sum, one
// fused reduce (tinygrad's gather does the same).
Tensor take_along(const Tensor& x, int64_t axis, const std::vector<int32_t>& idx) {
  Shape s = x.shape();
  int64_t in = s[size_t(axis)], out = int64_t(idx.size());
  bool identity = in == out;
  for (int64_t j = 0; identity && j < out; j++) identity = idx[size_t(j)] == j;
  if (identity) return x;
  size_t rest = s.size() - size_t(axis) - 1;
  Shape ms = {out, in};
  ms.insert(ms.end(), rest, 1);
  Tensor mask = index_tensor(idx, x.device()).reshape({out, 1}) ==
                Tensor::arange(in, {.device = x.device()}).reshape({1, in});
  Shape xs = s;
  xs.insert(xs.begin() + axis, 1);  // (..., 1, in, rest...)
  return mask.reshape(ms).where(x.reshape(xs), 0).sum(axis + 1).cast(x.dtype());
}

}  // namespace

// Pad the last pads.size() dims with `value`; negative amounts cut instead (conv_transpose2d makes those).
Tensor pad_const(const Tensor& x, const PadArg& pads, double value) {
  Shape s = x.shape();
  size_t lead = s.size() - pads.size();
  PadArg cut(s.size()), grow(s.size(), {0, 0});
  for (size_t i = 0; i < s.size(); i++) cut[i] = {0, s[i]};
  for (size_t i = 0; i < pads.size(); i++) {
    auto [b, e] = pads[i];
    cut[lead + i] = {std::max<int64_t>(0, -b), s[lead + i] - std::max<int64_t>(0, -e)};
    if (cut[lead + i].first > cut[lead + i].second) cut[lead + i].second = cut[lead + i].first;  // cut to empty
    grow[lead + i] = {std::max<int64_t>(0, b), std::max<int64_t>(0, e)};
  }
  Tensor y = x.shrink(cut);
  if (value == 0) return y.pad(grow);
  // pad() fills with zeros; a padded all-true mask tells the real elements from the filled ones.
  Tensor valid = Tensor::full(y.shape(), true, {.dtype = dtypes::bool_, .device = y.device()}).pad(grow);
  ConstValue v = y.dtype().is_float() ? ConstValue(value) : ConstValue(int64_t(value));
  return valid.where(y.pad(grow), v);
}

// tinygrad's _pool: (..., *i) -> (..., *o, *k), where out[..., o, k] = x[..., o*stride + k*dilation]. Only
// movement ops, so the windows are views. Windows never overlap when k <= s and d == 1: a pad/reshape/shrink
// does it. Otherwise the input is repeated (an expand) so that the row of kernel tap r is the input shifted by
// r*d; stride is then a reshape + shrink.
Tensor pool(const Tensor& x, const Shape& k, const std::vector<int64_t>& stride, const std::vector<int64_t>& dil) {
  Shape sh = x.shape();
  size_t nk = k.size(), lead = sh.size() - nk;
  Shape i(sh.begin() + int64_t(lead), sh.end()), o(nk);
  for (size_t j = 0; j < nk; j++) {
    if (dil[j] * (k[j] - 1) + 1 > i[j])
      throw Error("pool: kernel " + to_string(k) + " with dilation " + fmt_vec(dil) + " does not fit the input " +
                  to_string(sh) + " (after padding)");
    o[j] = ceildiv(i[j] - dil[j] * (k[j] - 1), stride[j]);
  }
  Shape base(sh.begin(), sh.begin() + int64_t(lead)), stride_s(stride.begin(), stride.end());
  auto with_lead = [&](std::initializer_list<const Shape*> parts_per_dim) {
    Shape r = base;
    for (size_t j = 0; j < nk; j++)
      for (const Shape* p : parts_per_dim) r.push_back((*p)[j]);
    return r;
  };
  auto bounds = [&](const Shape& s) {  // shrink every dim to [0, s[d])
    PadArg b;
    for (int64_t v : s) b.push_back({0, v});
    return b;
  };
  std::vector<int64_t> order;
  for (size_t d = 0; d < lead; d++) order.push_back(int64_t(d));

  bool simple = true;
  for (size_t j = 0; j < nk; j++) simple &= k[j] <= stride[j] && dil[j] == 1;
  if (simple) {
    PadArg grow(sh.size(), {0, 0});
    Shape os(nk);
    for (size_t j = 0; j < nk; j++) {
      os[j] = o[j] * stride[j];
      grow[lead + j] = {0, std::max<int64_t>(0, os[j] - i[j])};
    }
    Tensor t = x.pad(grow);
    t = t.shrink(bounds(with_lead({&os}))).reshape(with_lead({&o, &stride_s})).shrink(bounds(with_lead({&o, &k})));
    for (size_t j = 0; j < nk; j++) order.push_back(int64_t(lead + 2 * j));
    for (size_t j = 0; j < nk; j++) order.push_back(int64_t(lead + 2 * j + 1));
    return t.permute(order);
  }

  // f scales the input so that one row (i*f + d elements) is long enough for o*s; rep repeats it k times.
  Shape row(nk), one(nk, 1), rep(nk), rep_i(nk), taps(nk), os(nk);
  for (size_t j = 0; j < nk; j++) {
    int64_t f = std::max<int64_t>(1, ceildiv(o[j] * stride[j] - dil[j], i[j]));
    row[j] = i[j] * f + dil[j];
    rep[j] = ceildiv(k[j] * row[j], i[j]);
    rep_i[j] = rep[j] * i[j];
    taps[j] = k[j] * row[j];
    os[j] = o[j] * stride[j];
  }
  Tensor t = x.reshape(with_lead({&one, &i})).expand(with_lead({&rep, &i})).reshape(with_lead({&rep_i}));
  t = t.shrink(bounds(with_lead({&taps}))).reshape(with_lead({&k, &row}));
  t = t.shrink(bounds(with_lead({&k, &os}))).reshape(with_lead({&k, &o, &stride_s}));
  t = t.shrink(bounds(with_lead({&k, &o, &one}))).reshape(with_lead({&k, &o}));
  for (size_t j = 0; j < nk; j++) order.push_back(int64_t(lead + 2 * j + 1));
  for (size_t j = 0; j < nk; j++) order.push_back(int64_t(lead + 2 * j));
  return t.permute(order);
}

Tensor Tensor::linear(const Tensor& weight, const std::optional<Tensor>& bias) const {
  Shape ws = weight.shape(), xs = shape();
  if (ws.size() != 1 && (ws.size() != 2 || xs.empty() || xs.back() != ws[1]))
    throw Error("linear: input " + to_string(xs) + " does not match weight " + to_string(ws) +
                " (expected weight (out_features, " + (xs.empty() ? "in" : std::to_string(xs.back())) + "))");
  // tinygrad: a 1-D weight scales elementwise.
  Tensor y = ws.size() == 1 ? *this * weight : dot(weight.T());
  if (!bias) return y;
  Shape bs = bias->shape();
  if (bs.size() > 1 || (bs.size() == 1 && bs[0] != y.shape().back() && bs[0] != 1))
    throw Error("linear: bias " + to_string(bs) + " does not match output " + to_string(y.shape()));
  return y + *bias;
}

Tensor Tensor::conv2d(const Tensor& weight, const std::optional<Tensor>& bias, int64_t groups,
                      std::vector<int64_t> stride, std::vector<int64_t> dilation, std::vector<int64_t> padding) const {
  check_conv_shapes("conv2d", *this, weight, groups);
  Shape xs = shape(), ws = weight.shape();
  size_t dims = ws.size() - 2;
  if (xs[1] != groups * ws[1] || ws[0] % groups != 0)
    throw Error("conv2d: input " + to_string(xs) + " does not match weight " + to_string(ws) + " with groups=" +
                std::to_string(groups) + " (expected input channels " + std::to_string(groups * ws[1]) +
                " and output channels divisible by groups)");
  return conv("conv2d", *this, weight, bias, groups, per_dim("conv2d", "stride", stride, dims, 1),
              per_dim("conv2d", "dilation", dilation, dims, 1), resolve_pads("conv2d", padding, dims));
}

// The gradient of conv2d w.r.t. its input, as tinygrad builds it: spread the input out by the stride (zeros
// between elements), pad by the dilated kernel size minus the padding, and convolve with the weight flipped
// in space and with its in/out channels swapped per group.
Tensor Tensor::conv_transpose2d(const Tensor& weight, const std::optional<Tensor>& bias, int64_t groups,
                                std::vector<int64_t> stride, std::vector<int64_t> dilation,
                                std::vector<int64_t> padding, std::vector<int64_t> output_padding) const {
  const std::string op = "conv_transpose2d";
  check_conv_shapes(op, *this, weight, groups);
  Shape xs = shape(), ws = weight.shape();
  size_t dims = ws.size() - 2;
  if (xs[1] != ws[0] || ws[0] % groups != 0)
    throw Error(op + ": input " + to_string(xs) + " does not match weight " + to_string(ws) + " with groups=" +
                std::to_string(groups) + " (expected weight (C_in=" + std::to_string(xs[1]) +
                ", C_out/groups, *kernel) with C_in divisible by groups)");
  auto s = per_dim(op, "stride", stride, dims, 1), d = per_dim(op, "dilation", dilation, dims, 1);
  auto opad = per_dim(op, "output_padding", output_padding, dims, 0);
  PadArg pads = resolve_pads(op, padding, dims);
  Shape k(ws.begin() + 2, ws.end());
  for (size_t j = 0; j < dims; j++) {
    int64_t out = (xs[2 + j] - 1) * s[j] - pads[j].first - pads[j].second + d[j] * (k[j] - 1) + opad[j] + 1;
    if (out <= 0)
      throw Error(op + ": input " + to_string(xs) + " with weight " + to_string(ws) + " and padding " +
                  fmt_vec(padding) + " gives an empty output in spatial dim " + std::to_string(j));
  }

  // (C_in, C_out/g, *k) -> (g, C_out/g, C_in/g, *k) flipped in space -> (C_out, C_in/g, *k)
  int64_t rcin = ws[0] / groups, rcout = ws[1];
  Shape wg = {groups, rcin, rcout};
  wg.insert(wg.end(), k.begin(), k.end());
  std::vector<int64_t> order = {0, 2, 1}, flips;
  for (size_t j = 0; j < dims; j++) order.push_back(int64_t(3 + j)), flips.push_back(int64_t(3 + j));
  Shape wf = {groups * rcout, rcin};
  wf.insert(wf.end(), k.begin(), k.end());
  Tensor w = weight.reshape(wg).permute(order).flip(flips).reshape(wf);

  Tensor x = *this;
  bool strided = false;
  for (int64_t v : s) strided |= v > 1;
  if (strided) {  // (i) -> (i, 1) -> pad -> (i, s) -> (i*s) -> cut the trailing s-1 zeros
    Shape r = {xs[0], xs[1]}, flat = {xs[0], xs[1]};
    PadArg grow = {{0, 0}, {0, 0}}, cut = {{0, xs[0]}, {0, xs[1]}};
    for (size_t j = 0; j < dims; j++) {
      r.insert(r.end(), {xs[2 + j], 1});
      grow.insert(grow.end(), {{0, 0}, {0, s[j] - 1}});
      flat.push_back(xs[2 + j] * s[j]);
      cut.push_back({0, xs[2 + j] * s[j] - (s[j] - 1)});
    }
    x = x.reshape(r).pad(grow).reshape(flat).shrink(cut);
  }
  PadArg cpads(dims);
  for (size_t j = 0; j < dims; j++)
    cpads[j] = {(k[j] - 1) * d[j] - pads[j].first, (k[j] - 1) * d[j] - pads[j].second + opad[j]};
  return conv(op, x, w, bias, groups, std::vector<int64_t>(dims, 1), d, cpads);
}

namespace {

// What a pool does in each of the last k.size() dims: kernel, stride, dilation, padding, and the extra right
// padding that ceil_mode adds so the last partial window exists.
struct PoolGeometry {
  std::vector<int64_t> k, s, d;
  PadArg pads, extra;
};

PoolGeometry pool_geometry(const std::string& op, const Shape& xs, const std::vector<int64_t>& kernel,
                           const std::vector<int64_t>& stride, const std::vector<int64_t>& dilation,
                           const std::vector<int64_t>& padding, bool ceil_mode) {
  size_t dims = kernel.size();
  if (dims == 0 || xs.size() < dims)
    throw Error(op + ": kernel " + fmt_vec(kernel) + " needs an input with at least " + std::to_string(dims) +
                " dims, got " + to_string(xs));
  for (int64_t v : kernel)
    if (v < 1) throw Error(op + ": kernel " + fmt_vec(kernel) + " must be >= 1");
  PoolGeometry g{kernel, stride.empty() ? kernel : per_dim(op, "stride", stride, dims, 1),
                 per_dim(op, "dilation", dilation, dims, 1), resolve_pads(op, padding, dims), PadArg(dims, {0, 0})};
  for (int64_t v : g.s)
    if (v < 1) throw Error(op + ": stride " + fmt_vec(g.s) + " must be >= 1");
  for (size_t j = 0; j < dims; j++) {
    int64_t in = xs[xs.size() - dims + j], lo = g.pads[j].first, span = in + lo + g.pads[j].second;
    int64_t reach = g.d[j] * (kernel[j] - 1) + 1;
    if (lo < 0 || g.pads[j].second < 0 || span < reach)
      throw Error(op + ": kernel " + fmt_vec(kernel) + " with dilation " + fmt_vec(g.d) + " and padding " +
                  fmt_vec(padding) + " does not fit input " + to_string(xs));
    if (!ceil_mode) continue;
    int64_t out = ceildiv(span - reach, g.s[j]) + 1;
    if ((out - 1) * g.s[j] >= in + lo) out--;  // a window starting in the right padding is dropped
    g.extra[j].second = std::max<int64_t>(0, (out - 1) * g.s[j] + reach - span);
  }
  return g;
}

// The padded, pooled windows over the last k.size() dims: (..., o..., k...).
Tensor windows(const Tensor& x, const PoolGeometry& g, double pad_value) {
  PadArg all = g.pads;
  for (size_t j = 0; j < all.size(); j++) all[j].second += g.extra[j].second;
  return pool(pad_const(x, all, pad_value), Shape(g.k.begin(), g.k.end()), g.s, g.d);
}

std::vector<int64_t> last_axes(size_t n) {
  std::vector<int64_t> a;
  for (size_t j = 0; j < n; j++) a.push_back(-1 - int64_t(j));
  return a;
}

double lowest_of(DType dt) {
  return dt.is_bool() ? 0 : dt.is_float() ? -std::numeric_limits<double>::infinity() : dt.min();
}

}  // namespace

// Pads with -inf (the dtype's minimum for ints), so padding never wins the max.
Tensor Tensor::max_pool2d(std::vector<int64_t> kernel_size, std::vector<int64_t> stride,
                          std::vector<int64_t> dilation, std::vector<int64_t> padding, bool ceil_mode) const {
  PoolGeometry g = pool_geometry("max_pool2d", shape(), kernel_size, stride, dilation, padding, ceil_mode);
  return windows(*this, g, lowest_of(dtype())).max(last_axes(kernel_size.size()));
}

// The index comes from pooling an arange of the spatial positions the same way as the values: in each window
// the first tap equal to the max (the largest K - position among them) picks its position.
std::pair<Tensor, Tensor> Tensor::max_pool2d_with_indices(std::vector<int64_t> kernel_size, std::vector<int64_t> stride,
                                                          std::vector<int64_t> dilation, std::vector<int64_t> padding,
                                                          bool ceil_mode) const {
  PoolGeometry g = pool_geometry("max_pool2d", shape(), kernel_size, stride, dilation, padding, ceil_mode);
  size_t nd = kernel_size.size();
  Shape xs = shape(), spatial(xs.end() - int64_t(nd), xs.end());
  int64_t taps = tg::prod(Shape(g.k.begin(), g.k.end()));
  Tensor xw = windows(*this, g, lowest_of(dtype()));
  Shape ws = xw.shape(), flat(ws.begin(), ws.end() - int64_t(nd));
  flat.push_back(taps);
  Tensor vals = xw.reshape(flat), best = vals.max(-1, true);
  Tensor pos = Tensor::arange(taps, {.device = device()});
  Tensor first = vals.eq(best).where(taps - pos, 0).max(-1, true);
  Tensor where_in = Tensor::arange(tg::prod(spatial), {.device = device()}).reshape(spatial);
  Shape iflat(flat.end() - int64_t(nd) - 1, flat.end());  // (o..., K)
  Tensor iw = windows(where_in, g, -1).reshape(iflat);
  Tensor index = pos.eq(taps - first).where(iw, 0).sum(-1);
  return {best.squeeze(-1), index.cast(dtypes::int32)};
}

// tinygrad's and torch's default count_include_pad=true: padded zeros count in the average, but ceil_mode's
// extra padding never does (the count is then a pooled ones tensor, as with count_include_pad=false).
Tensor Tensor::avg_pool2d(std::vector<int64_t> kernel_size, std::vector<int64_t> stride,
                          std::vector<int64_t> dilation, std::vector<int64_t> padding, bool ceil_mode,
                          bool count_include_pad) const {
  PoolGeometry g = pool_geometry("avg_pool2d", shape(), kernel_size, stride, dilation, padding, ceil_mode);
  std::vector<int64_t> axes = last_axes(kernel_size.size());
  bool no_extra = std::all_of(g.extra.begin(), g.extra.end(), [](auto& p) { return p.second == 0; });
  if (count_include_pad && no_extra) return windows(*this, g, 0).mean(axes);
  Shape xs = shape(), spatial(xs.end() - int64_t(kernel_size.size()), xs.end());
  Tensor x = cast(dtypes::promote(dtype(), dtypes::float32));
  Tensor ones = Tensor::ones(spatial, {.dtype = x.dtype(), .device = device()});
  // The count: ones over the input, 1 (counted) or 0 in the padding, 0 in ceil_mode's extra.
  Tensor counted = pad_const(ones, g.pads, count_include_pad ? 1 : 0);
  PoolGeometry only_extra = g;
  only_extra.pads = g.extra;
  for (auto& p : only_extra.extra) p = {0, 0};
  Tensor count = windows(counted, only_extra, 0).sum(axes);
  return windows(x, g, 0).sum(axes) / count;
}

Tensor Tensor::max_unpool2d(const Tensor& indices, std::vector<int64_t> kernel_size, std::vector<int64_t> stride,
                            std::vector<int64_t> dilation, std::vector<int64_t> padding,
                            const Shape& output_size) const {
  const std::string op = "max_unpool2d";
  size_t nd = kernel_size.size();
  Shape xs = shape();
  if (nd == 0 || xs.size() < nd)
    throw Error(op + ": kernel " + fmt_vec(kernel_size) + " needs an input with at least " + std::to_string(nd) +
                " dims, got " + to_string(xs));
  if (indices.shape() != xs)
    throw Error(op + ": indices " + to_string(indices.shape()) + " must have the input's shape " + to_string(xs));
  if (!indices.dtype().is_int()) throw Error(op + ": indices must be an int tensor, got " + indices.dtype().name());
  std::vector<int64_t> s = stride.empty() ? kernel_size : per_dim(op, "stride", stride, nd, 1);
  std::vector<int64_t> d = per_dim(op, "dilation", dilation, nd, 1);
  PadArg pads = resolve_pads(op, padding, nd);
  Shape lead(xs.begin(), xs.end() - int64_t(nd)), out_spatial;
  if (output_size.size() == nd || output_size.size() == xs.size()) {
    out_spatial.assign(output_size.end() - int64_t(nd), output_size.end());
  } else if (!output_size.empty()) {
    throw Error(op + ": output_size " + to_string(output_size) + " must give " + std::to_string(nd) + " or " +
                std::to_string(xs.size()) + " sizes");
  } else {
    for (size_t j = 0; j < nd; j++)
      out_spatial.push_back((xs[lead.size() + j] - 1) * s[j] - pads[j].first - pads[j].second +
                            d[j] * (kernel_size[j] - 1) + 1);
  }
  int64_t in = tg::prod(Shape(xs.end() - int64_t(nd), xs.end())), out = tg::prod(out_spatial);
  Shape flat_in = lead, flat_out = lead, full = lead;
  flat_in.push_back(in);
  flat_out.push_back(out);
  full.insert(full.end(), out_spatial.begin(), out_spatial.end());
  Tensor zeros = Tensor::zeros(flat_out, {.dtype = dtype(), .device = device()});
  return zeros.scatter(-1, indices.reshape(flat_in), reshape(flat_in)).reshape(full);
}

// Resizes the last size.size() dims. The source positions depend only on the output index, so they are computed
// here on the host (integer math, exact) and applied as gathers along each axis in turn.
Tensor Tensor::interpolate(const Shape& size, const std::string& mode, bool align_corners) const {
  Shape s = shape();
  if (size.empty() || size.size() > s.size())
    throw Error("interpolate: size " + to_string(size) + " must name 1 to " + std::to_string(s.size()) +
                " trailing dims of " + to_string(s));
  for (int64_t v : size)
    if (v <= 0) throw Error("interpolate: size " + to_string(size) + " must be positive");
  if (mode != "linear" && mode != "nearest" && mode != "nearest-exact")
    throw Error("interpolate: mode \"" + mode + "\" is not supported (expected linear, nearest or nearest-exact)");
  if (align_corners && mode != "linear") throw Error("interpolate: align_corners needs mode \"linear\"");
  for (size_t j = 0; j < s.size(); j++)
    if (s[j] == 0) throw Error("interpolate: cannot resize the empty tensor " + to_string(s));
  Tensor x = *this;
  for (size_t j = 0; j < size.size(); j++) {
    int64_t axis = int64_t(s.size() - size.size() + j), in = s[size_t(axis)], out = size[j];
    std::vector<int32_t> low(static_cast<size_t>(out)), high(static_cast<size_t>(out));
    std::vector<float> frac(static_cast<size_t>(out));
    for (int64_t o = 0; o < out; o++) {
      if (mode == "linear") {
        // Source position num/den: o*(in-1)/(out-1) with align_corners, else the pixel-centre (o+0.5)*in/out-0.5.
        int64_t num = align_corners ? o * (in - 1) : (2 * o + 1) * in - out;
        int64_t den = align_corners ? out - 1 : 2 * out;
        if (den == 0) num = 0, den = 1;  // a single output sample takes the first input
        num = std::clamp<int64_t>(num, 0, (in - 1) * den);
        low[size_t(o)] = int32_t(num / den);
        high[size_t(o)] = int32_t((num + den - 1) / den);
        frac[size_t(o)] = float(double(num % den) / double(den));
      } else {
        // float32 math, as tinygrad (and torch) compute the source index.
        float scale = float(double(in) / double(out));
        float src = mode == "nearest-exact" ? scale * (float(o) + 0.5f) : scale * float(o);
        low[size_t(o)] = int32_t(std::min<int64_t>(int64_t(src), in - 1));
      }
    }
    if (mode == "linear") {
      Tensor lo = take_along(x, axis, low), hi = take_along(x, axis, high);
      Shape fs = {out};
      fs.insert(fs.end(), s.size() - size_t(axis) - 1, 1);
      Tensor f = Tensor(frac, {out}, {.device = device()}).reshape(fs);
      x = lo + (hi - lo) * f;
    } else {
      x = take_along(x, axis, low);
    }
  }
  return x.cast(dtype());
}

// ---- unfold: sliding windows along one dim, as views (the pool machinery over that dim alone) ----
Tensor Tensor::unfold(int64_t dim, int64_t size, int64_t step) const {
  Shape s = shape();
  int64_t d = normalize_axis("unfold", dim, s);
  int64_t n = s.empty() ? 1 : s[size_t(d)].value();
  if (size < 0) throw Error("unfold: size must be >= 0, got " + std::to_string(size));
  if (step <= 0) throw Error("unfold: step must be > 0, got " + std::to_string(step));
  if (size > n)
    throw Error("unfold: size " + std::to_string(size) + " is larger than dim " + std::to_string(d) + " of shape " +
                to_string(s) + " (" + std::to_string(n) + ")");
  if (s.empty()) return size == 0 ? reshape({1}).shrink({{0, 0}}) : reshape({1});  // one window of the element
  std::vector<int64_t> to_last;
  for (int64_t i = 0; i < int64_t(s.size()); i++)
    if (i != d) to_last.push_back(i);
  to_last.push_back(d);
  Tensor x = permute(to_last);
  // Empty windows: windows of 1 over the dim grown by one (the same n // step + 1 of them), cut to 0 wide.
  Tensor windows = size > 0 ? pool(x, {size}, {step}, {1}) : [&] {
    PadArg grow(s.size(), {0, 0}), cut;
    grow.back() = {0, 1};
    Tensor w = pool(x.pad(grow), {1}, {step}, {1});
    for (int64_t v : w.shape()) cut.push_back({0, v});
    cut.back() = {0, 0};
    return w.shrink(cut);
  }();  // (..., n_windows, size)
  std::vector<int64_t> back(s.size() + 1);
  for (size_t i = 0; i < s.size(); i++) back[size_t(to_last[i])] = int64_t(i);
  back[s.size()] = int64_t(s.size());
  return windows.permute(back);
}

}  // namespace tg
