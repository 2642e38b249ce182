#include "renderer/tensor_map.h"

#include "tg/error.h"

namespace tg {

TensorMapArg TensorMapArg::unpack(const std::vector<int64_t>& v) {
  if (v.size() != 5) throw Error("TENSOR_MAP: its arg needs 5 numbers, has " + std::to_string(v.size()));
  TensorMapArg t{v[0], v[1], v[2], v[3], v[4]};
  auto bad = [&](const std::string& why) {
    throw Error("TENSOR_MAP: number " + std::to_string(t.number) + ", " + std::to_string(t.itemsize) +
                "-byte elements, " + std::to_string(t.rows) + " x " + std::to_string(t.cols) + ", boxes of " +
                std::to_string(t.box_rows) + " rows: " + why);
  };
  if (t.number < 0 || t.number > 64) bad("expected a number 0 .. 64");
  if (t.itemsize != 1 && t.itemsize != 2 && t.itemsize != 4) bad("expected 1-, 2- or 4-byte elements");
  if (t.cols < t.width() || t.cols % t.width() != 0) bad("rows must hold whole 128-byte box rows");
  if (t.rows < 1 || t.rows > (int64_t(1) << 31)) bad("expected 1 .. 2^31 rows");
  if (t.box_rows < 1 || t.box_rows > 256) bad("expected boxes of 1 .. 256 rows");
  return t;
}

int64_t TensorMapArg::landing(int64_t dst, int64_t r, int64_t c) const {
  const int64_t e = dst + r * width() + c;
  const int64_t chunk = 16 / itemsize;  // elements of a 16-byte chunk
  return e ^ (chunk * ((e / width()) % 8));
}

}  // namespace tg
