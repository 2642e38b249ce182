#pragma once
// Writers of small weight files for the State* tests: a temp dir, a zip writer laid out like torch.save's
// (64-byte aligned data through an extra field), a tiny pickle writer, a GGUF writer, ggml quantizers and
// float16 conversion. Test-only: no checks beyond what the tests need.
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace state_test {

using Bytes = std::vector<uint8_t>;

// A fresh directory under the system temp dir, removed with everything in it.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "tg_state_XXXXXX").string();
    if (!::mkdtemp(tmpl.data())) std::abort();
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

inline void write_file(const std::string& path, const Bytes& b) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char*>(b.data()), std::streamsize(b.size()));
}
inline Bytes read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return Bytes(std::istreambuf_iterator<char>(f), {});
}

template <class T>
void put_le(Bytes& b, T v, int n = int(sizeof(T))) {
  for (int i = 0; i < n; i++) b.push_back(uint8_t(uint64_t(v) >> (8 * i)));
}
inline void put_str(Bytes& b, const std::string& s) { b.insert(b.end(), s.begin(), s.end()); }
template <class T>
Bytes bytes_of(const std::vector<T>& v) {
  Bytes b(v.size() * sizeof(T));
  if (!b.empty()) std::memcpy(b.data(), v.data(), b.size());
  return b;
}

// ---- float16 / bfloat16 ----
inline uint16_t f32_to_f16(float f) {  // round to nearest even; finite inputs of normal range in tests
  uint32_t x;
  std::memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000;
  int exp = int((x >> 23) & 0xFF) - 127 + 15;
  uint32_t mant = x & 0x7FFFFF;
  if ((x & 0x7FFFFFFF) == 0) return uint16_t(sign);
  if (exp <= 0) {  // subnormal half
    mant |= 0x800000;
    int shift = 14 - exp;
    uint32_t r = mant >> shift, rem = mant & ((1u << shift) - 1), halfway = 1u << (shift - 1);
    if (rem > halfway || (rem == halfway && (r & 1))) r++;
    return uint16_t(sign | r);
  }
  uint32_t r = (uint32_t(exp) << 10) | (mant >> 13), rem = mant & 0x1FFF;
  if (rem > 0x1000 || (rem == 0x1000 && (r & 1))) r++;
  return uint16_t(sign | r);
}
inline float f16_to_f32(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000) << 16, exp = (h >> 10) & 0x1F, mant = h & 0x3FF;
  if (exp == 0) return (sign ? -1.0f : 1.0f) * std::ldexp(float(mant), -24);
  uint32_t x = sign | ((exp - 15 + 127) << 23) | (mant << 13);
  if (exp == 31) x = sign | 0x7F800000 | (mant << 13);
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}
inline uint16_t f32_to_bf16(float f) {  // exact for values with 8 significant bits
  uint32_t x;
  std::memcpy(&x, &f, 4);
  return uint16_t(x >> 16);
}

// ---- zip (stored entries, data aligned to 64 bytes as torch.save's writer does) ----
inline uint32_t crc32(const uint8_t* p, size_t n) {
  uint32_t c = 0xFFFFFFFF;
  for (size_t i = 0; i < n; i++) {
    c ^= p[i];
    for (int k = 0; k < 8; k++) c = (c >> 1) ^ (0xEDB88320 & (0u - (c & 1)));
  }
  return ~c;
}

