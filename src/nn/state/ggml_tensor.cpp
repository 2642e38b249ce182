// ggml's quantized blocks (Q4_0, Q4_1, Q8_0, Q4_K, Q6_K), dequantized lazily as tinygrad's ggml_data_to_tensor does. A block interleaves a
// float16 scale with int8 or 4-bit values; instead of bitcasting bytes, the same file bytes are viewed as
// two HOST buffers, one of float16 and one of (u)int8, and each is sliced on the device. (The quantized
// data is thus copied twice, once per view; the float32 result is what stays.)
#include "nn/state/ggml_tensor.h"

#include "shape/view.h"
#include "tensor/host_tensor.h"

namespace tg::nn::state {
namespace {

// ggml's type ids (enum ggml_type in ggml.h; tinygrad's 16/17/18 for I8/I16/I32 are an older numbering).
enum : uint32_t {
  F32 = 0,
  F16 = 1,
  Q4_0 = 2,
  Q4_1 = 3,
  Q8_0 = 8,
  Q4_K = 12,
  Q6_K = 14,
  I8 = 24,
  I16 = 25,
  I32 = 26,
  I64 = 27,
  F64 = 28,
  BF16 = 30
};

// Blocks of `bytes` bytes as a (blocks, bytes / 2) float16 tensor and a (blocks, bytes) tensor of `q`.
struct BlockViews {
  Tensor halves, bytes;
};
BlockViews block_views(const uint8_t* data, int64_t blocks, int64_t block_bytes, DType q,
                       const std::shared_ptr<const void>& owner, const std::string& device) {
  return {
      file_tensor(data, dtypes::float16, {blocks * block_bytes / 2}, owner, device).reshape({blocks, block_bytes / 2}),
      file_tensor(data, q, {blocks * block_bytes}, owner, device).reshape({blocks, block_bytes})};
}

// The float16 at half index i of each block, as a (blocks, 1) float32 column.
Tensor scale_column(const Tensor& halves, int64_t i) {
  return halves.shrink({{0, halves.shape()[0]}, {i, i + 1}}).cast(dtypes::float32);
}

// (blocks, 16) bytes -> (blocks, 32) nibble values as float: the 16 low nibbles, then the 16 high ones
// (ggml's order). Integer math in float32 is exact for 0..255.
Tensor nibbles(const Tensor& q) {
  int64_t blocks = q.shape()[0];
  Tensor v = q.cast(dtypes::float32).reshape({blocks, 1, 16}).expand({blocks, 2, 16});
  Tensor shift = Tensor(std::vector<float>{1.0f, 1.0f / 16}, {1, 2, 1}, {.device = q.device()});
  Tensor shifted = (v * shift).trunc();  // the byte, and the byte >> 4
  return (shifted - (shifted * (1.0f / 16)).trunc() * 16).reshape({blocks, 32});
}

// Bits [shift, shift + width) of byte values held as float32 (exact: integer math below 2^24).
Tensor field(const Tensor& x, int shift, int width) {
  const float lo = 1.0f / float(1 << shift), hi = 1.0f / float(1 << (shift + width));
  return (x * lo).trunc() - (x * hi).trunc() * float(1 << width);
}

// Columns [a, b) of a (blocks, n) tensor.
Tensor cols(const Tensor& t, int64_t a, int64_t b) { return t.shrink({{0, t.shape()[0]}, {a, b}}); }

// Q4_K: d, dmin (f16), 12 bytes of eight 6-bit scales and mins, 128 bytes of 4-bit q for 256 values in eight
// sub-blocks of 32; x = d * scale[j] * q - dmin * min[j] (ggml's dequantize_row_q4_K).
Tensor dequantize_q4_k(const BlockViews& b, int64_t blocks) {
  Tensor bytes = b.bytes.cast(dtypes::float32);
  Tensor s = cols(bytes, 4, 16);
  auto at = [&](int64_t j) { return cols(s, j, j + 1); };
  std::vector<Tensor> sc, mn;
  for (int64_t j = 0; j < 8; j++) {  // get_scale_min_k4: 6 bits each, the last four split over two bytes
    if (j < 4) {
      sc.push_back(field(at(j), 0, 6));
      mn.push_back(field(at(j + 4), 0, 6));
    } else {
      sc.push_back(field(at(j + 4), 0, 4) + field(at(j - 4), 6, 2) * 16);
      mn.push_back(field(at(j + 4), 4, 4) + field(at(j), 6, 2) * 16);
    }
  }
  Tensor scale = Tensor::cat(sc, 1).reshape({blocks, 8, 1}), mins = Tensor::cat(mn, 1).reshape({blocks, 8, 1});
  // 32 bytes per pair of sub-blocks: the low nibbles are sub-block 2c, the high ones 2c + 1
  Tensor q = cols(bytes, 16, 144).reshape({blocks, 4, 1, 32});
  Tensor vals = Tensor::cat({field(q, 0, 4), field(q, 4, 4)}, 2).reshape({blocks, 8, 32});
  Tensor d = scale_column(b.halves, 0).reshape({blocks, 1, 1}), dmin = scale_column(b.halves, 1).reshape({blocks, 1, 1});
  return (d * scale * vals - dmin * mins).reshape({blocks * 256});
}

// Q6_K: 128 bytes of low 4 bits, 64 of high 2 bits, 16 int8 scales, d (f16) for 256 values; value e takes
// scale e / 16 and x = d * scale * (q - 32) (ggml's dequantize_row_q6_K).
Tensor dequantize_q6_k(const BlockViews& b, const Tensor& signed_bytes, int64_t blocks) {
  Tensor bytes = b.bytes.cast(dtypes::float32);
  std::vector<Tensor> halves;
  for (int64_t n = 0; n < 2; n++) {  // each half of 128 values: ql[64n .. 64n + 64), qh[32n .. 32n + 32)
    Tensor lo_a = cols(bytes, 64 * n, 64 * n + 32), lo_b = cols(bytes, 64 * n + 32, 64 * n + 64);
    Tensor hi = cols(bytes, 128 + 32 * n, 128 + 32 * n + 32);
    halves.push_back(Tensor::stack({field(lo_a, 0, 4) + field(hi, 0, 2) * 16, field(lo_b, 0, 4) + field(hi, 2, 2) * 16,
                                    field(lo_a, 4, 4) + field(hi, 4, 2) * 16, field(lo_b, 4, 4) + field(hi, 6, 2) * 16},
                                   1));
  }
  Tensor q = Tensor::stack(halves, 1).reshape({blocks, 16, 16}) - 32;
  Tensor scale = cols(signed_bytes, 192, 208).cast(dtypes::float32).reshape({blocks, 16, 1});
  Tensor d = scale_column(b.halves, 104).reshape({blocks, 1, 1});
  return (d * scale * q).reshape({blocks * 256});
}

}  // namespace

std::optional<GgmlType> ggml_type(uint32_t id) {
  switch (id) {
    case F32:
      return GgmlType{"F32", 1, 4};
    case F16:
      return GgmlType{"F16", 1, 2};
    case Q4_0:
      return GgmlType{"Q4_0", 32, 18};
    case Q4_1:
      return GgmlType{"Q4_1", 32, 20};
    case Q8_0:
      return GgmlType{"Q8_0", 32, 34};
    case Q4_K:
      return GgmlType{"Q4_K", 256, 144};
    case Q6_K:
      return GgmlType{"Q6_K", 256, 210};
    case I8:
      return GgmlType{"I8", 1, 1};
    case I16:
      return GgmlType{"I16", 1, 2};
    case I32:
      return GgmlType{"I32", 1, 4};
    case I64:
      return GgmlType{"I64", 1, 8};
    case F64:
      return GgmlType{"F64", 1, 8};
    case BF16:
      return GgmlType{"BF16", 1, 2};
    default:
      return std::nullopt;
  }
}

std::string ggml_type_name(uint32_t id) {
  static const char* names[] = {"F32",     "F16",    "Q4_0",    "Q4_1",  "Q4_2",   "Q4_3",  "Q5_0",  "Q5_1",
                                "Q8_0",    "Q8_1",   "Q2_K",    "Q3_K",  "Q4_K",   "Q5_K",  "Q6_K",  "Q8_K",
                                "IQ2_XXS", "IQ2_XS", "IQ3_XXS", "IQ1_S", "IQ4_NL", "IQ3_S", "IQ2_S", "IQ4_XS",
                                "I8",      "I16",    "I32",     "I64",   "F64",    "IQ1_M", "BF16"};
  return id < sizeof(names) / sizeof(names[0]) ? names[id] : "type " + std::to_string(id);
}

Tensor ggml_tensor(const uint8_t* data, uint32_t id, const Shape& shape, std::shared_ptr<const void> owner,
                   const std::string& device) {
  static const std::pair<uint32_t, DType> plain[] = {
      {F32, dtypes::float32}, {F16, dtypes::float16}, {I8, dtypes::int8},     {I16, dtypes::int16},
      {I32, dtypes::int32},   {I64, dtypes::int64},   {F64, dtypes::float64}, {BF16, dtypes::bfloat16}};
  for (auto& [t, dt] : plain)
    if (t == id) return file_tensor(data, dt, shape, owner, device);
  const int64_t n = tg::prod(shape), blocks = n / ggml_type(id).value_or(GgmlType{"", 32, 0}).block_elems;
  if (n == 0) return Tensor::zeros(shape, {.dtype = dtypes::float32, .device = device});
  auto dequantize = [&]() -> Tensor {
    switch (id) {
      case Q8_0: {  // d: f16, then 32 x int8; x = d * q
        auto b = block_views(data, blocks, 34, dtypes::int8, owner, device);
        return scale_column(b.halves, 0) * b.bytes.shrink({{0, blocks}, {2, 34}}).cast(dtypes::float32);
      }
      case Q4_0: {  // d: f16, then 16 bytes of 4-bit q; x = d * (q - 8)
        auto b = block_views(data, blocks, 18, dtypes::uint8, owner, device);
        return scale_column(b.halves, 0) * (nibbles(b.bytes.shrink({{0, blocks}, {2, 18}})) - 8);
      }
      case Q4_1: {  // d, m: f16, then 16 bytes of 4-bit q; x = d * q + m
        auto b = block_views(data, blocks, 20, dtypes::uint8, owner, device);
        return scale_column(b.halves, 0) * nibbles(b.bytes.shrink({{0, blocks}, {4, 20}})) + scale_column(b.halves, 1);
      }
      case Q4_K:
        return dequantize_q4_k(block_views(data, blocks, 144, dtypes::uint8, owner, device), blocks);
      case Q6_K: {
        auto b = block_views(data, blocks, 210, dtypes::uint8, owner, device);
        Tensor signed_bytes = file_tensor(data, dtypes::int8, {blocks * 210}, owner, device).reshape({blocks, 210});
        return dequantize_q6_k(b, signed_bytes, blocks);
      }
      default:
        throw Error("ggml_tensor: unsupported type " + ggml_type_name(id));
    }
  };
  return dequantize().reshape(shape);
}

std::optional<BlockWeight> ggml_block_weight(const uint8_t* data, uint32_t id, const Shape& shape,
                                             std::shared_ptr<const void> owner, const std::string& device) {
  if ((id != Q4_0 && id != Q4_1 && id != Q8_0) || shape.size() != 2) return std::nullopt;
  const int64_t out = int64_t(shape[0]), in = int64_t(shape[1]);
  if (out <= 0 || in <= 0 || in % 32 != 0) return std::nullopt;
  const int64_t nb = in / 32, blocks = out * nb, bytes = ggml_type(id)->block_bytes;
  const auto b = block_views(data, blocks, bytes, id == Q8_0 ? dtypes::int8 : dtypes::uint8, owner, device);
  auto half_at = [&](int64_t i) { return b.halves.shrink({{0, blocks}, {i, i + 1}}).reshape({out, nb}); };
  auto quants = [&](int64_t from) {
    return b.bytes.shrink({{0, blocks}, {from, bytes}}).reshape({out, nb, bytes - from});
  };
  if (id == Q4_1) return BlockWeight("Q4_1", half_at(0), half_at(1), quants(4));
  return BlockWeight(id == Q4_0 ? "Q4_0" : "Q8_0", half_at(0), std::nullopt, quants(2));
}

}  // namespace tg::nn::state
