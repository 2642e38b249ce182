// ShapeTracker: movement ops on the last View, stacking a View when a reshape cannot stay on one.
#include "shape/shapetracker.h"

#include <algorithm>
#include <limits>

#include "shape/indexing.h"
#include "uop/uop.h"

namespace tg {

ShapeTracker ShapeTracker::from_shape(const Shape& shape) { return ShapeTracker{{View::create(shape)}}; }

sint ShapeTracker::size() const { return prod(shape()); }

bool ShapeTracker::contiguous() const { return views.size() == 1 && views[0].contiguous; }

bool ShapeTracker::has_mask() const {
  return std::any_of(views.begin(), views.end(), [](const View& v) { return v.mask.has_value(); });
}

namespace {
// Largest index one view reaches over its valid box, or -1 if it has no valid element.
int64_t view_max_index(const View& v) {
  if (prod(v.shape) == 0) return -1;
  int64_t idx = v.offset;
  for (size_t i = 0; i < v.shape.size(); i++) {
    int64_t b = v.mask ? (*v.mask)[i].first.value() : 0, e = (v.mask ? (*v.mask)[i].second : v.shape[i]).value();
    if (b >= e) return -1;
    idx += v.strides[i] > 0 ? v.strides[i] * (e - 1) : v.strides[i] * b;
  }
  return idx;
}
}  // namespace

int64_t ShapeTracker::real_size() const {
  if (size() == 0) return 0;
  // A symbolic tracker is bounded over every value of its variables, by the index math's ranges.
  const bool sym = symbolic();
  int64_t first = sym ? std::numeric_limits<int64_t>::max() - 1 : view_max_index(views.front());
  if (!sym && (views.size() == 1 || first < 0)) return first + 1;
  // Several views: bound the composed index with the symbolic ranges, never past what the first view reaches.
  std::vector<UOpPtr> idxs;
  for (size_t i = 0; i < shape().size(); i++)
    idxs.push_back(
        UOp::make(Ops::DEFINE_VAR, dtypes::int64, {}, NamedRange{"ridx" + std::to_string(i), 0, shape()[i].vmax() - 1}));
  auto [idx, valid] = to_indexed_uops(*this, idxs, dtypes::int64);  // int64: bounds of any size stay exact
  if (valid->vmax == 0) return 0;
  return std::max<int64_t>(0, std::min(idx->vmax, first) + 1);
}

ShapeTracker ShapeTracker::reshape(const Shape& new_shape) const {
  ShapeTracker st = *this;
  if (auto v = views.back().reshape(new_shape))
    st.views.back() = *v;
  else
    st.views.push_back(View::create(new_shape));
  return st;
}

ShapeTracker ShapeTracker::permute(const std::vector<int64_t>& axes) const {
  ShapeTracker st = *this;
  st.views.back() = views.back().permute(axes);
  return st;
}

ShapeTracker ShapeTracker::expand(const Shape& new_shape) const {
  ShapeTracker st = *this;
  st.views.back() = views.back().expand(new_shape);
  return st;
}

ShapeTracker ShapeTracker::pad(const Mask& arg) const {
  ShapeTracker st = *this;
  st.views.back() = views.back().pad(arg);
  return st;
}

ShapeTracker ShapeTracker::shrink(const Mask& arg) const {
  ShapeTracker st = *this;
  st.views.back() = views.back().shrink(arg);
  return st;
}

ShapeTracker ShapeTracker::flip(const std::vector<bool>& axes) const {
  ShapeTracker st = *this;
  st.views.back() = views.back().flip(axes);
  return st;
}

ShapeTracker ShapeTracker::operator+(const ShapeTracker& st) const {
  ShapeTracker ret = *this;
  for (const View& v : st.views) {
    ret.views.push_back(v);
    ret = ret.simplify();
  }
  return ret;
}

ShapeTracker ShapeTracker::simplify() const {
  std::vector<View> vs = views;
  // Merge the outermost mergeable pair first; restart after every merge since the result may merge again.
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t i = vs.size() - 1; i >= 1; i--) {
      if (auto m = View::merge(vs[i - 1], vs[i])) {
        vs[i - 1] = *m;
        vs.erase(vs.begin() + int64_t(i));
        changed = true;
        break;
      }
    }
  }
  return ShapeTracker{vs};
}

bool ShapeTracker::symbolic() const {
  return std::any_of(views.begin(), views.end(), [](const View& v) { return v.symbolic(); });
}

ShapeTracker ShapeTracker::unbind(const std::function<void(const UOp& bind)>& on_bind) const {
  return rebind([&](const UOp& b) {
    on_bind(b);
    return b.src[0];
  });
}

sint rebind(const sint& s, const std::function<std::shared_ptr<const UOp>(const UOp& bind)>& replace) {
  if (s.is_int()) return s;
  return sint::from_uop(substitute(s.uop(), [&](const UOp* u) { return u->op == Ops::BIND ? replace(*u) : nullptr; }));
}

ShapeTracker ShapeTracker::rebind(const std::function<std::shared_ptr<const UOp>(const UOp& bind)>& replace) const {
  auto un = [&](sint& s) { s = tg::rebind(s, replace); };
  ShapeTracker st = *this;
  for (View& v : st.views) {
    for (sint& s : v.shape) un(s);
    for (sint& s : v.strides) un(s);
    un(v.offset);
    if (v.mask)
      for (auto& [b, e] : *v.mask) un(b), un(e);
  }
  return st;
}

size_t ShapeTracker::hash() const {
  size_t h = views.size();
  for (const View& v : views) h ^= v.hash() + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  return h;
}

std::string ShapeTracker::repr() const {
  std::string s = "ShapeTracker(views=(";
  for (size_t i = 0; i < views.size(); i++) s += (i ? ", " : "") + views[i].repr();
  return s + (views.size() == 1 ? ",))" : "))");
}

bool ShapeTracker::lower_views_keep_runs(int64_t n) const {
  for (size_t i = 0; i + 1 < views.size(); i++) {
    const View& v = views[i];
    if (v.shape.empty()) return false;
    const size_t in = v.shape.size() - 1;
    if (v.shape[in] % n != 0 || v.strides[in] != 1 || v.offset % n != 0) return false;
    for (size_t d = 0; d < in; d++)
      if (v.shape[d] != 1 && v.strides[d] % n != 0) return false;
    if (v.mask && ((*v.mask)[in].first % n != 0 || (*v.mask)[in].second % n != 0)) return false;
  }
  return true;
}

}  // namespace tg
