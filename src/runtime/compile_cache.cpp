// Compiler::compile_cached: an on-disk cache of compiled kernels, so a second run of a program (or a second
// process) skips the C compiler. One file per (compiler, source): it holds the compiler key, the source
// and the binary, and a load only counts as a hit when the stored key and source equal the asked ones and
// the binary's checksum matches, so neither a hash collision nor a torn or corrupted file can ever return
// a wrong binary.
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <mutex>
#include <set>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <system_error>

#include "helpers/env.h"
#include "runtime/cache_dir.h"
#include "runtime/compile_cache_entry.h"
#include "runtime/device.h"
#include "tg/context.h"
#include "tg/error.h"

namespace tg {
namespace {

namespace fs = std::filesystem;

std::atomic<int64_t> g_compiles{0};

// A 128-bit digest from two unrelated 64-bit hashes: FNV-1a over bytes and a multiply-rotate hash over
// 8-byte words. Not cryptographic; it only has to make accidental collisions vanishingly rare (and a
// collision is caught anyway by comparing the stored source).
struct Hash128 {
  uint64_t lo, hi;
};

uint64_t fnv1a64(const std::string& s, uint64_t h = 0xcbf29ce484222325ULL) {
  for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ULL;
  return h;
}

uint64_t rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

uint64_t fmix64(uint64_t k) {  // the avalanche step of MurmurHash3
  k ^= k >> 33;
  k *= 0xff51afd7ed558ccdULL;
  k ^= k >> 33;
  k *= 0xc4ceb9fe1a85ec53ULL;
  return k ^ (k >> 33);
}

uint64_t word_hash64(const std::string& s, uint64_t seed = 0x9e3779b97f4a7c15ULL) {
  uint64_t h = seed ^ (s.size() * 0x87c37b91114253d5ULL);
  size_t i = 0;
  for (; i + 8 <= s.size(); i += 8) {
    uint64_t w;
    std::memcpy(&w, s.data() + i, 8);
    h = rotl(h ^ fmix64(w * 0x4cf5ad432745937fULL), 27) * 5 + 0x52dce729;
  }
  uint64_t tail = 0;
  for (size_t j = 0; i + j < s.size(); j++) tail |= uint64_t(static_cast<unsigned char>(s[i + j])) << (8 * j);
  return fmix64(h ^ fmix64(tail + 0x38495ab5));
}

Hash128 hash128(const std::string& s) { return {fnv1a64(s), word_hash64(s)}; }

std::string hex(const Hash128& h) {
  char buf[33];
  std::snprintf(buf, sizeof(buf), "%016llx%016llx", static_cast<unsigned long long>(h.hi),
                static_cast<unsigned long long>(h.lo));
  return buf;
}

// Only a regular file is an entry: a directory or a FIFO at an entry's name (left by a user or another
// program) is a miss. O_NONBLOCK keeps open() of a FIFO from waiting for a writer; fstat on the opened
// descriptor then decides, so the check and the read see the same file.
bool read_file(const fs::path& path, std::string* out) {
  int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return false;
  struct stat st {};
  bool ok = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
  if (ok) {
    out->resize(size_t(st.st_size));
    size_t done = 0;
    while (ok && done < out->size()) {
      ssize_t got = ::read(fd, out->data() + done, out->size() - done);
      if (got < 0 && errno == EINTR) continue;
      ok = got > 0;
      if (ok) done += size_t(got);
    }
  }
  ::close(fd);
  return ok;
}

bool pid_is_dead(long pid) { return pid > 0 && ::kill(pid_t(pid), 0) != 0 && errno == ESRCH; }

// A process killed between writing a temp file and renaming it leaves `<entry>.tmp.<pid>.<n>` behind:
// remove those whose writer is gone, once per directory and process (a live writer's files are kept).
void clean_stale_temps(const fs::path& dir) {
  static std::mutex mu;
  static std::set<std::string> done;
  {
    std::lock_guard<std::mutex> lock(mu);
    if (!done.insert(dir.string()).second) return;
  }
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    std::string name = it->path().filename().string();
    size_t at = name.find(".tmp.");
    if (at == std::string::npos) continue;
    long pid = std::strtol(name.c_str() + at + 5, nullptr, 10);
    std::error_code rm;
    if (pid_is_dead(pid)) fs::remove(it->path(), rm);
  }
}

// Write to a private temp name and rename over the final one: rename is atomic within a directory, so a
// reader (this or another process) sees either the old file, no file, or the whole new one.
void write_atomic(const fs::path& path, const std::string& data) {
  static std::atomic<uint64_t> counter{0};
  fs::path tmp = path;
  tmp += ".tmp." + std::to_string(getpid()) + "." + std::to_string(counter++);
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) return;
    out.write(data.data(), std::streamsize(data.size()));
    out.close();
    if (!out) {
      std::error_code ec;
      fs::remove(tmp, ec);
      return;
    }
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) fs::remove(tmp, ec);
}

}  // namespace

