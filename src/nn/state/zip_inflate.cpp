// Reading a zip entry's bytes: stored entries in place (zero copy); deflated ones inflated with zlib into
// a heap buffer, after checking that the claimed size is one deflate could produce and before trusting
// the result (its crc32 must match).
#include <zlib.h>

#include <algorithm>
#include <vector>

#include "nn/state/zip.h"

namespace tg::nn::state {
namespace {

// Deflate cannot expand data by more than about 1032x, so a claimed size above that is a lie that would
// otherwise make us allocate whatever the file says.
constexpr uint64_t kMaxDeflateRatio = 1032;
// zlib counts in uInt: feed and drain it in chunks, so that entries over 4 GB work too.
constexpr uint64_t kChunk = uint64_t(1) << 30;

}  // namespace

ZipData ZipArchive::read(const ZipEntry& e) const {
  const FileBytes& f = *f_;
  const uint8_t* src = f.data + e.data_offset;  // range checked when the directory was read
  if (e.method == 0) return ZipData{src, size_t(e.compressed_size), f.owner};
  auto bad = [&](const std::string& what) { fail(who_, f.path, "entry '" + e.name + "': " + what); };
  if (e.uncompressed_size > e.compressed_size * kMaxDeflateRatio + 64)
    bad("claims " + std::to_string(e.uncompressed_size) + " bytes from " + std::to_string(e.compressed_size) +
        " compressed, more than deflate can give");
  auto out = std::make_shared<std::vector<uint8_t>>(size_t(e.uncompressed_size));
  z_stream s{};
  if (inflateInit2(&s, -15) != Z_OK) bad("zlib failed to start");  // -15: raw deflate, as zip stores it
  uint64_t in_left = e.compressed_size, out_left = e.uncompressed_size;
  s.next_in = const_cast<Bytef*>(src);
  s.next_out = out->data();
  int rc = Z_OK;
  while (rc == Z_OK) {
    auto in_chunk = uInt(std::min(in_left, kChunk)), out_chunk = uInt(std::min(out_left, kChunk));
    s.avail_in = in_chunk;
    s.avail_out = out_chunk;
    rc = inflate(&s, Z_NO_FLUSH);
    in_left -= in_chunk - s.avail_in;
    out_left -= out_chunk - s.avail_out;
    if (rc == Z_OK && in_chunk == s.avail_in && out_chunk == s.avail_out) rc = Z_BUF_ERROR;  // no progress
  }
  std::string msg = rc == Z_STREAM_END ? "shorter than its stated size" : s.msg ? s.msg : "truncated or too long";
  inflateEnd(&s);
  if (rc != Z_STREAM_END || out_left != 0) bad("corrupt deflate data (" + msg + ")");
  uLong crc = crc32(0L, Z_NULL, 0);
  for (uint64_t done = 0; done < e.uncompressed_size;) {
    auto n = uInt(std::min(e.uncompressed_size - done, kChunk));
    crc = crc32(crc, out->data() + done, n);
    done += n;
  }
  if (uint32_t(crc) != e.crc32) bad("crc32 mismatch after inflating");
  return ZipData{out->data(), out->size(), out};
}

}  // namespace tg::nn::state
