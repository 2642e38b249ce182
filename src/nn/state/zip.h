#pragma once
// A zip archive reader for torch.save checkpoints: the central directory (zip64 too), entries stored
// (viewed in place, zero copy) or deflated (inflated with zlib).
// Multi-disk archives and encryption are not supported.
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "nn/state/file_bytes.h"

namespace tg::nn::state {

struct ZipEntry {
  std::string name;
  uint16_t method = 0;  // 0 stored, 8 deflated
  uint32_t crc32 = 0;
  uint64_t compressed_size = 0, uncompressed_size = 0;
  uint64_t data_offset = 0;  // file offset of the entry's (compressed) bytes, checked to fit the file
};

// An entry's bytes, kept alive by `owner` (the mapping for stored entries, a heap copy for inflated ones).
struct ZipData {
  const uint8_t* data = nullptr;
  size_t size = 0;
  std::shared_ptr<const void> owner;
};

class ZipArchive {
 public:
  static bool looks_like_zip(const FileBytes& f);  // starts with a local file header ("PK\3\4")
  ZipArchive(std::shared_ptr<const FileBytes> file, const char* who);

  const std::vector<ZipEntry>& entries() const { return entries_; }
  const ZipEntry* find(const std::string& name) const;
  ZipData read(const ZipEntry& e) const;

 private:
  void read_central_directory();
  std::shared_ptr<const FileBytes> f_;
  const char* who_;
  std::vector<ZipEntry> entries_;
  std::unordered_map<std::string, size_t> by_name_;  // the first entry of each name
};

}  // namespace tg::nn::state
