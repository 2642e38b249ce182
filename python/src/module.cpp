// tinygrad_cpp._C: the extension module. Translates tg::Error into Python exceptions and registers every
// topic's bindings; python/tinygrad_cpp/__init__.py builds the public names from these.
#include <nanobind/nanobind.h>

#include "bindings.h"
#include "tg/error.h"

NB_MODULE(_C, m) {
  m.doc() = "tinygrad.cpp: tinygrad's lazy tensors, compiled and run by a C++ core";
  // tg::Error is bad input or a failed device: RuntimeError with the C++ message (which names the op and
  // the shapes). nanobind already maps std::out_of_range to IndexError and std::invalid_argument to
  // ValueError.
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const tg::Error& e) {
      PyErr_SetString(PyExc_RuntimeError, e.what());
    }
  });
  tgpy::bind_dtype(m);
  nb::class_<tg::Tensor> tensor(m, "Tensor");
  tgpy::bind_tensor_core(tensor);
  tgpy::bind_tensor_math(tensor);
  tgpy::bind_tensor_shape(tensor);
  tgpy::bind_tensor_nn(tensor);
  tgpy::bind_context(m);
  tgpy::bind_optim(m);
  tgpy::bind_state(m);
}
