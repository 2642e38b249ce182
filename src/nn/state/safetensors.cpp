// safetensors: an 8-byte little-endian header length, a JSON header {name: {dtype, shape, data_offsets}},
// then the data section. Loading views the mapped data; saving writes header and data in one pass.
#include <unistd.h>

#include <cstdio>
#include <cstring>

#include "tensor/host_tensor.h"
#include "nn/state/json.h"
#include "nn/state/loaders.h"

namespace tg::nn::state {
namespace {

constexpr uint64_t kMaxHeader = 100'000'000;  // the format's own limit
constexpr size_t kMaxDims = 64;

const std::pair<const char*, DType> kDtypes[] = {
    {"BOOL", dtypes::bool_}, {"U8", dtypes::uint8},    {"I8", dtypes::int8},       {"U16", dtypes::uint16},
    {"I16", dtypes::int16},  {"U32", dtypes::uint32},  {"I32", dtypes::int32},     {"U64", dtypes::uint64},
    {"I64", dtypes::int64},  {"F16", dtypes::float16}, {"BF16", dtypes::bfloat16}, {"F32", dtypes::float32},
    {"F64", dtypes::float64}};

std::optional<DType> dtype_from_name(const std::string& name) {
  for (auto& [n, dt] : kDtypes)
    if (name == n) return dt;
  return std::nullopt;
}

const char* dtype_name(DType dt, const std::string& tensor) {
  for (auto& [n, d] : kDtypes)
    if (d == dt) return n;
  throw Error("safe_save: tensor '" + tensor + "' has dtype " + dt.repr() + ", which safetensors cannot store");
}

SafetensorsEntry parse_entry(const Json& v, const std::string& name, uint64_t data_size, const char* who,
                             const std::string& path) {
  auto bad = [&](const std::string& what) { fail(who, path, "tensor '" + name.substr(0, 200) + "': " + what); };
  if (v.kind != Json::Kind::Object) bad("expected an object, found " + std::string(Json::kind_name(v.kind)));
  const Json* dt = v.find("dtype");
  const Json* shape = v.find("shape");
  const Json* offs = v.find("data_offsets");
  if (!dt || dt->kind != Json::Kind::String) bad("missing string \"dtype\"");
  if (!shape || shape->kind != Json::Kind::Array) bad("missing array \"shape\"");
  if (!offs || offs->kind != Json::Kind::Array || offs->items.size() != 2) bad("\"data_offsets\" must be [begin, end]");
  SafetensorsEntry e;
  auto d = dtype_from_name(dt->text);
  if (!d) bad("unsupported dtype \"" + dt->text.substr(0, 32) + "\"");
  e.dtype = *d;
  if (shape->items.size() > kMaxDims) bad("more than " + std::to_string(kMaxDims) + " dims");
  uint64_t numel = 1;
  for (auto& s : shape->items) {
    auto n = s.as_uint();
    if (!n || *n > (uint64_t(1) << 62)) bad("shape entries must be integers in [0, 2^62]");
    e.shape.push_back(int64_t(*n));
    if (!mul_ok(numel, *n, &numel) || numel > (uint64_t(1) << 62)) bad("shape has too many elements");
  }
  auto b = offs->items[0].as_uint(), en = offs->items[1].as_uint();
  if (!b || !en || *b > *en) bad("\"data_offsets\" must be integers with begin <= end");
  e.begin = *b;
  e.end = *en;
  if (e.end > data_size)
    bad("data_offsets [" + std::to_string(e.begin) + ", " + std::to_string(e.end) + "] run past the data section (" +
        std::to_string(data_size) + " bytes)");
  uint64_t nbytes = 0;
  if (!mul_ok(numel, uint64_t(e.dtype.itemsize()), &nbytes) || nbytes != e.end - e.begin)
    bad("shape " + to_string(e.shape) + " of " + dt->text + " needs " + std::to_string(nbytes) +
        " bytes, data_offsets give " + std::to_string(e.end - e.begin));
  return e;
}

}  // namespace

SafetensorsHeader safe_parse_header(const FileBytes& f, const char* who) {
  Reader r(f.data, f.size, who, f.path);
  uint64_t n = r.u64("the header length");
  if (n > kMaxHeader) fail(who, f.path, "header length " + std::to_string(n) + " is over the format's limit of 100 MB");
  const uint8_t* text = r.take(n, "the JSON header");
  Json j = parse_json(std::string_view(reinterpret_cast<const char*>(text), size_t(n)),
                      std::string(who) + ": " + f.path + ": header");
  if (j.kind != Json::Kind::Object) fail(who, f.path, "header is not a JSON object");
  SafetensorsHeader h;
  h.data_start = 8 + n;
  uint64_t data_size = f.size - h.data_start;
  for (auto& [name, v] : j.members) {
    if (name == "__metadata__") {
      if (v.kind != Json::Kind::Object) fail(who, f.path, "\"__metadata__\" must be an object of strings");
      for (auto& [k, s] : v.members) {
        if (s.kind != Json::Kind::String)
          fail(who, f.path, "\"__metadata__\" value of '" + k.substr(0, 200) + "' is not a string");
        h.metadata[k] = s.text;
      }
      continue;
    }
    h.tensors[name] = parse_entry(v, name, data_size, who, f.path);
  }
  return h;
}

std::map<std::string, Tensor> safe_load_bytes(const std::shared_ptr<const FileBytes>& f, const std::string& device) {
  SafetensorsHeader h = safe_parse_header(*f, "safe_load");
  std::string dev = load_device(device);
  std::map<std::string, Tensor> out;
  for (auto& [name, e] : h.tensors)
    out.emplace(name, file_tensor(f->data + h.data_start + e.begin, e.dtype, e.shape, f->owner, dev));
  return out;
}

SafetensorsHeader safe_load_metadata(const std::string& path) {
  return safe_parse_header(*FileBytes::map(path, "safe_load_metadata"), "safe_load_metadata");
}

std::map<std::string, Tensor> safe_load(const std::string& path, const std::string& device) {
  return safe_load_bytes(FileBytes::map(path, "safe_load"), device);
}

void safe_save(const std::map<std::string, Tensor>& tensors, const std::string& path,
               const std::map<std::string, std::string>& metadata) {
  auto check_text = [&](const std::string& s, const char* what) {
    if (!is_valid_utf8(s)) throw Error("safe_save: " + path + ": " + what + " is not valid UTF-8");
  };
  std::string j = "{";
  if (!metadata.empty()) {
    j += "\"__metadata__\":{";
    bool first = true;
    for (auto& [k, v] : metadata) {
      check_text(k, "a metadata key");
      check_text(v, "a metadata value");
      j += (first ? "" : ",") + json_quote(k) + ":" + json_quote(v);
      first = false;
    }
    j += "}";
  }
  uint64_t offset = 0;
  for (auto& [name, t] : tensors) {
    check_text(name, "a tensor name");
    if (name == "__metadata__") throw Error("safe_save: " + path + ": \"__metadata__\" cannot name a tensor");
    uint64_t nbytes = uint64_t(t.numel()) * uint64_t(t.element_size());
    std::string shape;
    for (int64_t s : t.shape()) shape += (shape.empty() ? "" : ",") + std::to_string(s);
    j += (j.size() > 1 ? "," : "") + json_quote(name) + ":{\"dtype\":\"" + dtype_name(t.dtype(), name) +
         "\",\"shape\":[" + shape + "],\"data_offsets\":[" + std::to_string(offset) + "," +
         std::to_string(offset + nbytes) + "]}";
    offset += nbytes;
  }
  j += "}";
  j.resize((j.size() + 7) / 8 * 8, ' ');  // the data section starts 8-byte aligned

  // Compute everything in one schedule before writing a byte.
  std::vector<Tensor> pending;
  for (auto& [name, t] : tensors)
    if (t.device() != "HOST" && !is_dense_buffer_view(t)) pending.push_back(t.contiguous());
  Tensor::realize_all(pending);

  // Written beside the target, then renamed over it: a reader that has `path` mapped keeps the old file.
  std::string tmp = path + ".tmp" + std::to_string(::getpid());
  std::FILE* fp = std::fopen(tmp.c_str(), "wb");
  if (!fp) throw Error("safe_save: " + path + ": cannot create " + tmp + ": " + std::strerror(errno));
  auto write = [&](const void* p, size_t n) {
    if (n && std::fwrite(p, 1, n, fp) != n)
      throw Error("safe_save: " + path + ": write failed: " + std::strerror(errno));
  };
  try {
    uint8_t len[8];
    for (int i = 0; i < 8; i++) len[i] = uint8_t(uint64_t(j.size()) >> (8 * i));
    write(len, 8);
    write(j.data(), j.size());
    for (auto& [name, t] : tensors) {
      std::vector<uint8_t> bytes = tensor_bytes(t);
      write(bytes.data(), bytes.size());
    }
  } catch (...) {
    std::fclose(fp);
    std::remove(tmp.c_str());
    throw;
  }
  if (std::fclose(fp) != 0) {
    std::remove(tmp.c_str());
    throw Error("safe_save: " + path + ": close failed: " + std::strerror(errno));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    std::remove(tmp.c_str());
    throw Error("safe_save: " + path + ": cannot replace it: " + std::strerror(err));
  }
}

}  // namespace tg::nn::state
