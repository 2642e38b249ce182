// tg::Variable (include/tg/variable.h) and tensors made from bound variables: VIEW(BIND(DEFINE_VAR, DEVICE)),
// a leaf the scheduler turns into a kernel argument (schedule.cpp).
#include "tg/variable.h"

#include <limits>
#include <unordered_map>

#include "tensor/tensor_internal.h"

namespace tg {

Variable::Variable(std::string name_, int64_t min_, int64_t max_) : name(std::move(name_)), min(min_), max(max_) {
  if (name.empty()) throw Error("Variable: needs a name");
  if (min > max)
    throw Error("Variable " + name + ": empty range [" + std::to_string(min) + ", " + std::to_string(max) + "]");
  constexpr int64_t lo = std::numeric_limits<int32_t>::min(), hi = std::numeric_limits<int32_t>::max();
  if (min < lo || max > hi)
    throw Error("Variable " + name + ": range [" + std::to_string(min) + ", " + std::to_string(max) +
                "] past int32 (kernels take it as an int argument)");
}

BoundVariable Variable::bind(int64_t value) const {
  if (value < min || value > max)
    throw Error("Variable " + name + ": bind(" + std::to_string(value) + ") outside its range [" + std::to_string(min) +
                ", " + std::to_string(max) + "]");
  return {*this, value};
}

Tensor::Tensor(const BoundVariable& v, TensorOptions opts) {
  if (opts.dtype && !(*opts.dtype == dtypes::int32))
    throw Error("Tensor(Variable " + v.var.name + "): a variable is int32, not " + opts.dtype->repr());
  if (opts.requires_grad) throw Error("Tensor(Variable " + v.var.name + "): an integer has no gradient");
  // A BoundVariable is built through bind(); a hand-made one is checked here all the same.
  BoundVariable checked = Variable(v.var.name, v.var.min, v.var.max).bind(v.value);
  std::string device = device_or_default(opts.device);
  auto var =
      UOp::make(Ops::DEFINE_VAR, dtypes::int32, {}, NamedRange{checked.var.name, checked.var.min, checked.var.max});
  auto dev = UOp::make(Ops::DEVICE, dtypes::void_, {}, device);
  auto bind = UOp::make(Ops::BIND, dtypes::int32, {var, dev}, checked.value);
  *this = Tensor(UOp::make(Ops::VIEW, dtypes::int32, {bind}, ShapeTracker::from_shape({})), device);
}

Tensor sint_tensor(const sint& s, const std::string& device) {
  TensorOptions opts{.dtype = dtypes::int32, .device = device};
  if (s.is_int()) return Tensor::full({}, s.value(), opts);
  // The expression's nodes, sources first (an expression is small: a recursion-free walk all the same).
  std::unordered_map<const UOp*, Tensor> built;
  for (const UOp* u : toposort(s.uop())) {
    auto src = [&](size_t i) { return built.at(u->src[i].get()); };
    switch (u->op) {
      case Ops::CONST: built.emplace(u, Tensor::full({}, u->const_int_value(), opts)); break;
      case Ops::DEFINE_VAR: break;  // read through its BIND
      case Ops::BIND: {
        const auto& r = u->src[0]->get<NamedRange>();
        built.emplace(u, Tensor(Variable(r.name, r.min, r.max).bind(u->get<int64_t>()), {.device = device}));
        break;
      }
      case Ops::ADD: built.emplace(u, src(0) + src(1)); break;
      case Ops::MUL: built.emplace(u, src(0) * src(1)); break;
      case Ops::IDIV: built.emplace(u, src(0).idiv(src(1))); break;
      case Ops::MAX: built.emplace(u, src(0).maximum(src(1))); break;
      default: throw Error("symbolic size " + s.str() + ": no tensor op for " + op_name(u->op));
    }
  }
  return built.at(s.uop().get());
}

std::optional<BoundVariable> Tensor::bound_variable() const {
  const UOpPtr& u = uop();
  const UOp* b = u->op == Ops::VIEW ? u->src[0].get() : u.get();
  if (b->op != Ops::BIND) return std::nullopt;
  const auto& r = b->src[0]->get<NamedRange>();
  return BoundVariable{Variable(r.name, r.min, r.max), b->get<int64_t>()};
}

}  // namespace tg
