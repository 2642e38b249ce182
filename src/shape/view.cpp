// View: canonical construction and the movement ops on one strided, masked window. Reshape and merge
// live in view_reshape.cpp.
#include "shape/view.h"

#include <algorithm>
#include <functional>

#include "tg/error.h"

namespace tg {

namespace {
std::string shape_str(const Shape& shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); i++) s += (i ? ", " : "") + shape[i].str();
  return s + (shape.size() == 1 ? ",)" : ")");
}
sint clamp(const sint& v, const sint& lo, const sint& hi) { return smin(smax(v, lo), hi); }
// a < b where the variables' ranges decide it; false where they do not.
bool surely_lt(const sint& a, const sint& b) { return a.is_int() && b.is_int() ? a.value() < b.value() : a.vmax() < b.vmin(); }
}  // namespace

int64_t checked_numel(const Shape& shape, int64_t itemsize, const char* what) {
  int64_t n = 1;
  bool overflow = false;
  for (const sint& d : shape) {
    int64_t s = d.vmax();
    if (s == 0) return 0;  // nothing to store, whatever the other dims say
    overflow |= __builtin_mul_overflow(n, s, &n);
  }
  if (overflow)
    throw Error(std::string(what) + ": shape " + shape_str(shape) + " has more than 2^63-1 elements");
  int64_t bytes = 0;
  if (__builtin_mul_overflow(n, itemsize, &bytes))
    throw Error(std::string(what) + ": shape " + shape_str(shape) + " has " + std::to_string(n) + " elements of " +
                std::to_string(itemsize) + " bytes: more than 2^63-1 bytes");
  return n;
}

sint prod(const Shape& shape) {
  bool symbolic = std::any_of(shape.begin(), shape.end(), [](const sint& d) { return d.is_symbolic(); });
  if (!symbolic) return checked_numel(shape, 1, "shape");
  sint n = 1;
  for (const sint& d : shape) n = n * d;
  return n;
}

Shape strides_for_shape(const Shape& shape) {
  Shape st(shape.size(), 0);
  sint acc = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    st[i] = shape[i] == 1 ? sint(0) : acc;
    acc *= shape[i];
  }
  return st;
}

View View::create(const Shape& shape, std::optional<Shape> strides, sint offset, std::optional<Mask> mask) {
  size_t n = shape.size();
  View v;
  v.shape = shape;
  // A view of nothing has one canonical form: nothing about its strides, offset or mask matters.
  if (std::find(shape.begin(), shape.end(), 0) != shape.end()) {
    v.strides.assign(n, 0);
    return v;
  }
  v.strides = strides ? *strides : strides_for_shape(shape);
  for (size_t i = 0; i < n; i++)
    if (shape[i] == 1) v.strides[i] = 0;  // index is always 0: the stride is irrelevant
  v.offset = offset;
  if (mask) {
    Mask m = *mask;
    bool full = true, empty = false;
    for (size_t i = 0; i < n; i++) {
      m[i].first = clamp(m[i].first, 0, shape[i]);
      m[i].second = clamp(m[i].second, 0, shape[i]);
      full &= m[i].first == 0 && m[i].second == shape[i];
      empty |= !surely_lt(m[i].first, m[i].second) && m[i].first >= m[i].second;
    }
    if (empty) {
      // Nothing is valid: every all-invalid view of this shape is the same view.
      v.strides.assign(n, 0);
      v.offset = 0;
      v.mask = Mask(n, {0, 0});
    } else if (!full) {
      // A dim masked down to one index reads one place: fold it into the offset so the stride is 0.
      for (size_t i = 0; i < n; i++)
        if (m[i].second - m[i].first == 1 && v.strides[i] != 0) {
          v.offset += v.strides[i] * m[i].first;
          v.strides[i] = 0;
        }
      v.mask = std::move(m);
    }
  }
  v.contiguous = v.offset == 0 && !v.mask && v.strides == strides_for_shape(shape);
  return v;
}

View View::permute(const std::vector<int64_t>& axes) const {
  Shape sh, st;
  Mask m;
  for (int64_t a : axes) {
    sh.push_back(shape[a]);
    st.push_back(strides[a]);
    if (mask) m.push_back((*mask)[a]);
  }
  return create(sh, st, offset, mask ? std::optional<Mask>(m) : std::nullopt);
}

