// tinygrad_cpp._C: the extension module. Translates tg::Error into Python exceptions and registers every
// topic's bindings; python/tinygrad_cpp/__init__.py builds the public names from these.
#include <nanobind/nanobind.h>

#include "bindings.h"
#include "tg/error.h"

#include <string>
#include <string_view>

namespace tgpy {
// Hints in core messages are written for C++ callers; raised through Python they name the Python spelling.
std::string python_spelling(std::string_view msg) {
  static const std::pair<std::string_view, std::string_view> kSpellings[] = {
      {"{.requires_grad = true}", "requires_grad=True"},
      {"strict=false", "strict=False"},
  };
  std::string s(msg);
  for (auto [cpp, py] : kSpellings)
    for (size_t at = s.find(cpp); at != std::string::npos; at = s.find(cpp, at + py.size()))
      s.replace(at, cpp.size(), py);
  return s;
}
}  // namespace tgpy

NB_MODULE(_C, m) {
  m.doc() = "tinygrad.cpp: tinygrad's lazy tensors, compiled and run by a C++ core";
  // tg::Error is bad input or a failed device: RuntimeError with the C++ message (which names the op and
  // the shapes). nanobind already maps std::out_of_range to IndexError and std::invalid_argument to
  // ValueError.
  // Where tinygrad raises IndexError (an axis out of range) or ValueError (a negative dimension), the error is
  // also of that type: AxisError is (IndexError, RuntimeError), ShapeValueError (ValueError, RuntimeError).
  static PyObject* axis_error = PyErr_NewExceptionWithDoc(
      "tinygrad_cpp._C.AxisError", "an axis or dim out of range (IndexError, and RuntimeError as all core errors)",
      nb::make_tuple(nb::handle(PyExc_IndexError), nb::handle(PyExc_RuntimeError)).release().ptr(), nullptr);
  static PyObject* shape_error = PyErr_NewExceptionWithDoc(
      "tinygrad_cpp._C.ShapeValueError",
      "a bad shape: a negative dimension, a size mismatch (ValueError, and RuntimeError as all core errors)",
      nb::make_tuple(nb::handle(PyExc_ValueError), nb::handle(PyExc_RuntimeError)).release().ptr(), nullptr);
  m.attr("AxisError") = nb::handle(axis_error);
  m.attr("ShapeValueError") = nb::handle(shape_error);
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const tg::Error& e) {
      std::string_view msg = e.what();
      PyObject* type = PyExc_RuntimeError;
      if (msg.find(" is out of range for shape") != std::string_view::npos) type = axis_error;
      else if (msg.find("negative dimension") != std::string_view::npos) type = shape_error;
      else if (msg.find("must be finite") != std::string_view::npos) type = shape_error;  // torch: RuntimeError
      PyErr_SetString(type, tgpy::python_spelling(msg).c_str());
    }
  });
  tgpy::bind_dtype(m);
  tgpy::bind_variable(m);
  nb::class_<tg::Tensor> tensor(m, "Tensor", nb::type_slots(tgpy::tensor_type_slots()));
  tgpy::bind_tensor_class(tensor);
  tgpy::bind_tensor_math(tensor);
  tgpy::bind_tensor_shape(tensor);
  tgpy::bind_tensor_nn(tensor);
  tgpy::bind_shared_memory(tensor);
  tgpy::bind_context(m);
  tgpy::bind_optim(m);
  tgpy::bind_state(m);
  tgpy::bind_jit(m);
  tgpy::bind_llm(m);
}
