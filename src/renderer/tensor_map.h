#pragma once
// Bulk tensor copies (Hopper's TMA) and the tensor maps they read through (codegen/program.h: TENSOR_MAP,
// TMA_LOAD). A tensor map describes a buffer as a row-major matrix of `rows` rows of `cols` elements, copied in
// boxes of `box_rows` rows of `width` elements (128 bytes: one row of the 128-byte swizzle). A TMA_LOAD copies the
// box whose first element is (row, col) into shared memory, its rows `width` elements apart, each 16-byte chunk
// moved within its row by the swizzle (renderer/tensor_core.h: s(e) = e ^ 8 ((e / 64) % 8) for 16-bit elements),
// so WGMMA reads it as the swizzled layout the staging planned; elements outside the matrix read as zeros.
//
// The CUDA runtime encodes one map per TENSOR_MAP node from the buffer's address when it launches the kernel
// (cuTensorMapEncodeTiled), and passes it by value (a __grid_constant__ parameter after the DEFINE_VARs); the
// interpreter copies the box itself.
#include <cstdint>
#include <vector>

#include "uop/uop.h"

namespace tg {

struct TensorMapArg {
  int64_t number = 0;    // its position among the kernel's tensor maps (parameters after the DEFINE_VARs)
  int64_t itemsize = 2;  // bytes of an element
  int64_t cols = 0;      // elements per row of the matrix (the buffer's row stride), a multiple of `width`
  int64_t rows = 0;      // rows of the matrix (the last one the kernel's view can reach, plus one)
  int64_t box_rows = 0;  // rows of a box, 1 .. 256
  int64_t width() const { return 128 / itemsize; }     // elements of a box row
  int64_t box_bytes() const { return 128 * box_rows; }  // what one TMA_LOAD writes
  // The shared-memory element a box's element (r, c) lands at, the box copied to element `dst` (1024-byte
  // aligned): the 128-byte swizzle of dst + r * width + c.
  int64_t landing(int64_t dst, int64_t r, int64_t c) const;
  std::vector<int64_t> pack() const { return {number, itemsize, cols, rows, box_rows}; }
  static TensorMapArg unpack(const std::vector<int64_t>& v);  // throws tg::Error on a malformed arg
  static TensorMapArg of(const UOp& tensor_map) { return unpack(tensor_map.get<std::vector<int64_t>>()); }
};

}  // namespace tg
