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
  // Where the central directory is and how many entries it has (from the end record, or its zip64 form).
  struct CentralDirectory {
    uint64_t count = 0, size = 0, offset = 0;
  };
  CentralDirectory find_central_directory() const;
  void read_central_directory();
  // One central directory entry (its zip64 extra field applied), and where its data lies after its local header.
  ZipEntry read_entry(Reader& cd, uint64_t cd_offset) const;
  void locate_data(ZipEntry& e, uint64_t local) const;
  std::shared_ptr<const FileBytes> f_;
  const char* who_;
  std::vector<ZipEntry> entries_;
  std::unordered_map<std::string, size_t> by_name_;  // the first entry of each name
};

}  // namespace tg::nn::state
