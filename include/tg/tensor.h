#pragma once
// tg::Tensor: a lazy tensor, tinygrad's Tensor in C++. A Tensor is a cheap shared handle (copies refer to
// the same tensor, as Python references do): operations build a graph and return at once; realize(),
// tolist(), item() run it. Bad input throws tg::Error naming the op and the shapes.
#include <concepts>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "tg/dtype.h"
#include "tg/error.h"

namespace tg {

struct UOp;
using Shape = std::vector<int64_t>;
using PadArg = std::vector<std::pair<int64_t, int64_t>>;

// Options of creation functions: Tensor::zeros({2, 3}, {.dtype = tg::dtypes::int32, .device = "CPU"}).
struct TensorOptions {
  std::optional<DType> dtype;  // default: float for float data, int32 for ints
  std::string device;          // default: tg::default_device()
  bool requires_grad = false;
};

// A C++ number given where a tensor is expected. Remembers whether it was written as a float, an integer
// or a bool, because that decides promotion: int8 * 300 stays int8, int32 * 1.5 becomes float.
struct ConstValue {
  double value;
  DType kind;  // float32, int32 or bool (the category only)
  template <class T>
    requires std::is_arithmetic_v<T>
  ConstValue(T v)  // NOLINT: implicit on purpose
      : value(static_cast<double>(v)),
        kind(std::is_same_v<T, bool> ? dtypes::bool_ : std::is_floating_point_v<T> ? dtypes::float32 : dtypes::int32) {}
};

// The dtype matching a C++ element type.
template <class T> constexpr DType dtype_of() {
  if constexpr (std::is_same_v<T, bool>) return dtypes::bool_;
  else if constexpr (std::is_same_v<T, float>) return dtypes::float32;
  else if constexpr (std::is_same_v<T, double>) return dtypes::float64;
  else if constexpr (std::is_same_v<T, int8_t>) return dtypes::int8;
  else if constexpr (std::is_same_v<T, uint8_t>) return dtypes::uint8;
  else if constexpr (std::is_same_v<T, int16_t>) return dtypes::int16;
  else if constexpr (std::is_same_v<T, uint16_t>) return dtypes::uint16;
  else if constexpr (std::is_same_v<T, int32_t>) return dtypes::int32;
  else if constexpr (std::is_same_v<T, uint32_t>) return dtypes::uint32;
  else if constexpr (std::is_same_v<T, int64_t> || std::is_same_v<T, long long>) return dtypes::int64;
  else if constexpr (std::is_same_v<T, uint64_t> || std::is_same_v<T, unsigned long long>) return dtypes::uint64;
  else static_assert(sizeof(T) == 0, "tg::dtype_of: unsupported element type");
}

class Tensor {
 public:
  // ---- creation ----
  template <class T>
    requires std::is_arithmetic_v<T>
  explicit Tensor(const std::vector<T>& data, Shape shape = {}, TensorOptions opts = {})
      : Tensor(data.data(), dtype_of<T>(), int64_t(data.size()), std::move(shape), std::move(opts)) {}
  explicit Tensor(ConstValue scalar, TensorOptions opts = {});  // a 0-d tensor
  static Tensor empty(const Shape& shape, TensorOptions opts = {});
  static Tensor zeros(const Shape& shape, TensorOptions opts = {});
  static Tensor ones(const Shape& shape, TensorOptions opts = {});
  static Tensor full(const Shape& shape, ConstValue fill, TensorOptions opts = {});
  static Tensor arange(int64_t stop, TensorOptions opts = {});
  static Tensor arange(double start, double stop, double step = 1, TensorOptions opts = {});
  static Tensor eye(int64_t n, TensorOptions opts = {});
  Tensor full_like(ConstValue fill) const;
  Tensor zeros_like() const;
  Tensor ones_like() const;

  // ---- properties ----
  Shape shape() const;
  DType dtype() const;
  const std::string& device() const;
  int64_t ndim() const { return int64_t(shape().size()); }
  int64_t numel() const;
  int64_t element_size() const { return dtype().itemsize(); }
  std::string repr() const;  // <Tensor <UOp CPU (4, 4) float ...> on CPU with grad None>

  // ---- running ----
  Tensor& realize();
  static void realize_all(std::vector<Tensor> tensors);  // one schedule for several tensors
  template <class T> std::vector<T> tolist() const {  // flat, row-major, converted to T
    std::vector<T> out(static_cast<size_t>(numel()));
    copy_out(dtype_of<T>(), out.data(), out.size() * sizeof(T));
    return out;
  }
  template <class T> T item() const {
    check_item();
    return tolist<T>().at(0);
  }
  Tensor contiguous() const;
  Tensor to(const std::string& device) const;