class ZipWriter {
 public:
  void add(const std::string& name, const Bytes& data) {
    size_t local = out_.size();
    // Pad the local extra field so that the data starts on a 64-byte boundary.
    size_t base = local + 30 + name.size() + 4;
    uint16_t pad = uint16_t((64 - base % 64) % 64);
    uint32_t crc = crc32(data.data(), data.size());
    put_le<uint32_t>(out_, 0x04034b50);
    put_le<uint16_t>(out_, 20);  // version needed
    put_le<uint16_t>(out_, 0);   // flags
    put_le<uint16_t>(out_, 0);   // stored
    put_le<uint32_t>(out_, 0);   // time, date
    put_le<uint32_t>(out_, crc);
    put_le<uint32_t>(out_, uint32_t(data.size()));
    put_le<uint32_t>(out_, uint32_t(data.size()));
    put_le<uint16_t>(out_, uint16_t(name.size()));
    put_le<uint16_t>(out_, uint16_t(4 + pad));
    put_str(out_, name);
    put_le<uint16_t>(out_, 0x4246);  // "FB", as torch
    put_le<uint16_t>(out_, pad);
    out_.insert(out_.end(), pad, 'Z');
    out_.insert(out_.end(), data.begin(), data.end());
    central_.push_back({name, crc, uint32_t(data.size()), uint32_t(local)});
  }
  Bytes finish() {
    Bytes b = out_;
    size_t cd = b.size();
    for (auto& e : central_) {
      put_le<uint32_t>(b, 0x02014b50);
      put_le<uint16_t>(b, 20);
      put_le<uint16_t>(b, 20);
      put_le<uint16_t>(b, 0);
      put_le<uint16_t>(b, 0);
      put_le<uint32_t>(b, 0);
      put_le<uint32_t>(b, e.crc);
      put_le<uint32_t>(b, e.size);
      put_le<uint32_t>(b, e.size);
      put_le<uint16_t>(b, uint16_t(e.name.size()));
      put_le<uint16_t>(b, 0);  // extra
      put_le<uint16_t>(b, 0);  // comment
      put_le<uint16_t>(b, 0);  // disk
      put_le<uint16_t>(b, 0);  // internal attributes
      put_le<uint32_t>(b, 0);  // external attributes
      put_le<uint32_t>(b, e.offset);
      put_str(b, e.name);
    }
    size_t cd_size = b.size() - cd;
    put_le<uint32_t>(b, 0x06054b50);
    put_le<uint16_t>(b, 0);
    put_le<uint16_t>(b, 0);
    put_le<uint16_t>(b, uint16_t(central_.size()));
    put_le<uint16_t>(b, uint16_t(central_.size()));
    put_le<uint32_t>(b, uint32_t(cd_size));
    put_le<uint32_t>(b, uint32_t(cd));
    put_le<uint16_t>(b, 0);
    return b;
  }

 private:
  struct Central {
    std::string name;
    uint32_t crc, size, offset;
  };
  Bytes out_;
  std::vector<Central> central_;
};

// ---- pickle (the opcodes torch.save's protocol-2 pickles use) ----
class PickleWriter {
 public:
  PickleWriter() { b_ = {0x80, 2}; }
  PickleWriter& op(uint8_t o) { return b_.push_back(o), *this; }
  PickleWriter& mark() { return op('('); }
  PickleWriter& tuple() { return op('t'); }
  PickleWriter& empty_dict() { return op('}'); }
  PickleWriter& empty_list() { return op(']'); }
  PickleWriter& empty_tuple() { return op(')'); }
  PickleWriter& setitems() { return op('u'); }
  PickleWriter& appends() { return op('e'); }
  PickleWriter& reduce() { return op('R'); }
  PickleWriter& persid() { return op('Q'); }
  PickleWriter& none() { return op('N'); }
  PickleWriter& boolean(bool v) { return op(v ? 0x88 : 0x89); }
  PickleWriter& global(const std::string& module, const std::string& name) {
    op('c');
    put_str(b_, module + "\n" + name + "\n");
    return *this;
  }
  PickleWriter& str(const std::string& s) {
    op('X');
    put_le<uint32_t>(b_, uint32_t(s.size()));
    put_str(b_, s);
    return *this;
  }
  PickleWriter& integer(int64_t v) {
    if (v >= 0 && v < 256) return op('K'), b_.push_back(uint8_t(v)), *this;
    if (v >= INT32_MIN && v <= INT32_MAX) return op('J'), put_le<int32_t>(b_, int32_t(v)), *this;
    op(0x8a);
    b_.push_back(8);
    put_le<int64_t>(b_, v);
    return *this;
  }
  PickleWriter& int_tuple(const std::vector<int64_t>& v) {
    mark();
    for (int64_t x : v) integer(x);
    return tuple();
  }
  PickleWriter& ordered_dict() { return global("collections", "OrderedDict").empty_tuple().reduce(); }
  // torch._utils._rebuild_tensor_v2(('storage', torch.<type>, key, 'cpu', numel), offset, size, stride, False,
  // OrderedDict())
  PickleWriter& tensor(const std::string& storage_type, const std::string& key, int64_t numel, int64_t offset,
                       const std::vector<int64_t>& size, const std::vector<int64_t>& stride) {
    global("torch._utils", "_rebuild_tensor_v2").mark();
    mark().str("storage").global("torch", storage_type).str(key).str("cpu").integer(numel).tuple().persid();
    integer(offset).int_tuple(size).int_tuple(stride).boolean(false).ordered_dict();
    return tuple().reduce();
  }
  Bytes stop() {
    Bytes b = b_;
    b.push_back('.');
    return b;
  }

