// Random numbers as tinygrad makes them: a counter-based generator (Threefry-2x32, 20 rounds, Random123's
// constants) evaluated lazily with uint32 Tensor ops, so a seed gives the same numbers on every device,
// and the distributions built on it (rand, randn, randint, uniform, initializers, randperm, multinomial,
// dropout). linspace lives here too, with the other creation functions that take a distribution's shape.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <map>
#include <mutex>
#include <numbers>

#include "engine/capture.h"
#include "tensor/tensor_internal.h"
#include "uop/exec_alu.h"

namespace tg {
namespace {

// ---- global state: tinygrad's Tensor._seed and Tensor._device_rng_counters ----

// The first word of tinygrad's per-device key: the low 32 bits of sha256((0).to_bytes(4, "big")). tinygrad
// derives it from the order in which devices were first used; we always take the first device's, so one
// seed gives the same numbers on every device, and the numbers of tinygrad's first device.
constexpr uint32_t kKeyWord0 = 0x14b81119u;

struct RngState {
  std::mutex mu;
  uint64_t seed = uint64_t(std::time(nullptr));
  std::map<std::string, uint64_t> counters;  // next unused counter value per device
};

RngState& rng_state() {
  static RngState s;
  return s;
}

// ---- uint32 ALU helpers (no promotion: both sides already share dtype and shape) ----

Tensor alu2(Ops op, const Tensor& x, const Tensor& y) { return Tensor(UOp::alu(op, {x.uop(), y.uop()}), x.device()); }
Tensor konst(const Tensor& like, double v) {
  return Tensor(const_uop(v, like.dtype(), like.device(), like.shape()), like.device());
}
Tensor add(const Tensor& x, const Tensor& y) { return alu2(Ops::ADD, x, y); }
Tensor add(const Tensor& x, uint32_t c) { return alu2(Ops::ADD, x, konst(x, c)); }
Tensor bxor(const Tensor& x, const Tensor& y) { return alu2(Ops::XOR, x, y); }
Tensor rotl(const Tensor& x, int r) {
  return alu2(Ops::OR, alu2(Ops::SHL, x, konst(x, r)), alu2(Ops::SHR, x, konst(x, 32 - r)));
}

// Threefry-2x32, 20 rounds, on uint32 tensors of one shape: (x0, x1) is the counter, (k0, k1) the key.
// The same algorithm as exec_alu's THREEFRY, which the backends need not support.
std::pair<Tensor, Tensor> threefry2x32(Tensor x0, Tensor x1, const Tensor& k0, const Tensor& k1) {
  static constexpr int kRot[2][4] = {{13, 15, 26, 6}, {17, 29, 16, 24}};
  const Tensor ks[3] = {k1, bxor(bxor(k0, k1), konst(k0, 0x1BD11BDAu)), k0};
  x0 = add(x0, ks[2]);
  x1 = add(x1, ks[0]);
  for (int i = 0; i < 5; i++) {
    for (int r : kRot[i % 2]) {
      x0 = add(x0, x1);
      x1 = bxor(rotl(x1, r), x0);
    }
    x0 = add(x0, ks[i % 3]);
    x1 = add(add(x1, ks[(i + 1) % 3]), uint32_t(i + 1));
  }
  return {x0, x1};
}

// Reserve `num` counter values on `device` and return the key for them: tinygrad runs threefry once on
// (counter, seed key) to get the key of this call's stream. That one value is computed here on the host
// and enters as a 2-word buffer, so each call reuses the same compiled kernel.
std::pair<uint32_t, uint32_t> next_key(const std::string& device, uint64_t num) {
  RngState& s = rng_state();
  std::lock_guard<std::mutex> lock(s.mu);
  uint64_t& ctr = s.counters[device];
  uint64_t start = ctr;
  ctr += num;
  uint64_t key = (uint64_t(uint32_t(s.seed)) << 32) | kKeyWord0;
  Num r = exec_alu(Ops::THREEFRY, dtypes::uint64, dtypes::uint64, {Num{int64_t(start), 0}, Num{int64_t(key), 0}});
  uint64_t bits = uint64_t(r.i);
  return {uint32_t(bits), uint32_t(bits >> 32)};
}

// The key of a draw as a 2-word tensor on `device`. It enters through a HOST buffer; in a call a TinyJit
// captures, each replay writes the key of its own draw there first (engine/capture.h), so a replay draws the
// numbers eager code would have drawn, not the capture's again.
Tensor key_tensor(const std::string& device, uint64_t num, uint32_t k0, uint32_t k1) {
  Tensor host(std::vector<uint32_t>{k0, k1}, {2}, {.device = "HOST"});
  if (ScheduleCapture* capture = ScheduleCapture::active())
    capture->host_inputs.push_back({host.uop()->src.at(0), [device, num] {
                                      auto [r0, r1] = next_key(device, num);
                                      std::vector<uint8_t> bytes(8);
                                      std::memcpy(bytes.data(), &r0, 4);
                                      std::memcpy(bytes.data() + 4, &r1, 4);
                                      return bytes;
                                    }});
  return host.to(device);
}

// The counters 0 .. num-1 as uint32 on `device`, made lazily from two short host vectors: row * W + column over a
// (rows, W) grid, flattened and cut to num. A model's initializers then cost O(sqrt(num)) host memory when they
// are built, not 4 bytes a weight (a 135M-parameter model's default init wrote and copied 540 MB at
// construction, though a checkpoint replaced every weight before anything was realized). The add fuses into
// the kernel that uses the counters.
Tensor counters(const char* op, const std::string& device, int64_t num) {
  int64_t width = 1;
  while (width * width < num) width *= 2;
  const int64_t rows = (num + width - 1) / width;
  check_host_bytes(std::string(op) + ": " + std::to_string(num) + " random words", (rows + width) * 4);
  auto iota = [](int64_t n, uint32_t step) {
    std::vector<uint32_t> v(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; i++) v[size_t(i)] = uint32_t(i) * step;
    return v;
  };
  if (rows == 1) return Tensor(iota(num, 1), {num}, {.device = device});
  Tensor row(iota(rows, uint32_t(width)), {rows, 1}, {.device = device});
  Tensor col(iota(width, 1), {1, width}, {.device = device});
  return add(row.expand({rows, width}), col.expand({rows, width})).reshape({rows * width}).shrink({{0, num}});
}

// `num` random uint32 words on `device` (tinygrad's random_bits): threefry over the counter pairs
// (i, i + ceil(num/2)), the low words of all outputs followed by the high words. Word j computes the pair
// it belongs to and keeps one half: one elementwise kernel, where a cat of the two halves would make
// the scheduler realize each half before padding it.
Tensor random_bits(const char* op, const std::string& device, int64_t num) {
  if (num > int64_t(0xffffffffLL))
    throw Error(std::string(op) + ": " + std::to_string(num) + " random words in one call (at most 2^32 - 1)");
  auto [nk0, nk1] = next_key(device, uint64_t(num));
  if (num == 0) return Tensor(std::vector<uint32_t>{}, {0}, {.device = device});
  uint32_t half = uint32_t((num + 1) / 2);
  Tensor j = counters(op, device, num);
  Tensor low_half = alu2(Ops::CMPLT, j, konst(j, half));
  Tensor i = low_half.where(j, add(j, uint32_t(0) - half));  // j - half, wrapping
  Tensor key = key_tensor(device, num, nk0, nk1);
  Tensor k0 = key.shrink({{0, 1}}).expand({num}), k1 = key.shrink({{1, 2}}).expand({num});
  auto [lo, hi] = threefry2x32(i, add(i, half), k0, k1);
  return low_half.where(lo, hi);
}

DType uint_of_size(int size) {
  switch (size) {
    case 1: return dtypes::uint8;
    case 2: return dtypes::uint16;
    case 4: return dtypes::uint32;
    default: return dtypes::uint64;
  }
}

// Explicit mantissa bits of each float dtype.
int mantissa_bits(DType dt) {
  if (dt == dtypes::float16) return 10;
  if (dt == dtypes::bfloat16) return 7;
  if (dt == dtypes::float64) return 52;
  return 23;
}

// The bit pattern of 1.0 in `dt`.
double one_bits(DType dt) {
  if (dt == dtypes::float16) return 0x3C00;
  if (dt == dtypes::bfloat16) return 0x3F80;
  if (dt == dtypes::float64) return double(0x3FF0000000000000ULL);
  return 0x3F800000;
}

// Uniform [0, 1) from random words: the top mantissa-many bits of each float-sized chunk become the
// mantissa of a float in [1, 2), then subtract 1 (tinygrad's _bits_to_rand).
Tensor bits_to_rand(const Tensor& bits, const Shape& shape, DType dt) {
  DType ut = uint_of_size(dt.itemsize());
  Tensor u = bits.bitcast(ut);
  Tensor m = alu2(Ops::SHR, u, konst(u, dt.itemsize() * 8 - mantissa_bits(dt)));
  Tensor f = alu2(Ops::OR, m, konst(m, one_bits(dt))).bitcast(dt);
  return (f.shrink({{0, prod(shape)}}) - 1).reshape(shape);
}

void check_shape(const char* op, const Shape& shape) {
  for (int64_t s : shape)
    if (s < 0) throw Error(std::string(op) + ": negative dimension in shape " + to_string(shape));
}

int64_t prod_from(const Shape& s, size_t first) {
  int64_t p = 1;
  for (size_t i = first; i < s.size(); i++) p *= s[i];
  return p;
}

// Uniform [0, 1) floats of `dt` on `device`; tinygrad makes them contiguous unless asked not to.
Tensor rand_on(const Shape& shape, DType dt, const std::string& device, bool contiguous) {
  int64_t n = checked_numel(shape, dt.itemsize(), "rand");
  // Whole uint32 words: a float16 takes half of one, a float64 two.
  Tensor bits = random_bits("rand", device, (n * dt.itemsize() + 3) / 4);
  Tensor out = n == 0 ? Tensor::zeros(shape, {.dtype = dt, .device = device}) : bits_to_rand(bits, shape, dt);
  return contiguous ? out.contiguous() : out;
}

}  // namespace

void Tensor::manual_seed(uint64_t seed) {
  RngState& s = rng_state();
  std::lock_guard<std::mutex> lock(s.mu);
  s.seed = seed;
  s.counters.clear();
}

Tensor Tensor::rand(const Shape& shape, TensorOptions opts) {
  check_shape("rand", shape);
  DType dt = opts.dtype.value_or(dtypes::default_float());
  if (!dt.is_float() || dt.count != 1 || dt.ptr)
    throw Error("rand: dtype " + dt.repr() + " is not a float dtype (expected float16, bfloat16, float32 or float64)");
  Tensor out = rand_on(shape, dt, device_or_default(opts.device), true);
  out.d_->requires_grad = opts.requires_grad;
  return out;
}

Tensor Tensor::randn(const Shape& shape, TensorOptions opts) {
  check_shape("randn", shape);
  DType dt = opts.dtype.value_or(dtypes::default_float());
  if (!dt.is_float() || dt.count != 1 || dt.ptr) throw Error("randn: dtype " + dt.repr() + " is not a float dtype");
  // Box-Muller on two float32 uniforms per value, drawn as one (2, *shape) tensor as tinygrad does.
  Shape two{2};
  two.insert(two.end(), shape.begin(), shape.end());
  Tensor src = rand(two, {.dtype = dtypes::float32, .device = opts.device});
  PadArg first{{0, 1}}, second{{1, 2}};
  for (int64_t s : shape) first.push_back({0, s}), second.push_back({0, s});
  Tensor u1 = src.shrink(first).reshape(shape), u2 = src.shrink(second).reshape(shape);
  Tensor cos = (std::numbers::pi / 2 - u1 * (2 * std::numbers::pi)).sin();  // tinygrad's cos
  Tensor r = (cos * ((1 - u2).log() * -2).sqrt()).cast(dt);
  r.d_->requires_grad = opts.requires_grad;
  return r;
}

Tensor Tensor::uniform(const Shape& shape, double low, double high, TensorOptions opts) {
  check_shape("uniform", shape);
  if (!(low < high))
    throw Error("uniform: requires low < high, got low=" + std::to_string(low) + ", high=" + std::to_string(high));
  DType dt = opts.dtype.value_or(dtypes::default_float());
  Tensor r = ((high - low) * rand(shape, {.device = opts.device})).cast(dt);
  // An integral low keeps an int result int (randint); a fractional one makes it float, as in tinygrad.
  r = !dt.is_float() && low == std::floor(low) && std::abs(low) < 9.2e18 ? r + int64_t(low) : r + low;
  r.d_->requires_grad = opts.requires_grad;
  return r;
}

Tensor Tensor::randint(const Shape& shape, int64_t low, int64_t high, TensorOptions opts) {
  DType dt = opts.dtype.value_or(dtypes::int32);
  if (!dt.is_int()) throw Error("randint: dtype " + dt.repr() + " is not an integer dtype");
  if (low >= high)
    throw Error("randint: requires low < high, got low=" + std::to_string(low) + ", high=" + std::to_string(high));
  opts.dtype = dt;
  return uniform(shape, double(low), double(high), opts);
}

Tensor Tensor::normal(const Shape& shape, double mean, double std, TensorOptions opts) {
  if (!(std >= 0)) throw Error("normal: requires std >= 0, got std=" + std::to_string(std));
  bool grad = opts.requires_grad;
  opts.requires_grad = false;
  Tensor r = std * randn(shape, opts) + mean;
  r.d_->requires_grad = grad;
  return r;
}

Tensor Tensor::scaled_uniform(const Shape& shape, TensorOptions opts) {
  check_shape("scaled_uniform", shape);
  bool grad = opts.requires_grad;
  opts.requires_grad = false;
  int64_t n = tg::prod(shape);
  Tensor r = uniform(shape, -1.0, 1.0, opts) * (n > 0 ? std::pow(double(n), -0.5) : 1.0);
  r.d_->requires_grad = grad;
  return r;
}

Tensor Tensor::glorot_uniform(const Shape& shape, TensorOptions opts) {
  check_shape("glorot_uniform", shape);
  if (shape.empty()) throw Error("glorot_uniform: needs at least 1 dimension, got shape ()");
  int64_t fan = shape[0] + prod_from(shape, 1);
  if (fan == 0) throw Error("glorot_uniform: fan_in + fan_out is 0 for shape " + to_string(shape));
  double bound = std::sqrt(6.0 / double(fan));
  return uniform(shape, -bound, bound, opts);
}

// The fan_in of a weight of `shape` (the product of the dims after the first), checked for `op`.
static int64_t kaiming_fan_in(const char* op, const Shape& shape) {
  check_shape(op, shape);
  int64_t fan_in = prod_from(shape, 1);
  if (fan_in == 0)
    throw Error(std::string(op) + ": fan_in (product of dims after the first) is 0 for shape " + to_string(shape));
  return fan_in;
}

Tensor Tensor::kaiming_uniform(const Shape& shape, double a, TensorOptions opts) {
  int64_t fan_in = kaiming_fan_in("kaiming_uniform", shape);
  double bound = std::sqrt(6.0 / (1 + a * a) / double(fan_in));
  return uniform(shape, -bound, bound, opts);
}

Tensor Tensor::kaiming_normal(const Shape& shape, double a, TensorOptions opts) {
  int64_t fan_in = kaiming_fan_in("kaiming_normal", shape);
  double std = std::sqrt(2.0 / (1 + a * a) / double(fan_in));
  return normal(shape, 0.0, std, opts);
}

namespace {
// An int linspace: each value in double, truncated toward zero (torch's values), written on the host in the
// dtype as arange does. In the default float (float32) as tinygrad computes it, 2^31 - 1 rounds up to 2^31
// and a step such as 2.5 can round an integral value just below itself.
std::vector<std::byte> int_linspace(double start, double stop, int64_t steps, DType dt) {
  const double step = (stop - start) / double(steps - 1);
  const size_t item = size_t(dt.itemsize());
  std::vector<std::byte> bytes(size_t(steps) * item);
  for (int64_t i = 0; i < steps; i++) {
    // from the nearer end, as torch, so the last value is stop exactly
    double v = i < steps / 2 ? start + step * double(i) : stop - step * double(steps - 1 - i);
    uint64_t bits = num_to_bits(cast_num(Num{0, std::trunc(v)}, dtypes::float64, dt), dt);
    std::memcpy(bytes.data() + size_t(i) * item, &bits, item);
  }
  return bytes;
}
}  // namespace

Tensor Tensor::linspace(double start, double stop, int64_t steps, TensorOptions opts) {
  if (steps < 0) throw Error("linspace: steps must be >= 0, got " + std::to_string(steps));
  DType dt = opts.dtype.value_or(dtypes::default_float());
  if (dt.is_bool()) throw Error("linspace: bool dtype is not supported");
  opts.dtype = dt;
  if (steps == 1) return full({1}, start, opts);
  if (!dt.is_float()) {
    opts.dtype.reset();
    return Tensor(int_linspace(start, stop, steps, dt).data(), dt, steps, {steps}, opts);
  }
  Tensor idx = arange(steps, {.dtype = dtypes::default_float(), .device = opts.device});
  Tensor r = (start + idx * ((stop - start) / double(steps - 1))).cast(dt);
  r.d_->requires_grad = opts.requires_grad;
  return r;
}

Tensor Tensor::randperm(int64_t n, TensorOptions opts) {
  if (n < 0) throw Error("randperm: n must be >= 0, got " + std::to_string(n));
  DType dt = opts.dtype.value_or(dtypes::int32);
  if (dt.is_bool()) throw Error("randperm: dtype " + dt.repr() + " cannot hold indices");
  // A random permutation is the argsort of random values, as in tinygrad.
  Tensor out = rand({n}, {.device = opts.device}).sort(0).second.cast(dt);
  out.d_->requires_grad = opts.requires_grad;
  return out;
}

Tensor Tensor::multinomial(int64_t num_samples, bool replacement) const {
  Shape s = shape();
  if (s.size() != 1 && s.size() != 2)
    throw Error("multinomial: expected a 1-D or 2-D tensor of weights, got shape " + to_string(s));
  if (num_samples <= 0) throw Error("multinomial: num_samples must be positive, got " + std::to_string(num_samples));
  Tensor w = s.size() == 1 ? reshape({1, s[0]}) : *this;
  int64_t rows = w.shape()[0], n = w.shape()[1];
  if (n == 0) throw Error("multinomial: no categories to sample from in shape " + to_string(s));
  if (!replacement && num_samples > n)
    throw Error("multinomial: cannot draw " + std::to_string(num_samples) + " samples without replacement from " +
                std::to_string(n) + " categories");
  std::optional<Tensor> idx;
  if (replacement || num_samples == 1) {
    // Inverse CDF: the sample is the number of CDF entries at or below a uniform draw.
    Tensor cw = w.cumsum(1).cast(dtypes::float32);
    Tensor cdf = cw / cw.shrink({{0, rows}, {n - 1, n}});
    Tensor u = rand({num_samples, rows, 1}, {}).to(device());
    idx = (u >= cdf.reshape({1, rows, n})).sum(2).permute({1, 0});
  } else {
    // Efraimidis-Spirakis: the num_samples largest of log2(u) / w are a weighted sample without replacement.
    Tensor keys = rand({rows, n}, {.dtype = dtypes::float32, .device = device()}).log2() / w;
    idx = keys.topk(num_samples, 1).second;
  }
  return (s.size() == 1 ? idx->reshape({num_samples}) : *idx).cast(dtypes::int32);
}

// Tensor::training is the TRAINING knob (tinygrad has both names for it).
ContextVar& Tensor::training = TRAINING;

Tensor Tensor::dropout(double p) const {
  if (!(p >= 0 && p <= 1)) throw Error("dropout: p=" + std::to_string(p) + " is out of range [0, 1]");
  if (!training || p == 0) return *this;
  if (p == 1) return zeros_like();
  // Keep each value with probability 1 - p and scale the kept ones so the expectation is unchanged.
  Tensor keep = rand_on(shape(), dtypes::default_float(), device(), false) >= p;
  return keep.contiguous().where(*this, 0) / (1.0 - p);
}

}  // namespace tg
