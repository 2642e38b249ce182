// program_fuzz::generate: random programs, each op valid for its operands' shapes and dtypes, with the
// value analysis of program_fuzz.h carried along so that only comparable programs are made.
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>
#include <stdexcept>

#include "program_fuzz.h"
#include "program_fuzz_apply.h"

namespace program_fuzz {
namespace {

using tg::DType;
using tg::Shape;
namespace dt = tg::dtypes;

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kIntLimit = 1 << 30;  // int32 results stay below this: overflow would be C's UB

int mantissa(DType d) { return d == dt::float16 ? 11 : 24; }
double unit_roundoff(DType d) { return std::ldexp(1.0, -mantissa(d)); }
int64_t numel(const Shape& s) { return std::accumulate(s.begin(), s.end(), int64_t(1), std::multiplies<>()); }

// After an op in `d` whose exact result is described by v: rounding makes it inexact when the values need
// more mantissa bits than d has (err grows by one rounding); floats past d's range may become inf.
Values settle(Values v, DType d) {
  if (!d.is_float()) return v;
  if (v.bound > std::ldexp(1.0, mantissa(d) + v.grid)) v.err += unit_roundoff(d) * v.bound;
  if (v.bound > d.max()) v.inf = true, v.bound = d.max();
  return v;
}

// v seen as dtype d (the implicit cast of a binary op's promotion, or an explicit one).
Values convert(Values v, DType from, DType d) {
  if (from == d) return v;
  if (d.is_bool()) return Values{1, 0, 0, false, false};
  if (d.is_int()) {
    v.grid = std::max(v.grid, 0);  // truncation toward zero
    return v;
  }
  if (from.is_bool()) return Values{1, 0, 0, false, false};
  return settle(v, d);
}

class Gen {
 public:
  explicit Gen(uint64_t seed) : rng_(seed) { p_.seed = seed; }
  Program make();

 private:
  int pick(int n) { return int(rng_() % uint64_t(std::max(n, 1))); }
  bool chance(double pr) { return std::uniform_real_distribution<double>(0, 1)(rng_) < pr; }
  int add(Node n);
  int input(const Shape& shape, DType d);
  Shape random_shape();
  DType random_dtype();
  Shape partner_shape(const Shape& s);
  Shape reshape_target(const Shape& s);
  int partner(int a);
  bool operand(int a, Node& n, DType* d, Values* v, Shape* shape);
  bool step();
  bool unary(int a);
  bool binary(int a);
  bool compare(int a);
  bool where(int a);
  bool cast(int a);
  bool movement(int a);
  bool reduce(int a);
  bool matmul(int a);
  const Node& at(int i) const { return p_.nodes[size_t(i)]; }

