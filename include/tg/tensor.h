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
#include <variant>
#include <vector>

#include "tg/context.h"
#include "tg/dtype.h"
#include "tg/error.h"
#include "tg/sint.h"
#include "tg/variable.h"

namespace tg {

struct UOp;
using PadArg = std::vector<std::pair<sint, sint>>;

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
  // An integer's exact value in two's complement (a uint64 above 2^63 wraps, as its bits): a double rounds
  // integers past 2^53, and 2^64 - 1 as a double is not even a uint64.
  int64_t ivalue;
  template <class T>
    requires std::is_arithmetic_v<T>
  ConstValue(T v)  // NOLINT: implicit on purpose
      : value(static_cast<double>(v)),
        kind(std::is_same_v<T, bool> ? dtypes::bool_ : std::is_floating_point_v<T> ? dtypes::float32 : dtypes::int32),
        ivalue(std::is_floating_point_v<T> ? 0 : static_cast<int64_t>(v)) {}
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

class Tensor;

// Indexing, tinygrad's t[1:3, None, ..., idx] written t[{tg::Slice(1, 3), tg::None, tg::Ellipsis, idx}].
struct Slice {
  std::optional<int64_t> start, stop;
  int64_t step = 1;
  Slice(std::optional<int64_t> start = std::nullopt, std::optional<int64_t> stop = std::nullopt, int64_t step = 1)
      : start(start), stop(stop), step(step) {}
};
struct NoneIndex {};
struct EllipsisIndex {};
inline constexpr NoneIndex None{};
inline constexpr EllipsisIndex Ellipsis{};
struct Index;  // defined after Tensor

// A tensor's memory as another library sees it (DLPack, numpy's buffer protocol, torch.from_blob): element
// (i0, i1, ...) lives at `data` + sum(i_k * strides_k) elements. Hold `owner` as long as `data` is used.
struct MemoryView {
  void* data = nullptr;         // element (0, ..., 0); device memory unless host()
  DType dtype = dtypes::float32;
  std::vector<int64_t> shape, strides;  // strides in elements; 0 where a dim is broadcast
  std::string device;           // the tensor's device: "CPU", "HOST", "CUDA:1" ...
  // Where the memory is, as DLPack says it (each backend declares its type): kDLCPU = 1 for host memory any code may
  // read, kDLCUDA = 2, kDLOpenCL = 4 ...; device_id is which device of that type.
  int device_type = 1, device_id = 0;
  bool readonly = false;        // memory of a mapped weights file: never write through `data`
  std::shared_ptr<const void> owner;
  bool host() const { return device_type == 1; }
};

class Tensor {
 public:
  // ---- creation ----
  template <class T>
    requires std::is_arithmetic_v<T>
  explicit Tensor(const std::vector<T>& data, Shape shape = {}, TensorOptions opts = {})
      : Tensor(data.data(), dtype_of<T>(), int64_t(data.size()), std::move(shape), std::move(opts)) {}
  explicit Tensor(ConstValue scalar, TensorOptions opts = {});  // a 0-d tensor
  // A 0-d int32 tensor holding a bound variable's value (its kernels take the value as an argument); opts may
  // name the device only.
  explicit Tensor(const BoundVariable& v, TensorOptions opts = {});
  // The bound variable this tensor is (a 0-d tensor made from one, maybe reshaped or expanded), or none.
  std::optional<BoundVariable> bound_variable() const;
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
  // To another device. A device set "(CUDA, CUDA:1)" replicates the tensor on each (shard with no axis); a sharded
  // tensor to one device gathers its parts there, to another set is gathered and sharded again along its axis.
  Tensor to(const std::string& device) const;

