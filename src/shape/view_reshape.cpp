// View::reshape and View::merge: the two operations that decide whether a movement stays one View.
// Both are exact: they return a View only when it gives the same (index, valid) at every position.
#include <algorithm>
#include <numeric>

#include "shape/view.h"

namespace tg {
namespace {

// One dim while reshaping: size, stride and valid range. The stride is an expression (S = sint) where a
// symbolic view's concrete dims regroup: a dim of a tensor with a symbolic dim elsewhere has a stride over it.
template <class S>
struct DimT {
  int64_t size;
  S stride;
  int64_t b, e;
};
using Dim = DimT<int64_t>;

int64_t floor_div(int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); }
int64_t ceil_div(int64_t a, int64_t b) { return -floor_div(-a, b); }

// Merge dims (outer first, all of size > 1) into one dim over their row-major linear position. Possible
// when the valid box is an interval of positions (single values outside, full ranges inside the first
// dim with more than one valid value) and the index is affine on it (strides chain inside that dim).
// Adds the constant part of the index to `offset`.
template <class S>
std::optional<DimT<S>> merge_dims(const std::vector<DimT<S>>& d, S& offset) {
  if (d.size() == 1) return d[0];
  size_t n = d.size();
  std::vector<int64_t> after(n, 1);  // elements per step of dim i
  for (size_t i = n - 1; i-- > 0;) after[i] = after[i + 1] * d[i + 1].size;
  size_t k = 0;
  while (k < n && d[k].e - d[k].b == 1) k++;
  int64_t base = 0;  // linear position and index contributed by the single-valued dims
  S base_index = 0;
  for (size_t i = 0; i < k; i++) base += d[i].b * after[i], base_index += d[i].stride * d[i].b;
  int64_t total = after[0] * d[0].size;
  if (k == n) {  // one valid element
    offset += base_index;
    return DimT<S>{total, 0, base, base + 1};
  }
  for (size_t i = k + 1; i < n; i++)
    if (d[i].b != 0 || d[i].e != d[i].size) return std::nullopt;
  for (size_t i = k; i + 1 < n; i++)
    if (!(d[i].stride == d[i + 1].stride * d[i + 1].size)) return std::nullopt;
  S st = d[n - 1].stride;
  offset += base_index - st * base;
  return DimT<S>{total, st, base + d[k].b * after[k], base + d[k].e * after[k]};
}

// Split one dim into `sizes` (outer first, product == dim.size, all > 1). The index stays affine; the
// valid interval must be a box in the new coordinates.
template <class S>
std::optional<std::vector<DimT<S>>> split_dim(const DimT<S>& d, const Shape& sizes) {
  size_t n = sizes.size();
  std::vector<int64_t> after(n, 1);
  for (size_t i = n - 1; i-- > 0;) after[i] = after[i + 1] * sizes[i + 1];
  std::vector<DimT<S>> out;
  for (size_t i = 0; i < n; i++) out.push_back(DimT<S>{sizes[i], d.stride * after[i], 0, sizes[i]});
  if (d.b == 0 && d.e == d.size) return out;
  // Find the dim k that holds the partial range: inner dims full, outer dims fixed at one value.
  for (size_t k = n; k-- > 0;) {
    int64_t inner = after[k], block = inner * sizes[k];
    if (d.b % inner != 0 || d.e % inner != 0) continue;
    if (d.b / block != (d.e - 1) / block) continue;
    for (size_t i = 0; i < k; i++) {
      int64_t digit = (d.b / after[i]) % sizes[i];
      out[i].b = digit, out[i].e = digit + 1;
    }
    out[k].b = (d.b / inner) % sizes[k];
    out[k].e = out[k].b + (d.e - d.b) / inner;
    return out;
  }
  return std::nullopt;
}

// The reshape that only inserts or drops size-1 dims: the other dims keep their size, stride and mask.
std::optional<View> reshape_ones(const View& v, const Shape& new_shape) {
  std::vector<size_t> kept, placed;
  for (size_t i = 0; i < v.shape.size(); i++)
    if (!(v.shape[i] == 1)) kept.push_back(i);
    else if (v.mask && !((*v.mask)[i] == std::pair<sint, sint>{0, 1})) return std::nullopt;  // masked away: stack
  for (size_t j = 0; j < new_shape.size(); j++)
    if (!(new_shape[j] == 1)) placed.push_back(j);
  if (kept.size() != placed.size()) return std::nullopt;
  Shape st(new_shape.size(), 0);
  Mask m(new_shape.size(), {0, 1});
  for (size_t k = 0; k < kept.size(); k++) {
    if (!(v.shape[kept[k]] == new_shape[placed[k]])) return std::nullopt;
    st[placed[k]] = v.strides[kept[k]];
    if (v.mask) m[placed[k]] = (*v.mask)[kept[k]];
  }
  return View::create(new_shape, st, v.offset, v.mask ? std::optional<Mask>(m) : std::nullopt);
}

// A symbolic view's reshape: each symbolic dim stays as it is (the same size, in the same order among the dims
// larger than 1), and the concrete dims between them regroup as in a concrete reshape, their strides expressions.
// (Splitting a THREAD chunk off the head dim of attention's values, whose key dim is start_pos + 1 long, needed
// a second view, and the kernel's every load a division by start_pos + 1.)
std::optional<View> reshape_symbolic(const View& v, const Shape& new_shape) {
  if (auto r = reshape_ones(v, new_shape)) return r;
  std::vector<size_t> olds, news;  // the dims larger than 1 (symbolic ones count as larger)
  for (size_t i = 0; i < v.shape.size(); i++)
    if (!(v.shape[i] == 1)) olds.push_back(i);
  for (size_t j = 0; j < new_shape.size(); j++)
    if (!(new_shape[j] == 1)) news.push_back(j);
  Shape st(new_shape.size(), 0);
  Mask m(new_shape.size(), {0, 1});
  sint off = v.offset;
  auto mask_of = [&](size_t i) { return v.mask ? (*v.mask)[i] : std::pair<sint, sint>{0, v.shape[i]}; };
  size_t oi = 0, ni = 0;
  while (oi < olds.size() || ni < news.size()) {
    if (oi >= olds.size() || ni >= news.size()) return std::nullopt;
    const size_t o = olds[oi], n = news[ni];
    if (v.shape[o].is_symbolic() || new_shape[n].is_symbolic()) {  // passes through unchanged, or no single view
      if (!(v.shape[o] == new_shape[n])) return std::nullopt;
      st[n] = v.strides[o], m[n] = mask_of(o);
      oi++, ni++;
      continue;
    }
    std::vector<DimT<sint>> group;
    Shape sizes;
    std::vector<size_t> placed;
    int64_t po = 1, pn = 1;
    do {
      if (po <= pn) {
        if (oi >= olds.size() || v.shape[olds[oi]].is_symbolic()) return std::nullopt;
        const size_t i = olds[oi++];
        auto [b, e] = mask_of(i);
        if (!b.is_int() || !e.is_int()) return std::nullopt;
        group.push_back({int64_t(v.shape[i]), v.strides[i], int64_t(b), int64_t(e)});
        po *= group.back().size;
      } else {
        if (ni >= news.size() || new_shape[news[ni]].is_symbolic()) return std::nullopt;
        placed.push_back(news[ni]);
        sizes.push_back(int64_t(new_shape[news[ni++]]));
        pn *= sizes.back();
      }
    } while (po != pn || sizes.empty());
    for (const auto& d : group)
      if (d.b >= d.e) return std::nullopt;  // nothing valid: the stacked view says so
    auto merged = merge_dims(group, off);
    if (!merged) return std::nullopt;
    auto split = split_dim(*merged, sizes);
    if (!split) return std::nullopt;
    for (size_t k = 0; k < placed.size(); k++)
      st[placed[k]] = (*split)[k].stride, m[placed[k]] = {(*split)[k].b, (*split)[k].e};
  }
  return View::create(new_shape, st, off, v.mask ? std::optional<Mask>(m) : std::nullopt);
}

}  // namespace

