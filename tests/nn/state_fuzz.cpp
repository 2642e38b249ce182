// Fuzz: valid safetensors / torch / GGUF files with thousands of random truncations and byte changes. Each
// load must either succeed or throw a tg::Error that names the file; a success must leave every buffer
// it made inside the file's bytes. Files are loaded from exact-size heap copies (so an ASan build catches
// a read even one byte past the end) onto HOST, where nothing runs but every buffer can be read back.
#include <gtest/gtest.h>

#include <cstdio>
#include <functional>
#include <random>
#include <unordered_set>

#include "nn/state/loaders.h"
#include "engine/buffers.h"
#include "state_test_util.h"
#include "state_torch_fixture.h"

using namespace tg;             // NOLINT
using namespace tg::nn::state;  // NOLINT
using namespace state_test;     // NOLINT

namespace {

constexpr int kIterations = 3000;

Bytes mutate(const Bytes& in, std::mt19937_64& rng) {
  Bytes b = in;
  auto pick = [&](size_t n) { return size_t(rng() % std::max<size_t>(n, 1)); };
  // Headers hold the offsets, counts and lengths: aim there half of the time.
  auto pos = [&] { return rng() % 2 ? pick(std::min<size_t>(b.size(), 256)) : pick(b.size()); };
  switch (rng() % 5) {
    case 0:
      b.resize(pick(b.size()));
      break;  // truncate
    case 1:
      for (int k = 0, n = 1 + int(rng() % 4); k < n && !b.empty(); k++) b[pos()] ^= uint8_t(1u << (rng() % 8));
      break;
    case 2:
      for (int k = 0, n = 1 + int(rng() % 4); k < n && !b.empty(); k++) b[pos()] = uint8_t(rng());
      break;
    case 3: {  // an extreme little-endian integer over 2, 4 or 8 bytes
      static const uint64_t extremes[] = {0,
                                          1,
                                          0x7F,
                                          0xFF,
                                          0x7FFFFFFF,
                                          0xFFFFFFFF,
                                          0x7FFFFFFFFFFFFFFF,
                                          ~uint64_t(0),
                                          uint64_t(1) << 62,
                                          0x8000000000000000};
      size_t width = size_t(2) << (rng() % 3), at = pos();
      uint64_t v = extremes[rng() % std::size(extremes)];
      for (size_t k = 0; k < width && at + k < b.size(); k++) b[at + k] = uint8_t(v >> (8 * k));
      break;
    }
    default: {  // drop or duplicate a span
      if (b.empty()) break;
      size_t at = pick(b.size()), n = 1 + pick(16);
      if (rng() % 2)
        b.erase(b.begin() + std::ptrdiff_t(at), b.begin() + std::ptrdiff_t(std::min(b.size(), at + n)));
      else
        b.insert(b.begin() + std::ptrdiff_t(at), b.begin() + std::ptrdiff_t(at),
                 b.begin() + std::ptrdiff_t(std::min(b.size(), at + n)));
    }
  }
  return b;
}

// Reads back every buffer the tensors' graphs refer to; where `file` is given, checks that each external
// buffer lies inside it.
void read_all_buffers(const std::vector<Tensor>& tensors, const FileBytes* file) {
  std::vector<const UOp*> stack;
  std::unordered_set<const UOp*> seen;
  for (auto& t : tensors) stack.push_back(t.uop().get());
  while (!stack.empty()) {
    const UOp* u = stack.back();
    stack.pop_back();
    if (!seen.insert(u).second) continue;
    for (auto& s : u->src) stack.push_back(s.get());
    if (u->op != Ops::BUFFER) continue;
    auto buf = buffer_of(u);
    if (!buf->allocated() || buf->nbytes() == 0) continue;
    if (file && buf->external()) {
      auto p = static_cast<const uint8_t*>(buf->ptr());
      ASSERT_TRUE(p >= file->data && p + buf->nbytes() <= file->data + file->size)
          << "buffer of " << buf->nbytes() << " bytes at file offset " << (p - file->data) << " outside " << file->size;
    }
    std::vector<uint8_t> out(buf->nbytes());
    buf->copyout(out.data(), out.size());
  }
}

// Runs `load` on kIterations mutations of `valid`; returns how many loads succeeded.
int fuzz(const Bytes& valid, const std::function<std::vector<Tensor>(const std::shared_ptr<const FileBytes>&)>& load,
         uint64_t seed, bool buffers_in_file = true) {
  std::mt19937_64 rng(seed);
  int ok = 0;
  {  // the unmutated file loads
    auto f = FileBytes::copy_of(valid.data(), valid.size(), "fuzz-valid");
    read_all_buffers(load(f), buffers_in_file ? f.get() : nullptr);
  }
  for (int i = 0; i < kIterations; i++) {
    Bytes b = mutate(valid, rng);
    std::string name = "fuzz-" + std::to_string(i);
    auto f = FileBytes::copy_of(b.data(), b.size(), name);
    try {
      std::vector<Tensor> ts = load(f);
      read_all_buffers(ts, buffers_in_file ? f.get() : nullptr);
      ok++;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(name), std::string::npos) << "iteration " << i << ": " << e.what();
    }
    if (::testing::Test::HasFatalFailure()) {
      ADD_FAILURE() << "iteration " << i << " (seed " << seed << ")";
      return ok;
    }
  }
  std::printf("  %d of %d mutated files loaded, the rest threw tg::Error\n", ok, kIterations);
  return ok;
}