  // ---- several devices (src/tensor/shard.cpp, lowered per device by schedule/multi.h) ----
  // Splits the tensor along `axis` into equal parts, part i on devices[i] (the size must be a multiple of the count),
  // or with no axis puts a whole copy on each. The result's device() is the set, "(CPU, CPU:1)"; every op on it
  // runs on each device, a reduce over the sharded axis all-reduces, and ops between sharded tensors need the same
  // device set. tolist/item gather to the first device.
  Tensor shard(const std::vector<std::string>& devices, std::optional<int64_t> axis = std::nullopt) const;
  Tensor& shard_(const std::vector<std::string>& devices, std::optional<int64_t> axis = std::nullopt);  // in place
  // The devices it lives on: {"CPU"}, or a sharded tensor's set in order.
  std::vector<std::string> devices() const;
  // The sharded axis: none for a tensor on one device or replicated over several.
  std::optional<int64_t> shard_axis() const;

  // ---- memory shared with other libraries ----
  // Realizes this tensor and returns its memory. Zero-copy when the result is a strided view of one buffer
  // (writes through `data` are then seen by this tensor, as with torch.from_numpy); otherwise (a padded view)
  // the memory of a contiguous copy. Throws tg::Error on devices whose memory cannot be shared (NULL, INTERP).
  MemoryView memory();
  // A tensor over memory it does not own (tinygrad's Tensor.from_blob): `data` is memory of `device` (CPU, or
  // a CUDA GPU's; HOST), element (i0, ...) at data + sum(i_k * strides_k) elements (default: row-major).
  // Kernels read it in place and assign() writes it in place. `owner` is held as long as the tensor's buffer
  // lives; without one the caller keeps `data` alive.
  static Tensor from_blob(void* data, const Shape& shape, DType dtype, const std::string& device,
                          std::shared_ptr<const void> owner = nullptr, std::optional<Shape> strides = std::nullopt);

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
  // tinygrad's sum(dtype=): accumulate in `dtype` and return it (a float16 sum in float16 is fp16 accumulation,
  // a tensor core's where the kernel is a matmul); without it sums accumulate in at least float32 / int32.
  Tensor sum(const std::vector<int64_t>& axes, bool keepdim, DType dtype) const;
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
  // tinygrad's dot/matmul(dtype=): the products summed in `dtype`, the result in it (float16: fp16 accumulation)
  Tensor dot(const Tensor& w, DType dtype) const;
  Tensor matmul(const Tensor& w, DType dtype) const { return dot(w, dtype); }

  // ---- random (src/tensor/random.cpp): counter-based threefry, the same numbers on every device ----
  static void manual_seed(uint64_t seed);
  static Tensor rand(const Shape& shape, TensorOptions opts = {});   // uniform [0, 1)
  static Tensor randn(const Shape& shape, TensorOptions opts = {});  // standard normal
  static Tensor randint(const Shape& shape, int64_t low, int64_t high, TensorOptions opts = {});  // [low, high)
  static Tensor normal(const Shape& shape, double mean = 0, double std = 1, TensorOptions opts = {});
  static Tensor uniform(const Shape& shape, double low = 0, double high = 1, TensorOptions opts = {});
  static Tensor scaled_uniform(const Shape& shape, TensorOptions opts = {});
  static Tensor glorot_uniform(const Shape& shape, TensorOptions opts = {});
  static Tensor kaiming_uniform(const Shape& shape, double a = 0.01, TensorOptions opts = {});
  static Tensor kaiming_normal(const Shape& shape, double a = 0.01, TensorOptions opts = {});
  static Tensor randperm(int64_t n, TensorOptions opts = {});
  static Tensor linspace(double start, double stop, int64_t steps, TensorOptions opts = {});
  Tensor multinomial(int64_t num_samples = 1, bool replacement = false) const;
  Tensor dropout(double p = 0.5) const;  // only under TRAINING=1 (tg::Tensor::training)
  // tinygrad's Tensor.training: the TRAINING knob itself (env TRAINING=1, tg::Context({{"TRAINING", 1}}) or
  // `Tensor::training = true` all set the same value).
  static ContextVar& training;

