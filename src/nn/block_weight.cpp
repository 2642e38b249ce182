// Weights in llama.cpp's quantized blocks, dequantized where they are used: include/tg/block_weight.h.
#include "tg/block_weight.h"

#include "tg/context.h"
#include "tg/error.h"

namespace tg::nn {

// Integer dot products: QDOT=1 on CPU devices (default; SmolLM2's decode 119 -> ~140 tok/s),
// 2 on every device (the heuristics give CUDA slow kernels for them: an H200 decoded SmolLM2 at 158 tok/s against
// 598 dequantizing in float), 0 nowhere (dequantized to float inside the matmul).
static ContextVar QDOT("QDOT", 1);
static bool integer_dots_on(const std::string& device) {
  return QDOT >= 2 || (QDOT == 1 && device.rfind("CPU", 0) == 0);
}

namespace {

std::string shape_str(const Tensor& t) {
  std::string s = "(";
  for (size_t i = 0; i < t.shape().size(); i++) s += (i ? ", " : "") + t.shape()[i].str();
  return s + ")";
}

// The rows of a checked set of parts (a tg::Error naming what was expected otherwise).
int64_t check_parts(const std::string& format, const Tensor& scale, const std::optional<Tensor>& offset,
                    const Tensor& quants) {
  const bool four_bit = format == "Q4_0" || format == "Q4_1";
  if (!four_bit && format != "Q8_0") throw Error("BlockWeight: format " + format + " is not one of Q4_0, Q4_1, Q8_0");
  const int64_t bytes = four_bit ? 16 : 32;
  const DType qdt = four_bit ? dtypes::uint8 : dtypes::int8;
  auto fits = [&](const Tensor& t, DType dt, const Shape& s) { return t.dtype() == dt && t.shape() == s; };
  const bool sized = scale.ndim() == 2 && scale.shape()[0].is_int() && scale.shape()[1].is_int();
  const int64_t out = sized ? int64_t(scale.shape()[0]) : 0, nb = sized ? int64_t(scale.shape()[1]) : 0;
  if (!sized || !fits(scale, dtypes::float16, {out, nb}) || !fits(quants, qdt, {out, nb, bytes}) ||
      (format == "Q4_1") != offset.has_value() || (offset && !fits(*offset, dtypes::float16, {out, nb})))
    throw Error("BlockWeight " + format + ": expected scale (out, n_blocks) float16" +
                std::string(format == "Q4_1" ? ", offset (out, n_blocks) float16" : "") +
                " and quants (out, n_blocks, " + std::to_string(bytes) + ") " + qdt.name() + "; got scale " +
                shape_str(scale) + " " + scale.dtype().name() +
                (offset ? ", offset " + shape_str(*offset) : std::string()) + ", quants " + shape_str(quants) + " " +
                quants.dtype().name());
  return out;
}

// The float32 weights as blocks: (out, n_blocks, 32) for Q8_0; (out, n_blocks, 2, 16) for the 4-bit formats, whose
// low nibbles are a block's weights 0..15 and the high ones 16..31.
Tensor block_values(const std::string& format, const Tensor& scale, const std::optional<Tensor>& offset,
                    const Tensor& quants) {
  const int64_t out = int64_t(scale.shape()[0]), nb = int64_t(scale.shape()[1]);
  if (format == "Q8_0") return scale.reshape({out, nb, 1}).cast(dtypes::float32) * quants.cast(dtypes::float32);
  Tensor q = quants.reshape({out, nb, 1, 16});
  Tensor values = Tensor::cat({q.bitwise_and(15), q.rshift(4)}, 2).cast(dtypes::float32);
  Tensor d = scale.reshape({out, nb, 1, 1}).cast(dtypes::float32);
  if (format == "Q4_0") return d * (values - 8.0f);
  return d * values + offset->reshape({out, nb, 1, 1}).cast(dtypes::float32);
}

// The blocks as integer dot products: a block's weights are d * q + m (Q4_0: m = -8 d; Q8_0: m = 0), x's 32 values
// of the block are dx * xq with xq in int8 (dx = max |x| / 127), so a block adds d dx (q . xq) + m (sum of x). 16 rows
// side by side (`Interleaved`): a vector lane is a row, and its 32-bit words meet the same 4 bytes of xq in every
// lane, one DOT4 (vpdpbusd: unsigned bytes times signed ones) each. A 4-bit word holds 4 nibbles of q (low nibbles
// the block's weights 0-15, high ones 16-31): two DOT4s. Q8_0's signed bytes are stored with their sign bit flipped
// (q + 128, unsigned): q . xq = (q + 128) . xq - 128 (sum of xq), exactly, in int32.
constexpr int64_t kLanes = 16;
constexpr int64_t kSignBits = int32_t(0x80808080u);  // XOR: int8 <-> uint8 + 128 in each byte of a word

// (out / 16, n_blocks, ..., 16) -> (out, n_blocks, ...): the rows back in order (a view).
Tensor deinterleave(const Tensor& t) {
  const int64_t groups = int64_t(t.shape()[0]), n = int64_t(t.ndim());
  std::vector<int64_t> order{0, n - 1};
  Shape rows{groups * kLanes};
  for (int64_t d = 1; d < n - 1; d++) order.push_back(d), rows.push_back(t.shape()[size_t(d)]);
  return t.permute(order).reshape(rows);
}

// (out, n_blocks, ...) -> (out / 16, n_blocks, ..., 16): row r of a group is lane r of each element.
Tensor interleave(const Tensor& t) {
  const int64_t out = int64_t(t.shape()[0]);
  Shape grouped{out / kLanes, kLanes};
  std::vector<int64_t> order{0};
  for (size_t d = 1; d < t.shape().size(); d++) grouped.push_back(t.shape()[d]), order.push_back(int64_t(d) + 1);
  order.push_back(1);
  return t.reshape(grouped).permute(order).contiguous();
}

}  // namespace

BlockWeight::Interleaved BlockWeight::interleaved(const std::string& format, const Tensor& scale,
                                                  const std::optional<Tensor>& offset, const Tensor& quants) {
  const int64_t out = int64_t(scale.shape()[0]), nb = int64_t(scale.shape()[1]);
  Tensor words = quants.bitcast(dtypes::int32).reshape({out, nb, format == "Q8_0" ? 8 : 4});
  if (format == "Q8_0") words = words.bitwise_xor(kSignBits);
  return Interleaved{interleave(words),  // (G, nb, 4 or 8, 16)
                     interleave(scale),  // (G, nb, 16)
                     offset ? std::optional<Tensor>(interleave(*offset)) : std::nullopt};
}

// The quants read back from the interleaved words (a view), in the constructor's layout.
Tensor BlockWeight::quants_of(const std::string& format, const Interleaved& packed) {
  Tensor words = deinterleave(packed.words);
  return format == "Q8_0" ? words.bitwise_xor(kSignBits).bitcast(dtypes::int8) : words.bitcast(dtypes::uint8);
}

bool BlockWeight::integer_dots() const { return packed_.has_value(); }

Tensor BlockWeight::integer_linear(const Tensor& x) const {
  const int64_t nb = in_ / 32, groups = out_ / kLanes;
  const Shape x_shape = x.shape();
  Shape lead(x_shape.begin(), x_shape.end() - 1);
  int64_t rows = 1;
  for (const sint& d : lead) rows *= int64_t(d);
  // x in int8 blocks: (rows, nb, 32) -> scale dx, 8 words of 4 bytes each, and (below) the sum of xq
  Tensor xb = x.cast(dtypes::float32).reshape({rows, nb, 32});
  // (each use of amax expands it first: arithmetic on a reduce and then an expand would be a kernel of its own)
  Tensor amax = xb.abs().max(-1, true), amax32 = amax.expand({rows, nb, 32});
  Tensor xq = (xb * (amax32 > 0.0f).where(127.0f / amax32, 0.0f)).round().cast(dtypes::int8);
  Tensor xw = xq.bitcast(dtypes::int32).contiguous();  // (rows, nb, 8)
  Tensor dx = amax.reshape({rows, 1, nb, 1}).expand({rows, groups, nb, kLanes}) / 127.0f;
  // Weights per group of 16 rows: word k of each block, a row a lane
  const Tensor& q = packed_->words;  // (G, nb, 4 or 8, 16)
  const bool q8 = format_ == "Q8_0";
  Tensor isum = Tensor::zeros({1, 1, 1, 1}, {.dtype = dtypes::int32, .device = q.device()});
  auto x_word = [&](int64_t w) { return xw.shrink({{0, rows}, {0, nb}, {w, w + 1}}).reshape({rows, 1, nb, 1}); };
  for (int64_t k = 0; k < int64_t(q.shape()[2]); k++) {
    Tensor qk = q.shrink({{0, groups}, {0, nb}, {k, k + 1}, {0, kLanes}}).reshape({1, groups, nb, kLanes});
    if (q8) {
      isum = qk.dot4(x_word(k), isum);
      continue;
    }
    isum = qk.bitwise_and(0x0f0f0f0f).dot4(x_word(k), isum);
    isum = qk.rshift(4).bitwise_and(0x0f0f0f0f).dot4(x_word(k + 4), isum);
  }
  Tensor d = packed_->scale.cast(dtypes::float32).reshape({1, groups, nb, kLanes});
  // A block's term (rows, G, nb, 16): d dx (q . xq) + m dx (sum of xq), m = -8 d for Q4_0; Q8_0's words are q + 128,
  // so q . xq = isum - 128 (sum of xq). The sum of xq (exact in int32), not of x, as llama.cpp's Q8_1 has it: then
  // the term is exactly the dequantized weights times the rounded x, and each rounding meets its whole weight
  // d q + m, centred on 0, where with x's own sum it met d q alone, one-signed for the 4-bit formats (SmolLM2's
  // logits were 0.3-0.6 from the float ones on three prompts that way, 0.02-0.3 this way).
  Tensor xq_sum = xq.cast(dtypes::int32).sum(-1).reshape({rows, 1, nb, 1});
  auto m = [&] { return packed_->offset ? packed_->offset->cast(dtypes::float32).reshape(d.shape()) : d * -8.0f; };
  Tensor terms = q8 ? (isum - xq_sum * 128).cast(dtypes::float32) * (d * dx)
                    : isum.cast(dtypes::float32) * (d * dx) + m() * dx * xq_sum.cast(dtypes::float32);
  // (summed over the blocks with a group's 16 rows as the kernel's vector lanes)
  Tensor y = terms.sum(2);
  lead.push_back(out_);
  return y.reshape(lead).cast(x.dtype());
}

BlockWeight::BlockWeight(std::string format, Tensor scale, std::optional<Tensor> offset, Tensor quants)
    : format_(std::move(format)),
      scale_(std::move(scale)),
      offset_(std::move(offset)),
      quants_(std::move(quants)),
      out_(check_parts(format_, scale_, offset_, quants_)),
      in_(int64_t(scale_.shape()[1]) * 32),
      packed_(integer_dots_on(scale_.device()) && out_ % kLanes == 0
                  ? std::optional<Interleaved>(interleaved(format_, scale_, offset_, quants_))
                  : std::nullopt),
      // (read from what parts() realizes: the interleaved copies where there are some)
      blocks_(packed_ ? block_values(format_, deinterleave(packed_->scale),
                                     packed_->offset ? std::optional<Tensor>(deinterleave(*packed_->offset))
                                                     : std::nullopt,
                                     quants_of(format_, *packed_))
                      : block_values(format_, scale_, offset_, quants_)),
      dense_(blocks_.reshape({out_, in_})) {}

Tensor BlockWeight::linear(const Tensor& x) const {
  if (x.ndim() < 1 || !(x.shape().back() == in_))
    throw Error("BlockWeight::linear: x " + shape_str(x) + " must end in the " + std::to_string(in_) +
                " input features of this " + std::to_string(out_) + "x" + std::to_string(in_) + " " + format_ +
                " weight");
  if (integer_dots() && x.dtype().is_float()) return integer_linear(x);
  // (..., in) -> (..., 1, n_blocks, <block dims>) against (out, n_blocks, <block dims>), summed over the blocks:
  // each block's loads and nibble arithmetic stay inside the matmul's kernel.
  const Shape x_shape = x.shape();
  Shape xs(x_shape.begin(), x_shape.end() - 1);
  xs.push_back(1);
  for (size_t d = 1; d < blocks_.shape().size(); d++) xs.push_back(blocks_.shape()[d]);
  std::vector<int64_t> axes;
  for (int64_t d = 1; d < int64_t(blocks_.ndim()); d++) axes.push_back(-d);
  return (x.reshape(xs).cast(dtypes::float32) * blocks_).sum(axes).cast(x.dtype());
}

BlockWeight BlockWeight::to(const std::string& device) const {
  std::optional<Tensor> offset;
  if (offset_) offset = offset_->to(device).contiguous();
  return BlockWeight(format_, scale_.to(device).contiguous(), offset, quants_.to(device).contiguous());
}

BlockWeight BlockWeight::rows(int64_t begin, int64_t end) const {
  if (begin < 0 || end > out_ || begin >= end)
    throw Error("BlockWeight::rows: [" + std::to_string(begin) + ", " + std::to_string(end) + ") of " +
                std::to_string(out_) + " rows");
  auto take = [&](const Tensor& t) {
    std::vector<std::pair<sint, sint>> r{{begin, end}};
    for (size_t d = 1; d < t.shape().size(); d++) r.push_back({0, t.shape()[d]});
    return t.shrink(r);
  };
  std::optional<Tensor> offset;
  if (offset_) offset = take(*offset_);
  return BlockWeight(format_, take(scale_), offset, take(quants_));
}

BlockWeight BlockWeight::cat(const std::vector<BlockWeight>& ws) {
  if (ws.empty()) throw Error("BlockWeight::cat: no matrices");
  std::vector<Tensor> scales, offsets, quants;
  for (const BlockWeight& w : ws) {
    if (w.format_ != ws[0].format_ || w.in_ != ws[0].in_)
      throw Error("BlockWeight::cat: a " + w.format_ + " matrix of " + std::to_string(w.in_) + " columns with a " +
                  ws[0].format_ + " one of " + std::to_string(ws[0].in_));
    scales.push_back(w.scale_), quants.push_back(w.quants_);
    if (w.offset_) offsets.push_back(*w.offset_);
  }
  std::optional<Tensor> offset;
  if (!offsets.empty()) offset = Tensor::cat(offsets, 0).contiguous();
  return BlockWeight(ws[0].format_, Tensor::cat(scales, 0).contiguous(), offset, Tensor::cat(quants, 0).contiguous());
}

std::vector<Tensor> BlockWeight::parts() const {
  const std::optional<Tensor>& offset = integer_dots() ? packed_->offset : offset_;
  std::vector<Tensor> p{integer_dots() ? packed_->scale : scale_};
  if (offset) p.push_back(*offset);
  p.push_back(integer_dots() ? packed_->words : quants_);
  return p;
}

int64_t BlockWeight::nbytes() const {
  int64_t n = 0;
  for (const Tensor& t : parts()) n += int64_t(t.numel()) * t.dtype().itemsize();
  return n;
}

}  // namespace tg::nn
