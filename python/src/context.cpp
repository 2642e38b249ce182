// Context (scoped knobs), devices and GlobalCounters. `with Context(DEBUG=2):` holds one tg::Context per
// knob, so the C++ class does the setting and the restoring, in reverse order on exit.
#include "tg/context.h"

#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <memory>

#include "bindings.h"
#include "tg/counters.h"

namespace tgpy {
namespace {

class ContextScope {
 public:
  explicit ContextScope(nb::kwargs kw) {
    for (auto [k, v] : kw) {
      std::string key = nb::cast<std::string>(k);
      if (!tg::ContextVar::find(key))
        throw nb::value_error(
            ("Context: unknown knob '" + key + "' (expected DEBUG, NOOPT, BEAM, CACHELEVEL, JIT or TRAINING)").c_str());
      long value = 0;
      if (PyBool_Check(v.ptr()) || !nb::try_cast<long>(v, value))
        throw nb::type_error(("Context: " + key + " must be an int, got " + std::string(nb::repr(v).c_str())).c_str());
      values_.emplace_back(key, value);
    }
  }
  ContextScope(const ContextScope&) = delete;  // std::vector<unique_ptr> claims to be copyable; it is not
  ContextScope& operator=(const ContextScope&) = delete;
  void enter() {
    if (!active_.empty()) throw nb::value_error("Context: already entered");
    for (auto& [k, v] : values_)
      active_.push_back(std::make_unique<tg::Context>(std::initializer_list<std::pair<std::string, long>>{{k, v}}));
  }
  void exit() {
    while (!active_.empty()) active_.pop_back();
  }

 private:
  std::vector<std::pair<std::string, long>> values_;
  std::vector<std::unique_ptr<tg::Context>> active_;
};

}  // namespace

void bind_context(nb::module_& m) {
  nb::class_<ContextScope>(m, "Context")
      .def(nb::init<nb::kwargs>())
      .def("__enter__",
           [](nb::handle self) {
             nb::cast<ContextScope&>(self).enter();
             return self;
           })
      .def("__exit__", [](ContextScope& s, nb::args) { s.exit(); });
  m.def(
      "context_value",
      [](const std::string& key) {
        tg::ContextVar* v = tg::ContextVar::find(key);
        if (!v) throw nb::key_error(key.c_str());
        return v->value();
      },
      nb::arg("key"));
  m.def("default_device", &tg::default_device);
  m.def("memory_of_device", &tg::memory_of_device, nb::arg("device"),
        "Where a device's buffers are in DLPack's terms, (device_type, device_id), or None (memory of its own).");
  // The canonical name of a device ("cpu" -> "CPU"); RuntimeError for an unknown one.
  m.def("canonicalize", &tg::canonical_device, nb::arg("device"));

  struct Counters {};
  nb::class_<Counters>(m, "GlobalCounters")
      .def_prop_rw_static(
          "kernel_count", [](nb::handle) { return tg::GlobalCounters::kernel_count.load(); },
          [](nb::handle, int64_t v) { tg::GlobalCounters::kernel_count = v; })
      .def_prop_rw_static(
          "global_ops", [](nb::handle) { return tg::GlobalCounters::global_ops.load(); },
          [](nb::handle, int64_t v) { tg::GlobalCounters::global_ops = v; })
      .def_prop_rw_static(
          "global_mem", [](nb::handle) { return tg::GlobalCounters::global_mem.load(); },
          [](nb::handle, int64_t v) { tg::GlobalCounters::global_mem = v; })
      .def_prop_rw_static(
          "time_sum_s", [](nb::handle) { return tg::GlobalCounters::time_sum_s.load(); },
          [](nb::handle, double v) { tg::GlobalCounters::time_sum_s = v; })
      .def_prop_ro_static("mem_used", [](nb::handle) { return tg::GlobalCounters::mem_used.load(); })
      .def_static("reset", &tg::GlobalCounters::reset);
}

}  // namespace tgpy
