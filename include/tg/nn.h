#pragma once
// tg::nn: tinygrad's nn, optim, state-dict and datasets front end.
//
// Layers are plain structs with public Tensor members, built like tinygrad's and called with operator().
// A struct names its tensors (and nested layers) once with TG_PARAMETERS; that is all get_parameters,
// get_state_dict and load_state_dict need, for library layers and user models alike:
//
//   struct Net {
//     tg::nn::Conv2d c1{1, 32, 5};
//     std::vector<tg::nn::Linear> layers{{576, 64}, {64, 10}};
//     TG_PARAMETERS(c1, layers)           // state dict names: c1.weight, c1.bias, layers.0.weight, ...
//     tg::Tensor operator()(const tg::Tensor& x) { ... }
//   };
//   Net net;
//   tg::nn::optim::Adam opt(tg::nn::get_parameters(net));
//
// A member listed in TG_PARAMETERS may be a Tensor, a std::optional<Tensor> (absent: skipped, as tinygrad's
// None), a struct with TG_PARAMETERS, or a std::vector / std::array / std::optional / std::map<std::string, _>
// of those.
#include <array>
#include <cstdint>
#include <initializer_list>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "tg/block_weight.h"
#include "tg/error.h"
#include "tg/tensor.h"

namespace tg::nn {

// ---- parameter discovery ----

namespace detail {
// "c1, c2 ,bn" -> {"c1", "c2", "bn"}: the member list as TG_PARAMETERS stringified it.
std::vector<std::string_view> split_names(std::string_view names);

template <class F, class... Ts> void visit_fields(std::string_view names, F& f, Ts&... members) {
  std::vector<std::string_view> n = split_names(names);
  if (n.size() != sizeof...(Ts))
    throw Error("TG_PARAMETERS(" + std::string(names) + "): could not split the list into " +
                std::to_string(sizeof...(Ts)) + " member names (write plain member names separated by commas)");
  size_t i = 0;
  (f(n[i++], members), ...);  // a comma fold runs left to right: declaration order
}
}  // namespace detail

// Inside a struct: TG_PARAMETERS(weight, bias) generates visit(f), which calls f("weight", weight),
// f("bias", bias). The names are the member expressions themselves, so they are written once.
#define TG_PARAMETERS(...)                                                  \
  template <class TgVisitFn> void visit(TgVisitFn&& tg_visit_fn) {          \
    ::tg::nn::detail::visit_fields(#__VA_ARGS__, tg_visit_fn, __VA_ARGS__); \
  }

namespace detail {
struct AnyMemberFn {  // only named in Visitable's requires-expression, never called
  template <class T> void operator()(std::string_view, T&) const;
};
template <class T> concept Visitable = requires(T& t, AnyMemberFn& f) { t.visit(f); };
template <class> inline constexpr bool kAlwaysFalse = false;

inline std::string join(const std::string& prefix, std::string_view name) {
  return prefix.empty() ? std::string(name) : prefix + "." + std::string(name);
}

// walk(prefix, member, f) calls f(dotted_name, tensor) for every Tensor under member. All overloads are
// declared before any is defined so that the recursive calls see each other.
template <class F> void walk(const std::string& p, Tensor& t, F& f);
template <class T, class F> void walk(const std::string& p, std::optional<T>& o, F& f);
template <class T, class A, class F> void walk(const std::string& p, std::vector<T, A>& v, F& f);
template <class T, size_t N, class F> void walk(const std::string& p, std::array<T, N>& v, F& f);
template <class V, class C, class A, class F> void walk(const std::string& p, std::map<std::string, V, C, A>& m, F& f);
template <Visitable T, class F> void walk(const std::string& p, T& m, F& f);
template <class T, class F> void walk(const std::string& p, T& m, F& f);

template <class F> void walk(const std::string& p, Tensor& t, F& f) { f(p, t); }
template <class T, class F> void walk(const std::string& p, std::optional<T>& o, F& f) {
  if (o) walk(p, *o, f);
}
template <class T, class A, class F> void walk(const std::string& p, std::vector<T, A>& v, F& f) {
  for (size_t i = 0; i < v.size(); i++) walk(join(p, std::to_string(i)), v[i], f);
}
template <class T, size_t N, class F> void walk(const std::string& p, std::array<T, N>& v, F& f) {
  for (size_t i = 0; i < N; i++) walk(join(p, std::to_string(i)), v[i], f);
}
template <class V, class C, class A, class F> void walk(const std::string& p, std::map<std::string, V, C, A>& m, F& f) {
  for (auto& [k, v] : m) walk(join(p, k), v, f);
}
template <Visitable T, class F> void walk(const std::string& p, T& m, F& f) {
  m.visit([&](std::string_view name, auto& member) { walk(join(p, name), member, f); });
}
template <class T, class F> void walk(const std::string& p, T& m, F& f) {
  static_assert(kAlwaysFalse<T>,
                "TG_PARAMETERS: a listed member must be a Tensor, a struct with TG_PARAMETERS, or a std::optional, "
                "std::vector, std::array or std::map<std::string, _> of those");
}

// The non-template part of load_state_dict (src/nn/state_dict.cpp).
std::vector<Tensor> load_into(std::vector<std::pair<std::string, Tensor>>& targets,
                              const std::map<std::string, Tensor>& state_dict, bool strict);
}  // namespace detail

// f(name, tensor) for every tensor of the model, in declaration order, names dotted ("c1.weight").
template <class M, class F> void visit_state(M& model, F&& f) { detail::walk(std::string(), model, f); }

// Every tensor of the model, in declaration order: weights, and buffers such as BatchNorm's running
// statistics (an optimizer realizes those with each step but updates only tensors that got a gradient).
template <class M> std::vector<Tensor> get_parameters(M& model) {
  std::vector<Tensor> out;
  visit_state(model, [&](const std::string&, Tensor& t) { out.push_back(t); });
  return out;
}

// name -> tensor. The tensors are handles: assigning to one changes the model's.
template <class M> std::map<std::string, Tensor> get_state_dict(M& model) {
  std::map<std::string, Tensor> out;
  visit_state(model, [&](const std::string& name, Tensor& t) {
    if (!out.emplace(name, t).second) throw Error("get_state_dict: two tensors are named '" + name + "'");
  });
  return out;
}

// Assigns state_dict[name] to each of the model's tensors (cast to its dtype, copied to its device) and
// realizes them; returns the loaded tensors. A shape mismatch throws tg::Error naming the tensor and both
// shapes ((1,) and () are interchangeable, as in tinygrad). strict: a tensor of the model missing from
// state_dict throws; otherwise it keeps its value. Extra entries in state_dict are ignored (DEBUG>=1 lists
// them).
template <class M>
std::vector<Tensor> load_state_dict(M& model, const std::map<std::string, Tensor>& state_dict, bool strict = true) {
  std::vector<std::pair<std::string, Tensor>> targets;
  visit_state(model, [&](const std::string& name, Tensor& t) { targets.emplace_back(name, t); });
  return detail::load_into(targets, state_dict, strict);
}

namespace state {  // tinygrad's spelling: nn.state.get_parameters(model)
using nn::get_parameters;
using nn::get_state_dict;
using nn::load_state_dict;
}  // namespace state

// Sets Tensor::training for a scope (tinygrad's `with Tensor.train():`), restoring the old value.
class TrainingScope {
 public:
  explicit TrainingScope(bool on = true) : prev_(Tensor::training) { Tensor::training = on; }
  ~TrainingScope() { Tensor::training = prev_; }
  TrainingScope(const TrainingScope&) = delete;
  TrainingScope& operator=(const TrainingScope&) = delete;

 private:
  bool prev_;
};

// ---- layers (src/nn/layers.cpp) ----

// An int or a list of ints, as tinygrad's kernel_size=3 or kernel_size=(3, 5). A plain int is remembered
// as such: Conv2d(1, 32, 5) has a 5x5 kernel, Conv2d(1, 32, {5}) a one-dim one.
struct Ints {
  std::vector<int64_t> v;
  bool scalar = false;
  template <class T>
    requires std::is_integral_v<T> && (!std::is_same_v<T, bool>)
  Ints(T x) : v{int64_t(x)}, scalar(true) {}             // NOLINT: implicit on purpose
  Ints(std::initializer_list<int64_t> xs) : v(xs) {}     // NOLINT
  Ints(std::vector<int64_t> xs) : v(std::move(xs)) {}    // NOLINT
  Ints(const Shape& s) : v(s) {}                         // NOLINT: a tensor's (integer) shape
};

// y = x @ weight.T + bias; weight (out, in) and bias uniform in +-1/sqrt(in).
// use_blocks keeps a quantized weight in its blocks (tg/block_weight.h): weight becomes its lazy dense form, and
// the layer multiplies by the blocks as long as weight is still that tensor.
struct Linear {
  Tensor weight;
  std::optional<Tensor> bias;
  std::shared_ptr<const BlockWeight> blocks;
  Linear(int64_t in_features, int64_t out_features, bool bias = true);
  Tensor operator()(const Tensor& x) const;
  void use_blocks(const BlockWeight& w);
  TG_PARAMETERS(weight, bias)
};

// Convolution over any number of spatial dims (as many as kernel_size has; a plain int is a square 2-D
// kernel). weight (out, in/groups, *k) and bias uniform in +-1/sqrt(in/groups * prod(k)) (the bound of
// tinygrad's kaiming_uniform(a=sqrt(5))).
// stride, padding and dilation: one value for every dim or one per dim; padding may also give
// 2 * dims values (per side, as Tensor::conv2d takes them).
struct Conv2d {
  Tensor weight;
  std::optional<Tensor> bias;
  std::vector<int64_t> kernel_size, stride, padding, dilation;
  int64_t groups;
  Conv2d(int64_t in_channels, int64_t out_channels, Ints kernel_size, Ints stride = 1, Ints padding = 0,
         Ints dilation = 1, int64_t groups = 1, bool bias = true);
  Tensor operator()(const Tensor& x) const;
  TG_PARAMETERS(weight, bias)
};

// A Conv2d with one spatial dim: input (N, C, L).
struct Conv1d : Conv2d {
  Conv1d(int64_t in_channels, int64_t out_channels, int64_t kernel_size, int64_t stride = 1, int64_t padding = 0,
         int64_t dilation = 1, int64_t groups = 1, bool bias = true)
      : Conv2d(in_channels, out_channels, Ints{kernel_size}, stride, padding, dilation, groups, bias) {}
};

// Transposed convolution; weight (in, out/groups, *k).
struct ConvTranspose2d {
  Tensor weight;
  std::optional<Tensor> bias;
  std::vector<int64_t> kernel_size, stride, padding, output_padding, dilation;
  int64_t groups;
  ConvTranspose2d(int64_t in_channels, int64_t out_channels, Ints kernel_size, Ints stride = 1, Ints padding = 0,
                  Ints output_padding = 0, Ints dilation = 1, int64_t groups = 1, bool bias = true);
  Tensor operator()(const Tensor& x) const;
  TG_PARAMETERS(weight, bias)
};

// Batch normalization over axis 1 of (N, C, ...). Under Tensor::training it normalizes with the batch's
// statistics and moves running_mean / running_var toward them by `momentum` (assigned, so they are
// realized with the optimizer's step); otherwise it uses the running statistics.
struct BatchNorm {
  std::optional<Tensor> weight, bias;                // affine: ones, zeros
  std::optional<Tensor> running_mean, running_var;   // track_running_stats: zeros, ones
  Tensor num_batches_tracked;                        // int64 scalar
  double eps, momentum;
  bool track_running_stats;
  // false: a batch sharded along axis 0 over several devices is normalized on each device by its own part's
  // statistics (torch's BatchNorm under DistributedDataParallel: no all-reduce in the forward or backward pass), the
  // running statistics taking the devices' mean. true: the whole batch's (torch's SyncBatchNorm), as on one device.
  bool sync_stats = true;
  explicit BatchNorm(int64_t sz, double eps = 1e-5, bool affine = true, bool track_running_stats = true,
                     double momentum = 0.1);
  Tensor operator()(const Tensor& x);
  TG_PARAMETERS(weight, bias, running_mean, running_var, num_batches_tracked)
};
using BatchNorm2d = BatchNorm;
using BatchNorm3d = BatchNorm;

// Normalizes over the last normalized_shape.size() dims, then * weight + bias. Several dims:
// LayerNorm(Shape{2, 3}) (plain braces, LayerNorm({2, 3}), could also mean a copy of LayerNorm(2, 3)).
struct LayerNorm {
  Shape normalized_shape;
  double eps;
  std::optional<Tensor> weight, bias;
  explicit LayerNorm(Ints normalized_shape, double eps = 1e-5, bool elementwise_affine = true);
  Tensor operator()(const Tensor& x) const;
  TG_PARAMETERS(weight, bias)
};

// x * rsqrt(mean(x^2, -1) + eps) * weight, computed in float32 or wider and cast back.
struct RMSNorm {
  double eps;
  std::optional<Tensor> weight;
  explicit RMSNorm(int64_t dim, double eps = 1e-6, bool elementwise_affine = true);
  Tensor operator()(const Tensor& x) const;
  TG_PARAMETERS(weight)
};

// Normalizes each group of num_channels / num_groups channels of (N, C, ...), then a per-channel affine.
struct GroupNorm {
  int64_t num_groups, num_channels;
  double eps;
  std::optional<Tensor> weight, bias;
  GroupNorm(int64_t num_groups, int64_t num_channels, double eps = 1e-5, bool affine = true);
  Tensor operator()(const Tensor& x) const;
  TG_PARAMETERS(weight, bias)
};

// GroupNorm with one group per channel.
struct InstanceNorm {
  int64_t num_features;
  double eps;
  std::optional<Tensor> weight, bias;
  explicit InstanceNorm(int64_t num_features, double eps = 1e-5, bool affine = true);
  Tensor operator()(const Tensor& x) const;
  TG_PARAMETERS(weight, bias)
};

// A lookup table: integer indices of any shape -> (*idx.shape, embed_size). weight glorot_uniform.
struct Embedding {
  int64_t vocab_size, embed_size;
  Tensor weight;
  std::shared_ptr<const BlockWeight> blocks;  // as Linear's: a table kept in quantized blocks (use_blocks)
  Embedding(int64_t vocab_size, int64_t embed_size);
  Tensor operator()(const Tensor& idx) const;
  // The rows the ids name, in `dtype`: the ids are read on the host (one outside the vocabulary is a tg::Error) and
  // each row copied by one small kernel run per id (its row and id bound variables), not operator()'s
  // compare-and-sum over the whole vocabulary. For inference: no gradient reaches the table.
  Tensor rows_of(const Tensor& idx, DType dtype) const;
  // x (..., embed) @ weight.T: an output head tied to this table (through its blocks while it has them).
  Tensor as_head(const Tensor& x) const;
  void use_blocks(const BlockWeight& w);
  TG_PARAMETERS(weight)
};

// ---- optimizers (src/nn/optim.cpp), tinygrad's nn.optim ----
namespace optim {

// Every float tensor given is trained (requires_grad is set on it); step() updates those that have a
// gradient and realizes the others unchanged, so BatchNorm's running statistics (which never get one)
// are realized with each step. Non-float tensors (BatchNorm's num_batches_tracked) are buffers:
// realized with each step, never updated.
class Optimizer {
 public:
  virtual ~Optimizer() = default;
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  void zero_grad();  // clears every parameter's gradient
  // Assigns the updates and realizes parameters, optimizer state and buffers in one schedule, with
  // `also` (say the loss) in the same schedule. Throws tg::Error unless Tensor::training is set.
  void step(const std::vector<Tensor>& also = {});
  // The assigns of step() without running them: the tensors to realize.
  std::vector<Tensor> schedule_step();

  std::vector<Tensor> params;   // float tensors: trained
  std::vector<Tensor> buffers;  // the rest: realized with each step
  Tensor lr;                    // shape (1,) float32: assign a new value to change it without recompiling

 protected:
  Optimizer(const std::vector<Tensor>& params, double lr);
  // One zero tensor per parameter (float32, its own buffer), realized.
  std::vector<Tensor> new_state() const;
  // Returns param i's new value for the parameters in `idx` (those with a gradient), assigning the
  // optimizer's state; returns the state tensors to realize in `state`.
  virtual std::vector<Tensor> update(const std::vector<size_t>& idx, const std::vector<Tensor>& grads,
                                     std::vector<Tensor>& state) = 0;
};

// LARS: SGD with a layer-wise trust ratio tcoef * |w| / (|g| + wd * |w|); tcoef = 0 is plain SGD.
class LARS : public Optimizer {
 public:
  LARS(const std::vector<Tensor>& params, double lr = 0.001, double momentum = 0.9, double weight_decay = 1e-4,
       bool nesterov = false, bool classic = true, double tcoef = 0.001);
  double momentum, weight_decay, tcoef;
  bool nesterov, classic;
  std::vector<Tensor> b;  // momentum buffers (empty when momentum is 0)

 protected:
  std::vector<Tensor> update(const std::vector<size_t>& idx, const std::vector<Tensor>& grads,
                             std::vector<Tensor>& state) override;
};

// w -= lr * g', g' = g + wd * w, then with momentum: b = momentum * b + g', g' = b (or g' + momentum * b,
// nesterov). classic: the learning rate is applied before the momentum buffer.
class SGD : public LARS {
 public:
  SGD(const std::vector<Tensor>& params, double lr = 0.001, double momentum = 0.0, double weight_decay = 0.0,
      bool nesterov = false, bool classic = false)
      : LARS(params, lr, momentum, weight_decay, nesterov, classic, 0.0) {}
};

// LAMB: Adam(W) with the trust ratio |w| / |update|. adam = true drops the trust ratio.
class LAMB : public Optimizer {
 public:
  LAMB(const std::vector<Tensor>& params, double lr = 0.001, double b1 = 0.9, double b2 = 0.999, double eps = 1e-6,
       double weight_decay = 0.0, bool adam = false);
  double b1, b2, eps, weight_decay;
  bool adam;
  Tensor b1_t, b2_t;       // b1^t, b2^t, shape (1,) float32
  std::vector<Tensor> m, v;  // first and second moments

 protected:
  std::vector<Tensor> update(const std::vector<size_t>& idx, const std::vector<Tensor>& grads,
                             std::vector<Tensor>& state) override;
};

class Adam : public LAMB {
 public:
  Adam(const std::vector<Tensor>& params, double lr = 0.001, double b1 = 0.9, double b2 = 0.999, double eps = 1e-8)
      : LAMB(params, lr, b1, b2, eps, 0.0, true) {}
};

// Adam with decoupled weight decay.
class AdamW : public LAMB {
 public:
  AdamW(const std::vector<Tensor>& params, double lr = 0.001, double b1 = 0.9, double b2 = 0.999, double eps = 1e-8,
        double weight_decay = 0.01)
      : LAMB(params, lr, b1, b2, eps, weight_decay, true) {}
};

}  // namespace optim

// ---- datasets (src/nn/datasets.cpp) ----
namespace datasets {

// MNIST-format data, as tinygrad's nn.datasets.mnist returns it: images uint8 (N, 1, rows, cols), labels
// uint8 (N,). Usable with structured bindings: auto [X_train, Y_train, X_test, Y_test] = mnist();
struct MNIST {
  Tensor X_train, Y_train, X_test, Y_test;
};

// Reads train-images-idx3-ubyte, train-labels-idx1-ubyte, t10k-images-idx3-ubyte and t10k-labels-idx1-ubyte,
// each plain or gzip-compressed (.gz), from `dir`; with no dir, from Debian's dataset-fashion-mnist package
// (/usr/share/datasets/fashion-mnist). The original MNIST digits use the same file names. Nothing is
// downloaded. Missing, truncated or corrupt files throw tg::Error.
MNIST mnist(const std::string& dir = "");

// One idx file (plain or gzip): its dims and bytes. Only unsigned-byte data (type 0x08). Throws tg::Error
// on a bad magic number, absurd dims, or a size that does not match the dims.
struct IdxFile {
  std::vector<int64_t> dims;
  std::vector<uint8_t> data;
};
IdxFile read_idx(const std::string& path);

inline constexpr const char* kFashionMnistDir = "/usr/share/datasets/fashion-mnist";

}  // namespace datasets

}  // namespace tg::nn
