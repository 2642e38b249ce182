// tinygrad_cpp._C._TinyJit: the C++ TinyJit (include/tg/jit.h) over a Python function of a list of tensors;
// python/tinygrad_cpp/jit.py gives it tinygrad's decorator form (tensors anywhere in args and kwargs).
#include <nanobind/stl/function.h>
#include <nanobind/stl/vector.h>

#include "bindings.h"
#include "tg/jit.h"

namespace tgpy {

void bind_jit(nb::module_& m) {
  nb::class_<tg::TinyJit>(m, "_TinyJit")
      .def(nb::init<tg::TinyJit::Fn>(), nb::arg("fn"))
      .def("__call__", &tg::TinyJit::operator(), nb::arg("inputs"))
      .def_prop_ro("calls", &tg::TinyJit::calls)
      .def_prop_ro("captured", &tg::TinyJit::captured)
      .def_prop_ro("kernel_count", &tg::TinyJit::kernel_count)
      .def("reset", &tg::TinyJit::reset);
}

}  // namespace tgpy
