// The non-template halves of TG_PARAMETERS and load_state_dict (include/tg/nn.h): splitting the member
// list, and assigning a state dict's values to a model's tensors.
#include <cstdio>
#include <set>

#include "tensor/host_tensor.h"
#include "tg/context.h"
#include "tg/nn.h"

namespace tg::nn::detail {

std::vector<std::string_view> split_names(std::string_view names) {
  std::vector<std::string_view> out;
  auto trim = [](std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\n' || s.front() == '\r'))
      s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\n' || s.back() == '\r'))
      s.remove_suffix(1);
    return s;
  };
  while (true) {
    size_t comma = names.find(',');
    out.push_back(trim(names.substr(0, comma)));
    if (comma == std::string_view::npos) break;
    names.remove_prefix(comma + 1);
  }
  return out;
}

std::vector<Tensor> load_into(std::vector<std::pair<std::string, Tensor>>& targets,
                              const std::map<std::string, Tensor>& state_dict, bool strict) {
  // Check everything first, so a bad entry leaves the model untouched.
  std::vector<std::pair<Tensor*, Tensor>> todo;
  std::set<std::string> used;
  for (auto& [name, t] : targets) {
    auto it = state_dict.find(name);
    if (it == state_dict.end()) {
      if (strict)
        throw Error("load_state_dict: '" + name + "' " + to_string(t.shape()) +
                    " is missing from the state dict (pass strict=false to keep its value)");
      if (DEBUG >= 1) std::fprintf(stderr, "WARNING: not loading %s\n", name.c_str());
      continue;
    }
    used.insert(name);
    Tensor v = it->second;
    Shape want = t.shape(), got = v.shape();
    if (want != got) {
      // () and (1,) hold the same single value (torch saves scalars either way).
      bool scalar_pair = (want.empty() && got == Shape{1}) || (got.empty() && want == Shape{1});
      if (!scalar_pair)
        throw Error("load_state_dict: shape mismatch in '" + name + "': the model has " + to_string(want) +
                    ", the state dict " + to_string(got));
      v = v.reshape(want);
    }
    if (v.dtype() != t.dtype()) v = v.cast(t.dtype());
    if (v.device() != t.device()) v = v.to(t.device());
    todo.emplace_back(&t, v);
  }
  if (DEBUG >= 1 && used.size() < state_dict.size()) {
    std::string unused;
    for (const auto& [k, v] : state_dict)
      if (!used.count(k)) unused += (unused.empty() ? "" : ", ") + k;
    std::fprintf(stderr, "WARNING: unused weights in state_dict: %s\n", unused.c_str());
  }
  std::vector<Tensor> loaded;
  for (auto& [t, v] : todo) {
    // A state dict that is the model's own (a round trip) holds the same handles: nothing to do.
    if (t->uop() == v.uop()) {
    } else if (is_buffer_view(*t)) {
      t->assign(v);  // stored into the model's own buffer
    } else {
      // A model tensor not realized yet: assign would make it the state dict's node, and once either is realized
      // both would read one buffer (a later change to the state dict's tensor would show in the model). The
      // value goes into memory of its own instead.
      t->assign(Tensor::empty(t->shape(), {.dtype = t->dtype(), .device = t->device()}).assign(v));
    }
    loaded.push_back(*t);
  }
  Tensor::realize_all(loaded);
  return loaded;
}

}  // namespace tg::nn::detail