  // ---- more movement and indexing (src/tensor/movement_composed.cpp, src/tensor/indexing.cpp) ----
  Tensor squeeze() const;
  Tensor squeeze(int64_t dim) const;
  Tensor unsqueeze(int64_t dim) const;
  Tensor flatten(int64_t start_dim, int64_t end_dim) const;
  Tensor unflatten(int64_t dim, const Shape& sizes) const;
  Tensor repeat(const Shape& repeats) const;
  static Tensor cat(const std::vector<Tensor>& tensors, int64_t dim = 0);
  static Tensor stack(const std::vector<Tensor>& tensors, int64_t dim = 0);
  std::vector<Tensor> split(int64_t size, int64_t dim = 0) const;
  std::vector<Tensor> split(const std::vector<int64_t>& sizes, int64_t dim = 0) const;
  std::vector<Tensor> chunk(int64_t chunks, int64_t dim = 0) const;
  // mode: "constant" (value), "reflect", "replicate", "circular".
  Tensor pad(const PadArg& padding, const std::string& mode, ConstValue value = 0) const;
  Tensor operator[](const std::vector<Index>& idx) const;
  Tensor operator[](int64_t i) const;
  Tensor gather(int64_t dim, const Tensor& index) const;
  // reduce: "" (replace), "add" or "multiply".
  Tensor scatter(int64_t dim, const Tensor& index, const Tensor& src, const std::string& reduce = "") const;
  Tensor scatter(int64_t dim, const Tensor& index, ConstValue src, const std::string& reduce = "") const;
  // reduce: "sum", "prod", "mean", "amax" or "amin" of the sources landing on each position, with the tensor's
  // own value among them when include_self (torch's scatter_reduce).
  Tensor scatter_reduce(int64_t dim, const Tensor& index, const Tensor& src, const std::string& reduce,
                        bool include_self = true) const;
  // The elements where mask (broadcast to this shape) is true, flattened (the count is read back to size it).
  Tensor masked_select(const Tensor& mask) const;
  Tensor masked_fill(const Tensor& mask, ConstValue value) const;
  Tensor one_hot(int64_t num_classes = -1) const;
  Tensor tril(int64_t diagonal = 0) const;
  Tensor triu(int64_t diagonal = 0) const;
  Tensor roll(const std::vector<int64_t>& shifts, const std::vector<int64_t>& dims) const;
  Tensor roll(int64_t shift, int64_t dim) const;
  // The diagonal (i, i + offset) of the dims dim1 and dim2, which move to a new last dim (torch's diagonal;
  // tinygrad's no-argument diagonal of a square matrix is the default).
  Tensor diagonal(int64_t offset = 0, int64_t dim1 = 0, int64_t dim2 = 1) const;
  // Windows of `size` elements every `step` along `dim`: dim becomes the window count, a new last dim the window.
  Tensor unfold(int64_t dim, int64_t size, int64_t step) const;

  // ---- more elementwise (src/tensor/math.cpp, src/tensor/activations.cpp) ----
  Tensor abs() const;
  Tensor sign() const;
  Tensor square() const;
  Tensor rsqrt() const;
  Tensor cos() const;
  Tensor tan() const;
  Tensor asin() const;
  Tensor acos() const;
  Tensor atan() const;
  Tensor sinh() const;
  Tensor cosh() const;
  Tensor asinh() const;
  Tensor acosh() const;
  Tensor atanh() const;
  Tensor erf() const;
  Tensor floor() const;
  Tensor ceil() const;
  Tensor round() const;  // half to even, as tinygrad and torch
  Tensor isnan() const;
  Tensor isinf(bool detect_positive = true, bool detect_negative = true) const;
  Tensor pow(const Tensor& exponent) const;
  Tensor pow(ConstValue exponent) const;
  Tensor mod(const Tensor& y) const;  // Python semantics: the sign of the divisor
  Tensor mod(ConstValue y) const;
  Tensor idiv(const Tensor& y) const;  // integer division, truncating toward zero (tinygrad's idiv)
  Tensor idiv(ConstValue y) const;
  Tensor clamp(std::optional<double> min_ = std::nullopt, std::optional<double> max_ = std::nullopt) const;
  Tensor clip(std::optional<double> min_ = std::nullopt, std::optional<double> max_ = std::nullopt) const;
  Tensor lerp(const Tensor& end, const Tensor& weight) const;
  Tensor lerp(const Tensor& end, ConstValue weight) const;
  Tensor bitwise_and(const Tensor& y) const;
  Tensor bitwise_or(const Tensor& y) const;
  Tensor bitwise_xor(const Tensor& y) const;
  Tensor bitwise_and(ConstValue y) const;
  Tensor bitwise_or(ConstValue y) const;
  Tensor bitwise_xor(ConstValue y) const;
  Tensor bitwise_not() const;
  // int32 tensors: acc + the sum over k < 4 of byte k of self (read unsigned) times byte k of b (signed), wrapping;
  // the building block of quantized matmuls (vpdpbusd on CPUs with VNNI, dp4a on CUDA). Broadcasts like an ADD.
  Tensor dot4(const Tensor& b, const Tensor& acc) const;
  Tensor lshift(int64_t bits) const;
  Tensor rshift(int64_t bits) const;
  Tensor sigmoid() const;
  Tensor tanh() const;
  Tensor gelu() const;
  Tensor quick_gelu() const;
  Tensor silu() const;
  Tensor swish() const { return silu(); }
  Tensor elu(double alpha = 1.0) const;
  Tensor celu(double alpha = 1.0) const;
  Tensor selu() const;
  Tensor leaky_relu(double neg_slope = 0.01) const;
  Tensor softplus(double beta = 1.0) const;
  Tensor mish() const;
  Tensor hardswish() const;
  Tensor hardsigmoid() const;
  Tensor hardtanh(double min_val = -1, double max_val = 1) const;
  Tensor relu6() const;
  Tensor softsign() const;
  Tensor logsigmoid() const;

