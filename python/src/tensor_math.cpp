// Tensor: elementwise math. Python operators take tensors or Python numbers on either side; a number is a
// constant promoted against the tensor, as tinygrad's (int8 * 300 stays int8, int32 * 1.5 becomes float).
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>

#include "bindings.h"

namespace tgpy {
namespace {

using tg::Tensor;

Tensor div_mode(const Tensor& a, const Tensor& b, const std::optional<std::string>& mode) {
  if (!mode) return a.div(b);
  bool ints = !a.dtype().is_float() && !b.dtype().is_float();
  if (*mode == "trunc") return ints ? a.idiv(b) : a.div(b).trunc();
  // Floor division of ints is exact as (a - a mod b) / b with a Python-semantics mod.
  if (*mode == "floor") return ints ? a.sub(a.mod(b)).idiv(b) : a.div(b).floor();
  // RuntimeError, as tinygrad
  throw std::runtime_error("div: rounding_mode must be None, 'trunc' or 'floor', got '" + *mode + "'");
}

// The tensor a Python number or tensor gives as a binary op's second operand, and the pair in order.
std::pair<Tensor, Tensor> ordered(const Tensor& self, nb::handle x, bool reverse) {
  Tensor o = operand(self, x);
  return reverse ? std::pair{o, self} : std::pair{self, o};
}

}  // namespace

void bind_tensor_math(nb::class_<Tensor>& c) {
  // ---- unary, no arguments ----
#define TG_UNARY(name) c.def(#name, &Tensor::name);
  TG_UNARY(neg)
  TG_UNARY(exp)
  TG_UNARY(log)
  TG_UNARY(exp2) TG_UNARY(log2) TG_UNARY(sqrt) TG_UNARY(sin) TG_UNARY(reciprocal) TG_UNARY(relu) TG_UNARY(trunc)
      TG_UNARY(abs) TG_UNARY(sign) TG_UNARY(square) TG_UNARY(rsqrt) TG_UNARY(cos) TG_UNARY(tan) TG_UNARY(asin) TG_UNARY(
          acos) TG_UNARY(atan) TG_UNARY(sinh) TG_UNARY(cosh) TG_UNARY(asinh) TG_UNARY(acosh) TG_UNARY(atanh)
          TG_UNARY(erf) TG_UNARY(floor) TG_UNARY(ceil) TG_UNARY(round) TG_UNARY(isnan) TG_UNARY(logical_not)
              TG_UNARY(bitwise_not) TG_UNARY(sigmoid) TG_UNARY(tanh) TG_UNARY(gelu) TG_UNARY(quick_gelu) TG_UNARY(silu)
                  TG_UNARY(swish) TG_UNARY(selu) TG_UNARY(mish) TG_UNARY(hardswish) TG_UNARY(hardsigmoid)
                      TG_UNARY(relu6) TG_UNARY(softsign) TG_UNARY(logsigmoid)
#undef TG_UNARY
                          c.def("elu", &Tensor::elu, nb::arg("alpha") = 1.0)
                              .def("celu", &Tensor::celu, nb::arg("alpha") = 1.0)
                              .def("leaky_relu", &Tensor::leaky_relu, nb::arg("neg_slope") = 0.01)
                              .def("softplus", &Tensor::softplus, nb::arg("beta") = 1.0)
                              .def("hardtanh", &Tensor::hardtanh, nb::arg("min_val") = -1.0, nb::arg("max_val") = 1.0)
                              .def("isinf", &Tensor::isinf, nb::arg("detect_positive") = true,
                                   nb::arg("detect_negative") = true)
                              .def("clamp", &Tensor::clamp, nb::arg("min_").none() = nb::none(),
                                   nb::arg("max_").none() = nb::none())
                              .def("clip", &Tensor::clip, nb::arg("min_").none() = nb::none(),
                                   nb::arg("max_").none() = nb::none())
                              .def(
                                  "cast", [](const Tensor& t, nb::handle d) { return t.cast(*dtype_arg(d)); },
                                  nb::arg("dtype"))
                              .def(
                                  "bitcast", [](const Tensor& t, nb::handle d) { return t.bitcast(*dtype_arg(d)); },
                                  nb::arg("dtype"))
                              .def("half", &Tensor::half)
                              .def("float", &Tensor::float_)
                              .def("double", &Tensor::double_)
                              .def("int", &Tensor::int_)
                              .def("long", &Tensor::long_)
                              .def("bool", &Tensor::bool_);

  // ---- binary, as methods: t.add(x, reverse=False) ----
#define TG_BINARY(name)                                 \
  c.def(                                                \
      #name,                                            \
      [](const Tensor& t, nb::handle x, bool reverse) { \
        auto [a, b] = ordered(t, x, reverse);           \
        return a.name(b);                               \
      },                                                \
      nb::arg("x"), nb::arg("reverse") = false);
  TG_BINARY(add)
  TG_BINARY(sub)
  TG_BINARY(mul)
  TG_BINARY(pow) TG_BINARY(mod) TG_BINARY(idiv) TG_BINARY(maximum) TG_BINARY(minimum) TG_BINARY(bitwise_and)
      TG_BINARY(bitwise_or) TG_BINARY(bitwise_xor) TG_BINARY(lt) TG_BINARY(gt) TG_BINARY(le) TG_BINARY(ge) TG_BINARY(eq)
          TG_BINARY(ne)
#undef TG_BINARY
              c.def(
                  "div",
                  [](const Tensor& t, nb::handle x, bool reverse, std::optional<std::string> mode) {
                    auto [a, b] = ordered(t, x, reverse);
                    return div_mode(a, b, mode);
                  },
                  nb::arg("x"), nb::arg("reverse") = false, nb::arg("rounding_mode").none() = nb::none());
  c.def("lshift", &Tensor::lshift, nb::arg("x"))
      .def("rshift", &Tensor::rshift, nb::arg("x"))
      .def(
          "where",
          [](const Tensor& cond, nb::handle x, nb::handle y) {
            std::optional<tg::ConstValue> cx = py_number(x), cy = py_number(y);
            if (cx && cy) return cond.where(*cx, *cy);
            if (cx) return cond.where(*cx, operand(cond, y));
            if (cy) return cond.where(operand(cond, x), *cy);
            return cond.where(operand(cond, x), operand(cond, y));
          },
          nb::arg("x"), nb::arg("y"))
      .def(
          "lerp",
          [](const Tensor& t, const Tensor& end, nb::handle w) {
            if (std::optional<tg::ConstValue> v = py_number(w)) return t.lerp(end, *v);
            return t.lerp(end, operand(t, w));
          },
          nb::arg("end"), nb::arg("weight"))
      .def(
          "masked_fill",
          [](const Tensor& t, const Tensor& mask, nb::handle v) {
            if (std::optional<tg::ConstValue> c = py_number(v)) return t.masked_fill(mask, *c);
            return mask.where(operand(t, v), t);
          },
          nb::arg("mask"), nb::arg("value"));

  // ---- Python operators ----
#define TG_OPERATOR(py, expr)                                \
  c.def("__" py "__", [](const Tensor& t, nb::handle x) {    \
     Tensor a = t, b = operand(t, x);                        \
     return expr;                                            \
   }).def("__r" py "__", [](const Tensor& t, nb::handle x) { \
    Tensor a = operand(t, x), b = t;                         \
    return expr;                                             \
  });
  TG_OPERATOR("add", a + b)
  TG_OPERATOR("sub", a - b)
  TG_OPERATOR("mul", a * b)
  TG_OPERATOR("truediv", a / b)
  TG_OPERATOR("floordiv", div_mode(a, b, "floor"))
  TG_OPERATOR("mod", a.mod(b))
  TG_OPERATOR("matmul", a.matmul(b))
  TG_OPERATOR("and", a.bitwise_and(b))
  TG_OPERATOR("or", a.bitwise_or(b))
  TG_OPERATOR("xor", a.bitwise_xor(b))
#undef TG_OPERATOR
  // A number exponent takes Tensor::pow(ConstValue): exact products for an integer, a POW node otherwise; an
  // integer tensor to a negative integer power is an error there (tinygrad's and torch's), not a silent 0.
  c.def("__pow__", [](const Tensor& t, nb::handle x) {
     if (std::optional<tg::ConstValue> v = py_number(x)) return t.pow(*v);
     return t.pow(operand(t, x));
   }).def("__rpow__", [](const Tensor& t, nb::handle x) { return operand(t, x).pow(t); });
  c.def("__lshift__", &Tensor::lshift)
      .def("__rshift__", &Tensor::rshift)
      .def("__neg__", &Tensor::neg)
      .def("__abs__", &Tensor::abs)
      .def("__invert__", [](const Tensor& t) { return t.dtype().is_bool() ? t.logical_not() : t.bitwise_not(); })
      .def("__lt__", [](const Tensor& t, nb::handle x) { return t < operand(t, x); })
      .def("__gt__", [](const Tensor& t, nb::handle x) { return t > operand(t, x); })
      .def("__le__", [](const Tensor& t, nb::handle x) { return t <= operand(t, x); })
      .def("__ge__", [](const Tensor& t, nb::handle x) { return t >= operand(t, x); })
      .def("__eq__", [](const Tensor& t, nb::handle x) { return t == operand(t, x); })
      .def("__ne__", [](const Tensor& t, nb::handle x) { return t != operand(t, x); });
}

}  // namespace tgpy
