// program_fuzz: running a program on a device, and comparing two devices' results within what the
// generator's value analysis allows.
#include <algorithm>
#include <cmath>
#include <functional>
#include <sstream>

#include "program_fuzz.h"
#include "program_fuzz_apply.h"

namespace program_fuzz {
namespace {

using tg::Tensor;

// "" when x and y (element i of a tensor of dtype d) agree; `err` bounds a legitimate difference.
std::string element_mismatch(double x, double y, tg::DType d, double tol) {
  if (std::isnan(x) || std::isnan(y)) return std::isnan(x) && std::isnan(y) ? "" : "NaN on one side only";
  if (x == y) return "";
  if (std::isinf(x) || std::isinf(y)) {
    // Only an inexact value at the edge of the dtype's range may round to inf on one side.
    double finite = std::isinf(x) ? y : x;
    return tol > 0 && !std::isinf(finite) && std::abs(finite) >= d.max() / 4 ? "" : "inf on one side only";
  }
  return std::abs(x - y) <= tol
             ? ""
             : "differs by " + std::to_string(std::abs(x - y)) + " (allowed " + std::to_string(tol) + ")";
}

std::string compare_values(const std::vector<double>& a, const std::vector<double>& b, tg::DType d,
                           const std::function<double(double, double)>& tol, const std::string& what) {
  if (a.size() != b.size())
    return what + ": " + std::to_string(a.size()) + " against " + std::to_string(b.size()) + " elements";
  for (size_t i = 0; i < a.size(); i++)
    if (std::string m = element_mismatch(a[i], b[i], d, tol(a[i], b[i])); !m.empty()) {
      std::ostringstream o;
      o.precision(9);
      o << what << " element " << i << ": " << a[i] << " against " << b[i] << ": " << m;
      return o.str();
    }
  return "";
}

}  // namespace

std::string Program::describe() const {
  std::string s = "// program_fuzz seed " + std::to_string(seed) + " (replay: FUZZ_SEED=" + std::to_string(seed) +
                  " FUZZ_PROGRAMS=1)\n";
  for (size_t i = 0; i < nodes.size(); i++) s += describe_node(nodes[i], int(i)) + "\n";
  s += "// outputs:";
  for (int o : outputs) s += " t" + std::to_string(o);
  if (backward)
    s += "\n// backward: (t" + std::to_string(outputs[0]) + ".cast(dtypes::float32) * Tensor(weights " +
         fmt(nodes[size_t(outputs[0])].shape) + ")).sum().backward(), gradients of the inputs";
  return s + "\n";
}

Result run(const Program& p, const std::string& device) {
  Result r;
  try {
    std::vector<Tensor> t;
    for (const Node& n : p.nodes) t.push_back(apply(n, t, device));
    std::vector<Tensor> outs, grads;
    for (int o : p.outputs) outs.push_back(t[size_t(o)]);
    if (p.backward) {  // before anything is realized: a realized output is a buffer, cut from its graph
      const Node& out = p.nodes[size_t(p.outputs[0])];
      Tensor w(std::vector<float>(p.loss_weight.begin(), p.loss_weight.end()), out.shape, {.device = device});
      (outs[0].cast(tg::dtypes::float32) * w).sum().backward();
      for (size_t i = 0; i < p.nodes.size(); i++) {
        r.has_grad.push_back(p.nodes[i].requires_grad && t[i].has_grad());
        if (r.has_grad.back()) grads.push_back(t[i].grad());
      }
    }
    // Values and gradients in one schedule.
    std::vector<Tensor> all = outs;
    all.insert(all.end(), grads.begin(), grads.end());
    Tensor::realize_all(all);
    for (auto& o : outs) r.outputs.push_back(o.tolist<double>());
    for (size_t i = 0, g = 0; i < r.has_grad.size(); i++)
      r.grads.push_back(r.has_grad[i] ? grads[g++].tolist<double>() : std::vector<double>{});
  } catch (const tg::Error& e) {
    r.error = e.what();
  }
  return r;
}

std::string compare(const Program& p, const Result& a, const Result& b) {
  if (!a.error.empty() || !b.error.empty()) {
    if (!a.error.empty() && !b.error.empty()) return "";
    return "only one side threw: " + (a.error.empty() ? b.error : a.error);
  }
  for (size_t k = 0; k < p.outputs.size(); k++) {
    const Node& n = p.nodes[size_t(p.outputs[k])];
    // 16x the estimate: it counts roundings, not their constants (a libm's few ulp, FMA contraction).
    double tol = 16 * n.v.err;
    std::string m = compare_values(
        a.outputs[k], b.outputs[k], n.dtype, [&](double, double) { return tol; },
        "output t" + std::to_string(p.outputs[k]));
    if (!m.empty()) return m;
  }
  if (!p.backward) return "";
  for (size_t i = 0; i < p.nodes.size(); i++) {
    if (a.has_grad[i] != b.has_grad[i]) return "gradient of t" + std::to_string(i) + " on one side only";
    if (!a.has_grad[i]) continue;
    // Gradients: relative to the largest one of the tensor (sums of products may cancel).
    double scale = 0;
    for (auto* g : {&a.grads[i], &b.grads[i]})
      for (double x : *g)
        if (std::isfinite(x)) scale = std::max(scale, std::abs(x));
    double rtol = p.nodes[i].dtype == tg::dtypes::float16 ? 2e-2 : 1e-3;
    std::string m = compare_values(
        a.grads[i], b.grads[i], p.nodes[i].dtype,
        [&](double x, double y) { return rtol * (std::abs(x) + std::abs(y) + scale); },
        "gradient of t" + std::to_string(i));
    if (!m.empty()) return m;
  }
  return "";
}

}  // namespace program_fuzz
