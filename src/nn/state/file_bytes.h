#pragma once
// The bytes of a weights file and a bounds-checked cursor over them. Every loader reads only through
// these, so a truncated or corrupt file becomes a tg::Error ("<who>: <path>: <what>"), never an
// out-of-bounds read.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "tg/error.h"

namespace tg::nn::state {

// A whole file in memory: a read-only private mapping (safe_load ...), or any bytes kept alive by `owner`
// (tests hand in exact-size heap copies so that AddressSanitizer sees a read one byte past the end).
struct FileBytes {
  const uint8_t* data = nullptr;
  size_t size = 0;
  std::string path;
  std::shared_ptr<const void> owner;  // keeps `data` alive; tensors of the file hold it too

  static std::shared_ptr<const FileBytes> map(const std::string& path, const char* who);
  static std::shared_ptr<const FileBytes> copy_of(const void* data, size_t size, std::string path);
};

// "<who>: <path>: <what>" as a tg::Error.
[[noreturn]] void fail(const char* who, const std::string& path, const std::string& what);

// Checked arithmetic for sizes read from files: false on overflow.
inline bool mul_ok(uint64_t a, uint64_t b, uint64_t* out) { return !__builtin_mul_overflow(a, b, out); }
inline bool add_ok(uint64_t a, uint64_t b, uint64_t* out) { return !__builtin_add_overflow(a, b, out); }

// A little-endian cursor over [data, data + size) of a file; every read is bounds-checked.
class Reader {
 public:
  Reader(const uint8_t* data, size_t size, const char* who, const std::string& path, uint64_t base = 0)
      : data_(data), size_(size), who_(who), path_(path), base_(base) {}

  size_t pos() const { return pos_; }
  size_t remaining() const { return size_ - pos_; }
  void seek(uint64_t pos, const char* what);
  // Throws "truncated: <what> needs N bytes at offset X, only R left" unless n bytes remain.
  void need(uint64_t n, const char* what) const;
  const uint8_t* take(uint64_t n, const char* what);  // pointer to the next n bytes, then skips them
  uint8_t u8(const char* what) { return *take(1, what); }
  uint16_t u16(const char* what) { return uint16_t(le(2, what)); }
  uint32_t u32(const char* what) { return uint32_t(le(4, what)); }
  uint64_t u64(const char* what) { return le(8, what); }
  std::string str(uint64_t n, const char* what);
  [[noreturn]] void fail(const std::string& what) const { state::fail(who_, path_, what); }

 private:
  uint64_t le(int n, const char* what);
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
  const char* who_;
  std::string path_;
  uint64_t base_;  // file offset of data_[0], for messages
};

}  // namespace tg::nn::state