// File layout: magic, then five u64 in host byte order (key, source and binary lengths, the binary's 128-bit
// checksum), then the key, source and binary bytes.
namespace {
constexpr char kMagic[8] = {'T', 'G', 'C', 'C', 'A', 'C', 'H', '1'};
constexpr size_t kHeader = sizeof(kMagic) + 5 * sizeof(uint64_t);
}  // namespace

std::string encode_cache_entry(const std::string& key, const std::string& src, const std::string& bin) {
  Hash128 check = hash128(bin);
  uint64_t fields[5] = {key.size(), src.size(), bin.size(), check.lo, check.hi};
  std::string out(kMagic, sizeof(kMagic));
  out.append(reinterpret_cast<const char*>(fields), sizeof(fields));
  return out + key + src + bin;
}

bool decode_cache_entry(const std::string& file, const std::string& key, const std::string& src, std::string* bin) {
  if (file.size() < kHeader || std::memcmp(file.data(), kMagic, sizeof(kMagic)) != 0) return false;
  uint64_t f[5];
  std::memcpy(f, file.data() + sizeof(kMagic), sizeof(f));
  // Compare lengths one at a time against what is left, so a corrupted huge length cannot overflow.
  uint64_t left = file.size() - kHeader;
  if (f[0] > left || f[1] > left - f[0] || f[2] != left - f[0] - f[1]) return false;
  if (f[0] != key.size() || f[1] != src.size()) return false;
  const char* p = file.data() + kHeader;
  if (std::memcmp(p, key.data(), key.size()) != 0 || std::memcmp(p + key.size(), src.data(), src.size()) != 0)
    return false;
  std::string b(p + key.size() + src.size(), f[2]);
  Hash128 check = hash128(b);
  if (check.lo != f[3] || check.hi != f[4]) return false;
  *bin = std::move(b);
  return true;
}

int64_t Compiler::compiles() { return g_compiles.load(); }

std::string Compiler::compile_cached(const std::string& src) {
  if (CACHELEVEL <= 0) {
    g_compiles++;
    return compile(src);
  }
  const std::string key = cache_key();
  fs::path dir = cache_dir() / "compile";
  fs::path path = dir / (hex(hash128(key + '\0' + src)) + ".bin");
  std::string file, bin;
  clean_stale_temps(dir);
  if (read_file(path, &file) && decode_cache_entry(file, key, src, &bin)) return bin;
  g_compiles++;
  bin = compile(src);
  // The cache is an optimization: a directory we cannot create or write just means no caching.
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (!ec) write_atomic(path, encode_cache_entry(key, src, bin));
  if (ec && DEBUG >= 2) std::fprintf(stderr, "compile cache: cannot use %s: %s\n", dir.c_str(), ec.message().c_str());
  return bin;
}

}  // namespace tg
