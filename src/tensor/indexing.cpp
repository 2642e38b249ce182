// Tensor indexing, t[{1, tg::Slice(0, 4, 2), tg::None, tg::Ellipsis, idx}], as tinygrad's __getitem__:
//  - ints, slices (any bounds and steps), None and Ellipsis are views: one shrink, flips for negative steps, a
//    pad + reshape + shrink for steps > 1, then a reshape that drops int dims and inserts the None dims;
//  - integer tensors (advanced indexing) compare the indices with an arange and sum the selected element, so
//    an index out of range reads 0 instead of failing (it would need the data to check). Negative indices
//    count from the end. The result dims follow torch: the broadcast index dims replace the indexed dims
//    when the tensor indices are adjacent, else they go first (ints are basic indices, unlike numpy).
#include <algorithm>
#include <limits>

#include "tensor/indexing_internal.h"

namespace tg {
namespace indexing {

Shape broadcast_shapes(const char* op, const char* what, const std::vector<Shape>& shapes) {
  size_t n = 0;
  for (const Shape& s : shapes) n = std::max(n, s.size());
  Shape out(n, 1);
  for (const Shape& s : shapes)
    for (size_t i = 0; i < s.size(); i++) {
      sint& o = out[n - s.size() + i];
      const sint& v = s[i];
      if (o != v && o != 1 && v != 1) {
        std::string list;
        for (const Shape& t : shapes) list += (list.empty() ? "" : ", ") + to_string(t);
        throw Error(std::string(op) + ": " + what + " of shapes " + list + " cannot be broadcast together");
      }
      if (o == 1) o = v;
    }
  return out;
}

Tensor checked_index(const char* op, const Tensor& self, const Tensor& index) {
  if (index.device() != self.device())
    throw Error(std::string(op) + ": index tensor is on " + index.device() + ", the tensor on " + self.device() +
                " (expected one device)");
  DType dt = index.dtype();
  if (!dt.is_int())
    throw Error(std::string(op) + ": index tensor of dtype " + dt.name() + " and shape " + to_string(index.shape()) +
                " is not supported (expected an integer dtype)");
  bool wide = dt == dtypes::int64 || dt == dtypes::uint32 || dt == dtypes::uint64;
  return index.cast(wide ? dtypes::int64 : dtypes::int32);
}

Tensor eq_arange(const Tensor& idx, int64_t num_classes, int64_t trailing) {
  Shape col(size_t(trailing) + 1, 1);
  col[0] = num_classes;
  return idx.eq(Tensor::arange(num_classes, {.device = idx.device()}).reshape(col));
}

}  // namespace indexing

namespace {

using indexing::scalar_like;

// One parsed index entry. [begin, end) is the kept range before flipping, stride its step (negative: read
// backwards from end - 1), size the number of elements that remain.
struct Parsed {
  enum Kind { kNone, kInt, kSlice, kTensor } kind;
  int64_t size = 1, begin = 0, end = 1, stride = 1;
  std::optional<Tensor> tensor;
};

// Python's slice.indices(n), then the range it covers.
Parsed parse_slice(const Slice& sl, int64_t n) {
  int64_t step = sl.step;
  if (step == 0) throw Error("getitem: slice step cannot be zero");
  if (step == std::numeric_limits<int64_t>::min()) throw Error("getitem: slice step is too small");
  auto clamp = [&](std::optional<int64_t> v, int64_t dflt, int64_t lo, int64_t hi) {
    if (!v) return dflt;
    int64_t x = *v < 0 ? *v + n : *v;  // *v < 0 and n >= 0: cannot overflow
    return std::clamp(x, lo, hi);
  };
  int64_t start, stop;
  if (step > 0) {
    start = clamp(sl.start, 0, 0, n);
    stop = clamp(sl.stop, n, 0, n);
  } else {
    start = clamp(sl.start, n - 1, -1, n - 1);
    stop = clamp(sl.stop, -1, -1, n - 1);
  }
  Parsed p{Parsed::kSlice};
  p.stride = step;
  if (step > 0 ? stop <= start : stop >= start) {
    p.begin = p.end = std::max<int64_t>(start, 0);
    p.begin = p.end = std::min(p.begin, n);
  } else if (step > 0) {
    p.begin = start, p.end = stop;
  } else {
    p.begin = stop + 1, p.end = start + 1;
  }
  uint64_t st = uint64_t(step > 0 ? step : -step);
  p.size = int64_t((uint64_t(p.end - p.begin) + st - 1) / st);
  return p;
}

// x[idx_0, idx_1, ...] for tensor indices at dims `dims` of x (already wrapped, integer), broadcast to `big`:
// the one-hot masks of all indices, multiplied, select one element per output, summed away. The result is
// x.shape[:dims[0]] + big + the remaining dims of x.
Tensor take(const Tensor& x, const std::vector<size_t>& dims, const std::vector<Tensor>& idx, const Shape& big) {
  Shape xs = x.shape();
  size_t d0 = dims[0], nb = big.size(), nd = xs.size();
  Shape out(xs.begin(), xs.begin() + int64_t(d0));
  out.insert(out.end(), big.begin(), big.end());
  bool empty_class = false;
  for (size_t i = d0; i < nd; i++) {
    if (std::find(dims.begin(), dims.end(), i) == dims.end()) out.push_back(xs[i]);
    else empty_class |= xs[i] == 0;
  }
  // Nothing to read (an indexed dim is empty, so every index is out of range), or nothing to write.
  if (empty_class || tg::prod(out) == 0) return Tensor::full(out, 0, {.dtype = x.dtype(), .device = x.device()});
  std::optional<Tensor> mask;
  for (size_t k = 0; k < dims.size(); k++) {
    // The index's dims sit at [d0, d0 + nb) of the (x dims before d0, big, x dims from d0) space.
    Shape ts = idx[k].shape();
    ts.insert(ts.end(), nd - d0, 1);
    Tensor m = indexing::eq_arange(idx[k].reshape(ts), xs[dims[k]], int64_t(nd - dims[k] - 1));
    mask = mask ? *mask * m : m;  // bool * bool is AND
  }
  Shape xr(xs.begin(), xs.begin() + int64_t(d0));
  xr.insert(xr.end(), nb, 1);
  xr.insert(xr.end(), xs.begin() + int64_t(d0), xs.end());
  std::vector<int64_t> axes;
  for (size_t d : dims) axes.push_back(int64_t(d + nb));
  return mask->where(x.reshape(xr), scalar_like(x, 0)).sum(axes).cast(x.dtype());
}

// Several tensor indices on consecutive dims of x: one linear index into those dims merged into one, so one
// comparison per element instead of one per index. Indices out of range in any dim read 0.
Tensor take_linear(const Tensor& x, const std::vector<size_t>& dims, const std::vector<Tensor>& idx,
                   const Shape& big) {
  Shape xs = x.shape();
  size_t d0 = dims.front(), d1 = dims.back() + 1;
  int64_t merged = 1;
  for (size_t d = d0; d < d1; d++) merged *= xs[d];
  DType dt = merged > std::numeric_limits<int32_t>::max() ? dtypes::int64 : dtypes::int32;
  std::optional<Tensor> lin, valid;
  int64_t stride = merged;
  for (size_t k = 0; k < dims.size(); k++) {
    int64_t n = xs[dims[k]];
    stride = n ? stride / n : 0;
    Tensor ok = (idx[k] >= 0) * (idx[k] < n);  // before the cast, which could wrap a huge index into range
    Tensor t = idx[k].cast(dt);
    Tensor term = t * stride;
    lin = lin ? *lin + term : term;
    valid = valid ? *valid * ok : ok;
  }
  Shape ms(xs.begin(), xs.begin() + int64_t(d0));
  ms.push_back(merged);
  ms.insert(ms.end(), xs.begin() + int64_t(d1), xs.end());
  Tensor safe = valid->where(*lin, scalar_like(*lin, 0));
  Tensor r = take(x.reshape(ms), {d0}, {safe}, big);
  if (r.numel() == 0 || merged == 0) return r;  // merged == 0: r is all zeros already
  Shape vs(d0, 1);
  vs.insert(vs.end(), big.begin(), big.end());
  vs.insert(vs.end(), xs.size() - d1, 1);
  Shape vshape = valid->shape(), bv(big.size() - vshape.size(), 1);  // valid may have fewer dims than big
  bv.insert(bv.end(), vshape.begin(), vshape.end());
  return valid->reshape(bv).expand(big).reshape(vs).where(r, scalar_like(r, 0));
}

// The indices with the Ellipsis (or the missing trailing dims) expanded into full slices, one per dim they consume
// (None consumes none). `fill` is the full slice they point at.
std::vector<const Index*> expand_ellipsis(const std::vector<Index>& indices, const Shape& s, const Index* fill) {
  const int64_t ndim = int64_t(s.size());
  int64_t ellipses = 0, real = 0;
  for (const Index& ix : indices) {
    if (std::holds_alternative<EllipsisIndex>(ix.v)) ellipses++;
    else if (!std::holds_alternative<NoneIndex>(ix.v)) real++;
  }
  if (ellipses > 1) throw Error("getitem: an index can only have a single ellipsis (...)");
  if (real > ndim)
    throw Error("getitem: too many indices for tensor of shape " + to_string(s) + ": " + std::to_string(ndim) +
                " dims, but " + std::to_string(real) + " were indexed");
  std::vector<const Index*> full;
  bool filled = false;
  for (const Index& ix : indices) {
    if (std::holds_alternative<EllipsisIndex>(ix.v)) {
      for (int64_t k = 0; k < ndim - real; k++) full.push_back(fill);
      filled = true;
    } else {
      full.push_back(&ix);
    }
  }
  if (!filled)
    for (int64_t k = 0; k < ndim - real; k++) full.push_back(fill);
  return full;
}

// Each entry parsed against the dim it consumes.
std::vector<Parsed> parse_indices(const Tensor& self, const std::vector<const Index*>& full) {
  const Shape s = self.shape();
  std::vector<Parsed> parsed;
  int64_t dim = 0;
  for (const Index* ix : full) {
    if (std::holds_alternative<NoneIndex>(ix->v)) {
      parsed.push_back(Parsed{Parsed::kNone});
      continue;
    }
    int64_t n = s[size_t(dim)];
    if (auto* i = std::get_if<int64_t>(&ix->v)) {
      if (*i >= n || *i < -n)
        throw Error("getitem: index " + std::to_string(*i) + " is out of bounds for axis " + std::to_string(dim) +
                    " with size " + std::to_string(n) + " (shape " + to_string(s) + ")");
      Parsed p{Parsed::kInt};
      p.begin = *i < 0 ? *i + n : *i;
      p.end = p.begin + 1;
      parsed.push_back(p);
    } else if (auto* sl = std::get_if<Slice>(&ix->v)) {
      parsed.push_back(parse_slice(*sl, n));
    } else {
      Tensor t = indexing::checked_index("getitem", self, std::get<Tensor>(ix->v));
      Parsed p{Parsed::kTensor};
      p.size = n, p.begin = 0, p.end = n;
      p.tensor = (t < 0).where(t + n, t);  // negative indices count from the end
      parsed.push_back(p);
    }
    dim++;
  }
  return parsed;
}

// The basic indices as views: shrink to the kept ranges, flip the negative steps, then take every stride-th element
// by padding to a multiple of the stride, splitting the dim in (size, stride) and keeping column 0.
Tensor slice_views(const Tensor& self, const std::vector<Parsed>& parsed) {
  PadArg bounds;
  std::vector<int64_t> flips;
  for (const Parsed& p : parsed) {
    if (p.kind == Parsed::kNone) continue;
    if (p.stride < 0) flips.push_back(int64_t(bounds.size()));
    bounds.emplace_back(p.begin, p.end);
  }
  Tensor x = self.shrink(bounds).flip(flips);
  bool strided = false;
  for (const Parsed& p : parsed) strided |= p.kind != Parsed::kNone && p.stride != 1 && p.stride != -1;
  if (!strided) return x;
  Shape xs = x.shape(), split, keep_shape;
  PadArg grow, keep;
  size_t k = 0;
  for (const Parsed& p : parsed) {
    if (p.kind == Parsed::kNone) continue;
    int64_t st = p.stride < 0 ? -p.stride : p.stride;
    grow.emplace_back(0, p.size * st - xs[k]);
    split.push_back(p.size);
    split.push_back(st);
    keep.emplace_back(0, p.size);
    keep.emplace_back(0, 1);
    keep_shape.push_back(p.size);
    k++;
  }
  return x.pad(grow).reshape(split).shrink(keep).reshape(keep_shape);
}

}  // namespace

Tensor Tensor::operator[](int64_t i) const { return (*this)[std::vector<Index>{Index(i)}]; }

Tensor Tensor::operator[](const std::vector<Index>& indices) const {
  const Index fill_slice{Slice()};
  const std::vector<Parsed> parsed = parse_indices(*this, expand_ellipsis(indices, shape(), &fill_slice));
  Tensor x = slice_views(*this, parsed);
  // The kept dims (an int index drops its dim, None adds one), and where the tensor indices are among them.
  Shape kept;
  std::vector<size_t> tdims;
  std::vector<Tensor> tensors;
  std::vector<Shape> tshapes;
  for (const Parsed& p : parsed) {
    if (p.kind == Parsed::kInt) continue;
    if (p.kind == Parsed::kTensor) {
      tdims.push_back(kept.size());
      tensors.push_back(*p.tensor);
      tshapes.push_back(p.tensor->shape());
    }
    kept.push_back(p.kind == Parsed::kNone ? 1 : p.size);
  }
  x = x.reshape(kept);
  if (tensors.empty()) return x;

  Shape big = indexing::broadcast_shapes("getitem", "tensor indices", tshapes);
  bool consecutive = tdims.back() - tdims.front() + 1 == tdims.size();
  Tensor r = tdims.size() > 1 && consecutive ? take_linear(x, tdims, tensors, big) : take(x, tdims, tensors, big);

  // When the tensor indices are not adjacent, the broadcast dims go first. As in torch and tinygrad, ints are
  // basic indices applied first (numpy counts them as advanced): x[1, :, idx] keeps idx's dims in place and
  // x[:, idx, 2, idx2] too, since without the int dim the two are adjacent; a slice or None between separates.
  if (consecutive || tdims[0] == 0) return r;
  std::vector<int64_t> order;
  for (size_t i = 0; i < big.size(); i++) order.push_back(int64_t(tdims[0] + i));
  for (size_t i = 0; i < tdims[0]; i++) order.push_back(int64_t(i));
  for (size_t i = tdims[0] + big.size(); i < r.shape().size(); i++) order.push_back(int64_t(i));
  return r.permute(order);
}

}  // namespace tg
