#pragma once
// A weight matrix kept in llama.cpp's quantized blocks (GGUF Q4_0, Q4_1, Q8_0): 32 consecutive weights of a row
// share a float16 scale (and, for Q4_1, an offset); each weight is a 4- or 8-bit integer. The blocks are
// dequantized inside the kernel that uses them (a matmul reads 4.5-8.5 bits per weight, not 16 or 32), and the
// dense float32 matrix is a lazy expression that is computed only if something reads it.
//
//   auto f = tg::nn::state::gguf_load("model.gguf", "CPU");
//   const tg::nn::BlockWeight& w = f.blocks.at("blk.0.ffn_up.weight");
//   tg::Tensor y = w.linear(x);  // x @ dense.T, (..., in) -> (..., out) in x's dtype
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tg/tensor.h"

namespace tg::nn {

class BlockWeight {
 public:
  // scale (out, n_blocks) float16; offset likewise (Q4_1 only); quants (out, n_blocks, 16) uint8 holding two 4-bit
  // weights a byte (Q4_0, Q4_1: the low nibbles are weights 0..15 of the block, the high ones 16..31) or
  // (out, n_blocks, 32) int8 (Q8_0). Throws tg::Error when the parts do not fit together.
  BlockWeight(std::string format, Tensor scale, std::optional<Tensor> offset, Tensor quants);

  const std::string& format() const { return format_; }  // "Q4_0", "Q4_1", "Q8_0"
  int64_t out_features() const { return out_; }
  int64_t in_features() const { return in_; }
  // x (..., in) @ dense().T: the weights dequantized in the kernel, products summed in float32, the result cast to
  // x's dtype.
  Tensor linear(const Tensor& x) const;
  // (out, in) float32: the same values as a lazy expression (llama.cpp's dequantize_row_*).
  const Tensor& dense() const { return dense_; }
  // The parts moved to `device` and made contiguous (not yet realized; see parts()).
  BlockWeight to(const std::string& device) const;
  // What to realize: scale, offset (if any), quants; for the integer dot products (rows in 16s, QDOT=1 on a CPU)
  // their copies with 16 rows interleaved instead (the layout the matmul reads).
  std::vector<Tensor> parts() const;
  // Rows [begin, end) (views of the parts: no copy).
  BlockWeight rows(int64_t begin, int64_t end) const;
  // The matrices stacked along their rows, one format and one width (the parts copied into new contiguous ones).
  static BlockWeight cat(const std::vector<BlockWeight>& ws);
  // Whether `weight` is still this block weight's dense() (a layer whose weight was replaced uses the new one).
  bool serves(const Tensor& weight) const { return weight.uop() == dense_.uop(); }
  // Bytes of the parts (what a matmul over the whole matrix reads).
  int64_t nbytes() const;

 private:
  // The blocks with 16 rows side by side (a row a vector lane): words (out/16, n_blocks, 4 or 8, 16) int32 (Q8_0's
  // bytes + 128: unsigned), scale and (Q4_1) offset (out/16, n_blocks, 16) float16. (Q4_0's offset, -8 * scale, is
  // computed where it is used.)
  struct Interleaved {
    Tensor words, scale;
    std::optional<Tensor> offset;
  };
  static Interleaved interleaved(const std::string& format, const Tensor& scale, const std::optional<Tensor>& offset,
                                 const Tensor& quants);
  static Tensor quants_of(const std::string& format, const Interleaved& packed);  // the constructor's quants again
  bool integer_dots() const;                     // linear() takes integer_linear() for float x
  Tensor integer_linear(const Tensor& x) const;  // x quantized to int8 blocks, DOT4s against the interleaved words

  std::string format_;
  Tensor scale_;
  std::optional<Tensor> offset_;
  Tensor quants_;
  int64_t out_ = 0, in_ = 0;
  std::optional<Interleaved> packed_;  // set when integer_dots()
  Tensor blocks_;  // (out, n_blocks, 2, 16) for 4-bit formats, (out, n_blocks, 32) for Q8_0: float32 weights
  Tensor dense_;
};

}  // namespace tg::nn