  std::mt19937_64 rng_;
  Program p_;
  std::vector<tg::Tensor> lazy_;  // each node built on the CPU, never realized: the library's shape and dtype
  bool grad_ok_ = true;           // no step whose derivative jumps saw inexact values
};

// Appends n, asking the library for its dtype and checking its shape.
int Gen::add(Node n) {
  lazy_.push_back(apply(n, lazy_, "CPU"));
  n.dtype = lazy_.back().dtype();
  if (lazy_.back().shape() != n.shape)
    throw std::logic_error("program_fuzz: the library made shape " + fmt(lazy_.back().shape()) + " where " +
                           fmt(n.shape) + " was expected, at node " + std::to_string(p_.nodes.size()));
  p_.nodes.push_back(std::move(n));
  return int(p_.nodes.size()) - 1;
}

Shape Gen::random_shape() {
  // Small sizes mostly; some that codegen splits (upcasts of 4, GPU workgroups of 16 or 32, odd 17).
  static const int64_t sizes[] = {0, 1, 1, 2, 2, 3, 3, 4, 5, 1, 2, 3, 4, 8, 16, 17, 32};
  Shape s(size_t(pick(5)));
  for (auto& x : s) x = sizes[pick(chance(0.7) ? 9 : int(std::size(sizes)))];
  // Most programs keep some elements: a 0-sized dim survives a fifth of the time.
  if (std::count(s.begin(), s.end(), 0) && chance(0.8)) std::replace(s.begin(), s.end(), int64_t(0), int64_t(2));
  return s;
}

DType Gen::random_dtype() {
  int r = pick(20);
  return r < 10 ? dt::float32 : r < 13 ? dt::float16 : r < 18 ? dt::int32 : dt::bool_;
}

// Values: floats are quarters in [-3, 3], rarely inf, -inf, NaN or -0; ints in [-5, 5]; bools.
int Gen::input(const Shape& shape, DType d) {
  Node n;
  n.kind = Kind::Input;
  n.shape = shape;
  n.to = d;
  int how = pick(20);
  if (how < 3 || (how < 5 && !d.is_bool())) {  // a constant tensor (CONST + expand), or arange's values
    n.op = how < 3 ? "full" : "arange";
    double c = d.is_bool() ? pick(2) : d.is_int() ? pick(11) - 5 : (pick(25) - 12) / 4.0;
    if (n.op == "full") n.data = {c};
    double top = std::max(double(numel(shape)) - 1, 0.0);
    n.v = n.op == "full" ? Values{std::abs(c), d.is_float() ? -2 : 0, 0} : settle(Values{top, 0, 0}, d);
    return add(std::move(n));
  }
  n.data.resize(size_t(numel(shape)));
  bool special = d.is_float() && chance(0.1);
  for (auto& x : n.data) {
    if (d.is_bool())
      x = pick(2);
    else if (d.is_int())
      x = pick(11) - 5;
    else
      x = (pick(25) - 12) / 4.0;
    if (special && chance(0.2)) x = std::array{kInf, -kInf, std::nan(""), -0.0}[size_t(pick(4))];
  }
  n.requires_grad = d.is_float();
  n.v = d.is_bool() ? Values{1, 0, 0} : d.is_int() ? Values{5, 0, 0} : Values{3, -2, 0, special, special};
  return add(std::move(n));
}

// A shape that broadcasts with s: some dims 1, sometimes fewer of them, and where s has a 1, sometimes a
// larger size (so both operands broadcast).
Shape Gen::partner_shape(const Shape& s) {
  Shape o(s.begin() + (s.empty() || chance(0.8) ? 0 : pick(int(s.size()) + 1)), s.end());
  for (auto& x : o) {
    if (chance(0.25))
      x = 1;
    else if (x == 1 && chance(0.3))
      x = pick(4);
  }
  return o;
}

// A second operand for a: an earlier node whose shape broadcasts with a's, else a fresh input.
int Gen::partner(int a) {
  std::vector<int> fits;
  for (int i = 0; i < int(p_.nodes.size()); i++) {
    const Shape &x = at(a).shape, &y = at(i).shape;
    bool ok = true;
    for (size_t k = 1; k <= std::min(x.size(), y.size()) && ok; k++) {
      int64_t u = x[x.size() - k], w = y[y.size() - k];
      ok = u == w || u == 1 || w == 1;
    }
    if (ok) fits.push_back(i);
  }
  if (!fits.empty() && chance(0.4)) return fits[size_t(pick(int(fits.size())))];
  DType d = chance(0.7) ? at(a).dtype : random_dtype();
  return input(partner_shape(at(a).shape), d);
}

Shape broadcast(const Shape& x, const Shape& y) {
  Shape out(std::max(x.size(), y.size()));
  for (size_t k = 1; k <= out.size(); k++) {
    int64_t u = k <= x.size() ? x[x.size() - k].value() : 1, w = k <= y.size() ? y[y.size() - k].value() : 1;
    out[out.size() - k] = u == 1 ? w : u;
  }
  return out;
}

bool fits(const std::vector<Shape>& shapes) {
  size_t rank = 0;
  for (auto& s : shapes) rank = std::max(rank, s.size());
  for (size_t k = 1; k <= rank; k++) {
    int64_t size = 1;
    for (auto& s : shapes) {
      int64_t x = k <= s.size() ? s[s.size() - k].value() : 1;
      if (x != 1 && size != 1 && x != size) return false;
      if (x != 1) size = x;
    }
  }
  return true;
}

Values join(const Values& x, const Values& y) {  // either operand's values (where, maximum, minimum)
  return {std::max(x.bound, y.bound), std::min(x.grid, y.grid), std::max(x.err, y.err), x.inf || y.inf, x.nan || y.nan};
}

bool Gen::unary(int a) {
  const Node& x = at(a);
  Values v = x.v;
  DType d = x.dtype;
  static const char* float_ops[] = {"neg",        "abs",     "relu", "sin",   "exp2", "sqrt",  "log2",
                                    "reciprocal", "sigmoid", "tanh", "floor", "ceil", "trunc", "round"};
  std::string op = d.is_bool()  ? "logical_not"
                   : d.is_int() ? std::array{"neg", "abs", "relu"}[size_t(pick(3))]
                                : float_ops[pick(int(std::size(float_ops)))];
  double u = unit_roundoff(d);
  bool jumps = op == "sqrt" || op == "log2" || op == "reciprocal" || op == "floor" || op == "ceil" || op == "trunc" ||
               op == "round";
  if (jumps && !v.exact()) return false;
  if ((op == "abs" || op == "relu") && !v.exact()) grad_ok_ = false;
  if (op == "sin") {
    v = {std::min(1.0, v.bound), 0, v.err + 4 * u, false, v.nan || v.inf};
  } else if (op == "exp2") {
    if (v.bound > 20) return false;
    double out = std::exp2(v.bound);
    v = settle({out, 0, out * (std::log(2.0) * v.err + 4 * u), v.inf, v.nan}, d);
    v.err = std::max(v.err, 4 * u * out);
  } else if (op == "sqrt") {
    v = {std::sqrt(v.bound), 0, 2 * u * std::sqrt(v.bound), v.inf, true};
  } else if (op == "log2") {
    double b = std::max(std::log2(std::max(v.bound, 1.0)), double(-v.grid)) + 1;
    v = {b, 0, 4 * u * b, true, true};
  } else if (op == "reciprocal") {
    double b = std::ldexp(1.0, -v.grid);
    v = {b, 0, 2 * u * b, true, v.nan};
  } else if (op == "sigmoid" || op == "tanh") {
    v = {1, 0, v.err + 8 * u, false, v.nan};
  } else if (jumps) {  // floor, ceil, trunc, round
    v.grid = std::max(v.grid, 0);
    v.bound += 1;
  }
  Node n;
  n.kind = Kind::Unary;
  n.op = op;
  n.src = {a};
  n.shape = x.shape;
  n.v = v;
  add(std::move(n));
  return true;
}

// The second operand of a binary op or compare on a: a C++ scalar a quarter of the time (n gets it and the
// dtype it has once broadcast_scalar made it), else partner(a).
bool Gen::operand(int a, Node& n, DType* d, Values* v, Shape* shape) {
  if (chance(0.75)) {
    int b = partner(a);
    n.src = {a, b};
    *d = at(b).dtype, *v = at(b).v, *shape = at(b).shape;
    return true;
  }
  DType x = at(a).dtype;
  int kind = pick(5);  // a float literal (2 in 5), an int literal (2 in 5), a bool
  n.src = {a};
  n.scalar_left = chance(0.5);
  n.to = kind < 2 ? tg::dtypes::float32 : kind < 4 ? tg::dtypes::int32 : tg::dtypes::bool_;
  double c = kind < 2 ? (pick(25) - 12) / 4.0 : kind < 4 ? pick(11) - 5 : pick(2);
  n.data = {c};
  // A C++ scalar does not widen a tensor: it takes the tensor's dtype, or the default float for a float
  // literal against ints and bools, or int32 for an int literal against bools.
  *d = kind < 2 ? (x.is_float() ? x : tg::dtypes::default_float()) : kind < 4 && x.is_bool() ? tg::dtypes::int32 : x;
  *v = Values{std::abs(c), kind < 2 ? -2 : 0, 0};
  *shape = {};
  return true;
}

bool Gen::binary(int a) {
  Node n;
  DType ydt;
  Values yv;
  Shape ysh;
  operand(a, n, &ydt, &yv, &ysh);
  const Node& x = at(a);
  DType d = tg::dtypes::promote(x.dtype, ydt);
  std::string op;
  if (d.is_bool())
    op = std::array{"and", "or", "xor"}[size_t(pick(3))];
  else
    op = std::array{"add", "sub", "mul", "div", "maximum", "minimum"}[size_t(pick(6))];
  DType out = op == "div" && !d.is_float() ? tg::dtypes::default_float() : d;
  Values vx = convert(x.v, x.dtype, out), vy = convert(yv, ydt, out), v;
  if (n.scalar_left) std::swap(vx, vy);  // vx, vy in operand order (div's divisor is vy)
  double u = unit_roundoff(out);
  if (d.is_bool()) {
    v = {1, 0, 0};
  } else if (op == "add" || op == "sub") {
    v = {vx.bound + vy.bound, std::min(vx.grid, vy.grid), vx.err + vy.err, vx.inf || vy.inf,
         vx.nan || vy.nan || (vx.inf && vy.inf)};
  } else if (op == "mul") {
    v = {vx.bound * vy.bound, vx.grid + vy.grid, vx.err * vy.bound + vy.err * vx.bound + vx.err * vy.err,
         vx.inf || vy.inf, vx.nan || vy.nan || vx.inf || vy.inf};
  } else if (op == "div") {
    if (!vy.exact()) return false;  // near zero a rounding difference in the divisor is unbounded
    double inv = std::ldexp(1.0, -vy.grid), b2 = vx.bound * inv;
    v = {b2, 0, vx.err * inv + 2 * u * b2, true, true};
  } else {  // maximum, minimum
    if (!vx.exact() || !vy.exact()) grad_ok_ = false;
    v = join(vx, vy);
  }
  if (out.is_int() && v.bound >= kIntLimit) return false;
  if (out.is_float()) v = settle(v, out);
  n.kind = Kind::Binary;
  n.op = op;
  n.shape = broadcast(x.shape, ysh);
  n.v = v;
  add(std::move(n));
  return true;
}

bool Gen::compare(int a) {
  Node n;
  DType ydt;
  Values yv;
  Shape ysh;
  operand(a, n, &ydt, &yv, &ysh);
  const Node& x = at(a);
  DType d = tg::dtypes::promote(x.dtype, ydt);
  if (!convert(x.v, x.dtype, d).exact() || !convert(yv, ydt, d).exact()) return false;
  n.kind = Kind::Compare;
  n.op = std::array{"lt", "gt", "le", "ge", "eq", "ne"}[size_t(pick(6))];
  n.shape = broadcast(x.shape, ysh);
  n.v = {1, 0, 0};
  add(std::move(n));
  return true;
}

bool Gen::where(int a) {
  int c = a, x = a, y;
  if (at(a).dtype.is_bool()) {
    x = partner(c);
    y = partner(c);
  } else {
    c = input(partner_shape(at(a).shape), tg::dtypes::bool_);
    y = partner(a);
  }
  if (!fits({at(c).shape, at(x).shape, at(y).shape})) return false;
  DType d = tg::dtypes::promote(at(x).dtype, at(y).dtype);
  Node n;
  n.kind = Kind::Where;
  n.src = {c, x, y};
  n.shape = broadcast(broadcast(at(c).shape, at(x).shape), at(y).shape);
  n.v = join(convert(at(x).v, at(x).dtype, d), convert(at(y).v, at(y).dtype, d));
  add(std::move(n));
  return true;
}

bool Gen::cast(int a) {
  const Node& x = at(a);
  DType to = random_dtype();
  if (to == x.dtype) return false;
  // float -> int truncates (a jump) and is C's UB for NaN, inf and out-of-range values.
  if (x.dtype.is_float() && to.is_int() && (!x.v.exact() || x.v.nan || x.v.inf)) return false;
  if (x.dtype.is_float() && to.is_bool() && !x.v.exact()) return false;
  Node n;
  n.kind = Kind::Cast;
  n.src = {a};
  n.shape = x.shape;
  n.to = to;
  n.v = convert(x.v, x.dtype, to);
  add(std::move(n));
  return true;
}

// A reshape target with the same number of elements: the prime factors of numel spread over 0 to 4 dims,
// with 1s among them; with no elements, any shape holding a 0.
Shape Gen::reshape_target(const Shape& s) {
  int64_t n = numel(s);
  Shape out(size_t(pick(4) + (n == 0 ? 1 : 0)), 1);
  if (n == 0) {
    for (auto& x : out) x = pick(4);
    out[size_t(pick(int(out.size())))] = 0;
    return out;
  }
  std::vector<int64_t> factors;
  for (int64_t f = 2; n > 1; f++)
    while (n % f == 0) factors.push_back(f), n /= f;
  if (out.empty() && !factors.empty()) out.push_back(1);
  for (int64_t f : factors) out[size_t(pick(int(out.size())))] *= f;
  return out;
}

bool Gen::movement(int a) {
  const Node& x = at(a);
  Shape s = x.shape;
  size_t rank = s.size();
  Node n;
  n.src = {a};
  n.v = x.v;
  switch (pick(6)) {
    case 0:
      n.kind = Kind::Reshape;
      n.shape = n.shape_arg = reshape_target(s);
      // Sometimes let the library infer one dim.
      if (numel(s) > 0 && !n.shape_arg.empty() && chance(0.3)) n.shape_arg[size_t(pick(int(n.shape_arg.size())))] = -1;
      break;
    case 1: {
      if (rank < 2) return false;
      n.kind = Kind::Permute;
      n.shape_arg.resize(rank);
      std::iota(n.shape_arg.begin(), n.shape_arg.end(), 0);
      std::shuffle(n.shape_arg.begin(), n.shape_arg.end(), rng_);
      for (size_t i = 0; i < rank; i++) n.shape.push_back(s[size_t(n.shape_arg[i])]);
      break;
    }
    case 2: {
      n.kind = Kind::Expand;
      n.shape = s;
      bool changed = false;
      for (auto& d : n.shape)
        if (d == 1 && chance(0.7)) d = pick(5), changed = true;
      if (rank < 4 && (!changed || chance(0.3))) n.shape.insert(n.shape.begin(), 1 + pick(3)), changed = true;
      n.shape_arg = n.shape;
      break;
    }
    case 3:
      if (rank == 0) return false;
      n.kind = Kind::Pad;
      for (auto d : s) {
        n.pads.emplace_back(pick(3), pick(3));
        n.shape.push_back(d + n.pads.back().first + n.pads.back().second);
      }
      n.v.bound = std::max(n.v.bound, 0.0);
      break;
    case 4:
      if (rank == 0) return false;
      n.kind = Kind::Shrink;
      for (auto d : s) {
        int64_t lo = pick(int(d) + 1), hi = lo + pick(int(d - lo) + 1);
        if (hi == lo && lo < d && chance(0.8)) hi++;  // mostly keep elements
        n.pads.emplace_back(lo, hi);
        n.shape.push_back(hi - lo);
      }
      break;
    default:
      if (rank == 0) return false;
      n.kind = Kind::Flip;
      for (size_t i = 0; i < rank; i++)
        if (chance(0.5)) n.shape_arg.push_back(int64_t(i) - (chance(0.3) ? int64_t(rank) : 0));
      if (n.shape_arg.empty()) n.shape_arg.push_back(int64_t(pick(int(rank))));
      n.shape = s;
  }
  add(std::move(n));
  return true;
}

bool Gen::reduce(int a) {
  const Node& x = at(a);
  Shape s = x.shape;
  size_t rank = s.size();
  Node n;
  n.kind = Kind::Reduce;
  n.src = {a};
  n.op = std::array{"sum", "sum", "max", "min", "mean", "prod"}[size_t(pick(6))];
  n.keepdim = chance(0.5);
  int64_t count = 1;
  // shape_arg: the axes (some negative); empty means all axes, through the no-argument overload.
  std::vector<bool> reduced(rank, rank == 0 || chance(0.2));
  if (!reduced.empty() && !reduced[0])
    for (size_t i = 0; i < rank; i++) reduced[i] = chance(0.4);
  if (rank && std::find(reduced.begin(), reduced.end(), true) == reduced.end()) reduced[size_t(pick(int(rank)))] = true;
  bool all = std::find(reduced.begin(), reduced.end(), false) == reduced.end() && chance(0.5);
  for (size_t i = 0; i < rank; i++) {
    if (reduced[i]) {
      count *= s[i];
      if (!all) n.shape_arg.push_back(int64_t(i) - (chance(0.3) ? int64_t(rank) : 0));
      if (n.keepdim && !all) n.shape.push_back(1);
    } else {
      n.shape.push_back(s[i]);
    }
  }
  if (all) n.keepdim = false;
  if (n.op == "prod" && (x.dtype.is_bool() || n.shape_arg.size() > 1)) return false;  // prod takes one axis
  Values v = x.v;
  DType acc = x.dtype.is_float() ? tg::dtypes::float32 : x.dtype;
  double c = double(count);
  if (n.op == "sum" || n.op == "mean") {
    v.bound *= c, v.err *= c;
    v = settle(v, acc);
    if (n.op == "mean")
      v = {x.v.bound, 0, v.err / std::max(c, 1.0) + 4 * unit_roundoff(acc) * x.v.bound, v.inf, v.nan || count == 0};
  } else if (n.op == "prod") {
    if (count > 6) return false;
    double b = std::pow(std::max(v.bound, 1.0), c);
    v = settle({b, v.grid * int(count), v.err * c * b, v.inf, v.nan || v.inf}, acc);
  } else {  // max, min: the identity of an empty reduce is -inf / inf
    if (!v.exact()) grad_ok_ = false;
    v.inf = v.inf || count == 0;
  }
  if (!x.dtype.is_float() && n.op != "mean" && v.bound >= kIntLimit) return false;
  n.v = v;
  int i = add(std::move(n));
  p_.nodes[size_t(i)].v = settle(p_.nodes[size_t(i)].v, p_.nodes[size_t(i)].dtype);
  return true;
}

bool Gen::matmul(int a) {
  const Node& x0 = at(a);
  if (x0.shape.empty() || x0.dtype.is_bool()) return false;
  int64_t k = x0.shape.back(), cols = pick(5);
  Shape ws = chance(0.2) ? Shape{k} : Shape{k, cols};
  int w = input(ws, chance(0.8) ? at(a).dtype : random_dtype());
  const Node &x = at(a), &y = at(w);
  if (y.dtype.is_bool()) return false;
  DType d = tg::dtypes::promote(x.dtype, y.dtype);
  Values vx = convert(x.v, x.dtype, d), vy = convert(y.v, y.dtype, d);
  double c = double(k);
  Values v{c * vx.bound * vy.bound, vx.grid + vy.grid, c * (vx.err * vy.bound + vy.err * vx.bound + vx.err * vy.err),
           vx.inf || vy.inf, vx.nan || vy.nan || vx.inf || vy.inf};
  if (d.is_int() && v.bound >= kIntLimit) return false;
  Node n;
  n.kind = Kind::Matmul;
  n.src = {a, w};
  n.shape = Shape(x.shape.begin(), x.shape.end() - 1);
  if (ws.size() == 2) n.shape.push_back(cols);
  n.v = settle(settle(v, d.is_float() ? tg::dtypes::float32 : d), d);
  add(std::move(n));
  return true;
}

// One random op on the newest node (sometimes an older one); false when the pick did not apply.
bool Gen::step() {
  int a = chance(0.75) ? int(p_.nodes.size()) - 1 : pick(int(p_.nodes.size()));
  int r = pick(100);
  try {
    if (r < 15) return unary(a);
    if (r < 33) return binary(a);
    if (r < 38) return compare(a);
    if (r < 44) return where(a);
    if (r < 52) return cast(a);
    if (r < 77) return movement(a);
    if (r < 90) return reduce(a);
    if (r < 96) return matmul(a);
  } catch (const tg::Error& e) {
    p_.rejected.push_back(e.what());
    return false;
  }
  Node n;
  n.kind = Kind::Contiguous;
  n.src = {a};
  n.shape = at(a).shape;
  n.v = at(a).v;
  add(std::move(n));
  return true;
}

Program Gen::make() {
  // One program in eight starts from a larger tensor: reduces long enough for grouped (GPU) and split
  // reductions, loops that codegen upcasts and unrolls.
  static const Shape big[] = {{256}, {64, 33}, {17, 128}, {4, 32, 32}, {1024}, {3, 1000}};
  input(chance(0.125) ? big[pick(int(std::size(big)))] : random_shape(), random_dtype());
  int ops = 1 + pick(12), done = 0;
  for (int tries = 0; done < ops && tries < 8 * ops; tries++) {
    size_t before = p_.nodes.size();
    if (step()) done++;
    // Keep programs small: a node past 4096 elements is dropped with what it brought.
    if (numel(p_.nodes.back().shape) > 4096)
      p_.nodes.resize(before), lazy_.erase(lazy_.begin() + std::ptrdiff_t(before), lazy_.end());
  }
  int last = int(p_.nodes.size()) - 1;
  p_.outputs = {last};
  if (last > 0 && chance(0.3)) p_.outputs.push_back(pick(last));
  const Node& out = at(last);
  bool any_grad = std::any_of(p_.nodes.begin(), p_.nodes.end(), [](const Node& n) { return n.requires_grad; });
  if (out.dtype.is_float() && grad_ok_ && any_grad && chance(0.6)) {
    p_.backward = true;
    for (int64_t i = 0; i < numel(out.shape); i++) p_.loss_weight.push_back((pick(9) - 4) / 4.0);
  }
  return std::move(p_);
}
}  // namespace
}  // namespace program_fuzz

namespace program_fuzz {

Program generate(uint64_t seed) { return Gen(seed).make(); }

}  // namespace program_fuzz