  // ---- more reductions (src/tensor/reduce_composed.cpp, src/tensor/sort.cpp) ----
  Tensor prod() const;
  Tensor prod(int64_t axis, bool keepdim = false) const;
  Tensor any() const;
  Tensor any(int64_t axis, bool keepdim = false) const;
  Tensor all() const;
  Tensor all(int64_t axis, bool keepdim = false) const;
  Tensor var(std::optional<int64_t> axis = std::nullopt, bool keepdim = false, double correction = 1) const;
  Tensor std(std::optional<int64_t> axis = std::nullopt, bool keepdim = false, double correction = 1) const;
  Tensor argmax(std::optional<int64_t> axis = std::nullopt, bool keepdim = false) const;
  Tensor argmin(std::optional<int64_t> axis = std::nullopt, bool keepdim = false) const;
  Tensor cumsum(int64_t axis = 0) const;
  Tensor cumprod(int64_t axis) const;
  Tensor cummax(int64_t axis = 0) const;  // the running max's values (tinygrad's; torch's .values)
  Tensor logcumsumexp(int64_t axis = 0) const;
  Tensor logsumexp(int64_t axis, bool keepdim = false) const;
  Tensor softmax(int64_t axis = -1) const;
  Tensor log_softmax(int64_t axis = -1) const;
  std::pair<Tensor, Tensor> topk(int64_t k, int64_t dim = -1, bool largest = true, bool sorted = true) const;
  std::pair<Tensor, Tensor> sort(int64_t dim = -1, bool descending = false) const;

