// Movement built from the primitive views: squeeze/unsqueeze/flatten/unflatten, repeat, cat/stack, split/chunk,
// the pad modes and roll. As in tinygrad nothing here writes a kernel: cat is a pad of each piece plus an add
// (one fused kernel), the pad modes are flips, shrinks and cats, roll is a repeat and a shrink.
#include <algorithm>

#include "tensor/tensor_internal.h"

namespace tg {
namespace {


// Bounds that keep every dim whole except `dim`, which gets [b, e).
PadArg keep_all_but(const Shape& s, size_t dim, int64_t b, int64_t e) {
  PadArg r;
  for (size_t i = 0; i < s.size(); i++) r.emplace_back(i == dim ? sint(b) : sint(0), i == dim ? sint(e) : s[i]);
  return r;
}

// Padding that is zero everywhere except `dim`.
PadArg pad_only(size_t ndim, size_t dim, int64_t before, int64_t after) {
  PadArg r(ndim, {0, 0});
  r[dim] = {before, after};
  return r;
}

// A dim index for inserting a new axis: ndim + 1 positions, negative counted from the end (torch's unsqueeze).
int64_t resolve_new_axis(const char* op, int64_t dim, const Shape& s) {
  int64_t n = int64_t(s.size()) + 1;
  if (dim < -n || dim >= n)
    throw Error(std::string(op) + ": dim " + std::to_string(dim) + " is out of range for shape " + to_string(s) +
                " with a new axis (expected " + std::to_string(-n) + " <= dim <= " + std::to_string(n - 1) + ")");
  return dim < 0 ? dim + n : dim;
}

int64_t python_mod(int64_t a, int64_t m) { return ((a % m) + m) % m; }

}  // namespace

Tensor Tensor::squeeze() const {
  Shape out;
  for (int64_t d : shape())
    if (d != 1) out.push_back(d);
  return reshape(out);
}

Tensor Tensor::squeeze(int64_t dim) const {
  Shape s = shape();
  int64_t d = normalize_axis("squeeze", dim, s);
  if (s.empty() || s[size_t(d)] != 1) return *this;  // torch and tinygrad: squeezing a non-1 dim is a no-op
  s.erase(s.begin() + d);
  return reshape(s);
}

Tensor Tensor::unsqueeze(int64_t dim) const {
  Shape s = shape();
  int64_t d = resolve_new_axis("unsqueeze", dim, s);
  s.insert(s.begin() + d, 1);
  return reshape(s);
}

Tensor Tensor::flatten(int64_t start_dim, int64_t end_dim) const {
  Shape s = shape();
  int64_t a = normalize_axis("flatten", start_dim, s), b = normalize_axis("flatten", end_dim, s);
  if (s.empty()) return reshape({1});
  if (a > b)
    throw Error("flatten: start_dim " + std::to_string(start_dim) + " comes after end_dim " + std::to_string(end_dim) +
                " for shape " + to_string(s));
  Shape out(s.begin(), s.begin() + a);
  int64_t merged = 1;
  for (int64_t i = a; i <= b; i++) merged *= s[size_t(i)];
  out.push_back(merged);
  out.insert(out.end(), s.begin() + b + 1, s.end());
  return reshape(out);
}

Tensor Tensor::unflatten(int64_t dim, const Shape& sizes) const {
  Shape s = shape();
  if (s.empty()) throw Error("unflatten: cannot unflatten a 0-d tensor (sizes " + to_string(sizes) + ")");
  int64_t d = normalize_axis("unflatten", dim, s);
  int64_t known = 1, infer = 0;
  for (int64_t v : sizes) {
    if (v == -1) infer++;
    else if (v < 0) throw Error("unflatten: negative size in " + to_string(sizes));
    else known *= v;
  }
  bool ok = sizes.size() > 0 && infer <= 1 &&
            (infer ? known != 0 && s[size_t(d)] % known == 0 : known == s[size_t(d)]);
  if (!ok)
    throw Error("unflatten: sizes " + to_string(sizes) + " do not multiply to dim " + std::to_string(dim) +
                " of size " + std::to_string(s[size_t(d)]) + " in shape " + to_string(s) +
                " (expected at least one size, at most one -1)");
  Shape out(s.begin(), s.begin() + d);
  for (int64_t v : sizes) out.push_back(v == -1 ? s[size_t(d)] / known : sint(v));
  out.insert(out.end(), s.begin() + d + 1, s.end());
  return reshape(out);
}

Tensor Tensor::repeat(const Shape& repeats) const {
  Shape s = shape();
  if (repeats.size() < s.size())
    throw Error("repeat: " + std::to_string(repeats.size()) + " repeats " + to_string(repeats) + " for the " +
                std::to_string(s.size()) + " dims of shape " + to_string(s) + " (expected at least one per dim)");
  for (int64_t r : repeats)
    if (r < 0) throw Error("repeat: negative repeat count in " + to_string(repeats));
  Shape base(repeats.size() - s.size(), 1);
  base.insert(base.end(), s.begin(), s.end());
  // Each repeated dim gets a new size-1 axis in front that is broadcast to the repeat count, then merged.
  Shape unsq, expd, out;
  for (size_t i = 0; i < base.size(); i++) {
    if (repeats[i] != 1) {
      unsq.push_back(1);
      expd.push_back(repeats[i]);
    }
    unsq.push_back(base[i]);
    expd.push_back(base[i]);
    out.push_back(base[i] * repeats[i]);
  }
  return reshape(unsq).expand(expd).reshape(out);
}

Tensor Tensor::cat(const std::vector<Tensor>& tensors, int64_t dim) {
  if (tensors.empty()) throw Error("cat: expected at least one tensor");
  const Tensor& t0 = tensors[0];
  Shape s0 = t0.shape();
  if (s0.empty()) throw Error("cat: zero-dimensional tensors cannot be concatenated (use stack)");
  size_t d = size_t(normalize_axis("cat", dim, s0));
  DType dt = t0.dtype();
  int64_t total = 0;
  for (size_t k = 0; k < tensors.size(); k++) {
    const Tensor& t = tensors[k];
    Shape s = t.shape();
    if (t.device() != t0.device())
      throw Error("cat: tensor " + std::to_string(k) + " is on " + t.device() + ", tensor 0 on " + t0.device() +
                  " (expected one device)");
    bool ok = s.size() == s0.size();
    for (size_t i = 0; ok && i < s.size(); i++) ok = i == d || s[i] == s0[i];
    if (!ok)
      throw Error("cat: tensor " + std::to_string(k) + " has shape " + to_string(s) + ", tensor 0 has " +
                  to_string(s0) + " (expected equal shapes except in dim " + std::to_string(dim) + ")");
    dt = dtypes::promote(dt, t.dtype());
    total += s[d];
  }
  Shape out = s0;
  out[d] = total;
  if (tg::prod(out) == 0) return full(out, 0, {.dtype = dt, .device = t0.device()});
  // Each piece is padded with zeros to the full size at its offset; the sum of the pieces is the result, and
  // the scheduler fuses the pads and adds into one kernel. Bools add as OR, which is the same thing here.
  std::optional<Tensor> acc;
  int64_t offset = 0;
  for (const Tensor& t : tensors) {
    int64_t n = t.shape()[d];
    if (n == 0) continue;
    Tensor p = t.cast(dt).pad(pad_only(out.size(), d, offset, total - offset - n));
    acc = acc ? *acc + p : p;
    offset += n;
  }
  return *acc;
}

Tensor Tensor::stack(const std::vector<Tensor>& tensors, int64_t dim) {
  if (tensors.empty()) throw Error("stack: expected at least one tensor");
  Shape s0 = tensors[0].shape();
  for (size_t k = 1; k < tensors.size(); k++)
    if (tensors[k].shape() != s0)
      throw Error("stack: tensor " + std::to_string(k) + " has shape " + to_string(tensors[k].shape()) +
                  ", tensor 0 has " + to_string(s0) + " (expected equal shapes)");
  int64_t d = resolve_new_axis("stack", dim, s0);
  std::vector<Tensor> parts;
  parts.reserve(tensors.size());
  for (const Tensor& t : tensors) parts.push_back(t.unsqueeze(d));
  return cat(parts, d);
}

std::vector<Tensor> Tensor::split(int64_t size, int64_t dim) const {
  Shape s = shape();
  int64_t d = normalize_axis("split", dim, s);
  if (s.empty()) throw Error("split: cannot split a 0-d tensor");
  if (size <= 0) throw Error("split: split size must be positive, got " + std::to_string(size));
  int64_t n = s[size_t(d)];
  std::vector<int64_t> sizes;
  for (int64_t i = 0; i < std::max<int64_t>(n, 1); i += size) sizes.push_back(std::min(size, n - i));
  return split(sizes, dim);
}

std::vector<Tensor> Tensor::split(const std::vector<int64_t>& sizes, int64_t dim) const {
  Shape s = shape();
  int64_t d = normalize_axis("split", dim, s);
  if (s.empty()) throw Error("split: cannot split a 0-d tensor");
  int64_t sum = 0;
  for (int64_t v : sizes) {
    if (v < 0) throw Error("split: negative size in " + to_string(sizes));
    sum += v;
  }
  if (sum != s[size_t(d)])
    throw Error("split: sizes " + to_string(sizes) + " sum to " + std::to_string(sum) + ", expected dim " +
                std::to_string(dim) + " of shape " + to_string(s) + " (" + std::to_string(s[size_t(d)]) + ")");
  std::vector<Tensor> out;
  int64_t at = 0;
  for (int64_t v : sizes) {
    out.push_back(shrink(keep_all_but(s, size_t(d), at, at + v)));
    at += v;
  }
  return out;
}

std::vector<Tensor> Tensor::chunk(int64_t chunks, int64_t dim) const {
  Shape s = shape();
  int64_t d = normalize_axis("chunk", dim, s);
  if (s.empty()) throw Error("chunk: cannot chunk a 0-d tensor");
  if (chunks <= 0) throw Error("chunk: number of chunks must be positive, got " + std::to_string(chunks));
  int64_t n = s[size_t(d)];
  // As torch: pieces of ceil(n / chunks), so fewer than `chunks` pieces may come back; an empty dim gives
  // `chunks` empty pieces.
  if (n == 0) return split(std::vector<int64_t>(size_t(chunks), 0), dim);
  return split((n + chunks - 1) / chunks, dim);
}

namespace {

// pad's modes after its checks. `cut` shrinks away the negative pads, `grow` adds the positive ones.
// constant: padding reads zeros, so another fill value goes in through a padded all-true mask.
Tensor pad_constant(const Tensor& t, const PadArg& cut, const PadArg& grow, ConstValue value) {
  Tensor x = t.shrink(cut);
  Tensor base = x.pad(grow);
  if (value.value == 0) return base;  // as tinygrad: a zero fill never changes the dtype
  Tensor inside(const_uop(1, dtypes::bool_, t.device(), x.shape()), t.device());
  return inside.pad(grow).where(base, value);
}

// circular: the tensor tiled once before and once after where needed, then the window cut out.
Tensor pad_circular(const Tensor& t, const PadArg& padding, const PadArg& cut, const PadArg& grow) {
  Tensor x = t.shrink(cut);
  Shape xs = x.shape(), reps;
  for (size_t i = 0; i < xs.size(); i++) {
    auto [b, e] = grow[i];
    if (b > xs[i] || e > xs[i])
      throw Error("pad: circular padding " + fmt_pairs(padding) + " wraps around more than once in dim " +
                  std::to_string(i) + " of shape " + to_string(t.shape()));
    reps.push_back(1 + (b > 0) + (e > 0));
  }
  Tensor tiled = x.repeat(reps);
  Shape ts = tiled.shape();
  PadArg window;
  for (size_t i = 0; i < xs.size(); i++) {
    auto [b, e] = grow[i];
    window.emplace_back(b == 0 ? sint(0) : xs[i] - b, e == 0 ? ts[i] : ts[i] - xs[i] + e);
  }
  return tiled.shrink(window);
}

// reflect and replicate: dim by dim, mirror images (without the edge element) or copies of the edge concatenated
// on each side of the full data, then the negative pads cut.
Tensor pad_edges(const Tensor& t, const std::string& mode, const PadArg& padding, const PadArg& cut,
                 const PadArg& grow) {
  const Shape s = t.shape();
  Tensor x = t;
  for (size_t d = 0; d < s.size(); d++) {
    auto [b, e] = grow[d];
    if (b == 0 && e == 0) continue;
    int64_t n = s[d];
    std::vector<Tensor> pieces;
    if (mode == "reflect") {
      if (b >= n || e >= n)
        throw Error("pad: reflect padding " + fmt_pairs(padding) + " must be less than the size " +
                    std::to_string(n) + " of dim " + std::to_string(d) + " of shape " + to_string(s));
      // [b..1] before, [n-2..n-1-e] after
      if (b > 0) pieces.push_back(x.shrink(keep_all_but(x.shape(), d, 1, b + 1)).flip(int64_t(d)));
      pieces.push_back(x);
      if (e > 0) pieces.push_back(x.shrink(keep_all_but(x.shape(), d, n - 1 - e, n - 1)).flip(int64_t(d)));
    } else {
      if (n == 0)
        throw Error("pad: replicate padding " + fmt_pairs(padding) + " of the empty dim " + std::to_string(d) +
                    " of shape " + to_string(s));
      Shape xs = x.shape();
      auto edge = [&](int64_t at, int64_t count) {
        Shape to = xs;
        to[d] = count;
        return x.shrink(keep_all_but(xs, d, at, at + 1)).expand(to);
      };
      if (b > 0) pieces.push_back(edge(0, b));
      pieces.push_back(x);
      if (e > 0) pieces.push_back(edge(n - 1, e));
    }
    x = Tensor::cat(pieces, int64_t(d));
  }
  PadArg after;
  Shape xs = x.shape();
  for (size_t i = 0; i < s.size(); i++) after.emplace_back(cut[i].first, xs[i] - (s[i] - cut[i].second));
  return x.shrink(after);
}

}  // namespace

Tensor Tensor::pad(const PadArg& padding, const std::string& mode, ConstValue value) const {
  Shape s = shape();
  if (padding.size() != s.size())
    throw Error("pad: padding " + fmt_pairs(padding) + " has " + std::to_string(padding.size()) +
                " entries for the " + std::to_string(s.size()) + " dims of shape " + to_string(s));
  if (mode != "constant" && mode != "reflect" && mode != "replicate" && mode != "circular")
    throw Error("pad: unknown mode '" + mode + "' (expected constant, reflect, replicate or circular)");
  for (size_t i = 0; i < s.size(); i++)
    if (s[i] + padding[i].first + padding[i].second < 0)
      throw Error("pad: padding " + fmt_pairs(padding) + " cuts more than the " + std::to_string(s[i]) +
                  " elements of dim " + std::to_string(i) + " of shape " + to_string(s));
  // Negative pads cut, like negative Python slices. Cut before padding for constant and circular (what wraps
  // around is the cut tensor), after for reflect and replicate (they mirror the full data, as tinygrad does).
  PadArg cut, grow;
  for (size_t i = 0; i < s.size(); i++) {
    auto [b, e] = padding[i];
    cut.emplace_back(std::max<int64_t>(-b, 0), s[i] - std::max<int64_t>(-e, 0));
    grow.emplace_back(std::max<int64_t>(b, 0), std::max<int64_t>(e, 0));
  }
  if (mode == "constant") return pad_constant(*this, cut, grow, value);
  if (mode == "circular") return pad_circular(*this, padding, cut, grow);
  return pad_edges(*this, mode, padding, cut, grow);
}

Tensor Tensor::roll(int64_t shift, int64_t dim) const {
  return roll(std::vector<int64_t>{shift}, std::vector<int64_t>{dim});
}

Tensor Tensor::roll(const std::vector<int64_t>& shifts, const std::vector<int64_t>& dims) const {
  Shape s = shape();
  // No dims: roll the flattened tensor, as torch's roll(x, shift) with dims=None.
  if (dims.empty()) {
    if (shifts.size() != 1)
      throw Error("roll: " + std::to_string(shifts.size()) + " shifts with no dims (expected exactly one shift)");
    return flatten().roll(shifts[0], 0).reshape(s);
  }
  if (shifts.size() != dims.size())
    throw Error("roll: " + std::to_string(shifts.size()) + " shifts " + to_string(shifts) + " for " +
                std::to_string(dims.size()) + " dims " + to_string(dims) + " (expected one shift per dim)");
  if (s.empty()) {
    for (int64_t d : dims) normalize_axis("roll", d, s);
    return *this;
  }
  std::vector<int64_t> total(s.size(), 0);
  std::vector<bool> rolled(s.size(), false);
  for (size_t i = 0; i < dims.size(); i++) {
    int64_t d = normalize_axis("roll", dims[i], s);
    total[size_t(d)] += shifts[i];  // rolling one dim twice adds up the shifts
    rolled[size_t(d)] = true;
  }
  if (tg::prod(s) == 0) return *this;
  // Two copies side by side along each rolled dim; the window starting at n - shift is the rolled tensor.
  Shape reps;
  PadArg window;
  for (size_t d = 0; d < s.size(); d++) {
    reps.push_back(rolled[d] ? 2 : 1);
    int64_t start = rolled[d] ? s[d] - python_mod(total[d], s[d]) : sint(0);
    window.emplace_back(start, start + s[d]);
  }
  return repeat(reps).shrink(window);
}

// ---- diagonal ----
// With dim1 and dim2 moved last as an (a, b) matrix, element (i, i + k) sits at i * (b + 1) + start of the
// flattened matrix (start = k, or -k * b below the main diagonal): flatten, shrink to L rows of b + 1 (padding
// the end so the last row is whole), keep column 0. Only movement ops, so autograd needs nothing new.
Tensor Tensor::diagonal(int64_t offset, int64_t dim1, int64_t dim2) const {
  Shape s = shape();
  if (s.size() < 2) throw Error("diagonal: expected a tensor of at least 2 dims, got shape " + to_string(s));
  int64_t d1 = normalize_axis("diagonal", dim1, s), d2 = normalize_axis("diagonal", dim2, s);
  if (d1 == d2) throw Error("diagonal: dim1 and dim2 are both " + std::to_string(d1) + " (expected two dims)");
  std::vector<int64_t> order;
  for (int64_t i = 0; i < int64_t(s.size()); i++)
    if (i != d1 && i != d2) order.push_back(i);
  Shape lead;
  for (int64_t i : order) lead.push_back(s[size_t(i)]);
  order.push_back(d1);
  order.push_back(d2);
  int64_t a = s[size_t(d1)], b = s[size_t(d2)];
  int64_t len = std::max<int64_t>(0, offset >= 0 ? std::min(a, b - offset) : std::min(a + offset, b));
  int64_t start = len == 0 ? 0 : offset >= 0 ? offset : -offset * b;
  Shape flat = lead, rows = lead, out = lead;
  flat.push_back(a * b);
  rows.push_back(len);
  rows.push_back(b + 1);
  out.push_back(len);
  PadArg grow(flat.size(), {0, 0}), cut(flat.size()), col(rows.size());
  for (size_t i = 0; i < lead.size(); i++) cut[i] = col[i] = {0, lead[i]};
  grow.back() = {0, b + 1};
  cut.back() = {start, start + len * (b + 1)};
  col[lead.size()] = {0, len};
  col.back() = {0, 1};
  return permute(order).reshape(flat).pad(grow).shrink(cut).reshape(rows).shrink(col).reshape(out);
}

}  // namespace tg
