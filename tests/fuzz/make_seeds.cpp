// Writes the seed corpora of the libFuzzer harnesses: small valid files of each format, made by code (the
// test suite's writers), so the repository holds no binary blobs. Usage: tg_fuzz_seeds <dir>; writes
// <dir>/<harness>/seed-<n>.
#include <zlib.h>

#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "../nn/state_test_util.h"
#include "../nn/state_torch_fixture.h"
#include "runtime/compile_cache_entry.h"

using namespace state_test;  // NOLINT

namespace {

void put(const std::filesystem::path& dir, const std::vector<Bytes>& seeds) {
  std::filesystem::create_directories(dir);
  for (size_t i = 0; i < seeds.size(); i++) write_file((dir / ("seed-" + std::to_string(i))).string(), seeds[i]);
}

// safetensors: an 8-byte header length, the JSON header, then the data.
Bytes safetensors(const std::string& json, const Bytes& data) {
  Bytes b;
  put_le<uint64_t>(b, json.size());
  put_str(b, json);
  b.insert(b.end(), data.begin(), data.end());
  return b;
}

std::vector<Bytes> safetensors_seeds() {
  Bytes data = bytes_of(std::vector<float>{1, 2, 3, 4, 5, 6});
  Bytes more = data;
  for (int64_t x : {7, 8}) put_le<int64_t>(more, x);
  put_le<uint16_t>(more, f32_to_f16(1.5f));
  return {safetensors(R"({"a":{"dtype":"F32","shape":[2,3],"data_offsets":[0,24]}})", data),
          safetensors(R"({"__metadata__":{"k":"v"},"a":{"dtype":"F32","shape":[2,3],"data_offsets":[0,24]},)"
                      R"("b":{"dtype":"I64","shape":[2],"data_offsets":[24,40]},)"
                      R"("c":{"dtype":"F16","shape":[],"data_offsets":[40,42]},)"
                      R"("e":{"dtype":"BF16","shape":[0,3],"data_offsets":[42,42]}})",
                      more)};
}

std::vector<Bytes> gguf_seeds() {
  GGUFWriter w;
  w.kv_str("general.architecture", "llama");
  w.kv_u32("n", 7);
  w.kv_f32("eps", 1e-5f);
  w.kv_bool("flag", true);
  w.kv_i32_array("ids", {1, 2, 3});
  w.kv_str_array("tokens", {"a", "bb"});
  std::vector<float> x(64);
  for (size_t i = 0; i < x.size(); i++) x[i] = float(i) - 30;
  w.tensor("f32", {4, 2}, 0, bytes_of(std::vector<float>(8, 1.5f)));
  w.tensor("f16", {2}, 1, Bytes{0, 0x3c, 0, 0xc0});
  w.tensor("q8", {32, 2}, 8, quantize_q8_0(x).first);
  w.tensor("q4", {64}, 2, quantize_q4(x, false).first);
  w.tensor("q41", {32}, 3, quantize_q4(std::vector<float>(x.begin(), x.begin() + 32), true).first);
  GGUFWriter small(2);
  small.tensor("t", {3}, 0, bytes_of(std::vector<float>{1, 2, 3}));
  return {w.finish(), small.finish()};
}

std::vector<Bytes> torch_seeds() {
  Bytes pkl(std::begin(kTorchStateDictPickle), std::end(kTorchStateDictPickle));
  return {torch_zip(pkl, fixture_storages()),
          Bytes(std::begin(kTorchDeflatedCheckpoint), std::end(kTorchDeflatedCheckpoint)), pkl};
}

Bytes idx(const std::vector<uint32_t>& dims) {
  Bytes b{0, 0, 0x08, uint8_t(dims.size())};
  size_t n = 1;
  for (uint32_t d : dims) put_le<uint32_t>(b, __builtin_bswap32(d)), n *= d;
  for (size_t i = 0; i < n; i++) b.push_back(uint8_t(i * 7));
  return b;
}

Bytes gzip(const Bytes& raw, const std::string& scratch) {
  gzFile f = gzopen(scratch.c_str(), "wb");
  gzwrite(f, raw.data(), unsigned(raw.size()));
  gzclose(f);
  return read_file(scratch);
}

std::vector<Bytes> idx_seeds(const std::filesystem::path& dir) {
  Bytes images = idx({2, 3, 3}), labels = idx({2});
  return {images, labels, gzip(images, (dir / "scratch.gz").string())};
}

std::vector<Bytes> compile_cache_seeds() {
  const std::string key = "clang -O2 -march=native", src = "void E_4(float* a) { a[0] = 1.0f; }";
  std::vector<Bytes> out;
  // An ELF-like binary with a NUL inside, and an empty one.
  for (const std::string& bin : {std::string("\x7f"
                                             "ELF\0bin",
                                             8),
                                 std::string()}) {
    std::string e = tg::encode_cache_entry(key, src, bin);
    out.emplace_back(e.begin(), e.end());
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s <corpus dir>\n", argv[0]);
    return 2;
  }
  std::filesystem::path dir = argv[1];
  std::filesystem::create_directories(dir);
  put(dir / "fuzz_safetensors", safetensors_seeds());
  put(dir / "fuzz_gguf", gguf_seeds());
  put(dir / "fuzz_torch", torch_seeds());
  put(dir / "fuzz_idx", idx_seeds(dir));
  put(dir / "fuzz_compile_cache", compile_cache_seeds());
  std::filesystem::remove(dir / "scratch.gz");
  return 0;
}
