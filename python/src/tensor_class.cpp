// Tensor: construction, properties, creation functions, random numbers, running and reading results, and
// autograd. Creation functions are bound with a plain list shape under a leading underscore; tensor.py wraps
// them with tinygrad's varargs form (Tensor.zeros(2, 3) and Tensor.zeros((2, 3))).
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "bindings.h"

namespace tgpy {
namespace {

using tg::Tensor;
using Ints = std::vector<int64_t>;

// The value of a one-element tensor as a Python number, for bool(), float() and int(). Other sizes raise as
// torch does: ValueError for float/int, RuntimeError ("ambiguous") for bool.
nb::object scalar_of(const Tensor& t, const char* what) {
  if (t.numel() != 1) {
    std::string shape = nb::repr(shape_tuple(t.shape())).c_str();
    std::string msg = std::string(what) + "(): only a tensor with one element can be converted to a Python scalar, " +
                      "got shape " + shape + " (" + std::to_string(t.numel()) + " elements)";
    if (std::string_view(what) == "bool") msg += "; the truth value of several elements is ambiguous (use any/all)";
    PyErr_SetString(std::string_view(what) == "bool" ? PyExc_RuntimeError : PyExc_ValueError, msg.c_str());
    throw nb::python_error();
  }
  return to_item(t);
}

// The keyword arguments every creation function takes, in tinygrad's spelling.
#define TG_OPTS_ARGS                                                           \
  nb::arg("dtype").none() = nb::none(), nb::arg("device").none() = nb::none(), \
  nb::arg("requires_grad").none() = nb::none()

template <class F>
auto creation(F f) {
  return [f](const Ints& shape, nb::handle dtype, nb::handle device, nb::handle rg) {
    return f(shape, options(dtype, device, rg));
  };
}

}  // namespace

void bind_tensor_class(nb::class_<Tensor>& c) {
  c.def(
       "__init__",
       [](Tensor* self, nb::handle data, nb::handle device, nb::handle dtype, nb::handle rg) {
         tg::TensorOptions o = options(dtype, device, rg);
         Tensor t = tensor_from(data, o);
         if (!rg.is_none()) t.requires_grad_(o.requires_grad);
         new (self) Tensor(t);
       },
       nb::arg("data").none(), nb::arg("device").none() = nb::none(), nb::arg("dtype").none() = nb::none(),
       nb::arg("requires_grad").none() = nb::none())
      // ---- properties ----
      .def_prop_ro("shape", [](const Tensor& t) { return shape_tuple(t.shape()); })
      .def_prop_ro("dtype", &Tensor::dtype)
      .def_prop_ro("device", &device_of)
      .def_prop_ro("ndim", &Tensor::ndim)
      .def("numel", &Tensor::numel)
      .def("element_size", &Tensor::element_size)
      .def("nbytes", [](const Tensor& t) { return t.numel() * t.element_size(); })
      .def("__repr__", &Tensor::repr)
      .def("__len__",
           [](const Tensor& t) {
             if (t.ndim() == 0) throw nb::type_error("len() of a 0-d tensor");
             return t.shape()[0].value();
           })
      // bool(), float() and int() of a one-element tensor (any shape) are its value, as torch's; any other size
      // is an error naming it (float() fell through to float(str(t)): "could not convert string to float").
      .def("__bool__", [](const Tensor& t) { return PyObject_IsTrue(scalar_of(t, "bool").ptr()) == 1; })
      .def("__float__", [](const Tensor& t) { return nb::float_(scalar_of(t, "float")); })
      .def("__int__", [](const Tensor& t) { return nb::int_(scalar_of(t, "int")); })
      .def("__hash__", [](nb::handle self) { return nb::hash(nb::int_(reinterpret_cast<intptr_t>(self.ptr()))); })
      // ---- running and reading ----
      .def("realize",
           [](nb::handle self) {
             nb::cast<Tensor&>(self).realize();
             return self;
           })
      .def_static("realize_all", &Tensor::realize_all, nb::arg("tensors"))
      .def("contiguous", &Tensor::contiguous)
      .def("to", [](const Tensor& t, nb::handle device) { return t.to(device_arg(device)); }, nb::arg("device"))
      // several devices: split along axis (None: a whole copy on each), as tinygrad's Tensor.shard
      .def(
          "shard",
          [](const Tensor& t, const std::vector<std::string>& devices, std::optional<int64_t> axis) {
            return t.shard(devices, axis);
          },
          nb::arg("devices"), nb::arg("axis") = nb::none())
      .def(
          "shard_",
          [](nb::handle self, const std::vector<std::string>& devices, std::optional<int64_t> axis) {
            nb::cast<Tensor&>(self).shard_(devices, axis);
            return self;
          },
          nb::arg("devices"), nb::arg("axis") = nb::none())
      .def("tolist", &to_list)
      .def("item", &to_item)
      .def("numpy", &to_numpy)
      // ---- creation ----
      .def_static("_empty", creation(&Tensor::empty), nb::arg("shape"), TG_OPTS_ARGS)
      .def_static("_zeros", creation(&Tensor::zeros), nb::arg("shape"), TG_OPTS_ARGS)
      .def_static("_ones", creation(&Tensor::ones), nb::arg("shape"), TG_OPTS_ARGS)
      .def_static(
          "_full",
          [](const Ints& shape, nb::handle fill, nb::handle dtype, nb::handle device, nb::handle rg) {
            std::optional<tg::ConstValue> v = py_number(fill);
            if (!v) throw nb::type_error("full: fill_value must be a number");
            return Tensor::full(shape, *v, options(dtype, device, rg));
          },
          nb::arg("shape"), nb::arg("fill_value"), TG_OPTS_ARGS)
      .def_static(
          "_arange",
          [](nb::handle start, nb::handle stop, nb::handle step, nb::handle dtype, nb::handle device, nb::handle rg) {
            // Any float argument makes a float range, as in tinygrad (ints alone give int32).
            tg::TensorOptions o = options(dtype, device, rg);
            bool is_float = false;
            for (nb::handle h : {start, stop, step}) {
              std::optional<tg::ConstValue> v = py_number(h);
              if (!v) throw nb::type_error("arange: start, stop and step must be numbers");
              is_float |= v->kind == tg::dtypes::float32;
            }
            if (!o.dtype) o.dtype = is_float ? tg::dtypes::default_float() : tg::dtypes::default_int;
            return Tensor::arange(nb::cast<double>(nb::float_(start)), nb::cast<double>(nb::float_(stop)),
                                  nb::cast<double>(nb::float_(step)), o);
          },
          nb::arg("start"), nb::arg("stop"), nb::arg("step"), TG_OPTS_ARGS)
      .def_static(
          "_eye",
          [](int64_t n, nb::handle dtype, nb::handle device, nb::handle rg) {
            return Tensor::eye(n, options(dtype, device, rg));
          },
          nb::arg("n"), TG_OPTS_ARGS)
      .def_static(
          "linspace",
          [](double start, double stop, int64_t steps, nb::handle dtype, nb::handle device, nb::handle rg) {
            return Tensor::linspace(start, stop, steps, options(dtype, device, rg));
          },
          nb::arg("start"), nb::arg("stop"), nb::arg("steps"), TG_OPTS_ARGS)
      .def(
          "full_like",
          [](const Tensor& t, nb::handle fill, nb::handle dtype, nb::handle device, nb::handle rg) {
            tg::TensorOptions o = options(dtype, device, rg);
            std::optional<tg::ConstValue> v = py_number(fill);
            if (!v) throw nb::type_error("full_like: fill_value must be a number");
            if (!o.dtype) o.dtype = t.dtype();
            if (o.device.empty()) o.device = t.device();
            return Tensor::full(t.shape(), *v, o);
          },
          nb::arg("fill_value"), TG_OPTS_ARGS)
      // ---- random ----
      .def_static("manual_seed", &Tensor::manual_seed, nb::arg("seed") = 0)
      .def_static("_rand", creation(&Tensor::rand), nb::arg("shape"), TG_OPTS_ARGS)
      .def_static("_randn", creation(&Tensor::randn), nb::arg("shape"), TG_OPTS_ARGS)
      .def_static("_scaled_uniform", creation(&Tensor::scaled_uniform), nb::arg("shape"), TG_OPTS_ARGS)
      .def_static("_glorot_uniform", creation(&Tensor::glorot_uniform), nb::arg("shape"), TG_OPTS_ARGS)
      .def_static(
          "_randint",
          [](const Ints& shape, int64_t low, int64_t high, nb::handle dtype, nb::handle device, nb::handle rg) {
            return Tensor::randint(shape, low, high, options(dtype, device, rg));
          },
          nb::arg("shape"), nb::arg("low"), nb::arg("high"), TG_OPTS_ARGS)
      .def_static(
          "_normal",
          [](const Ints& shape, double mean, double std, nb::handle dtype, nb::handle device, nb::handle rg) {
            return Tensor::normal(shape, mean, std, options(dtype, device, rg));
          },
          nb::arg("shape"), nb::arg("mean"), nb::arg("std"), TG_OPTS_ARGS)
      .def_static(
          "_uniform",
          [](const Ints& shape, double low, double high, nb::handle dtype, nb::handle device, nb::handle rg) {
            return Tensor::uniform(shape, low, high, options(dtype, device, rg));
          },
          nb::arg("shape"), nb::arg("low"), nb::arg("high"), TG_OPTS_ARGS)
      .def_static(
          "_kaiming_uniform",
          [](const Ints& shape, double a, nb::handle dtype, nb::handle device, nb::handle rg) {
            return Tensor::kaiming_uniform(shape, a, options(dtype, device, rg));
          },
          nb::arg("shape"), nb::arg("a"), TG_OPTS_ARGS)
      .def_static(
          "_kaiming_normal",
          [](const Ints& shape, double a, nb::handle dtype, nb::handle device, nb::handle rg) {
            return Tensor::kaiming_normal(shape, a, options(dtype, device, rg));
          },
          nb::arg("shape"), nb::arg("a"), TG_OPTS_ARGS)
      .def_static(
          "randperm",
          [](int64_t n, nb::handle dtype, nb::handle device, nb::handle rg) {
            return Tensor::randperm(n, options(dtype, device, rg));
          },
          nb::arg("n"), TG_OPTS_ARGS)
      .def("multinomial", &Tensor::multinomial, nb::arg("num_samples") = 1, nb::arg("replacement") = false)
      .def("dropout", &Tensor::dropout, nb::arg("p") = 0.5)
      .def_prop_rw_static(
          "training", [](nb::handle) { return bool(Tensor::training); },
          [](nb::handle, bool on) { Tensor::training = on; })
      // ---- autograd ----
      .def_prop_rw(
          "requires_grad", [](const Tensor& t) { return t.requires_grad(); },
          [](Tensor& t, nb::handle on) { t.requires_grad_(!on.is_none() && nb::cast<bool>(on)); })
      .def(
          "requires_grad_",
          [](nb::handle self, bool on) {
            nb::cast<Tensor&>(self).requires_grad_(on);
            return self;
          },
          nb::arg("requires_grad") = true)
      .def_prop_rw(
          "grad",
          [](const Tensor& t) -> std::optional<Tensor> {
            return t.has_grad() ? std::optional(t.grad()) : std::nullopt;
          },
          [](Tensor& t, std::optional<Tensor> g) { t.set_grad(g); }, nb::arg("grad").none())
      .def(
          "backward",
          [](nb::handle self, std::optional<Tensor> gradient) {
            nb::cast<Tensor&>(self).backward(gradient);
            return self;
          },
          nb::arg("gradient").none() = nb::none())
      .def("gradient", &Tensor::gradient, nb::arg("targets"), nb::arg("gradient").none() = nb::none())
      .def("detach", &Tensor::detach)
      .def(
          "assign",
          [](nb::handle self, nb::handle x) {
            // As tinygrad: a non-tensor value becomes a tensor of self's dtype and device (a number fills).
            Tensor& t = nb::cast<Tensor&>(self);
            Tensor v = nb::isinstance<Tensor>(x) ? nb::cast<Tensor>(x)
                                                 : tensor_from(x, {.dtype = t.dtype(), .device = t.device()});
            if (v.ndim() == 0 && t.ndim() != 0) v = v.reshape(tg::Shape(size_t(t.ndim()), 1)).expand(t.shape());
            t.assign(v);
            return self;
          },
          nb::arg("x"));
}

}  // namespace tgpy