  // ---- nn functional (src/tensor/nn_conv.cpp, src/tensor/nn_functional.cpp) ----
  Tensor linear(const Tensor& weight, const std::optional<Tensor>& bias = std::nullopt) const;  // x @ w.T + b
  // Any number of spatial dims; padding is per spatial dim (symmetric) or, with 2*dims entries, per side.
  Tensor conv2d(const Tensor& weight, const std::optional<Tensor>& bias = std::nullopt, int64_t groups = 1,
                std::vector<int64_t> stride = {1}, std::vector<int64_t> dilation = {1},
                std::vector<int64_t> padding = {0}) const;
  Tensor conv_transpose2d(const Tensor& weight, const std::optional<Tensor>& bias = std::nullopt, int64_t groups = 1,
                          std::vector<int64_t> stride = {1}, std::vector<int64_t> dilation = {1},
                          std::vector<int64_t> padding = {0}, std::vector<int64_t> output_padding = {0}) const;
  // Pools over the last kernel_size.size() dims (any number: avg_pool2d with a 3-entry kernel is a 3-D pool).
  // ceil_mode: the last, partial window counts too (torch's rule: it must start inside the input or the left
  // padding); count_include_pad=false: padding is left out of each window's average.
  Tensor max_pool2d(std::vector<int64_t> kernel_size = {2, 2}, std::vector<int64_t> stride = {},
                    std::vector<int64_t> dilation = {1}, std::vector<int64_t> padding = {0},
                    bool ceil_mode = false) const;
  // max_pool2d and, per output, the flat index of its max within the spatial dims of the input (int32; the
  // first max in window order on ties), as torch's return_indices=True.
  std::pair<Tensor, Tensor> max_pool2d_with_indices(std::vector<int64_t> kernel_size = {2, 2},
                                                    std::vector<int64_t> stride = {},
                                                    std::vector<int64_t> dilation = {1},
                                                    std::vector<int64_t> padding = {0}, bool ceil_mode = false) const;
  Tensor avg_pool2d(std::vector<int64_t> kernel_size = {2, 2}, std::vector<int64_t> stride = {},
                    std::vector<int64_t> dilation = {1}, std::vector<int64_t> padding = {0}, bool ceil_mode = false,
                    bool count_include_pad = true) const;
  // The inverse of max_pool2d_with_indices: each value goes to its index in a zero tensor of the unpooled size
  // (output_size: its spatial dims, or the whole shape; default from the pool's arithmetic).
  Tensor max_unpool2d(const Tensor& indices, std::vector<int64_t> kernel_size = {2, 2},
                      std::vector<int64_t> stride = {}, std::vector<int64_t> dilation = {1},
                      std::vector<int64_t> padding = {0}, const Shape& output_size = {}) const;
  Tensor interpolate(const Shape& size, const std::string& mode = "linear", bool align_corners = false) const;
  Tensor layernorm(int64_t axis = -1, double eps = 1e-5) const;
  Tensor batchnorm(const std::optional<Tensor>& weight, const std::optional<Tensor>& bias, const Tensor& mean,
                   const Tensor& invstd, int64_t axis = 1) const;
  Tensor scaled_dot_product_attention(const Tensor& key, const Tensor& value,
                                      const std::optional<Tensor>& attn_mask = std::nullopt,
                                      bool is_causal = false) const;
  // Losses take tinygrad's reduction: "mean" (the default), "sum" or "none" (one loss per element or sample).
  Tensor sparse_categorical_crossentropy(const Tensor& Y, int64_t ignore_index = -1, double label_smoothing = 0.0,
                                         const std::string& reduction = "mean") const;
  Tensor cross_entropy(const Tensor& Y, double label_smoothing = 0.0,  // Y: class indices or probabilities
                       const std::string& reduction = "mean") const;
  Tensor binary_crossentropy(const Tensor& Y, const std::string& reduction = "mean") const;
  Tensor binary_crossentropy_logits(const Tensor& Y, const std::string& reduction = "mean") const;
  // pos_weight scales the loss of the positive targets (broadcast against Y, e.g. one weight per class).
  Tensor binary_crossentropy_logits(const Tensor& Y, const Tensor& pos_weight,
                                    const std::string& reduction = "mean") const;
  static Tensor einsum(const std::string& formula, const std::vector<Tensor>& operands);

  // ---- dtypes (src/tensor/dtype_ops.cpp) ----
  Tensor bitcast(DType dtype) const;
  Tensor half() const { return cast(dtypes::float16); }
  Tensor float_() const { return cast(dtypes::float32); }  // tinygrad's .float(): a C++ keyword
  Tensor double_() const { return cast(dtypes::float64); }
  Tensor int_() const { return cast(dtypes::int32); }
  Tensor long_() const { return cast(dtypes::int64); }
  Tensor bool_() const { return cast(dtypes::bool_); }

