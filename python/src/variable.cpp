// tinygrad_cpp.Variable: tinygrad's Variable("start_pos", 1, 1024) over tg::Variable (include/tg/variable.h).
// bind(n) gives a BoundVariable; Tensor(bound) and tensor ops with one read its value as a kernel argument, and a
// TinyJit given one as an argument replays with each call's value.
#include "tg/variable.h"

#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>

#include "bindings.h"

namespace tgpy {

void bind_variable(nb::module_& m) {
  nb::class_<tg::Variable>(m, "Variable")
      .def(nb::init<std::string, int64_t, int64_t>(), nb::arg("name"), nb::arg("min"), nb::arg("max"))
      .def("bind", &tg::Variable::bind, nb::arg("value"))
      .def_ro("expr", &tg::Variable::name)  // tinygrad's spelling of the name
      .def_ro("min", &tg::Variable::min)
      .def_ro("max", &tg::Variable::max)
      .def("__eq__", [](const tg::Variable& a, const tg::Variable& b) { return a == b; })
      .def("__hash__", [](const tg::Variable& v) { return nb::hash(nb::make_tuple(v.name, v.min, v.max)); })
      .def("__repr__", [](const tg::Variable& v) {
        return "Variable(" + v.name + ", " + std::to_string(v.min) + ", " + std::to_string(v.max) + ")";
      });
  // A symbolic dim of a shape (tg::sint): an expression over bound variables, as tinygrad's shapes hold UOps.
  nb::class_<SymbolicSize>(m, "SymbolicSize")
      .def_prop_ro("vmin", [](const SymbolicSize& s) { return s.size.vmin(); })
      .def_prop_ro("vmax", [](const SymbolicSize& s) { return s.size.vmax(); })
      .def_prop_ro("val", [](const SymbolicSize& s) { return s.size.bound_value(); })  // variables at their values
      .def("__eq__", [](const SymbolicSize& a, const SymbolicSize& b) { return a.size == b.size; })
      .def("__hash__", [](const SymbolicSize& s) { return s.size.hash(); })
      .def("__add__", [](const SymbolicSize& a, tg::sint b) { return a.size + b; })
      .def("__radd__", [](const SymbolicSize& a, tg::sint b) { return b + a.size; })
      .def("__sub__", [](const SymbolicSize& a, tg::sint b) { return a.size - b; })
      .def("__rsub__", [](const SymbolicSize& a, tg::sint b) { return b - a.size; })
      .def("__mul__", [](const SymbolicSize& a, tg::sint b) { return a.size * b; })
      .def("__rmul__", [](const SymbolicSize& a, tg::sint b) { return b * a.size; })
      .def("__repr__", [](const SymbolicSize& s) { return s.size.str(); });
  nb::class_<tg::BoundVariable>(m, "BoundVariable")
      .def_ro("var", &tg::BoundVariable::var)
      .def_ro("val", &tg::BoundVariable::value)
      .def("unbind", [](const tg::BoundVariable& b) { return std::make_pair(b.var, b.value); })
      .def("__int__", [](const tg::BoundVariable& b) { return b.value; })
      // arithmetic makes a symbolic size (start_pos + 1), usable in shapes
      .def("__add__", [](const tg::BoundVariable& a, tg::sint b) { return tg::sint(a) + b; })
      .def("__radd__", [](const tg::BoundVariable& a, tg::sint b) { return b + tg::sint(a); })
      .def("__sub__", [](const tg::BoundVariable& a, tg::sint b) { return tg::sint(a) - b; })
      .def("__rsub__", [](const tg::BoundVariable& a, tg::sint b) { return b - tg::sint(a); })
      .def("__mul__", [](const tg::BoundVariable& a, tg::sint b) { return tg::sint(a) * b; })
      .def("__rmul__", [](const tg::BoundVariable& a, tg::sint b) { return b * tg::sint(a); })
      .def("__repr__", [](const tg::BoundVariable& b) {
        return "Variable(" + b.var.name + ", " + std::to_string(b.var.min) + ", " + std::to_string(b.var.max) +
               ").bind(" + std::to_string(b.value) + ")";
      });
}

}  // namespace tgpy
