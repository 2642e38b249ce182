// nn.state: weights files. safetensors load/save and torch checkpoints come from the C++ loaders (lazy,
// memory-mapped); the model walking (get_parameters, get_state_dict, load_state_dict) is Python, over
// __dict__, in python/tinygrad_cpp/nn/state.py.
#include "tg/state.h"

#include <nanobind/stl/map.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "bindings.h"
#include "tg/nn.h"

namespace tgpy {

void bind_state(nb::module_& m) {
  namespace s = tg::nn::state;
  m.def(
      "safe_load",
      [](const std::string& path, nb::handle device) {
        return s::safe_load(path, device.is_none() ? "" : nb::cast<std::string>(device));
      },
      nb::arg("path"), nb::arg("device").none() = nb::none());
  m.def(
      "safe_save",
      [](const std::map<std::string, tg::Tensor>& tensors, const std::string& path, nb::handle metadata) {
        std::map<std::string, std::string> md;
        if (!metadata.is_none()) md = nb::cast<std::map<std::string, std::string>>(metadata);
        s::safe_save(tensors, path, md);
      },
      nb::arg("tensors"), nb::arg("path"), nb::arg("metadata").none() = nb::none());
  // load_state_dict's core (shape checks, (1,) vs (), cast, copy to the device, one realize): the C++ one.
  m.def(
      "load_into",
      [](std::vector<std::pair<std::string, tg::Tensor>> targets, const std::map<std::string, tg::Tensor>& sd,
         bool strict) { return tg::nn::detail::load_into(targets, sd, strict); },
      nb::arg("targets"), nb::arg("state_dict"), nb::arg("strict") = true);
  m.def(
      "torch_load",
      [](const std::string& path, nb::handle device) {
        return s::torch_load(path, device.is_none() ? "" : nb::cast<std::string>(device));
      },
      nb::arg("path"), nb::arg("device").none() = nb::none());
}

}  // namespace tgpy
