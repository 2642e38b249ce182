// Tensor: movement (views), joining and splitting, reductions and indexing. Axis arguments take tinygrad's
// forms: None (every axis), an int (negative counts from the end) or a tuple/list of ints.
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <algorithm>
#include <string_view>

#include "bindings.h"

namespace tgpy {
namespace {

using tg::Tensor;
using Ints = std::vector<int64_t>;

// None -> nullopt, an int -> {int}, a sequence -> its ints.
std::optional<Ints> axes_arg(nb::handle axis) {
  if (axis.is_none()) return std::nullopt;
  if (PyLong_Check(axis.ptr())) return Ints{nb::cast<int64_t>(axis)};
  return nb::cast<Ints>(axis);
}

// Axes made non-negative and sorted, each checked against the rank.
Ints normalized(const Tensor& t, const Ints& axes) {
  Ints out;
  for (int64_t a : axes) {
    int64_t n = a < 0 ? a + std::max<int64_t>(t.ndim(), 1) : a;  // a 0-d tensor has axis 0, also spelled -1
    if (n < 0 || n >= std::max<int64_t>(t.ndim(), 1))
      throw nb::index_error(
          ("axis " + std::to_string(a) + " is out of range for a tensor of " + std::to_string(t.ndim()) + " dims")
              .c_str());
    out.push_back(n);
  }
  std::sort(out.begin(), out.end());
  return out;
}

Ints every_axis(const Tensor& t) {
  Ints a(size_t(t.ndim()));
  for (size_t i = 0; i < a.size(); i++) a[i] = int64_t(i);
  return a;
}

// The shape a reduction over `axes` keeps when keepdim is false.
tg::Shape squeezed(const Tensor& t, const Ints& axes) {
  tg::Shape s;
  for (int64_t i = 0; i < t.ndim(); i++)
    if (std::find(axes.begin(), axes.end(), i) == axes.end()) s.push_back(t.shape()[size_t(i)]);
  return s;
}

// A reduction the C++ API offers only over one axis or all, applied one axis at a time (from the last, so
// earlier indices stay valid).
template <class F>
Tensor per_axis(const Tensor& t, nb::handle axis, bool keepdim, F one, Tensor all) {
  std::optional<Ints> ax = axes_arg(axis);
  if (!ax) return keepdim ? all.reshape(tg::Shape(size_t(t.ndim()), 1)) : all;
  Ints a = normalized(t, *ax);
  Tensor r = t;
  for (auto it = a.rbegin(); it != a.rend(); ++it) r = one(r, *it);
  return keepdim ? r : r.reshape(squeezed(t, a));
}

Tensor var_of(const Tensor& t, nb::handle axis, bool keepdim, double correction) {
  std::optional<Ints> ax = axes_arg(axis);
  if (!ax) return t.var(std::nullopt, keepdim, correction);
  if (ax->size() == 1) return t.var((*ax)[0], keepdim, correction);
  Ints a = normalized(t, *ax);
  int64_t n = 1;
  for (int64_t i : a) n *= t.shape()[size_t(i)];
  Tensor sq = (t - t.mean(a, true)).square().sum(a, keepdim);
  return sq / std::max<double>(0, double(n) - correction);
}

Tensor logsumexp_of(const Tensor& t, nb::handle axis, bool keepdim) {
  std::optional<Ints> ax = axes_arg(axis);
  if (ax && ax->size() == 1) return t.logsumexp((*ax)[0], keepdim);
  if (!ax) {
    Tensor r = t.flatten().logsumexp(0, false);
    return keepdim ? r.reshape(tg::Shape(size_t(t.ndim()), 1)) : r;
  }
  Ints a = normalized(t, *ax);
  Tensor m = t.max(a, true).detach();
  Tensor r = (t - m).exp().sum(a, true).log() + m;
  return keepdim ? r : r.reshape(squeezed(t, a));
}

// (before, after) pairs from tinygrad's two pad forms: per dim ((1, 1), None, ...) or flat torch-style
// (left, right, top, bottom) starting from the last dim.
tg::PadArg pad_pairs(const Tensor& t, nb::handle padding) {
  nb::sequence seq = nb::borrow<nb::sequence>(padding);
  size_t n = nb::len(seq);
  bool flat = n > 0;
  for (nb::handle h : seq) flat = flat && PyLong_Check(h.ptr());
  tg::PadArg out(size_t(t.ndim()), {0, 0});
  if (flat) {
    if (n % 2 || n / 2 > size_t(t.ndim()))
      throw nb::value_error("pad: a flat padding needs an even count of at most 2 * ndim values");
    for (size_t k = 0; k < n / 2; k++)
      out[size_t(t.ndim()) - 1 - k] = {nb::cast<tg::sint>(seq[2 * k]), nb::cast<tg::sint>(seq[2 * k + 1])};
    return out;
  }
  if (n != size_t(t.ndim())) throw nb::value_error("pad: padding must give one (before, after) or None per dim");
  size_t i = 0;
  for (nb::handle h : seq) {
    if (!h.is_none()) out[i] = nb::cast<std::pair<tg::sint, tg::sint>>(h);
    i++;
  }
  return out;
}

tg::PadArg shrink_pairs(const Tensor& t, nb::handle arg) {
  nb::sequence seq = nb::borrow<nb::sequence>(arg);
  if (nb::len(seq) != size_t(t.ndim())) throw nb::value_error("shrink: give one (begin, end) or None per dim");
  tg::PadArg out;
  size_t i = 0;
  for (nb::handle h : seq) {
    out.push_back(h.is_none() ? std::pair<tg::sint, tg::sint>{0, t.shape()[i]} : nb::cast<std::pair<tg::sint, tg::sint>>(h));
    i++;
  }
  return out;
}

tg::Index index_of(nb::handle h) {
  if (h.is_none()) return tg::None;
  if (h.ptr() == Py_Ellipsis) return tg::Ellipsis;
  if (PySlice_Check(h.ptr())) {
    auto get = [&](const char* a) -> std::optional<int64_t> {
      nb::object v = h.attr(a);
      if (v.is_none()) return std::nullopt;
      if (PyBool_Check(v.ptr()) || !PyIndex_Check(v.ptr()))
        throw nb::type_error(("slice indices must be integers or None, got " + std::string(nb::str(v.type()).c_str()))
                                 .c_str());
      return nb::cast<int64_t>(nb::int_(v));
    };
    std::optional<int64_t> step = get("step");
    if (step && *step == 0) throw nb::value_error("slice step cannot be zero");
    return tg::Slice(get("start"), get("stop"), step.value_or(1));
  }
  if (PyBool_Check(h.ptr())) throw nb::index_error("indexing with a bool is not supported");
  if (PyLong_Check(h.ptr()) || PyIndex_Check(h.ptr())) return nb::cast<int64_t>(nb::int_(h));
  // A tensor, a list, a tuple inside the index tuple (torch reads it as a list) or an array: an index tensor,
  // which must hold ints (bool masks and floats are IndexError, as in tinygrad).
  bool listlike = PyList_Check(h.ptr()) || PyTuple_Check(h.ptr()) || PyObject_CheckBuffer(h.ptr());
  if (nb::isinstance<Tensor>(h) || listlike) {
    Tensor i = listlike ? tensor_from(h, {}) : nb::cast<Tensor>(h);
    if (i.numel() == 0 && listlike) i = i.cast(tg::dtypes::int32);  // [] holds no values to type it
    if (!i.dtype().is_int())
      throw nb::index_error(("tensors used as indices must be int tensors, got " + i.dtype().name()).c_str());
    return i;
  }
  throw nb::index_error(("cannot index a tensor with " + std::string(nb::str(h.type()).c_str())).c_str());
}

Tensor getitem(const Tensor& t, nb::handle idx) {
  std::vector<tg::Index> ix;
  if (PyTuple_Check(idx.ptr()))
    for (nb::handle h : nb::borrow<nb::tuple>(idx)) ix.push_back(index_of(h));
  else
    ix.push_back(index_of(idx));
  // More indices than dims is IndexError before any bound is checked (torch's and tinygrad's order).
  size_t real = 0, ellipses = 0;
  for (const tg::Index& i : ix) {
    ellipses += std::holds_alternative<tg::EllipsisIndex>(i.v);
    real += !std::holds_alternative<tg::NoneIndex>(i.v) && !std::holds_alternative<tg::EllipsisIndex>(i.v);
  }
  if (ellipses > 1) throw nb::index_error("an index can only have a single ellipsis (...)");
  if (real > size_t(t.ndim()))
    throw nb::index_error(("too many indices for tensor of dimension " + std::to_string(t.ndim())).c_str());
  // An int past the end is IndexError (not RuntimeError), so Python's iteration protocol stops on it.
  size_t dim = 0;
  for (const tg::Index& i : ix) {
    if (std::holds_alternative<tg::EllipsisIndex>(i.v)) break;
    if (std::holds_alternative<tg::NoneIndex>(i.v)) continue;
    if (const int64_t* k = std::get_if<int64_t>(&i.v)) {
      if (dim >= size_t(t.ndim())) throw nb::index_error("too many indices for tensor");
      int64_t n = t.shape()[dim];
      if (*k >= n || *k < -n)
        throw nb::index_error(("index " + std::to_string(*k) + " is out of bounds for dim " + std::to_string(dim) +
                               " of size " + std::to_string(n))
                                  .c_str());
    }
    dim++;
  }
  try {
    return t[ix];
  } catch (const tg::Error& e) {  // index tensors that do not broadcast: IndexError, as torch and tinygrad
    if (std::string_view(e.what()).find("cannot be broadcast") != std::string_view::npos)
      throw nb::index_error(e.what());
    throw;
  }
}

}  // namespace

void bind_tensor_shape(nb::class_<Tensor>& c) {
  // ---- movement (tensor.py adds the varargs forms) ----
  c.def("_reshape", &Tensor::reshape, nb::arg("shape"))
      .def("_permute", &Tensor::permute, nb::arg("order"))
      .def("_expand", &Tensor::expand, nb::arg("shape"))
      .def("_flip", nb::overload_cast<const Ints&>(&Tensor::flip, nb::const_), nb::arg("axis"))
      .def("_repeat", &Tensor::repeat, nb::arg("repeats"))
      .def(
          "pad",
          [](const Tensor& t, nb::handle padding, const std::string& mode, nb::handle value) {
            std::optional<tg::ConstValue> v = py_number(value);
            if (!v) throw nb::type_error("pad: value must be a number");
            tg::PadArg pairs = pad_pairs(t, padding);
            // tinygrad raises NotImplementedError for an unknown mode and for circular padding that cuts
            bool cuts = std::any_of(pairs.begin(), pairs.end(), [](auto& p) { return p.first < 0 || p.second < 0; });
            if ((mode != "constant" && mode != "reflect" && mode != "replicate" && mode != "circular") ||
                (mode == "circular" && cuts)) {
              std::string what =
                  mode == "circular"
                      ? "pad: circular padding cannot be negative"
                      : "pad: mode '" + mode + "' is not supported (constant, reflect, replicate or circular)";
              PyErr_SetString(PyExc_NotImplementedError, what.c_str());
              throw nb::python_error();
            }
            return t.pad(pairs, mode, *v);
          },
          nb::arg("padding"), nb::arg("mode") = "constant", nb::arg("value") = 0.0)
      .def(
          "shrink", [](const Tensor& t, nb::handle arg) { return t.shrink(shrink_pairs(t, arg)); }, nb::arg("arg"))
      .def("transpose", &Tensor::transpose, nb::arg("dim0") = 1, nb::arg("dim1") = 0)
      .def_prop_ro("T", &Tensor::T)
      .def("flatten", nb::overload_cast<int64_t, int64_t>(&Tensor::flatten, nb::const_), nb::arg("start_dim") = 0,
           nb::arg("end_dim") = -1)
      .def("unflatten", &Tensor::unflatten, nb::arg("dim"), nb::arg("sizes"))
      .def(
          "squeeze", [](const Tensor& t, std::optional<int64_t> dim) { return dim ? t.squeeze(*dim) : t.squeeze(); },
          nb::arg("dim").none() = nb::none())
      .def("unsqueeze", &Tensor::unsqueeze, nb::arg("dim"))
      .def_static("_cat", &Tensor::cat, nb::arg("tensors"), nb::arg("dim") = 0)
      .def_static("_stack", &Tensor::stack, nb::arg("tensors"), nb::arg("dim") = 0)
      .def(
          "split",
          [](const Tensor& t, nb::handle sizes, int64_t dim) {
            return PyLong_Check(sizes.ptr()) ? t.split(nb::cast<int64_t>(sizes), dim)
                                             : t.split(nb::cast<Ints>(sizes), dim);
          },
          nb::arg("sizes"), nb::arg("dim") = 0)
      .def("chunk", &Tensor::chunk, nb::arg("chunks"), nb::arg("dim") = 0)
      .def(
          "roll",
          [](const Tensor& t, nb::handle shifts, nb::handle dims) {
            if (dims.is_none()) {  // torch/tinygrad: no dims rolls the flattened tensor, by one shift
              Ints s = *axes_arg(shifts);
              if (s.size() != 1)
                throw tg::Error("roll: " + std::to_string(s.size()) + " shifts without dims (expected one shift)");
              return t.flatten().roll(s[0], 0).reshape(t.shape());
            }
            Ints s = *axes_arg(shifts), d = *axes_arg(dims);
            return t.roll(s, d);
          },
          nb::arg("shifts"), nb::arg("dims").none() = nb::none())
      .def("__getitem__", &getitem, nb::arg("indices").none())
      // ---- indexing helpers ----
      .def("gather", &Tensor::gather, nb::arg("dim"), nb::arg("index"))
      .def(
          "scatter",
          [](const Tensor& t, int64_t dim, const Tensor& index, nb::handle src, std::optional<std::string> reduce) {
            std::string r = reduce.value_or("");
            if (std::optional<tg::ConstValue> v = py_number(src)) return t.scatter(dim, index, *v, r);
            return t.scatter(dim, index, nb::cast<Tensor>(src), r);
          },
          nb::arg("dim"), nb::arg("index"), nb::arg("src"), nb::arg("reduce").none() = nb::none())
      .def("scatter_reduce", &Tensor::scatter_reduce, nb::arg("dim"), nb::arg("index"), nb::arg("src"),
           nb::arg("reduce"), nb::arg("include_self") = true)
      .def("masked_select", &Tensor::masked_select, nb::arg("mask"))
      .def("diagonal", &Tensor::diagonal, nb::arg("offset") = 0, nb::arg("dim1") = 0, nb::arg("dim2") = 1)
      .def("unfold", &Tensor::unfold, nb::arg("dim"), nb::arg("size"), nb::arg("step"))
      .def("one_hot", &Tensor::one_hot, nb::arg("num_classes") = -1)
      .def("tril", &Tensor::tril, nb::arg("diagonal") = 0)
      .def("triu", &Tensor::triu, nb::arg("diagonal") = 0);

  // ---- reductions ----
#define TG_REDUCE(name)                                                               \
  c.def(                                                                              \
      #name,                                                                          \
      [](const Tensor& t, nb::handle axis, bool keepdim) {                            \
        std::optional<Ints> ax = axes_arg(axis);                                      \
        if (!ax) return keepdim && t.ndim() ? t.name(every_axis(t), true) : t.name(); \
        return t.name(*ax, keepdim);                                                  \
      },                                                                              \
      nb::arg("axis").none() = nb::none(), nb::arg("keepdim") = false);
  TG_REDUCE(sum)
  // sum(dtype=): accumulate in dtype (tinygrad_cpp/tensor.py routes to it)
  c.def(
      "_sum_as",
      [](const Tensor& t, nb::handle axis, bool keepdim, nb::handle dtype) {
        std::optional<Ints> ax = axes_arg(axis);
        const tg::DType dt = *dtype_arg(dtype);
        return t.sum(ax ? *ax : every_axis(t), keepdim, dt);
      },
      nb::arg("axis").none(), nb::arg("keepdim"), nb::arg("dtype"));
  TG_REDUCE(max)
  TG_REDUCE(min)
  TG_REDUCE(mean)
#undef TG_REDUCE
#define TG_REDUCE1(name)                                                                             \
  c.def(                                                                                             \
      #name,                                                                                         \
      [](const Tensor& t, nb::handle axis, bool keepdim) {                                           \
        return per_axis(                                                                             \
            t, axis, keepdim, [](const Tensor& r, int64_t a) { return r.name(a, true); }, t.name()); \
      },                                                                                             \
      nb::arg("axis").none() = nb::none(), nb::arg("keepdim") = false);
      TG_REDUCE1(prod) TG_REDUCE1(any) TG_REDUCE1(all)
#undef TG_REDUCE1
          c.def("var", &var_of, nb::arg("axis").none() = nb::none(), nb::arg("keepdim") = false,
                nb::arg("correction") = 1.0)
              .def(
                  "std",
                  [](const Tensor& t, nb::handle axis, bool keepdim, double correction) {
                    // as Tensor::std: a zero variance has gradient 0 (sqrt sees 1 there), not nan
                    Tensor v = var_of(t, axis, keepdim, correction), zero = v == 0;
                    return zero.where(v, zero.where(1.0, v).sqrt());
                  },
                  nb::arg("axis").none() = nb::none(), nb::arg("keepdim") = false, nb::arg("correction") = 1.0)
              .def("logsumexp", &logsumexp_of, nb::arg("axis").none() = nb::none(), nb::arg("keepdim") = false)
              .def("argmax", &Tensor::argmax, nb::arg("axis").none() = nb::none(), nb::arg("keepdim") = false)
              .def("argmin", &Tensor::argmin, nb::arg("axis").none() = nb::none(), nb::arg("keepdim") = false)
              .def("cumsum", &Tensor::cumsum, nb::arg("axis") = 0)
              .def("cumprod", &Tensor::cumprod, nb::arg("axis"))
              .def("cummax", &Tensor::cummax, nb::arg("axis") = 0)
              .def("logcumsumexp", &Tensor::logcumsumexp, nb::arg("axis") = 0)
              .def("softmax", &Tensor::softmax, nb::arg("axis") = -1)
              .def("log_softmax", &Tensor::log_softmax, nb::arg("axis") = -1)
              .def("topk", &Tensor::topk, nb::arg("k"), nb::arg("dim") = -1, nb::arg("largest") = true,
                   nb::arg("sorted_") = true)
              .def("sort", &Tensor::sort, nb::arg("dim") = -1, nb::arg("descending") = false)
              .def(
                  "dot",
                  [](const Tensor& t, const Tensor& w, nb::handle dtype) {
                    std::optional<tg::DType> dt = dtype_arg(dtype);
                    return dt ? t.dot(w, *dt) : t.dot(w);
                  },
                  nb::arg("w"), nb::arg("dtype").none() = nb::none())
              .def(
                  "matmul",
                  [](const Tensor& t, const Tensor& x, bool reverse, nb::handle dtype) {
                    const Tensor &a = reverse ? x : t, &b = reverse ? t : x;
                    std::optional<tg::DType> dt = dtype_arg(dtype);
                    return dt ? a.dot(b, *dt) : a.dot(b);
                  },
                  nb::arg("x"), nb::arg("reverse") = false, nb::arg("dtype").none() = nb::none());
}

}  // namespace tgpy
