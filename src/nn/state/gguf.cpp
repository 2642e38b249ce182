// GGUF: "GGUF", version (2 or 3), tensor count, metadata count, the metadata key-values, the tensor infos
// (name, dims, ggml type, offset), then the tensor data from the next multiple of general.alignment.
#include <cstdint>
#include <cstdio>
#include <cstring>

#include "nn/state/ggml_tensor.h"
#include "tensor/host_tensor.h"
#include "nn/state/loaders.h"

namespace tg::nn::state {
namespace {

constexpr const char* kWho = "gguf_load";
constexpr int kMaxArrayNesting = 8;
constexpr uint32_t kMaxDims = 8;  // ggml has 4; leave room, but bound the loop

using VT = GGUFValue::Type;

GGUFValue read_value(Reader& r, uint32_t type, int depth);

std::string read_string(Reader& r, const char* what) {
  uint64_t n = r.u64(what);
  return r.str(n, what);
}

GGUFValue read_array(Reader& r, int depth) {
  if (depth >= kMaxArrayNesting) r.fail("metadata arrays nested deeper than " + std::to_string(kMaxArrayNesting));
  uint32_t elem = r.u32("array element type");
  uint64_t n = r.u64("array length");
  // Every element takes at least one byte, so a count over the bytes left is a lie: fail before allocating.
  if (n > r.remaining()) r.fail("metadata array of " + std::to_string(n) + " elements is longer than the file");
  std::vector<GGUFValue> items;
  items.reserve(size_t(std::min<uint64_t>(n, 1 << 16)));
  for (uint64_t i = 0; i < n; i++) items.push_back(read_value(r, elem, depth + 1));
  return GGUFValue{VT::Array, std::move(items)};
}

GGUFValue read_value(Reader& r, uint32_t type, int depth) {
  switch (VT(type)) {
    case VT::UInt8:
      return {VT::UInt8, int64_t(r.u8("uint8 value"))};
    case VT::Int8:
      return {VT::Int8, int64_t(int8_t(r.u8("int8 value")))};
    case VT::UInt16:
      return {VT::UInt16, int64_t(r.u16("uint16 value"))};
    case VT::Int16:
      return {VT::Int16, int64_t(int16_t(r.u16("int16 value")))};
    case VT::UInt32:
      return {VT::UInt32, int64_t(r.u32("uint32 value"))};
    case VT::Int32:
      return {VT::Int32, int64_t(int32_t(r.u32("int32 value")))};
    case VT::UInt64:
      return {VT::UInt64, r.u64("uint64 value")};
    case VT::Int64:
      return {VT::Int64, int64_t(r.u64("int64 value"))};
    case VT::Bool:
      return {VT::Bool, r.u8("bool value") != 0};
    case VT::String:
      return {VT::String, read_string(r, "string value")};
    case VT::Array:
      return read_array(r, depth);
    case VT::Float32: {
      uint32_t bits = r.u32("float32 value");
      float f;
      std::memcpy(&f, &bits, 4);
      return {VT::Float32, double(f)};
    }
    case VT::Float64: {
      uint64_t bits = r.u64("float64 value");
      double d;
      std::memcpy(&d, &bits, 8);
      return {VT::Float64, d};
    }
  }
  r.fail("unknown metadata value type " + std::to_string(type));
}

struct TensorInfo {
  std::string name;
  Shape shape;  // reversed ggml dims
  uint32_t type;
  uint64_t offset, nbytes;
};

}  // namespace

// ---- GGUFValue ----
bool GGUFValue::is_int() const {
  return type != VT::Float32 && type != VT::Float64 && type != VT::Bool && type != VT::String && type != VT::Array;
}

int64_t GGUFValue::as_int() const {
  if (auto* i = std::get_if<int64_t>(&value)) return *i;
  if (auto* u = std::get_if<uint64_t>(&value)) {
    if (*u > uint64_t(INT64_MAX)) throw Error("GGUFValue: " + std::to_string(*u) + " does not fit int64");
    return int64_t(*u);
  }
  if (auto* b = std::get_if<bool>(&value)) return *b;
  throw Error("GGUFValue: " + repr() + " is not an integer");
}

double GGUFValue::as_float() const {
  if (auto* d = std::get_if<double>(&value)) return *d;
  if (auto* u = std::get_if<uint64_t>(&value)) return double(*u);
  return double(as_int());
}

const std::string& GGUFValue::as_string() const {
  if (auto* s = std::get_if<std::string>(&value)) return *s;
  throw Error("GGUFValue: " + repr() + " is not a string");
}

const std::vector<GGUFValue>& GGUFValue::as_array() const {
  if (auto* a = std::get_if<std::vector<GGUFValue>>(&value)) return *a;
  throw Error("GGUFValue: " + repr() + " is not an array");
}

std::string GGUFValue::repr() const {
  if (auto* i = std::get_if<int64_t>(&value)) return std::to_string(*i);
  if (auto* u = std::get_if<uint64_t>(&value)) return std::to_string(*u);
  if (auto* b = std::get_if<bool>(&value)) return *b ? "true" : "false";
  if (auto* d = std::get_if<double>(&value)) {
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%.9g", *d);
    return buf;
  }
  if (auto* s = std::get_if<std::string>(&value)) return "\"" + (s->size() > 64 ? s->substr(0, 64) + "..." : *s) + "\"";
  const auto& a = std::get<std::vector<GGUFValue>>(value);
  std::string r = "[";
  for (size_t i = 0; i < a.size() && i < 8; i++) r += (i ? ", " : "") + a[i].repr();
  return r + (a.size() > 8 ? ", ... (" + std::to_string(a.size()) + " items)]" : "]");
}

// ---- loading ----
GGUFFile gguf_load_bytes(const std::shared_ptr<const FileBytes>& f, const std::string& device) {
  Reader r(f->data, f->size, kWho, f->path);
  if (f->size < 4 || std::memcmp(f->data, "GGUF", 4) != 0) r.fail("not a GGUF file (no \"GGUF\" magic)");
  r.take(4, "magic");
  uint32_t version = r.u32("version");
  if (version != 2 && version != 3) r.fail("GGUF version " + std::to_string(version) + " is not supported (2 or 3)");
  uint64_t n_tensors = r.u64("tensor count"), n_kv = r.u64("metadata count");
  // A key-value takes at least 13 bytes and a tensor info at least 24: larger counts cannot be true.
  if (n_kv > r.remaining() / 13 || n_tensors > r.remaining() / 24)
    r.fail(std::to_string(n_kv) + " metadata entries and " + std::to_string(n_tensors) +
           " tensors cannot fit in the file");
  GGUFFile out;
  for (uint64_t i = 0; i < n_kv; i++) {
    std::string key = read_string(r, "metadata key");
    uint32_t type = r.u32("metadata value type");
    out.kv.insert_or_assign(std::move(key), read_value(r, type, 0));
  }
  std::vector<TensorInfo> infos;
  infos.reserve(size_t(n_tensors));
  for (uint64_t i = 0; i < n_tensors; i++) {
    TensorInfo t;
    t.name = read_string(r, "tensor name");
    uint32_t nd = r.u32("tensor dims");
    if (nd > kMaxDims) r.fail("tensor '" + t.name + "' has " + std::to_string(nd) + " dims");
    uint64_t numel = 1;
    for (uint32_t d = 0; d < nd; d++) {
      uint64_t dim = r.u64("tensor dim");
      if (!mul_ok(numel, dim, &numel) || numel > (uint64_t(1) << 62) || dim > (uint64_t(1) << 62))
        r.fail("tensor '" + t.name + "' has too many elements");
      t.shape.insert(t.shape.begin(), int64_t(dim));  // ggml lists the fastest-varying dim first
    }
    t.type = r.u32("tensor type");
    t.offset = r.u64("tensor offset");
    auto gt = ggml_type(t.type);
    if (!gt) r.fail("tensor '" + t.name + "' has ggml type " + ggml_type_name(t.type) + ", which is not supported");
    if (numel % uint64_t(gt->block_elems) != 0)
      r.fail("tensor '" + t.name + "' of " + std::to_string(numel) + " elements is not whole " + gt->name +
             " blocks of " + std::to_string(gt->block_elems));
    t.nbytes = numel / uint64_t(gt->block_elems) * uint64_t(gt->block_bytes);
    infos.push_back(std::move(t));
  }
  uint64_t alignment = 32;
  if (auto it = out.kv.find("general.alignment"); it != out.kv.end()) {
    if (!it->second.is_int() || it->second.as_int() <= 0 || it->second.as_int() > (1 << 20))
      r.fail("general.alignment " + it->second.repr() + " is not a positive integer up to 2^20");
    alignment = uint64_t(it->second.as_int());
  }
  uint64_t data_start = (uint64_t(r.pos()) + alignment - 1) / alignment * alignment;
  std::string dev = load_device(device);
  for (auto& t : infos) {
    uint64_t begin = 0, end = 0;
    if (!add_ok(data_start, t.offset, &begin) || !add_ok(begin, t.nbytes, &end) || end > f->size)
      r.fail("tensor '" + t.name + "': " + std::to_string(t.nbytes) + " bytes at data offset " +
             std::to_string(t.offset) + " run past the end of the file (" + std::to_string(f->size) + " bytes)");
    out.tensors.insert_or_assign(t.name, ggml_tensor(f->data + begin, t.type, t.shape, f->owner, dev));
    if (auto b = ggml_block_weight(f->data + begin, t.type, t.shape, f->owner, dev))
      out.blocks.insert_or_assign(t.name, std::move(*b));
  }
  return out;
}

GGUFFile gguf_load(const std::string& path, const std::string& device) {
  return gguf_load_bytes(FileBytes::map(path, kWho), device);
}

}  // namespace tg::nn::state