 private:
  Bytes b_;
};

// A torch.save archive: <name>/data.pkl, <name>/data/<key> for each storage, byteorder and version.
inline Bytes torch_zip(const Bytes& pickle, const std::map<std::string, Bytes>& storages,
                       const std::string& name = "archive") {
  ZipWriter z;
  z.add(name + "/data.pkl", pickle);
  z.add(name + "/byteorder", Bytes{'l', 'i', 't', 't', 'l', 'e'});
  for (auto& [k, v] : storages) z.add(name + "/data/" + k, v);
  z.add(name + "/version", Bytes{'3', '\n'});
  return z.finish();
}

// The storages of gen_torch_fixture.py's state dict.
inline std::map<std::string, Bytes> fixture_storages() {
  std::vector<uint16_t> halves;
  for (float f : {1.0f, -2.0f, 0.5f, 3.0f}) halves.push_back(f32_to_f16(f));
  return {{"0", bytes_of(std::vector<float>{0, 0.5f, 1, 1.5f, 2, 2.5f})},
          {"1", bytes_of(halves)},
          {"2", bytes_of(std::vector<int64_t>{10, 11, 12, 13, 14})},
          {"3", Bytes{1, 0, 1}},
          {"4", bytes_of(std::vector<float>{7.25f})}};
}

// ---- GGUF ----
class GGUFWriter {
 public:
  explicit GGUFWriter(uint32_t version = 3, uint64_t alignment = 32) : version_(version), alignment_(alignment) {}
  void kv_raw(const std::string& key, uint32_t type, const Bytes& value) {
    put_string(kv_, key);
    put_le<uint32_t>(kv_, type);
    kv_.insert(kv_.end(), value.begin(), value.end());
    n_kv_++;
  }
  void kv_u32(const std::string& key, uint32_t v) {
    Bytes b;
    put_le(b, v);
    kv_raw(key, 4, b);
  }
  void kv_f32(const std::string& key, float v) {
    Bytes b(4);
    std::memcpy(b.data(), &v, 4);
    kv_raw(key, 6, b);
  }
  void kv_bool(const std::string& key, bool v) { kv_raw(key, 7, Bytes{uint8_t(v)}); }
  void kv_str(const std::string& key, const std::string& v) {
    Bytes b;
    put_string(b, v);
    kv_raw(key, 8, b);
  }
  void kv_i32_array(const std::string& key, const std::vector<int32_t>& v) {
    Bytes b;
    put_le<uint32_t>(b, 5);
    put_le<uint64_t>(b, v.size());
    for (int32_t x : v) put_le(b, x);
    kv_raw(key, 9, b);
  }
  void kv_str_array(const std::string& key, const std::vector<std::string>& v) {
    Bytes b;
    put_le<uint32_t>(b, 8);
    put_le<uint64_t>(b, v.size());
    for (auto& s : v) put_string(b, s);
    kv_raw(key, 9, b);
  }
  // dims in ggml order (fastest first); data already in the type's layout.
  void tensor(const std::string& name, const std::vector<uint64_t>& dims, uint32_t type, const Bytes& data) {
    put_string(infos_, name);
    put_le<uint32_t>(infos_, uint32_t(dims.size()));
    for (uint64_t d : dims) put_le(infos_, d);
    put_le<uint32_t>(infos_, type);
    while (data_.size() % alignment_) data_.push_back(0);
    put_le<uint64_t>(infos_, data_.size());
    data_.insert(data_.end(), data.begin(), data.end());
    n_tensors_++;
  }
  Bytes finish() const {
    Bytes b;
    put_str(b, "GGUF");
    put_le<uint32_t>(b, version_);
    put_le<uint64_t>(b, n_tensors_);
    put_le<uint64_t>(b, n_kv_);
    b.insert(b.end(), kv_.begin(), kv_.end());
    b.insert(b.end(), infos_.begin(), infos_.end());
    while (b.size() % alignment_) b.push_back(0);
    b.insert(b.end(), data_.begin(), data_.end());
    return b;
  }

