// OptOps.PADTO (tinygrad's): pad a dim of every view up to a multiple of `amount`, so that a dim of awkward
// size (a 30-wide matmul, a 7x7 image) takes the upcasts, threads and workgroups of the next multiple. The
// padded elements are masked: loads read 0 there and the store skips them. An output loop may always be
// padded (its extra outputs are never stored); a reduce dim only when the reduce is a sum and the value it
// sums is exactly 0 wherever every load reads padding (x * y and x + 1 * y are; exp(x) is not: exp(0) = 1).
#include <cmath>
#include <optional>
#include <unordered_map>

#include "codegen/kernel.h"

namespace tg {
namespace {

// The value `root` takes where every load and every viewed const reads padding (0); nullopt for an op this
// does not evaluate, or a value that is not a number. (Walked in topological order: a fused kernel may be
// deep.)
std::optional<double> value_in_padding(const UOpPtr& root) {
  std::unordered_map<const UOp*, double> v;
  for (const UOp* u : toposort(root)) {
    auto s = [&](size_t i) -> std::optional<double> {
      auto it = v.find(u->src.at(i).get());
      return it == v.end() ? std::nullopt : std::optional<double>(it->second);
    };
    std::optional<double> r;
    switch (u->op) {
      case Ops::LOAD:
        r = 0.0;
        break;
      case Ops::CONST:
        r = u->src.empty() ? u->const_value() : 0.0;
        break;
      case Ops::CAST:
        r = s(0);
        break;
      case Ops::NEG:
        if (auto a = s(0)) r = -*a;
        break;
      case Ops::SQRT:
        if (auto a = s(0)) r = std::sqrt(*a);
        break;
      case Ops::EXP2:
        if (auto a = s(0)) r = std::exp2(*a);
        break;
      case Ops::RECIP:
        if (auto a = s(0)) r = 1.0 / *a;
        break;
      case Ops::ADD:
      case Ops::SUB:
      case Ops::MUL:
      case Ops::MAX:
      case Ops::CMPLT:
      case Ops::CMPNE:
      case Ops::FDIV:
        if (auto a = s(0), b = s(1); a && b) {
          switch (u->op) {
            case Ops::ADD:
              r = *a + *b;
              break;
            case Ops::SUB:
              r = *a - *b;
              break;
            case Ops::MUL:
              r = *a * *b;
              break;
            case Ops::MAX:
              r = std::max(*a, *b);
              break;
            case Ops::CMPLT:
              r = *a < *b ? 1.0 : 0.0;
              break;
            case Ops::CMPNE:
              r = *a != *b ? 1.0 : 0.0;
              break;
            default:
              r = *a / *b;
              break;
          }
        }
        break;
      case Ops::MULACC:
        if (auto a = s(0), b = s(1), c = s(2); a && b && c) r = *a * *b + *c;
        break;
      case Ops::WHERE:
        if (auto c = s(0), a = s(1), b = s(2); c && a && b) r = *c != 0 ? *a : *b;
        break;
      default:
        break;  // VIEW, DEFINE_GLOBAL (no value of their own), or an op not evaluated here
    }
    if (r && !std::isnan(*r)) v[u] = *r;
  }
  auto it = v.find(root.get());
  return it == v.end() ? std::nullopt : std::optional<double>(it->second);
}

}  // namespace

void Kernel::pad_symbolic_outputs() {
  for (size_t d = 0; d < full_shape_.size(); d++) {
    if (kinds_[d] != AxisKind::LOOP || full_shape_[d].is_int()) continue;
    const sint size = full_shape_[d];
    const int64_t padded = size.vmax();
    for (auto& st : sts_) {
      if (st.shape()[d] == 1) continue;  // broadcast along it
      Mask grow(st.shape().size(), {0, 0});
      grow[d] = {0, padded - size};  // the padding's mask ends at the size: stores and loads past it are off
      st = st.pad(grow);
      if (st.shape()[d].is_symbolic()) throw Error("pad_symbolic_outputs: " + size.str() + " did not pad to " + std::to_string(padded));
    }
    full_shape_[d] = padded;
  }
}

void Kernel::apply_padto(const Opt& opt) {
  auto fail = [&](const std::string& why) {
    throw KernelOptError("apply_opt " + opt.repr() + " on " + name() + ": " + why);
  };
  const int d = opt.axis;
  if (tc_) fail("a kernel with a tensor core is not padded");
  if (d < 0 || d >= first_upcast()) fail("PADTO pads an output loop or a reduce dim");
  const AxisKind kind = kinds_[size_t(d)];
  if (kind != AxisKind::LOOP && kind != AxisKind::REDUCE) fail("PADTO pads an output loop or a reduce dim");
  if (opt.amount < 2) fail("PADTO needs an amount of 2 or more");
  const int64_t size = full_shape_[size_t(d)], padded = (size + opt.amount - 1) / opt.amount * opt.amount;
  if (padded == size) fail("the dim is already a multiple of " + std::to_string(opt.amount));
  if (size * 4 <= opt.amount) fail("padding would more than quadruple the dim");
  if (kind == AxisKind::REDUCE) {
    if (reduce_->get<ReduceArg>().op != Ops::ADD) fail("only a sum may pad its reduce dim");
    if (value_in_padding(reduce_->src.at(0)) != 0.0) fail("the summed value is not 0 in the padding");
  }
  for (auto& st : sts_) {
    if (st.shape()[size_t(d)] == 1) continue;  // the output's reduce dims, broadcast views of size 1
    Mask grow(st.shape().size(), {0, 0});
    grow[size_t(d)] = {0, padded - size};
    st = st.pad(grow);
  }
  full_shape_[size_t(d)] = padded;
  applied_.push_back(opt);
}

}  // namespace tg
