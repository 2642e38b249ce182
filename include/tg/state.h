#pragma once
// tg::nn::state: loading and saving weights, as tinygrad's nn.state: safetensors (load and save), PyTorch
// checkpoints (torch.save's zip format: .pth, pytorch_model.bin) and GGUF.
//
// Loading is lazy and zero-copy on the host: the file is memory-mapped, every tensor is a view of the
// mapping (a read-only HOST buffer that keeps the mapping alive), and the copy to `device` is a COPY in the
// graph that runs when the tensor is first used. `device` "" means tg::default_device(); "HOST" keeps the
// tensors as views of the mapping (they can be moved with .to(), not computed on; a strided torch view or a
// dequantized GGUF tensor on HOST is a graph that needs a compute device: load those onto one).
//
// Files are untrusted input: every offset, length, count and shape is checked before use, and a truncated
// or corrupt file throws tg::Error naming the file and what is wrong. (A mapped file that another process
// truncates while its tensors are alive cannot be defended against: reading it then is a SIGBUS.)
#include <cstdint>
#include <map>
#include <string>
#include <variant>
#include <vector>

#include "tg/block_weight.h"
#include "tg/tensor.h"

namespace tg::nn::state {

// ---- safetensors ----
struct SafetensorsEntry {
  DType dtype;
  Shape shape;
  uint64_t begin = 0, end = 0;  // data_offsets: bytes, relative to the start of the data section
};
struct SafetensorsHeader {
  std::map<std::string, SafetensorsEntry> tensors;
  std::map<std::string, std::string> metadata;  // the "__metadata__" object
  uint64_t data_start = 0;                      // file offset of the data section: 8 + header length
};

// The header of a .safetensors file, checked against the file (offsets, sizes, dtypes).
SafetensorsHeader safe_load_metadata(const std::string& path);
// name -> tensor of the file's dtype and shape.
std::map<std::string, Tensor> safe_load(const std::string& path, const std::string& device = "");
// Realizes every tensor and writes them in one .safetensors file (dtype names as the format's: F32, BF16,
// I64, BOOL ...; the header padded with spaces to a multiple of 8 bytes). Written to a temporary file that
// then replaces `path`, so a file that is being read (mapped) by loaded tensors stays intact.
void safe_save(const std::map<std::string, Tensor>& tensors, const std::string& path,
               const std::map<std::string, std::string>& metadata = {});

// ---- PyTorch ----
// A torch.save zip checkpoint: the pickle (protocol 2 .. 4 opcodes) is interpreted, not run: only
// OrderedDict / dict / list / tuple, tensors rebuilt by torch._utils._rebuild_tensor(_v2) /
// _rebuild_parameter from storages float32/64, float16, bfloat16, int64/32/16, int8, uint8 and bool are
// understood; anything else is skipped. Nested containers are flattened with '.' as tinygrad's
// get_state_dict does ({"model": {"fc.weight": t}} gives "model.fc.weight"). Tensors are views of their
// storage (any strides, offsets, shared storages): a storage is copied to the device once, then viewed.
// Deflate-compressed zip entries are inflated (zlib) into memory. The legacy (pre-1.6, non-zip) and tar
// formats are not supported.
std::map<std::string, Tensor> torch_load(const std::string& path, const std::string& device = "");

// ---- GGUF ----
// One metadata value of a GGUF file. `type` is the file's value type; integers are held as int64_t (or
// uint64_t for UINT64), floats as double.
struct GGUFValue {
  enum class Type : uint32_t {
    UInt8 = 0,
    Int8 = 1,
    UInt16 = 2,
    Int16 = 3,
    UInt32 = 4,
    Int32 = 5,
    Float32 = 6,
    Bool = 7,
    String = 8,
    Array = 9,
    UInt64 = 10,
    Int64 = 11,
    Float64 = 12
  };
  Type type = Type::Int64;
  std::variant<int64_t, uint64_t, double, bool, std::string, std::vector<GGUFValue>> value;

  bool is_int() const;                   // any integer type
  int64_t as_int() const;                // integers (UINT64 above INT64_MAX throws), bools
  double as_float() const;               // any number
  const std::string& as_string() const;  // throws tg::Error unless a string
  const std::vector<GGUFValue>& as_array() const;
  std::string repr() const;  // 32, 0.5, "llama", [1, 2, 3] (long arrays cut)
};
struct GGUFFile {
  std::map<std::string, GGUFValue> kv;    // metadata key-value pairs
  std::map<std::string, Tensor> tensors;  // shape = reversed ggml dims, as tinygrad
  // The Q4_0, Q4_1 and Q8_0 matrices again, kept in their blocks (tg/block_weight.h): what a model's layers use
  // to dequantize inside their matmuls.
  std::map<std::string, BlockWeight> blocks;
};
// GGUF v2 / v3. Tensor types F32, F16, BF16, F64, I8/I16/I32/I64 are views of the file; Q4_0, Q4_1, Q8_0,
// Q4_K and Q6_K are dequantized to float32 lazily with Tensor ops (as tinygrad's ggml_data_to_tensor), so they
// need a compute device. Other ggml types (Q5_*, Q2_K, Q3_K, Q5_K, IQ*) throw tg::Error naming the tensor and the
// type.
GGUFFile gguf_load(const std::string& path, const std::string& device = "");

}  // namespace tg::nn::state
