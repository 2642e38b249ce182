// Zip reading: find the end-of-central-directory record (and its zip64 form), walk the central directory,
// and check every entry's local header and data range against the file.
#include "nn/state/zip.h"

namespace tg::nn::state {
namespace {

constexpr uint32_t kLocalSig = 0x04034b50, kCentralSig = 0x02014b50, kEndSig = 0x06054b50;
constexpr uint32_t kEnd64Sig = 0x06064b50, kEnd64LocatorSig = 0x07064b50;
constexpr size_t kEndSize = 22, kEnd64LocatorSize = 20, kCentralSize = 46, kLocalSize = 30;

uint32_t le32(const uint8_t* p) {
  return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24;
}

}  // namespace

bool ZipArchive::looks_like_zip(const FileBytes& f) {
  return f.size >= 4 && f.data[0] == 'P' && f.data[1] == 'K' && f.data[2] == 3 && f.data[3] == 4;
}

ZipArchive::ZipArchive(std::shared_ptr<const FileBytes> file, const char* who) : f_(std::move(file)), who_(who) {
  read_central_directory();
}

const ZipEntry* ZipArchive::find(const std::string& name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : &entries_[it->second];
}

ZipArchive::CentralDirectory ZipArchive::find_central_directory() const {
  const FileBytes& f = *f_;
  if (f.size < kEndSize) fail(who_, f.path, "too small for a zip archive (" + std::to_string(f.size) + " bytes)");
  // The end record is the last thing in the file, followed only by a comment of at most 65535 bytes.
  size_t end = SIZE_MAX;
  size_t lowest = f.size >= kEndSize + 65535 ? f.size - kEndSize - 65535 : 0;
  for (size_t p = f.size - kEndSize + 1; p-- > lowest;) {  // p + kEndSize <= f.size throughout
    size_t comment = size_t(f.data[p + 20]) | size_t(f.data[p + 21]) << 8;
    if (le32(f.data + p) == kEndSig && p + kEndSize + comment <= f.size) {
      end = p;
      break;
    }
  }
  if (end == SIZE_MAX) fail(who_, f.path, "not a zip archive: no end-of-central-directory record");
  Reader r(f.data, f.size, who_, f.path);
  r.seek(end + 4, "end record");
  uint16_t disk = r.u16("disk number"), cd_disk = r.u16("central directory disk");
  r.u16("entries on this disk");
  CentralDirectory cd;
  cd.count = r.u16("entry count");
  cd.size = r.u32("central directory size");
  cd.offset = r.u32("central directory offset");
  if (disk != 0 || cd_disk != 0) fail(who_, f.path, "multi-disk zip archives are not supported");
  if (cd.count != 0xFFFF && cd.size != 0xFFFFFFFF && cd.offset != 0xFFFFFFFF) return cd;
  // zip64: a locator just before the end record points at the zip64 end record.
  if (end < kEnd64LocatorSize) fail(who_, f.path, "zip64 archive without a zip64 locator");
  r.seek(end - kEnd64LocatorSize, "zip64 locator");
  if (r.u32("zip64 locator") != kEnd64LocatorSig) fail(who_, f.path, "zip64 archive without a zip64 locator");
  r.u32("zip64 end record disk");
  uint64_t end64 = r.u64("zip64 end record offset");
  r.seek(end64, "zip64 end record");
  if (r.u32("zip64 end record") != kEnd64Sig) fail(who_, f.path, "bad zip64 end-of-central-directory signature");
  r.u64("zip64 end record size");
  r.u16("version made by");
  r.u16("version needed");
  if (r.u32("disk number") != 0 || r.u32("central directory disk") != 0)
    fail(who_, f.path, "multi-disk zip archives are not supported");
  r.u64("entries on this disk");
  cd.count = r.u64("entry count");
  cd.size = r.u64("central directory size");
  cd.offset = r.u64("central directory offset");
  return cd;
}

void ZipArchive::read_central_directory() {
  const FileBytes& f = *f_;
  const CentralDirectory dir = find_central_directory();
  uint64_t cd_end = 0;
  if (!add_ok(dir.offset, dir.size, &cd_end) || cd_end > f.size)
    fail(who_, f.path,
         "central directory [" + std::to_string(dir.offset) + ", +" + std::to_string(dir.size) +
             ") runs past the end of the file (" + std::to_string(f.size) + " bytes)");
  if (dir.count > dir.size / kCentralSize)
    fail(who_, f.path,
         std::to_string(dir.count) + " entries cannot fit a central directory of " + std::to_string(dir.size) +
             " bytes");
  Reader cd(f.data + dir.offset, size_t(dir.size), who_, f.path, dir.offset);
  entries_.reserve(size_t(dir.count));
  for (uint64_t i = 0; i < dir.count; i++) {
    ZipEntry e = read_entry(cd, dir.offset);
    by_name_.emplace(e.name, entries_.size());
    entries_.push_back(std::move(e));
  }
}

ZipEntry ZipArchive::read_entry(Reader& cd, uint64_t cd_offset) const {
  const FileBytes& f = *f_;
  if (cd.u32("central directory entry") != kCentralSig)
    fail(who_, f.path, "bad central directory signature at offset " + std::to_string(cd_offset + cd.pos() - 4));
  ZipEntry e;
  cd.u16("version made by");
  cd.u16("version needed");
  uint16_t flags = cd.u16("flags");
  e.method = cd.u16("compression method");
  cd.u32("modification time");
  e.crc32 = cd.u32("crc32");
  e.compressed_size = cd.u32("compressed size");
  e.uncompressed_size = cd.u32("uncompressed size");
  uint16_t name_len = cd.u16("name length"), extra_len = cd.u16("extra length"), comment_len = cd.u16("comment length");
  cd.u16("start disk");
  cd.u16("internal attributes");
  cd.u32("external attributes");
  uint64_t local = cd.u32("local header offset");
  e.name = cd.str(name_len, "entry name");
  Reader extra(cd.take(extra_len, "extra field"), extra_len, who_, f.path);
  cd.take(comment_len, "entry comment");
  // zip64 extra field (id 1): 8-byte values for exactly the fields that are 0xFFFFFFFF, in this order.
  while (extra.remaining() >= 4) {
    uint16_t id = extra.u16("extra field id"), len = extra.u16("extra field length");
    Reader field(extra.take(len, "extra field"), len, who_, f.path);
    if (id != 1) continue;
    if (e.uncompressed_size == 0xFFFFFFFF) e.uncompressed_size = field.u64("zip64 uncompressed size");
    if (e.compressed_size == 0xFFFFFFFF) e.compressed_size = field.u64("zip64 compressed size");
    if (local == 0xFFFFFFFF) local = field.u64("zip64 local header offset");
  }
  if (flags & 1) fail(who_, f.path, "entry '" + e.name + "' is encrypted");
  if (e.method != 0 && e.method != 8)
    fail(who_, f.path,
         "entry '" + e.name + "' uses compression method " + std::to_string(e.method) +
             " (only stored and deflate are supported)");
  locate_data(e, local);
  return e;
}

void ZipArchive::locate_data(ZipEntry& e, uint64_t local) const {
  const FileBytes& f = *f_;
  // The data follows the local header, whose name and extra lengths may differ from the central ones.
  Reader lh(f.data, f.size, who_, f.path);
  lh.seek(local, "local header");
  if (lh.u32("local header") != kLocalSig)
    fail(who_, f.path, "entry '" + e.name + "': bad local header signature at offset " + std::to_string(local));
  lh.seek(local + 26, "local header");
  uint64_t skip = uint64_t(lh.u16("local name length")) + lh.u16("local extra length");
  e.data_offset = local + kLocalSize + skip;
  uint64_t data_end = 0;
  if (e.data_offset > f.size || !add_ok(e.data_offset, e.compressed_size, &data_end) || data_end > f.size)
    fail(who_, f.path,
         "entry '" + e.name + "': " + std::to_string(e.compressed_size) + " bytes at offset " +
             std::to_string(e.data_offset) + " run past the end of the file (" + std::to_string(f.size) + " bytes)");
  if (e.method == 0 && e.compressed_size != e.uncompressed_size)
    fail(who_, f.path, "entry '" + e.name + "' is stored but its sizes differ");
}

}  // namespace tg::nn::state
