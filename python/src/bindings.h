#pragma once
// Shared declarations of the tinygrad_cpp._C extension. Each bind_* function adds one topic's names; the
// C++ side binds typed signatures, and python/tinygrad_cpp/ adds tinygrad's flexible calling conventions
// (varargs shapes, axis=None|int|tuple) on top, where Python is the clearer place to write them.
#include <nanobind/nanobind.h>

#include <optional>
#include <string>
#include <vector>

#include "tg/tensor.h"

namespace nb = nanobind;

namespace tgpy {
// A symbolic size handed to Python (tinygrad_cpp.SymbolicSize); integer sizes are plain ints.
struct SymbolicSize {
  tg::sint size;
};
}  // namespace tgpy

// Sizes in and out: an int, a SymbolicSize or a BoundVariable becomes a tg::sint; a tg::sint becomes an int, or a
// SymbolicSize when symbolic. A tg::Shape is any sequence of those, and comes out as a tuple.
namespace nanobind::detail {
template <>
struct type_caster<tg::sint> {
  NB_TYPE_CASTER(tg::sint, const_name("int"))
  bool from_python(handle src, uint8_t, cleanup_list*) noexcept {
    if (PyLong_Check(src.ptr()) && !PyBool_Check(src.ptr())) {
      long long v = PyLong_AsLongLong(src.ptr());
      if (v == -1 && PyErr_Occurred()) return PyErr_Clear(), false;
      value = int64_t(v);
      return true;
    }
    if (nb::isinstance<tgpy::SymbolicSize>(src)) return value = nb::inst_ptr<tgpy::SymbolicSize>(src)->size, true;
    if (nb::isinstance<tg::BoundVariable>(src)) return value = tg::sint(*nb::inst_ptr<tg::BoundVariable>(src)), true;
    return false;
  }
  static handle from_cpp(const tg::sint& s, rv_policy, cleanup_list*) noexcept {
    if (s.is_int()) return PyLong_FromLongLong(s.value());
    return nb::cast(tgpy::SymbolicSize{s}).release();
  }
};
template <>
struct type_caster<tg::Shape> {
  NB_TYPE_CASTER(tg::Shape, const_name("Sequence[int]"))
  bool from_python(handle src, uint8_t flags, cleanup_list* cleanup) noexcept {
    if (!PySequence_Check(src.ptr()) || PyUnicode_Check(src.ptr()) || PyBytes_Check(src.ptr())) return false;
    Py_ssize_t n = PySequence_Size(src.ptr());
    if (n < 0) return PyErr_Clear(), false;
    value.clear();
    for (Py_ssize_t i = 0; i < n; i++) {
      nb::object o = nb::steal(PySequence_GetItem(src.ptr(), i));
      if (!o.is_valid()) return PyErr_Clear(), false;
      type_caster<tg::sint> c;
      if (!c.from_python(o, flags, cleanup)) return false;
      value.push_back(c.value);
    }
    return true;
  }
  static handle from_cpp(const tg::Shape& s, rv_policy p, cleanup_list* cl) noexcept {
    PyObject* t = PyTuple_New(Py_ssize_t(s.size()));
    for (size_t i = 0; i < s.size(); i++) PyTuple_SET_ITEM(t, Py_ssize_t(i), type_caster<tg::sint>::from_cpp(s[i], p, cl).ptr());
    return t;
  }
};
}  // namespace nanobind::detail

namespace tgpy {

// ---- convert.cpp: Python values <-> tensors ----
// A dtype argument: a DType, a tinygrad name ("float32", "int"), or None (nullopt).
std::optional<tg::DType> dtype_arg(nb::handle h);
// A device from Python: a name, or a tuple/list of names (a sharded tensor's devices, as tinygrad's) -> "(A, B)";
// None -> "" (the default device).
std::string device_arg(nb::handle device);
// A tensor's device for Python: its name, or the tuple of its devices when it is spread over several.
nb::object device_of(const tg::Tensor& t);
// Options of creation functions from Python's dtype=/device=/requires_grad= values (None: default).
tg::TensorOptions options(nb::handle dtype, nb::handle device, nb::handle requires_grad);
// A Python number as a constant that remembers whether it was a bool, an int or a float; nullopt when `h`
// is not a number (a list, an array, a Tensor ...).
std::optional<tg::ConstValue> py_number(nb::handle h);
// Any data tinygrad's Tensor() takes: a Tensor, a number, nested lists/tuples, or an object with the buffer
// protocol (numpy arrays, memoryviews, bytes).
tg::Tensor tensor_from(nb::handle data, const tg::TensorOptions& opts);
// The other operand of a binary operator: a number becomes a constant promoted against `like` (tinygrad:
// int8 * 300 stays int8), anything else goes through tensor_from.
tg::Tensor operand(const tg::Tensor& like, nb::handle other);
// Results out: nested lists (0-d: a Python scalar), one Python scalar, a numpy array.
nb::object to_list(const tg::Tensor& t);
nb::object to_item(const tg::Tensor& t);
nb::object to_numpy(const tg::Tensor& t);
nb::tuple shape_tuple(const tg::Shape& s);

// ---- the bind_* functions, one per file ----
void bind_dtype(nb::module_& m);
void bind_jit(nb::module_& m);
void bind_variable(nb::module_& m);
void bind_tensor_class(nb::class_<tg::Tensor>& c);
void bind_tensor_math(nb::class_<tg::Tensor>& c);
void bind_tensor_shape(nb::class_<tg::Tensor>& c);
void bind_tensor_nn(nb::class_<tg::Tensor>& c);
void bind_shared_memory(nb::class_<tg::Tensor>& c);
// The Tensor type's slots: the buffer protocol (shared_memory.cpp).
PyType_Slot* tensor_type_slots();
void bind_context(nb::module_& m);
void bind_optim(nb::module_& m);
void bind_state(nb::module_& m);
void bind_llm(nb::module_& m);

}  // namespace tgpy
