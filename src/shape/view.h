#pragma once
// View: one strided window onto a buffer (shape, strides, offset, mask). Movement ops act on Views and
// never touch data. A View is canonical after View::create: strides of size-1 dims are 0, masks that
// cover everything are dropped, and `contiguous` is derived.
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tg/sint.h"

namespace tg {

using Mask = std::vector<std::pair<sint, sint>>;  // per dim [begin, end) of the valid region

Shape strides_for_shape(const Shape& shape);  // row-major, 0 for size-1 dims
// The one checked size of a shape: its element count, after checking that the count and the byte count
// (count * itemsize) fit in int64. Throws tg::Error naming `what`, the shape and the size otherwise, so an
// overflowing shape is refused where it is made (UOp::make, the Tensor factories) instead of wrapping to a
// small buffer. Negative dims are the callers' to reject (they name the op's own expectation).
// A symbolic dim counts at its largest value (what a buffer holding it must have room for).
int64_t checked_numel(const Shape& shape, int64_t itemsize, const char* what);
// The element count: an integer for concrete shapes (checked: overflow throws), the product expression otherwise.
sint prod(const Shape& shape);

struct View {
  Shape shape;
  Shape strides;
  sint offset = 0;
  std::optional<Mask> mask;
  bool contiguous = true;

  // Canonicalizing constructor: strides default to row-major for `shape`.
  static View create(const Shape& shape, std::optional<Shape> strides = std::nullopt, sint offset = 0,
                     std::optional<Mask> mask = std::nullopt);

  // Movement ops. Arguments are assumed valid (the Tensor layer checks them and throws tg::Error).
  View permute(const std::vector<int64_t>& axes) const;
  View expand(const Shape& new_shape) const;          // only size-1 dims grow
  View pad(const Mask& arg) const;                     // arg[i] = (before, after), both >= 0
  View shrink(const Mask& arg) const;                  // arg[i] = [begin, end)
  View flip(const std::vector<bool>& axes) const;
  std::optional<View> reshape(const Shape& new_shape) const;  // nullopt: not expressible on one view

  // This view applied on top of `inner` (inner is nearer to the buffer), as one view; nullopt if impossible.
  static std::optional<View> merge(const View& inner, const View& outer);

  bool symbolic() const;  // a size, stride, offset or mask bound is a symbolic sint
  bool operator==(const View&) const = default;
  size_t hash() const;
  std::string repr() const;  // View(shape=(4, 4), strides=(4, 1), offset=0, mask=None, contiguous=True)
};

}  // namespace tg