std::optional<View> View::reshape(const Shape& new_shape) const {
  if (shape == new_shape) return *this;
  if (contiguous) return create(new_shape);
  // A symbolic view keeps its symbolic dims; otherwise the tracker stacks a view (exact).
  if (symbolic() || is_symbolic(new_shape)) return reshape_symbolic(*this, new_shape);
  if (prod(shape) == 0) return create(new_shape);
  size_t n = shape.size();
  if (mask) {
    for (auto [b, e] : *mask) {
      if (b < e) continue;
      // A 0-d view has no dim to carry "nothing is valid": keep the masked view and stack the reshape.
      if (new_shape.empty()) return std::nullopt;
      return create(new_shape, Shape(new_shape.size(), 0), 0, Mask(new_shape.size(), {0, 0}));
    }
  }
  // Size-1 dims carry nothing (index 0, stride 0, mask (0,1)): drop them, then pair the remaining old and
  // new dims into minimal groups of equal product.
  std::vector<Dim> old;
  for (size_t i = 0; i < n; i++)
    if (shape[i] != 1)
      old.push_back({shape[i], strides[i], mask ? (*mask)[i].first.value() : 0, (mask ? (*mask)[i].second : shape[i]).value()});
  Shape nonone;
  for (int64_t s : new_shape)
    if (s != 1) nonone.push_back(s);
  int64_t off = offset;
  std::vector<Dim> out;
  size_t oi = 0, ni = 0;
  while (oi < old.size() || ni < nonone.size()) {
    if (oi >= old.size() || ni >= nonone.size()) return std::nullopt;  // cannot happen when products agree
    std::vector<Dim> group{old[oi++]};
    Shape sizes{nonone[ni++]};
    int64_t po = group[0].size, pn = sizes[0];
    while (po != pn) {
      if (po < pn) {
        if (oi >= old.size()) return std::nullopt;
        group.push_back(old[oi++]);
        po *= group.back().size;
      } else {
        if (ni >= nonone.size()) return std::nullopt;
        sizes.push_back(nonone[ni++]);
        pn *= sizes.back();
      }
    }
    auto merged = merge_dims(group, off);
    if (!merged) return std::nullopt;
    auto split = split_dim(*merged, sizes);
    if (!split) return std::nullopt;
    out.insert(out.end(), split->begin(), split->end());
  }
  Shape st;
  Mask m;
  size_t k = 0;
  for (int64_t s : new_shape) {
    if (s == 1) {
      st.push_back(0);
      m.push_back({0, 1});
    } else {
      st.push_back(out[k].stride);
      m.push_back({out[k].b, out[k].e});
      k++;
    }
  }
  return create(new_shape, st, off, mask ? std::optional<Mask>(m) : std::nullopt);
}