View View::expand(const Shape& new_shape) const {
  if (prod(shape) == 0) return create(new_shape);
  std::optional<Mask> m;
  if (mask) {
    m = *mask;
    // A grown dim had size 1: its mask was (0,1) (valid everywhere after growing) or (0,0) (nowhere).
    for (size_t i = 0; i < shape.size(); i++)
      if (shape[i] != new_shape[i] && (*m)[i] == std::pair<sint, sint>{0, 1}) (*m)[i] = {0, new_shape[i]};
  }
  return create(new_shape, strides, offset, m);
}

namespace {
// Re-window a view onto [arg[i].first, arg[i].second) of each dim (begins may be negative and ends past the
// shape for pads). The old mask moves with the window; `extra` (in new coordinates) is intersected in.
View resize(const View& v, const Mask& arg, const std::optional<Mask>& extra) {
  size_t n = v.shape.size();
  Shape sh(n);
  sint off = v.offset;
  for (size_t i = 0; i < n; i++) {
    sh[i] = arg[i].second - arg[i].first;
    off += v.strides[i] * arg[i].first;
  }
  std::optional<Mask> m = extra;
  if (v.mask) {
    Mask moved(n);
    for (size_t i = 0; i < n; i++) {
      auto [b, e] = (*v.mask)[i];
      moved[i] = {clamp(b - arg[i].first, 0, sh[i]), clamp(e - arg[i].first, 0, sh[i])};
      if (m) moved[i] = {smax(moved[i].first, (*m)[i].first), smin(moved[i].second, (*m)[i].second)};
    }
    m = std::move(moved);
  }
  return View::create(sh, v.strides, off, m);
}
}  // namespace

View View::pad(const Mask& arg) const {
  bool any = false;
  for (auto [b, e] : arg) any |= b != 0 || e != 0;
  if (!any) return *this;
  Mask window(shape.size()), valid(shape.size());
  for (size_t i = 0; i < shape.size(); i++) {
    window[i] = {-arg[i].first, shape[i] + arg[i].second};
    valid[i] = {arg[i].first, arg[i].first + shape[i]};
  }
  return resize(*this, window, valid);
}

View View::shrink(const Mask& arg) const {
  if (prod(shape) == 0) {
    Shape sh;
    for (auto [b, e] : arg) sh.push_back(e - b);
    return create(sh);
  }
  return resize(*this, arg, std::nullopt);
}

View View::flip(const std::vector<bool>& axes) const {
  Shape st = strides;
  sint off = offset;
  std::optional<Mask> m = mask;
  for (size_t i = 0; i < shape.size(); i++) {
    if (!axes[i]) continue;
    off += (shape[i] - 1) * strides[i];
    st[i] = -strides[i];
    if (m) (*m)[i] = {shape[i] - (*m)[i].second, shape[i] - (*m)[i].first};
  }
  return create(shape, st, off, m);
}

bool View::symbolic() const {
  auto sym = [](const Shape& s) { return std::any_of(s.begin(), s.end(), [](const sint& d) { return d.is_symbolic(); }); };
  if (offset.is_symbolic() || sym(shape) || sym(strides)) return true;
  if (mask)
    for (auto& [b, e] : *mask)
      if (b.is_symbolic() || e.is_symbolic()) return true;
  return false;
}

size_t View::hash() const {
  size_t h = offset.hash() ^ (contiguous ? 0x51ed27 : 0);
  auto mix = [&](const sint& v) { h ^= v.hash() + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2); };
  for (const sint& s : shape) mix(s);
  mix(-1);
  for (const sint& s : strides) mix(s);
  if (mask)
    for (auto [b, e] : *mask) mix(b), mix(e);
  return h;
}

namespace {
// Python's tuple repr: "(4, 4)", "(4,)", "()".
std::string tuple_repr(const std::vector<std::string>& items) {
  std::string s = "(";
  for (size_t i = 0; i < items.size(); i++) s += (i ? ", " : "") + items[i];
  return s + (items.size() == 1 ? ",)" : ")");
}
std::string ints_repr(const Shape& v) {
  std::vector<std::string> items;
  for (const sint& x : v) items.push_back(x.str());
  return tuple_repr(items);
}
}  // namespace

std::string View::repr() const {
  std::string m = "None";
  if (mask) {
    std::vector<std::string> items;
    for (auto [b, e] : *mask) items.push_back(ints_repr({b, e}));
    m = tuple_repr(items);
  }
  return "View(shape=" + ints_repr(shape) + ", strides=" + ints_repr(strides) + ", offset=" + offset.str() +
         ", mask=" + m + ", contiguous=" + (contiguous ? "True" : "False") + ")";
}

}  // namespace tg
