#pragma once
// Helpers shared by the Tensor implementation files (not public).
#include <string>

#include "tg/tensor.h"
#include "uop/movement.h"
#include "uop/uop.h"

namespace tg {

struct Tensor::Data {
  UOpPtr uop;
  std::string device;
  bool requires_grad = false;
  std::shared_ptr<Data> grad;  // the accumulated gradient (a lazy tensor), or null
};

std::string fmt_shape(const Shape& s);  // "(2, 3)"
// Normalize a possibly negative axis; throws "<op>: axis A is out of range for shape S".
int64_t normalize_axis(const char* op, int64_t axis, const Shape& shape);
// A CONST of `dtype` on `device`, viewed (broadcast) to `shape`.
UOpPtr const_uop(double value, DType dtype, const std::string& device, const Shape& shape);

}  // namespace tg