namespace {

Shape unravel(const Shape& shape, int64_t pos) {
  Shape out(shape.size());
  for (size_t i = shape.size(); i-- > 0;) {
    out[i] = pos % shape[i];
    pos /= shape[i];
  }
  return out;
}

// Merge of an unmasked outer view. Each outer dim moves the linear position by its stride; if, over the
// whole outer box, the inner coordinates of that position are an affine function of the outer index with
// no carries between inner dims, the composition is affine too. Where a carry is needed the two inner
// dims involved are merged first (when the inner view allows it) and we try again.
std::optional<View> merge_unmasked(const View& inner, const View& outer) {
  const Shape& is = inner.shape;
  size_t ni = is.size(), no = outer.shape.size();
  int64_t total = prod(is);
  if (outer.offset < 0 || outer.offset >= total) return std::nullopt;
  Shape origin = unravel(is, outer.offset);
  // k[d][j]: how far inner coordinate j moves per step of outer dim d.
  std::vector<Shape> k(no, Shape(ni, 0));
  for (size_t d = 0; d < no; d++) {
    if (outer.shape[d] == 1 || outer.strides[d] == 0) continue;
    int64_t p = outer.offset + outer.strides[d];
    if (p < 0 || p >= total) return std::nullopt;
    Shape c = unravel(is, p);
    for (size_t j = 0; j < ni; j++) k[d][j] = c[j] - origin[j];
  }
  // Range of each inner coordinate over the outer box.
  std::vector<std::pair<int64_t, int64_t>> range(ni);
  for (size_t j = 0; j < ni; j++) {
    int64_t lo = origin[j], hi = origin[j];
    for (size_t d = 0; d < no; d++) {
      int64_t span = k[d][j] * (outer.shape[d] - 1);
      (span < 0 ? lo : hi) += span;
    }
    range[j] = {lo, hi};
  }
  for (size_t j = ni; j-- > 1;) {
    if (range[j].first >= 0 && range[j].second < is[j]) continue;
    // A carry from dim j into j-1: retry with the two merged, if the inner view can be reshaped so.
    Shape merged_shape = is;
    merged_shape[j - 1] *= is[j];
    merged_shape.erase(merged_shape.begin() + int64_t(j));
    auto r = inner.reshape(merged_shape);
    if (!r) return std::nullopt;
    return merge_unmasked(*r, outer);
  }
  if (range[0].first < 0 || range[0].second >= is[0]) return std::nullopt;
  // Inner mask: a constraint on an inner coordinate that varies becomes a range on the one outer dim it
  // depends on; coordinates fed by several outer dims must be always valid.
  Mask m(no);
  for (size_t d = 0; d < no; d++) m[d] = {0, outer.shape[d]};
  bool masked = false;
  if (inner.mask) {
    for (size_t j = 0; j < ni; j++) {
      auto [b, e] = (*inner.mask)[j];
      if (range[j].first >= b && range[j].second < e) continue;
      std::vector<size_t> deps;
      for (size_t d = 0; d < no; d++)
        if (k[d][j] != 0) deps.push_back(d);
      if (deps.empty()) {  // never valid; a 0-d view cannot say so (see View::merge)
        if (no == 0) return std::nullopt;
        return View::create(outer.shape, Shape(no, 0), 0, Mask(no, {0, 0}));
      }
      if (deps.size() > 1) return std::nullopt;
      size_t d = deps[0];
      int64_t step = k[d][j], o = origin[j];
      // b <= o + step*i < e, solved for the integer i.
      int64_t lo = step > 0 ? ceil_div(b - o, step) : ceil_div(e - 1 - o, step);
      int64_t hi = step > 0 ? floor_div(e - 1 - o, step) : floor_div(b - o, step);
      m[d] = {std::max(m[d].first.value(), lo), std::min(m[d].second.value(), hi + 1)};
      masked = true;
    }
  }
  Shape st(no, 0);
  int64_t off = inner.offset;
  for (size_t j = 0; j < ni; j++) off += origin[j] * inner.strides[j];
  for (size_t d = 0; d < no; d++)
    for (size_t j = 0; j < ni; j++) st[d] += k[d][j] * inner.strides[j];
  return View::create(outer.shape, st, off, masked ? std::optional<Mask>(m) : std::nullopt);
}

}  // namespace

