// nn.optim: the C++ optimizers. They hold the same tensor handles as the Python objects that were passed in,
// so step() updates the model's tensors in place (through ASSIGN), exactly as in tinygrad.
#include <nanobind/stl/vector.h>

#include "bindings.h"
#include "tg/nn.h"

namespace tgpy {

void bind_optim(nb::module_& m) {
  namespace o = tg::nn::optim;
  using Tensors = std::vector<tg::Tensor>;
  nb::class_<o::Optimizer>(m, "Optimizer")
      .def("zero_grad", &o::Optimizer::zero_grad)
      .def(
          "step", [](o::Optimizer& opt, const Tensors& also) { opt.step(also); }, nb::arg("also") = Tensors{})
      .def("schedule_step", &o::Optimizer::schedule_step)
      .def_ro("params", &o::Optimizer::params)
      .def_ro("buffers", &o::Optimizer::buffers)
      .def_rw("lr", &o::Optimizer::lr);
  nb::class_<o::LARS, o::Optimizer>(m, "LARS").def(
      nb::init<const Tensors&, double, double, double, bool, bool, double>(), nb::arg("params"), nb::arg("lr") = 0.001,
      nb::arg("momentum") = 0.9, nb::arg("weight_decay") = 1e-4, nb::arg("nesterov") = false, nb::arg("classic") = true,
      nb::arg("tcoef") = 0.001);
  nb::class_<o::SGD, o::LARS>(m, "SGD").def(nb::init<const Tensors&, double, double, double, bool, bool>(),
                                            nb::arg("params"), nb::arg("lr") = 0.001, nb::arg("momentum") = 0.0,
                                            nb::arg("weight_decay") = 0.0, nb::arg("nesterov") = false,
                                            nb::arg("classic") = false);
  nb::class_<o::LAMB, o::Optimizer>(m, "LAMB").def(
      nb::init<const Tensors&, double, double, double, double, double, bool>(), nb::arg("params"),
      nb::arg("lr") = 0.001, nb::arg("b1") = 0.9, nb::arg("b2") = 0.999, nb::arg("eps") = 1e-6,
      nb::arg("weight_decay") = 0.0, nb::arg("adam") = false);
  nb::class_<o::Adam, o::LAMB>(m, "Adam").def(nb::init<const Tensors&, double, double, double, double>(),
                                              nb::arg("params"), nb::arg("lr") = 0.001, nb::arg("b1") = 0.9,
                                              nb::arg("b2") = 0.999, nb::arg("eps") = 1e-8);
  nb::class_<o::AdamW, o::LAMB>(m, "AdamW")
      .def(nb::init<const Tensors&, double, double, double, double, double>(), nb::arg("params"), nb::arg("lr") = 0.001,
           nb::arg("b1") = 0.9, nb::arg("b2") = 0.999, nb::arg("eps") = 1e-8, nb::arg("weight_decay") = 0.01);
}

}  // namespace tgpy
