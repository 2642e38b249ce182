// DType: tinygrad's dtypes as Python values. The dtypes namespace itself (dtypes.float32, dtypes.is_float
// ...) is written in python/tinygrad_cpp/dtype.py over these.
#include "tg/dtype.h"

#include <nanobind/operators.h>
#include <nanobind/stl/string.h>

#include "bindings.h"

namespace tgpy {
namespace {

// Python's struct format character of a scalar dtype, as tinygrad's DType.fmt (None for bfloat16).
const char* fmt_of(const tg::DType& d) {
  using S = tg::Scalar;
  switch (d.scalar) {
    case S::Bool:
      return "?";
    case S::Int8:
      return "b";
    case S::UInt8:
      return "B";
    case S::Int16:
      return "h";
    case S::UInt16:
      return "H";
    case S::Int32:
      return "i";
    case S::UInt32:
      return "I";
    case S::Int64:
      return "q";
    case S::UInt64:
      return "Q";
    case S::Float16:
      return "e";
    case S::Float32:
      return "f";
    case S::Float64:
      return "d";
    default:
      return nullptr;
  }
}

}  // namespace

void bind_dtype(nb::module_& m) {
  nb::class_<tg::DType>(m, "DType")
      .def_prop_ro("name", &tg::DType::name)
      .def_prop_ro("itemsize", &tg::DType::itemsize)
      .def_prop_ro("count", [](const tg::DType& d) { return int(d.count); })
      .def_prop_ro("fmt",
                   [](const tg::DType& d) -> nb::object {
                     const char* f = fmt_of(d);
                     return f ? nb::object(nb::str(f)) : nb::none();
                   })
      .def_prop_ro("min", &tg::DType::min)
      .def_prop_ro("max", &tg::DType::max)
      .def("vec", [](const tg::DType& d, int n) { return d.vec(n); })
      .def("scalar", &tg::DType::scalar_type)
      .def("is_float", &tg::DType::is_float)
      .def("is_int", &tg::DType::is_int)
      .def("is_unsigned", &tg::DType::is_unsigned)
      .def("is_bool", &tg::DType::is_bool)
      .def("__repr__", &tg::DType::repr)
      .def("__hash__", [](const tg::DType& d) { return std::hash<tg::DType>{}(d); })
      .def(nb::self == nb::self)
      .def(nb::self != nb::self)
      // A DType compared with anything else is unequal, not an error (dtype == "float32" is False).
      .def("__eq__", [](const tg::DType&, nb::handle) { return false; })
      .def("__ne__", [](const tg::DType&, nb::handle) { return true; });

  m.def("dtype_from_name", &tg::dtypes::from_name, nb::arg("name"));
  m.def("promote", &tg::dtypes::promote, nb::arg("a"), nb::arg("b"));
  m.def("default_float", &tg::dtypes::default_float);
  // Every scalar dtype by its numpy-style name (float32, int8 ...), for dtype.py.
  m.def("scalar_dtypes", [] {
    nb::dict d;
    for (const char* n : {"bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64", "float16",
                          "bfloat16", "float32", "float64"})
      d[n] = nb::cast(tg::dtypes::from_name(n));
    return d;
  });
}

}  // namespace tgpy