std::optional<View> View::merge(const View& inner, const View& outer) {
  if (prod(outer.shape) == 0) return outer;
  if (inner.contiguous) return outer;
  if (inner.symbolic() || outer.symbolic())  // kept as two views: exact, if not the fastest
    return outer.contiguous && outer.shape == inner.shape ? std::optional<View>(inner) : std::nullopt;
  if (outer.mask) {
    for (auto [b, e] : *outer.mask)
      if (b >= e) return outer;  // nothing valid: the inner view is never read
  }
  if (inner.mask) {
    for (auto [b, e] : *inner.mask)
      if (b >= e) {
        // A 0-d view has no dim to carry "nothing is valid" (its mask is empty, i.e. all valid): keep both views.
        if (outer.shape.empty()) return std::nullopt;
        return View::create(outer.shape, Shape(outer.shape.size(), 0), 0, Mask(outer.shape.size(), {0, 0}));
      }
  }
  if (outer.contiguous && outer.shape == inner.shape) return inner;
  if (outer.contiguous && prod(outer.shape) == prod(inner.shape)) return inner.reshape(outer.shape);
  if (outer.mask) {
    // Only the valid window of outer reads inner: merge that window, then pad back to outer's shape.
    View window = outer.shrink(*outer.mask);
    if (window.mask) return std::nullopt;
    auto merged = merge_unmasked(inner, window);
    if (!merged) return std::nullopt;
    Mask pads;
    for (size_t i = 0; i < outer.shape.size(); i++)
      pads.push_back({(*outer.mask)[i].first, outer.shape[i] - (*outer.mask)[i].second});
    return merged->pad(pads);
  }
  return merge_unmasked(inner, outer);
}

}  // namespace tg