template <class M>
std::vector<Tensor> values(const M& m) {
  std::vector<Tensor> v;
  for (auto& [k, t] : m) v.push_back(t);
  return v;
}

}  // namespace

TEST(StateFuzz, Safetensors) {
  TempDir dir;
  std::string path = dir.file("f.safetensors");
  safe_save({{"a", Tensor(std::vector<float>{1, 2, 3, 4, 5, 6}, {2, 3})},
             {"b", Tensor(std::vector<int64_t>{7, 8}, {2})},
             {"c", Tensor(std::vector<uint8_t>{1, 2, 3}).cast(dtypes::float16)},
             {"empty", Tensor::zeros({0})}},
            path, {{"k", "v"}});
  int ok = fuzz(
      read_file(path), [](auto& f) { return values(safe_load_bytes(f, "HOST")); }, 1);
  EXPECT_GT(ok, 0);
}

TEST(StateFuzz, TorchStored) {
  Bytes pkl(std::begin(kTorchStateDictPickle), std::end(kTorchStateDictPickle));
  int ok = fuzz(
      torch_zip(pkl, fixture_storages()), [](auto& f) { return values(torch_load_bytes(f, "HOST")); }, 2);
  EXPECT_GT(ok, 0);
}

TEST(StateFuzz, TorchPickleOnly) {
  // Mutations of the pickle alone (the zip around it stays valid) reach deeper into the interpreter.
  Bytes pkl(std::begin(kTorchStateDictPickle), std::end(kTorchStateDictPickle));
  std::mt19937_64 rng(3);
  auto storages = fixture_storages();
  for (int i = 0; i < kIterations; i++) {
    Bytes z = torch_zip(mutate(pkl, rng), storages);
    std::string name = "pickle-" + std::to_string(i);
    auto f = FileBytes::copy_of(z.data(), z.size(), name);
    try {
      read_all_buffers(values(torch_load_bytes(f, "HOST")), f.get());
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(name), std::string::npos) << e.what();
    }
    ASSERT_FALSE(HasFatalFailure()) << "iteration " << i;
  }
}

TEST(StateFuzz, TorchDeflated) {
  Bytes z(std::begin(kTorchDeflatedCheckpoint), std::end(kTorchDeflatedCheckpoint));
  fuzz(
      z, [](auto& f) { return values(torch_load_bytes(f, "HOST")); }, 4, /*buffers_in_file=*/false);
}

TEST(StateFuzz, GGUF) {
  GGUFWriter w;
  w.kv_str("general.architecture", "llama");
  w.kv_u32("n", 7);
  w.kv_i32_array("ids", {1, 2, 3});
  w.kv_str_array("tokens", {"a", "bb"});
  std::vector<float> x(64);
  for (size_t i = 0; i < x.size(); i++) x[i] = float(i) - 30;
  w.tensor("f32", {4, 2}, 0, bytes_of(std::vector<float>(8, 1.5f)));
  w.tensor("f16", {2}, 1, Bytes{0, 0x3c, 0, 0xc0});
  w.tensor("q8", {32, 2}, 8, quantize_q8_0(x).first);
  w.tensor("q4", {64}, 2, quantize_q4(x, false).first);
  w.tensor("q41", {32}, 3, quantize_q4(std::vector<float>(x.begin(), x.begin() + 32), true).first);
  int ok = fuzz(
      w.finish(), [](auto& f) { return values(gguf_load_bytes(f, "HOST").tensors); }, 5);
  EXPECT_GT(ok, 0);
}