 private:
  static void put_string(Bytes& b, const std::string& s) {
    put_le<uint64_t>(b, s.size());
    put_str(b, s);
  }
  uint32_t version_;
  uint64_t alignment_;
  uint64_t n_kv_ = 0, n_tensors_ = 0;
  Bytes kv_, infos_, data_;
};

// ggml quantizers (as ggml's reference ones) and the values their blocks decode to.
inline std::pair<Bytes, std::vector<float>> quantize_q8_0(const std::vector<float>& x) {
  Bytes out;
  std::vector<float> deq;
  for (size_t b = 0; b < x.size(); b += 32) {
    float amax = 0;
    for (size_t i = 0; i < 32; i++) amax = std::max(amax, std::fabs(x[b + i]));
    float d = amax / 127, id = d ? 1 / d : 0;
    uint16_t dh = f32_to_f16(d);
    put_le(out, dh);
    for (size_t i = 0; i < 32; i++) {
      auto q = int8_t(std::lround(x[b + i] * id));
      out.push_back(uint8_t(q));
      deq.push_back(f16_to_f32(dh) * float(q));
    }
  }
  return {out, deq};
}

inline std::pair<Bytes, std::vector<float>> quantize_q4(const std::vector<float>& x, bool with_min) {
  Bytes out;
  std::vector<float> deq;
  for (size_t b = 0; b < x.size(); b += 32) {
    float lo = x[b], hi = x[b], amax = 0, vmax = 0;
    for (size_t i = 0; i < 32; i++) {
      lo = std::min(lo, x[b + i]), hi = std::max(hi, x[b + i]);
      if (std::fabs(x[b + i]) > amax) amax = std::fabs(x[b + i]), vmax = x[b + i];
    }
    float d = with_min ? (hi - lo) / 15 : vmax / -8, m = with_min ? lo : 0, id = d ? 1 / d : 0;
    uint16_t dh = f32_to_f16(d), mh = f32_to_f16(m);
    put_le(out, dh);
    if (with_min) put_le(out, mh);
    uint8_t q[32];
    for (size_t i = 0; i < 32; i++) {
      float v = with_min ? (x[b + i] - m) * id : x[b + i] * id + 8.5f;
      q[i] = uint8_t(std::min(15, std::max(0, int(with_min ? v + 0.5f : v))));
    }
    for (size_t i = 0; i < 16; i++) out.push_back(uint8_t(q[i] | (q[i + 16] << 4)));
    for (size_t i = 0; i < 32; i++)
      deq.push_back(with_min ? f16_to_f32(dh) * float(q[i]) + f16_to_f32(mh) : f16_to_f32(dh) * float(int(q[i]) - 8));
  }
  return {out, deq};
}

}  // namespace state_test
