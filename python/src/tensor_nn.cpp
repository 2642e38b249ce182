// Tensor: nn functional ops (linear, convolutions, pools, norms, attention, losses, einsum). Size arguments
// take an int or a tuple, as in tinygrad and torch.
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "bindings.h"

namespace tgpy {
namespace {

using tg::Tensor;
using Ints = std::vector<int64_t>;

// An int or a sequence of ints; `n` copies of a plain int when n > 0 (a pool's kernel_size=2 is 2x2).
Ints ints(nb::handle h, size_t n = 0) {
  if (PyLong_Check(h.ptr())) return Ints(std::max<size_t>(n, 1), nb::cast<int64_t>(h));
  return nb::cast<Ints>(h);
}

// tinygrad raises ValueError for a bad reduction= (the core's tg::Error would be RuntimeError).
const std::string& reduction_arg(const char* op, const std::string& reduction) {
  if (reduction != "mean" && reduction != "sum" && reduction != "none")
    throw nb::value_error(
        (std::string(op) + ": reduction must be 'mean', 'sum' or 'none', got '" + reduction + "'").c_str());
  return reduction;
}

}  // namespace

void bind_tensor_nn(nb::class_<Tensor>& c) {
  // The C++ linear takes a torch-style (out, in) weight; tensor.py's linear is tinygrad's (in, out) one.
  c.def("_linear_t", &Tensor::linear, nb::arg("weight"), nb::arg("bias").none() = nb::none())
      .def(
          "conv2d",
          [](const Tensor& x, const Tensor& w, std::optional<Tensor> b, int64_t groups, nb::handle stride,
             nb::handle dilation,
             nb::handle padding) { return x.conv2d(w, b, groups, ints(stride), ints(dilation), ints(padding)); },
          nb::arg("weight"), nb::arg("bias").none() = nb::none(), nb::arg("groups") = 1, nb::arg("stride") = 1,
          nb::arg("dilation") = 1, nb::arg("padding") = 0)
      .def(
          "conv_transpose2d",
          [](const Tensor& x, const Tensor& w, std::optional<Tensor> b, int64_t groups, nb::handle stride,
             nb::handle dilation, nb::handle padding, nb::handle output_padding) {
            return x.conv_transpose2d(w, b, groups, ints(stride), ints(dilation), ints(padding), ints(output_padding));
          },
          nb::arg("weight"), nb::arg("bias").none() = nb::none(), nb::arg("groups") = 1, nb::arg("stride") = 1,
          nb::arg("dilation") = 1, nb::arg("padding") = 0, nb::arg("output_padding") = 0)
      .def(
          "max_pool2d",
          [](const Tensor& x, nb::handle k, nb::handle stride, nb::handle dilation, nb::handle padding, bool ceil_mode,
             bool return_indices) -> nb::object {
            Ints ks = ints(k, 2), st = stride.is_none() ? Ints{} : ints(stride, ks.size());
            if (!return_indices) return nb::cast(x.max_pool2d(ks, st, ints(dilation), ints(padding), ceil_mode));
            auto [v, i] = x.max_pool2d_with_indices(ks, st, ints(dilation), ints(padding), ceil_mode);
            return nb::make_tuple(v, i);
          },
          nb::arg("kernel_size") = nb::make_tuple(2, 2), nb::arg("stride").none() = nb::none(), nb::arg("dilation") = 1,
          nb::arg("padding") = 0, nb::arg("ceil_mode") = false, nb::arg("return_indices") = false)
      .def(
          "avg_pool2d",
          [](const Tensor& x, nb::handle k, nb::handle stride, nb::handle dilation, nb::handle padding, bool ceil_mode,
             bool count_include_pad) {
            Ints ks = ints(k, 2);
            size_t np = ints(padding).size();
            if (np != 1 && np != ks.size() && np != 2 * ks.size())  // tinygrad: ValueError
              throw nb::value_error(("avg_pool2d: padding needs 1, " + std::to_string(ks.size()) + " or " +
                                     std::to_string(2 * ks.size()) + " entries, got " + std::to_string(np))
                                        .c_str());
            return x.avg_pool2d(ks, stride.is_none() ? Ints{} : ints(stride, ks.size()), ints(dilation), ints(padding),
                                ceil_mode, count_include_pad);
          },
          nb::arg("kernel_size") = nb::make_tuple(2, 2), nb::arg("stride").none() = nb::none(), nb::arg("dilation") = 1,
          nb::arg("padding") = 0, nb::arg("ceil_mode") = false, nb::arg("count_include_pad") = true)
      .def(
          "max_unpool2d",
          [](const Tensor& x, const Tensor& indices, nb::handle k, nb::handle stride, nb::handle dilation,
             nb::handle padding, nb::handle output_size) {
            Ints ks = ints(k, 2);
            return x.max_unpool2d(indices, ks, stride.is_none() ? Ints{} : ints(stride, ks.size()), ints(dilation),
                                  ints(padding), output_size.is_none() ? Ints{} : ints(output_size));
          },
          nb::arg("indices"), nb::arg("kernel_size") = nb::make_tuple(2, 2), nb::arg("stride").none() = nb::none(),
          nb::arg("dilation") = 1, nb::arg("padding") = 0, nb::arg("output_size").none() = nb::none())
      .def("interpolate", &Tensor::interpolate, nb::arg("size"), nb::arg("mode") = "linear",
           nb::arg("align_corners") = false)
      .def("layernorm", &Tensor::layernorm, nb::arg("axis") = -1, nb::arg("eps") = 1e-5)
      .def("batchnorm", &Tensor::batchnorm, nb::arg("weight").none(), nb::arg("bias").none(), nb::arg("mean"),
           nb::arg("invstd"), nb::arg("axis") = 1)
      .def(
          "scaled_dot_product_attention",
          [](const Tensor& q, const Tensor& k, const Tensor& v, std::optional<Tensor> mask, double dropout_p,
             bool is_causal) {
            Tensor r = q.scaled_dot_product_attention(k, v, mask, is_causal);
            return dropout_p > 0 ? r.dropout(dropout_p) : r;
          },
          nb::arg("key"), nb::arg("value"), nb::arg("attn_mask").none() = nb::none(), nb::arg("dropout_p") = 0.0,
          nb::arg("is_causal") = false)
      .def(
          "sparse_categorical_crossentropy",
          [](const Tensor& x, const Tensor& Y, int64_t ignore_index, double ls, const std::string& reduction) {
            return x.sparse_categorical_crossentropy(Y, ignore_index, ls,
                                                     reduction_arg("sparse_categorical_crossentropy", reduction));
          },
          nb::arg("Y"), nb::arg("ignore_index") = -1, nb::arg("label_smoothing") = 0.0, nb::arg("reduction") = "mean")
      .def(
          "cross_entropy",
          [](const Tensor& x, const Tensor& Y, const std::string& reduction, double ls) {
            return x.cross_entropy(Y, ls, reduction_arg("cross_entropy", reduction));
          },
          nb::arg("Y"), nb::arg("reduction") = "mean", nb::arg("label_smoothing") = 0.0)
      .def(
          "binary_crossentropy",
          [](const Tensor& x, const Tensor& Y, const std::string& reduction) {
            return x.binary_crossentropy(Y, reduction_arg("binary_crossentropy", reduction));
          },
          nb::arg("Y"), nb::arg("reduction") = "mean")
      .def(
          "binary_crossentropy_logits",
          [](const Tensor& x, const Tensor& Y, const std::string& reduction, nb::handle pos_weight) {
            const std::string& r = reduction_arg("binary_crossentropy_logits", reduction);
            if (pos_weight.is_none()) return x.binary_crossentropy_logits(Y, r);
            return x.binary_crossentropy_logits(Y, operand(x, pos_weight), r);
          },
          nb::arg("Y"), nb::arg("reduction") = "mean", nb::arg("pos_weight").none() = nb::none())
      .def_static("_einsum", &Tensor::einsum, nb::arg("formula"), nb::arg("operands"));
}

}  // namespace tgpy