  // ---- elementwise ----
  Tensor neg() const;
  Tensor exp() const;
  Tensor log() const;
  Tensor exp2() const;
  Tensor log2() const;
  Tensor sqrt() const;
  Tensor sin() const;
  Tensor reciprocal() const;
  Tensor relu() const;
  Tensor trunc() const;
  Tensor add(const Tensor& y) const;
  Tensor sub(const Tensor& y) const;
  Tensor mul(const Tensor& y) const;
  Tensor div(const Tensor& y) const;  // true division: ints become float
  Tensor maximum(const Tensor& y) const;
  Tensor minimum(const Tensor& y) const;
  Tensor maximum(ConstValue y) const;
  Tensor minimum(ConstValue y) const;
  Tensor where(const Tensor& x, const Tensor& y) const;  // self is the condition
  Tensor where(const Tensor& x, ConstValue y) const;
  Tensor where(ConstValue x, const Tensor& y) const;
  Tensor where(ConstValue x, ConstValue y) const;
  Tensor cast(DType dtype) const;
  Tensor logical_not() const;
  // Comparisons return bool tensors.
  Tensor lt(const Tensor& y) const;
  Tensor gt(const Tensor& y) const;
  Tensor le(const Tensor& y) const;
  Tensor ge(const Tensor& y) const;
  Tensor eq(const Tensor& y) const;
  Tensor ne(const Tensor& y) const;

  // ---- movement (views: no data moves) ----
  Tensor reshape(const Shape& shape) const;  // one dim may be -1
  Tensor permute(const std::vector<int64_t>& order) const;
  Tensor expand(const Shape& shape) const;  // -1 keeps a dim
  Tensor pad(const PadArg& padding) const;  // per dim (before, after), zeros
  Tensor shrink(const PadArg& bounds) const;  // per dim [begin, end)
  Tensor flip(int64_t axis) const;
  Tensor flip(const std::vector<int64_t>& axes) const;
  Tensor transpose(int64_t dim0 = 1, int64_t dim1 = 0) const;
  Tensor T() const { return transpose(); }
  Tensor flatten(int64_t start_dim = 0) const;

  // ---- reductions (axis may be negative; none given: all axes) ----
  Tensor sum() const;
  Tensor sum(int64_t axis, bool keepdim = false) const;
  Tensor sum(const std::vector<int64_t>& axes, bool keepdim = false) const;
  Tensor max() const;
  Tensor max(int64_t axis, bool keepdim = false) const;
  Tensor max(const std::vector<int64_t>& axes, bool keepdim = false) const;
  Tensor min() const;
  Tensor min(int64_t axis, bool keepdim = false) const;
  Tensor min(const std::vector<int64_t>& axes, bool keepdim = false) const;
  Tensor mean() const;
  Tensor mean(int64_t axis, bool keepdim = false) const;
  Tensor mean(const std::vector<int64_t>& axes, bool keepdim = false) const;

  // ---- linear algebra ----
  Tensor dot(const Tensor& w) const;
  Tensor matmul(const Tensor& w) const { return dot(w); }

  // ---- internals (for the engine and tests) ----
  explicit Tensor(std::shared_ptr<const UOp> uop, std::string device);
  const std::shared_ptr<const UOp>& uop() const;
  static Tensor broadcast_scalar(const Tensor& like, ConstValue v);  // a const tensor promoted against `like`

 private:
  struct Data;
  std::shared_ptr<Data> d_;
  Tensor(const void* data, DType dtype, int64_t count, Shape shape, TensorOptions opts);
  Tensor reduce(const char* name, int op, const std::vector<int64_t>& axes, bool keepdim) const;
  void copy_out(DType as, void* out, size_t bytes) const;
  void check_item() const;
};

// Operators as in tinygrad; a C++ number on either side becomes a constant of a matching dtype.
Tensor operator+(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& a, const Tensor& b);
Tensor operator*(const Tensor& a, const Tensor& b);
Tensor operator/(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& a);
Tensor operator<(const Tensor& a, const Tensor& b);
Tensor operator>(const Tensor& a, const Tensor& b);
Tensor operator<=(const Tensor& a, const Tensor& b);
Tensor operator>=(const Tensor& a, const Tensor& b);
Tensor operator==(const Tensor& a, const Tensor& b);
Tensor operator!=(const Tensor& a, const Tensor& b);
#define TG_SCALAR_OPERATOR(OP)                                                                        \
  inline Tensor operator OP(const Tensor& a, ConstValue b) { return a OP Tensor::broadcast_scalar(a, b); } \
  inline Tensor operator OP(ConstValue a, const Tensor& b) { return Tensor::broadcast_scalar(b, a) OP b; }
TG_SCALAR_OPERATOR(+)
TG_SCALAR_OPERATOR(-)
TG_SCALAR_OPERATOR(*)
TG_SCALAR_OPERATOR(/)
TG_SCALAR_OPERATOR(<)
TG_SCALAR_OPERATOR(>)
TG_SCALAR_OPERATOR(<=)
TG_SCALAR_OPERATOR(>=)
TG_SCALAR_OPERATOR(==)
TG_SCALAR_OPERATOR(!=)
#undef TG_SCALAR_OPERATOR

// Device helpers visible to users.
std::string default_device();

}  // namespace tg
