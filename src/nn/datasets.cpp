// tg::nn::datasets: MNIST-format idx files, plain or gzip-compressed, read with zlib (gzread reads both).
// The files are untrusted input: the header is checked before anything is allocated, the data must be
// exactly as long as the dims say, and no more than that is ever decompressed.
#include <zlib.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>
#include <memory>

#include "tg/nn.h"

namespace tg::nn::datasets {
namespace {

// Larger than any real idx file (MNIST's training images are 47 MB), small enough that a forged header
// cannot make us allocate without bound.
constexpr uint64_t kMaxDataBytes = uint64_t(1) << 32;

struct GzCloser {
  void operator()(gzFile f) const { gzclose(f); }
};
using GzPtr = std::unique_ptr<std::remove_pointer_t<gzFile>, GzCloser>;

// Reads exactly n bytes; throws naming the file when there are fewer or the stream is corrupt.
void read_exact(gzFile f, const std::string& path, uint8_t* out, size_t n, const char* what) {
  size_t done = 0;
  while (done < n) {
    // gzread takes an unsigned count: read in chunks below 1 GiB.
    unsigned chunk = unsigned(std::min<size_t>(n - done, size_t(1) << 30));
    int got = gzread(f, out + done, chunk);
    if (got < 0) {
      int err = 0;
      const char* msg = gzerror(f, &err);
      throw Error("read_idx: " + path + ": corrupt compressed data while reading the " + what + " (" +
                  (msg ? msg : "zlib error") + ")");
    }
    if (got == 0) {
      int err = 0;
      const char* msg = gzerror(f, &err);
      throw Error("read_idx: " + path + ": file ends after " + std::to_string(done) + " of " + std::to_string(n) +
                  " bytes of the " + what + (err != Z_OK && msg ? std::string(" (") + msg + ")" : std::string()));
    }
    done += size_t(got);
  }
}

uint32_t be32(const uint8_t* p) { return uint32_t(p[0]) << 24 | uint32_t(p[1]) << 16 | uint32_t(p[2]) << 8 | p[3]; }

// dir/name, else dir/name.gz; throws when neither exists.
std::string find_file(const std::string& dir, const std::string& name) {
  namespace fs = std::filesystem;
  std::error_code ec;
  for (const std::string& candidate : {name, name + ".gz"}) {
    fs::path p = fs::path(dir) / candidate;
    if (fs::is_regular_file(p, ec)) return p.string();
  }
  throw Error("mnist: no " + name + " or " + name + ".gz in " + dir +
              (dir == kFashionMnistDir ? " (install Debian's dataset-fashion-mnist package, or pass a directory)"
                                       : ""));
}

Tensor images(const IdxFile& f, const std::string& path) {
  if (f.dims.size() != 3)
    throw Error("mnist: " + path + " has " + std::to_string(f.dims.size()) + " dims (expected 3: images, rows, cols)");
  return Tensor(f.data, {f.dims[0], 1, f.dims[1], f.dims[2]});
}

Tensor labels(const IdxFile& f, const std::string& path, int64_t n_images) {
  if (f.dims.size() != 1)
    throw Error("mnist: " + path + " has " + std::to_string(f.dims.size()) + " dims (expected 1: labels)");
  if (f.dims[0] != n_images)
    throw Error("mnist: " + path + " has " + std::to_string(f.dims[0]) + " labels for " + std::to_string(n_images) +
                " images");
  return Tensor(f.data, {f.dims[0]});
}

}  // namespace

IdxFile read_idx(const std::string& path) {
  gzFile raw = gzopen(path.c_str(), "rb");
  if (!raw) throw Error("read_idx: cannot open " + path + ": " + std::strerror(errno));
  GzPtr f(raw);
  // Magic: two zero bytes, the element type (0x08: unsigned byte) and the number of dims, then one
  // big-endian uint32 per dim.
  uint8_t magic[4];
  read_exact(f.get(), path, magic, 4, "header");
  if (magic[0] != 0 || magic[1] != 0)
    throw Error("read_idx: " + path + " is not an idx file (bad magic number)");
  if (magic[2] != 0x08) {
    char type[8];
    std::snprintf(type, sizeof type, "0x%02x", magic[2]);
    throw Error("read_idx: " + path + " has element type " + type + " (only unsigned bytes, 0x08, are supported)");
  }
  int ndim = magic[3];
  if (ndim < 1 || ndim > 4) throw Error("read_idx: " + path + " has " + std::to_string(ndim) + " dims (expected 1 to 4)");
  uint8_t dims_raw[16];
  read_exact(f.get(), path, dims_raw, size_t(4 * ndim), "header");
  IdxFile out;
  uint64_t total = 1;
  for (int i = 0; i < ndim; i++) {
    uint32_t d = be32(dims_raw + 4 * i);
    out.dims.push_back(int64_t(d));
    total *= d;  // at most 4 factors below 2^32 each: checked against the cap after each one
    if (total > kMaxDataBytes)
      throw Error("read_idx: " + path + " claims more than " + std::to_string(kMaxDataBytes) + " bytes of data");
  }
  // Before allocating what the header claims, check that the file can hold it: a plain file must be that
  // long, and a gzip stream can expand its data at most ~1032:1 (deflate's limit), so a 4 GiB claim in a
  // tiny file is refused here instead of being zero-filled and then found short.
  std::error_code ec;
  uint64_t on_disk = std::filesystem::file_size(path, ec);
  if (!ec && (gzdirect(f.get()) ? total > on_disk : total / 1032 > on_disk))
    throw Error("read_idx: " + path + " claims " + std::to_string(total) + " bytes of data but the file has only " +
                std::to_string(on_disk) + " bytes" + (gzdirect(f.get()) ? "" : " (compressed)"));
  out.data.resize(size_t(total));
  read_exact(f.get(), path, out.data.data(), out.data.size(), "data");
  uint8_t extra;
  int more = gzread(f.get(), &extra, 1);
  if (more < 0) throw Error("read_idx: " + path + ": corrupt compressed data after the data");
  if (more > 0) throw Error("read_idx: " + path + " has bytes after the " + std::to_string(total) + " its dims describe");
  return out;
}

MNIST mnist(const std::string& dir_arg) {
  const std::string dir = dir_arg.empty() ? kFashionMnistDir : dir_arg;
  auto load = [&](const char* image_name, const char* label_name) {
    std::string ip = find_file(dir, image_name), lp = find_file(dir, label_name);
    IdxFile fi = read_idx(ip);
    Tensor x = images(fi, ip);
    Tensor y = labels(read_idx(lp), lp, fi.dims[0]);
    return std::pair{x, y};
  };
  auto [X_train, Y_train] = load("train-images-idx3-ubyte", "train-labels-idx1-ubyte");
  auto [X_test, Y_test] = load("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte");
  return {X_train, Y_train, X_test, Y_test};
}

}  // namespace tg::nn::datasets
