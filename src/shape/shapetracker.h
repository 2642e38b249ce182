#pragma once
// ShapeTracker: a stack of Views. views.front() is nearest to the buffer, views.back() gives the shape.
// Movement ops act on the last View; when a reshape cannot be expressed on it, a new View is stacked.
#include <functional>
#include <vector>

#include "shape/view.h"

namespace tg {

// `s` with every BIND in its expression replaced by what `replace` returns for it (nullptr keeps it).
sint rebind(const sint& s, const std::function<std::shared_ptr<const UOp>(const UOp& bind)>& replace);

struct ShapeTracker {
  std::vector<View> views;

  static ShapeTracker from_shape(const Shape& shape);

  const Shape& shape() const { return views.back().shape; }
  sint size() const;              // numel of shape() (an expression when symbolic)
  bool contiguous() const;        // one view, contiguous, no offset, no mask: index == linear position
  bool has_mask() const;          // any view has a mask
  // The number of elements of the buffer behind it that can be touched (max index + 1), 0 if none.
  int64_t real_size() const;
  // The views below the last one move aligned runs of n elements whole: n consecutive indices of the last view
  // starting at a multiple of n reach n consecutive elements of the buffer, starting at a multiple of n, all valid
  // or all masked. (Each lower view's innermost dim contiguous and a multiple of n long; its other strides, its
  // offset and its innermost mask bounds multiples of n.) True with one view.
  bool lower_views_keep_runs(int64_t n) const;

  ShapeTracker reshape(const Shape& new_shape) const;
  ShapeTracker permute(const std::vector<int64_t>& axes) const;
  ShapeTracker expand(const Shape& new_shape) const;
  ShapeTracker pad(const Mask& arg) const;
  ShapeTracker shrink(const Mask& arg) const;
  ShapeTracker flip(const std::vector<bool>& axes) const;

  // `st` applied on top of this tracker (this is nearer to the buffer); merged views where exact.
  ShapeTracker operator+(const ShapeTracker& st) const;
  ShapeTracker simplify() const;  // merge adjacent views where the result is exactly representable
  bool symbolic() const;          // some view has a symbolic size, stride, offset or mask bound
  // Every bound variable (BIND) in the sizes replaced by the variable itself (DEFINE_VAR), each BIND handed to
  // on_bind: a kernel is compiled for the variables' ranges, and the values go with its schedule item.
  ShapeTracker unbind(const std::function<void(const UOp& bind)>& on_bind) const;
  // Every BIND replaced by what `replace` returns for it (nullptr keeps it): new values for the same variables.
  ShapeTracker rebind(const std::function<std::shared_ptr<const UOp>(const UOp& bind)>& replace) const;

  bool operator==(const ShapeTracker&) const = default;
  size_t hash() const;
  std::string repr() const;  // ShapeTracker(views=(View(...),))
};

}  // namespace tg
