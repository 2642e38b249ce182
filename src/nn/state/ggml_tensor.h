#pragma once
// ggml tensor types: their block layout, and tensors over their bytes (dequantized with Tensor ops).
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "tg/block_weight.h"
#include "tg/tensor.h"

namespace tg::nn::state {

struct GgmlType {
  const char* name;
  int64_t block_elems;  // elements per block (1 for plain types)
  int64_t block_bytes;  // bytes per block
};
// The layout of a supported ggml type id, nullopt if unsupported.
std::optional<GgmlType> ggml_type(uint32_t id);
// A name for any ggml type id, for messages ("Q4_K", "type 99").
std::string ggml_type_name(uint32_t id);

// The tensor of `shape` stored at `data` as ggml type `id` (prod(shape) a multiple of the block size, the
// bytes checked to be in the file). Plain types are views of the file; quantized ones become float32.
Tensor ggml_tensor(const uint8_t* data, uint32_t id, const Shape& shape, std::shared_ptr<const void> owner,
                   const std::string& device);

// The same tensor kept in its blocks (Q4_0, Q4_1, Q8_0 matrices whose rows are whole blocks), views of the file
// moved to `device` lazily; nullopt for other types and shapes.
std::optional<BlockWeight> ggml_block_weight(const uint8_t* data, uint32_t id, const Shape& shape,
                                             std::shared_ptr<const void> owner, const std::string& device);

}  // namespace tg::nn::state
