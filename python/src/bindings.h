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

// ---- convert.cpp: Python values <-> tensors ----
// A dtype argument: a DType, a tinygrad name ("float32", "int"), or None (nullopt).
std::optional<tg::DType> dtype_arg(nb::handle h);
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
void bind_tensor_core(nb::class_<tg::Tensor>& c);
void bind_tensor_math(nb::class_<tg::Tensor>& c);
void bind_tensor_shape(nb::class_<tg::Tensor>& c);
void bind_tensor_nn(nb::class_<tg::Tensor>& c);
void bind_shared_memory(nb::class_<tg::Tensor>& c);
// The Tensor type's slots: the buffer protocol (shared_memory.cpp).
PyType_Slot* tensor_type_slots();
void bind_context(nb::module_& m);
void bind_optim(nb::module_& m);
void bind_state(nb::module_& m);

}  // namespace tgpy
