// Movement ops: each checks its arguments (tg::Error naming op and shapes) and returns a view of the same
// base; no data moves.
#include "tensor/tensor_internal.h"

namespace tg {

std::string fmt_pairs(const PadArg& p) {
  std::string r = "(";
  for (size_t i = 0; i < p.size(); i++)
    r += (i ? ", " : "") + std::string("(") + p[i].first.str() + ", " + p[i].second.str() + ")";
  return r + ")";
}

namespace {

Tensor movement(const Tensor& t, Ops op, Shape arg) {
  return Tensor(movement_uop(op, t.uop(), std::move(arg)), t.device());
}

Shape flat_pairs(const PadArg& p) {
  Shape out;
  for (auto& [b, e] : p) out.insert(out.end(), {b, e});
  return out;
}

}  // namespace

Tensor Tensor::reshape(const Shape& new_shape) const {
  Shape s = shape(), out = new_shape;
  int64_t infer = -1;
  sint known = 1;
  for (size_t i = 0; i < out.size(); i++) {
    if (out[i] == -1) {
      if (infer != -1) throw Error("reshape: only one dimension can be -1, got " + to_string(new_shape));
      infer = int64_t(i);
    } else if (out[i] < 0) {
      throw Error("reshape: negative dimension in " + to_string(new_shape));
    } else {
      known *= out[i];
    }
  }
  if (infer != -1) {
    if (known == 0 || !same_size(tg::prod(s) % known, 0))
      throw Error("reshape: cannot reshape " + to_string(s) + " (" + tg::prod(s).str() + " elements) to " +
                  to_string(new_shape));
    out[size_t(infer)] = tg::prod(s) / known;
  }
  // A symbolic tensor reshaped to numbers takes its variables' current values (tinygrad's jf(x).reshape(3, i)).
  const bool at_bound_values = is_symbolic(s) && !is_symbolic(out) && tg::prod(out) == tg::prod(s).bound_value();
  if (!same_size(tg::prod(out), tg::prod(s)) && !at_bound_values)
    throw Error("reshape: cannot reshape " + to_string(s) + " (" + tg::prod(s).str() + " elements) to " +
                to_string(out) + " (" + tg::prod(out).str() + " elements)");
  if (out == s) return *this;
  return movement(*this, Ops::RESHAPE, out);
}

Tensor Tensor::permute(const std::vector<int64_t>& order) const {
  Shape s = shape();
  if (order.size() != s.size())
    throw Error("permute: order " + to_string(order) + " does not match the " + std::to_string(s.size()) +
                " dims of shape " + to_string(s));
  std::vector<int64_t> axes;
  std::vector<bool> seen(s.size(), false);
  for (int64_t a : order) {
    int64_t n = normalize_axis("permute", a, s);
    if (seen[size_t(n)]) throw Error("permute: order " + to_string(order) + " repeats axis " + std::to_string(a));
    seen[size_t(n)] = true;
    axes.push_back(n);
  }
  bool identity = true;
  for (size_t i = 0; i < axes.size(); i++) identity &= axes[i] == int64_t(i);
  if (identity) return *this;
  return movement(*this, Ops::PERMUTE, Shape(axes.begin(), axes.end()));
}

Tensor Tensor::expand(const Shape& new_shape) const {
  Shape s = shape();
  if (new_shape.size() < s.size())
    throw Error("expand: cannot expand " + to_string(s) + " to fewer dims " + to_string(new_shape));
  Shape lead(new_shape.size() - s.size(), 1), padded = lead;
  padded.insert(padded.end(), s.begin(), s.end());
  Shape out = new_shape;
  for (size_t i = 0; i < out.size(); i++) {
    if (out[i] == -1) out[i] = padded[i];
    if (out[i] != padded[i] && padded[i] != 1)
      throw Error("expand: cannot expand " + to_string(s) + " to " + to_string(new_shape) + " (dim " +
                  std::to_string(i) + " has size " + padded[i].str() + ", expected 1 or equal)");
    if (out[i] < 0) throw Error("expand: negative dimension in " + to_string(new_shape));
  }
  Tensor t = padded.size() == s.size() ? *this : reshape(padded);
  if (out == padded) return t;
  return movement(t, Ops::EXPAND, out);
}

Tensor Tensor::pad(const PadArg& padding) const {
  Shape s = shape();
  if (padding.size() != s.size())
    throw Error("pad: padding " + fmt_pairs(padding) + " has " + std::to_string(padding.size()) +
                " entries for the " + std::to_string(s.size()) + " dims of shape " + to_string(s));
  bool any = false;
  for (auto& [b, e] : padding) {
    if (!always_le(0, b) || !always_le(0, e))
      throw Error("pad: negative padding " + fmt_pairs(padding) + " for shape " + to_string(s) +
                  " (expected sizes >= 0 over every value of their variables; use shrink to cut)");
    any |= b != 0 || e != 0;
  }
  if (!any) return *this;
  return movement(*this, Ops::PAD, flat_pairs(padding));
}

Tensor Tensor::shrink(const PadArg& bounds) const {
  Shape s = shape();
  if (bounds.size() != s.size())
    throw Error("shrink: bounds " + fmt_pairs(bounds) + " have " + std::to_string(bounds.size()) +
                " entries for the " + std::to_string(s.size()) + " dims of shape " + to_string(s));
  bool identity = true;
  for (size_t i = 0; i < s.size(); i++) {
    auto [b, e] = bounds[i];
    // Checked over every value the variables may take, so that a TinyJit replay with another value stays in bounds.
    if (!always_le(0, b) || !always_le(b, e) || !always_le(e, s[i]))
      throw Error("shrink: bounds " + fmt_pairs(bounds) + " do not fit shape " + to_string(s) +
                  " (expected 0 <= begin <= end <= size" + std::string(bounds_symbolic(bounds) ? ", over the variables' whole ranges)" : ")"));
    identity &= b == 0 && e == s[i];
  }
  if (identity) return *this;
  return movement(*this, Ops::SHRINK, flat_pairs(bounds));
}

Tensor Tensor::flip(int64_t axis) const { return flip(std::vector<int64_t>{axis}); }

Tensor Tensor::flip(const std::vector<int64_t>& axes) const {
  Shape s = shape();
  std::vector<bool> f(s.size(), false);
  for (int64_t a : axes) {
    int64_t n = normalize_axis("flip", a, s);
    if (f[size_t(n)]) throw Error("flip: axis " + std::to_string(a) + " given twice");
    f[size_t(n)] = true;
  }
  if (axes.empty()) return *this;
  std::vector<int64_t> flags;
  for (bool b : f) flags.push_back(b);
  return movement(*this, Ops::FLIP, Shape(flags.begin(), flags.end()));
}

Tensor Tensor::transpose(int64_t dim0, int64_t dim1) const {
  Shape s = shape();
  int64_t a = normalize_axis("transpose", dim0, s), b = normalize_axis("transpose", dim1, s);
  std::vector<int64_t> order(s.size());
  for (size_t i = 0; i < order.size(); i++) order[i] = int64_t(i);
  std::swap(order[size_t(a)], order[size_t(b)]);
  return permute(order);
}

Tensor Tensor::flatten(int64_t start_dim) const {
  Shape s = shape();
  if (s.empty()) return reshape({1});
  int64_t st = normalize_axis("flatten", start_dim, s);
  Shape out(s.begin(), s.begin() + st);
  out.push_back(-1);
  if (tg::prod(s) == 0) {
    int64_t rest = 1;
    for (size_t i = size_t(st); i < s.size(); i++) rest *= s[i];
    out.back() = rest;
  }
  return reshape(out);
}

}  // namespace tg