  // ---- autograd (src/tensor/autograd.cpp) ----
  bool requires_grad() const;
  Tensor& requires_grad_(bool on = true);
  // Accumulates d(this)/d(leaf) into every leaf with requires_grad. this must be a scalar unless a
  // gradient is given. Gradients are lazy tensors.
  Tensor& backward(const std::optional<Tensor>& gradient = std::nullopt);
  Tensor grad() const;          // throws tg::Error when there is none
  bool has_grad() const;
  void set_grad(const std::optional<Tensor>& g);  // nullopt clears it (zero_grad)
  Tensor detach() const;
  // Replace this tensor's value by x's (same shape and dtype; becomes an ASSIGN into its buffer).
  Tensor& assign(const Tensor& x);
  // d(this)/d(each target), without touching .grad (tinygrad's Tensor.gradient).
  std::vector<Tensor> gradient(const std::vector<Tensor>& targets,
                               const std::optional<Tensor>& gradient = std::nullopt) const;

  // ---- internals (for the engine and tests) ----
  explicit Tensor(std::shared_ptr<const UOp> uop, std::string device);
  const std::shared_ptr<const UOp>& uop() const;
  static Tensor broadcast_scalar(const Tensor& like, ConstValue v);  // a const tensor promoted against `like`

 private:
  struct Data;
  std::shared_ptr<Data> d_;
  Tensor(const void* data, DType dtype, int64_t count, Shape shape, TensorOptions opts);
  Tensor reduce(const char* name, int op, const std::vector<int64_t>& axes, bool keepdim) const;
  Tensor dot_as(const Tensor& w, std::optional<DType> acc) const;  // dot, summing in acc where given
  void copy_out(DType as, void* out, size_t bytes) const;
  void check_item() const;
};

struct Index {
  std::variant<int64_t, Slice, NoneIndex, EllipsisIndex, Tensor> v;
  Index(int64_t i) : v(i) {}  // NOLINT: implicit on purpose, as in t[{1, tg::Slice(0, 2)}]
  Index(int i) : v(int64_t(i)) {}  // NOLINT
  Index(Slice s) : v(s) {}         // NOLINT
  Index(NoneIndex n) : v(n) {}     // NOLINT
  Index(EllipsisIndex e) : v(e) {}  // NOLINT
  Index(Tensor t) : v(std::move(t)) {}  // NOLINT
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
// % is mod (Python's sign rule), & | ^ are bitwise (ints and bools), as tinygrad's __mod__, __and__ ...
inline Tensor operator%(const Tensor& a, const Tensor& b) { return a.mod(b); }
inline Tensor operator&(const Tensor& a, const Tensor& b) { return a.bitwise_and(b); }
inline Tensor operator|(const Tensor& a, const Tensor& b) { return a.bitwise_or(b); }
inline Tensor operator^(const Tensor& a, const Tensor& b) { return a.bitwise_xor(b); }
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
TG_SCALAR_OPERATOR(%)
TG_SCALAR_OPERATOR(&)
TG_SCALAR_OPERATOR(|)
TG_SCALAR_OPERATOR(^)
#undef TG_SCALAR_OPERATOR

// Device helpers visible to users.
// DEV from the environment if set, else the best available: "CUDA" when a GPU (and NVRTC) is there, else "CPU".
std::string default_device();
// The canonical spelling of a device name, as tinygrad's Device.canonicalize: "cpu" -> "CPU", "cuda:0" -> "CUDA",
// "cuda:1" -> "CUDA:1", "(cpu:1, cpu:2)" -> "(CPU:1, CPU:2)". A tg::Error for an unknown device, and for an
// instance past the ones this machine has.
std::string canonical_device(const std::string& name);
// The instruction set the CPU and LLVM devices compile kernels for (CPU_ISA, default native), in one line:
// "avx2 (x86-64-v3: 32-byte vectors, FMA)". A tg::Error for a CPU_ISA this CPU cannot run.
std::string cpu_isa_description();
// The device whose memory DLPack places at (device_type, device_id): "CPU" for kDLCPU, "CUDA:1" for (kDLCUDA, 1) ...,
// as each backend declares its memory; a tg::Error for memory no device of this build can use.
std::string device_for_memory(int device_type, int device_id);
// Its inverse: where a device's buffers are in DLPack's terms, (device_type, device_id), or none for memory nobody
// else may touch (NULL, INTERP).
std::optional<std::pair<int, int>> memory_of_device(const std::string& device);

}  // namespace tg
