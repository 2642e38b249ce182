// Reverse-mode differentiation of the tensor graph: one gradient rule per op (tinygrad's pm_gradient) and
// the walk that applies them from a root down to a set of targets (tinygrad's compute_gradient).
//
// Rules are written with Tensor ops rather than raw UOps: the gradients are ordinary lazy tensors, so they
// get the same dtype handling, broadcasting and shape checks as user code, and the scheduler fuses them like
// anything else. Each rule sees the node (`c.ret`), its incoming gradient (`c.grad`) and its sources as
// tensors (`c.src(i)`), and returns one gradient per source (nullopt: no gradient flows there).
#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <numbers>
#include <unordered_map>

#include "engine/buffers.h"
#include "tensor/custom_gradient.h"
#include "tensor/tensor_internal.h"
#include "uop/pattern.h"

namespace tg {
namespace {

using Grads = std::vector<std::optional<Tensor>>;

// What a rule sees. The matcher's return value only says that a rule fired; gradients travel in `out`.
struct GradCtx {
  const UOp* ret;
  Tensor grad;
  const std::unordered_map<const UOp*, std::string>* devices;
  Grads out;

  Tensor node() const { return Tensor(ret->ptr(), devices->at(ret)); }
  Tensor src(size_t i) const { return Tensor(ret->src.at(i), devices->at(ret->src[i].get())); }
  const Shape& src_shape(size_t i) const { return ret->src.at(i)->shape; }
  const Shape& arg() const { return ret->get<Shape>(); }
  Grads none() const { return Grads(ret->src.size()); }
};

using Rule = Grads (*)(const GradCtx&);

// A node that no real graph contains, returned by every rule so that PatternMatcher::rewrite reports a match.
const UOpPtr& fired() {
  static const UOpPtr sentinel = UOp::make(Ops::NOOP, dtypes::void_, {}, std::string("gradient rule fired"));
  return sentinel;
}

std::pair<UPat, TypedMatcher<GradCtx>::Fn> rule(Ops op, Rule fn) {
  return {UPat::ops_of({op}, "ret"), [fn](const Captures&, GradCtx& c) -> UOpPtr {
            c.out = fn(c);
            return fired();
          }};
}

constexpr double kLn2 = std::numbers::ln2;
constexpr double kHalfPi = std::numbers::pi / 2;

// MAX: the larger source takes the gradient; on a tie both take half (as tinygrad, so the sum is right).
Grads max_grad(const GradCtx& c) {
  Tensor x = c.src(0), y = c.src(1), half = c.grad * 0.5;
  return {x.gt(y).where(c.grad, x.ne(y).where(0, half)), x.lt(y).where(c.grad, x.ne(y).where(0, half))};
}

// d(prod)/dx_i is the product of the other elements. prod / x_i is that only without zeros (tinygrad's form
// gives 0/0 = nan at a zero); as torch: with one zero, the zero gets the product of the rest and the others 0;
// with two or more, every element gets 0.
Tensor prod_grad(const GradCtx& c, const std::vector<int64_t>& axes) {
  Tensor x = c.src(0);
  const Shape& s = c.src_shape(0);
  Tensor is_zero = x.eq(x.zeros_like());
  Tensor safe = is_zero.where(x.ones_like(), x);
  Tensor zeros = is_zero.cast(dtypes::int32).sum(axes, true).expand(s);
  Tensor rest = Tensor(UOp::make(Ops::REDUCE_AXIS, x.dtype(), {safe.uop()}, ReduceArg{Ops::MUL, axes}), x.device());
  Tensor others = is_zero.where((zeros == 1).where(rest.expand(s), 0), (zeros == 0).where(rest.expand(s) / safe, 0));
  return c.grad.expand(s) * others;
}

// POW, tinygrad's rule (torch's values at the edges): d/db = e * b^(e-1), but 0 where b = e = 0 (0 * 0^-1 would
// be nan); d/de = b^e * ln b, but at b = 0 the limit: -inf for e < 0, else 0 (not 0 * -inf = nan).
Grads pow_grad(const GradCtx& c) {
  Tensor b = c.src(0), e = c.src(1), ret = c.node();
  Tensor zero_b = b == 0;
  Tensor db = (zero_b * (e == 0)).where(e, e * b.pow(e - 1));
  Tensor de = zero_b.where((e < 0).where(-std::numeric_limits<double>::infinity(), 0.0), ret * b.log2() * kLn2);
  return {c.grad * db, c.grad * de};
}

Grads reduce_grad(const GradCtx& c) {
  const auto& ra = c.ret->get<ReduceArg>();
  Tensor x = c.src(0);
  const Shape& s = c.src_shape(0);
  switch (ra.op) {
    // Every input element contributed once: the gradient is broadcast back (the reduce kept its dims as 1).
    case Ops::ADD: return {c.grad.expand(s)};
    // Only the elements equal to the max get gradient, shared equally among ties.
    case Ops::MAX: {
      Tensor mask = x.eq(c.node()).cast(c.grad.dtype());
      return {mask / mask.sum(ra.axes, true) * c.grad};
    }
    case Ops::MUL: return {prod_grad(c, ra.axes)};
    default: throw Error(std::string("gradient: no gradient rule for REDUCE_AXIS ") + op_name(ra.op));
  }
}

// EXPAND: sum the gradient over the axes that were broadcast, keeping them as size 1.
Grads expand_grad(const GradCtx& c) {
  const Shape& in = c.src_shape(0);
  const Shape& out = c.ret->shape;
  if (in.size() != out.size())
    throw Error("gradient: EXPAND from " + to_string(in) + " to " + to_string(out) + " changes the number of dims");
  std::vector<int64_t> axes;
  for (size_t i = 0; i < in.size(); i++)
    if (in[i] != out[i]) axes.push_back(int64_t(i));
  if (axes.empty()) return {c.grad};
  return {c.grad.sum(axes, true)};
}

Grads permute_grad(const GradCtx& c) {
  const auto& order = c.arg();
  std::vector<int64_t> inverse(order.size());
  for (size_t i = 0; i < order.size(); i++) inverse[size_t(order[i])] = int64_t(i);
  return {c.grad.permute(inverse)};
}

Grads pad_grad(const GradCtx& c) {
  const auto& a = c.arg();
  const Shape& s = c.src_shape(0);
  PadArg bounds;
  for (size_t i = 0; i < s.size(); i++) bounds.emplace_back(a[2 * i], a[2 * i] + s[i]);
  return {c.grad.shrink(bounds)};
}

Grads shrink_grad(const GradCtx& c) {
  const auto& a = c.arg();
  const Shape& s = c.src_shape(0);
  PadArg padding;
  for (size_t i = 0; i < s.size(); i++) padding.emplace_back(a[2 * i], s[i] - a[2 * i + 1]);
  return {c.grad.pad(padding)};
}

Grads flip_grad(const GradCtx& c) {
  std::vector<int64_t> axes;
  for (size_t i = 0; i < c.arg().size(); i++)
    if (c.arg()[i]) axes.push_back(int64_t(i));
  return {c.grad.flip(axes)};
}

// A VIEW above a computed node is only differentiable when it is a plain reshape.
Grads multi_grad(const GradCtx& c) {
  Grads out = c.none();
  const int64_t axis = c.ret->get<int64_t>();
  const size_t n = c.ret->src.size() - 1;
  for (size_t i = 1; i <= (axis < 0 ? 1 : n); i++) {
    const std::string& dev = c.devices->at(c.ret->src[i].get());
    Tensor g = c.grad.to(dev);
    if (axis >= 0) {
      const Shape& part = c.src_shape(i);
      PadArg window;
      for (size_t d = 0; d < part.size(); d++)
        window.push_back(int64_t(d) == axis ? std::pair<sint, sint>{part[d] * int64_t(i - 1), part[d] * int64_t(i)}
                                            : std::pair<sint, sint>{0, part[d]});
      g = g.shrink(window);
    }
    out[i] = g;
  }
  return out;
}

Grads view_grad(const GradCtx& c) {
  const auto& st = c.ret->get<ShapeTracker>();
  if (st.contiguous() && prod(st.shape()) == prod(c.src_shape(0))) return {c.grad.reshape(c.src_shape(0))};
  throw Error("gradient: cannot differentiate through a VIEW of shape " + to_string(c.ret->shape) + " over " +
              std::string(op_name(c.ret->src[0]->op)) + " " + to_string(c.src_shape(0)) +
              " (build movement ops with movement_uop so autograd sees them)");
}

const TypedMatcher<GradCtx>& pm_gradient() {
  static const TypedMatcher<GradCtx> pm({
      // arithmetic
      rule(Ops::ADD, [](const GradCtx& c) -> Grads { return {c.grad, c.grad}; }),
      rule(Ops::MUL, [](const GradCtx& c) -> Grads { return {c.grad * c.src(1), c.grad * c.src(0)}; }),
      rule(Ops::NEG, [](const GradCtx& c) -> Grads { return {c.grad.neg()}; }),
      rule(Ops::FDIV, [](const GradCtx& c) -> Grads {
        Tensor x = c.src(0), y = c.src(1);
        return {c.grad / y, (c.grad * x / (y * y)).neg()};
      }),
      rule(Ops::SUB, [](const GradCtx& c) -> Grads { return {c.grad, c.grad.neg()}; }),
      rule(Ops::MULACC, [](const GradCtx& c) -> Grads { return {c.grad * c.src(1), c.grad * c.src(0), c.grad}; }),
      rule(Ops::MAX, max_grad),
      rule(Ops::POW, pow_grad),
      // where: the condition gets none; each branch gets the gradient where it was chosen
      rule(Ops::WHERE, [](const GradCtx& c) -> Grads {
        Tensor cond = c.src(0);
        return {std::nullopt, cond.where(c.grad, 0), cond.where(0, c.grad)};
      }),
      // transcendental (the result `node()` is reused where it is the derivative's main factor)
      rule(Ops::EXP2, [](const GradCtx& c) -> Grads { return {c.grad * c.node() * kLn2}; }),
      rule(Ops::LOG2, [](const GradCtx& c) -> Grads { return {c.grad / (c.src(0) * kLn2)}; }),
      rule(Ops::SIN, [](const GradCtx& c) -> Grads { return {c.grad * (kHalfPi - c.src(0)).sin()}; }),
      rule(Ops::SQRT, [](const GradCtx& c) -> Grads { return {c.grad / (c.node() * 2)}; }),
      rule(Ops::RECIP, [](const GradCtx& c) -> Grads { return {(c.grad * c.node() * c.node()).neg()}; }),
      // piecewise constant: zero almost everywhere
      rule(Ops::TRUNC, [](const GradCtx& c) -> Grads { return {c.grad.zeros_like()}; }),
      // integer, boolean and comparison results carry no gradient
      rule(Ops::CMPLT, [](const GradCtx& c) { return c.none(); }),
      rule(Ops::CMPNE, [](const GradCtx& c) { return c.none(); }),
      rule(Ops::AND, [](const GradCtx& c) { return c.none(); }),
      rule(Ops::OR, [](const GradCtx& c) { return c.none(); }),
      rule(Ops::XOR, [](const GradCtx& c) { return c.none(); }),
      rule(Ops::IDIV, [](const GradCtx& c) { return c.none(); }),
      rule(Ops::MOD, [](const GradCtx& c) { return c.none(); }),
      rule(Ops::SHL, [](const GradCtx& c) { return c.none(); }),
      rule(Ops::SHR, [](const GradCtx& c) { return c.none(); }),
      rule(Ops::THREEFRY, [](const GradCtx& c) { return c.none(); }),
      rule(Ops::DOT4, [](const GradCtx& c) { return c.none(); }),
      rule(Ops::BITCAST, [](const GradCtx& c) { return c.none(); }),
      // casts: cast the gradient back, but only into float sources (an int input has no gradient)
      rule(Ops::CAST, [](const GradCtx& c) -> Grads {
        DType in = c.ret->src[0]->dtype;
        if (!in.is_float()) return c.none();
        return {c.grad.cast(in)};
      }),
      // reductions
      rule(Ops::REDUCE_AXIS, reduce_grad),
      // movement: each op's inverse
      rule(Ops::RESHAPE, [](const GradCtx& c) -> Grads { return {c.grad.reshape(c.src_shape(0))}; }),
      rule(Ops::PERMUTE, permute_grad),
      rule(Ops::EXPAND, expand_grad),
      rule(Ops::PAD, pad_grad),
      rule(Ops::SHRINK, shrink_grad),
      rule(Ops::FLIP, flip_grad),
      rule(Ops::VIEW, view_grad),
      // buffers and devices: pass through; COPY sends the gradient back to the source's device
      rule(Ops::CONTIGUOUS, [](const GradCtx& c) -> Grads { return {c.grad}; }),
      rule(Ops::COPY, [](const GradCtx& c) -> Grads { return {std::nullopt, c.grad.to(c.src(1).device())}; }),
      rule(Ops::ASSIGN, [](const GradCtx& c) -> Grads { return {std::nullopt, c.grad}; }),
      rule(Ops::DETACH, [](const GradCtx& c) { return c.none(); }),
      // a sharded value: each part's gradient is its window of the whole gradient, on its device; a replicated
      // value is one value, so its gradient flows into the first replica only
      rule(Ops::MULTI, multi_grad),
  });
  return pm;
}

// The device of every node below root: where its value lives (COPY names its target, everything else
// inherits from its sources).
std::unordered_map<const UOp*, std::string> node_devices(const std::vector<const UOp*>& topo) {
  std::unordered_map<const UOp*, std::string> dev;
  for (const UOp* u : topo) {
    if (u->op == Ops::DEVICE) dev[u] = u->get<std::string>();
    else if (u->op == Ops::BUFFER) dev[u] = buffer_device(u);
    else if (u->op == Ops::COPY) dev[u] = u->src.at(0)->get<std::string>();
    else
      for (auto& s : u->src)
        if (auto it = dev.find(s.get()); it != dev.end()) {
          dev[u] = it->second;
          break;
        }
  }
  return dev;
}

// The inputs of u's hand-written gradient as tensors, or nullopt when the rules must run instead: no entry,
// or a target among the nodes between u and its inputs (an equal node built by hand elsewhere), which the
// hand-written gradient would skip.
std::optional<std::vector<Tensor>> custom_inputs(const CustomGradient& cg,
                                                 const std::function<bool(const UOp*)>& is_target, const UOp* u) {
  std::vector<Tensor> inputs;
  std::unordered_map<const UOp*, bool> stop;
  for (size_t i = 0; i < cg.inputs.size(); i++) {
    UOpPtr in = cg.inputs[i].lock();
    if (!in) return std::nullopt;
    stop[in.get()] = true;
    inputs.emplace_back(in, cg.devices[i]);
  }
  std::vector<const UOp*> todo(1, u);
  while (!todo.empty()) {
    const UOp* n = todo.back();
    todo.pop_back();
    for (auto& s : n->src)
      if (stop.emplace(s.get(), false).second) {
        if (is_target(s.get())) return std::nullopt;
        todo.push_back(s.get());
      }
  }
  return inputs;
}

}  // namespace

std::vector<std::optional<Tensor>> compute_gradient(const Tensor& root, const Tensor& root_grad,
                                                    const std::vector<UOpPtr>& targets) {
  const UOpPtr& root_uop = root.uop();
  std::vector<const UOp*> topo = toposort(root_uop);
  // A target is matched either as itself or as the node that was realized into it: a tensor realized after
  // the root was built now holds a VIEW of its buffer while the root's graph still holds the computation.
  std::unordered_map<const UOp*, size_t> target_index;
  for (size_t i = 0; i < targets.size(); i++) target_index.emplace(targets[i].get(), i);
  auto target_of = [&](const UOp* u) -> std::optional<size_t> {
    if (auto it = target_index.find(u); it != target_index.end()) return it->second;
    if (UOpPtr r = realized(u))
      if (auto it = target_index.find(r.get()); it != target_index.end()) return it->second;
    return std::nullopt;
  };
  // Only nodes with a path to a target need a gradient; DETACH cuts every path through it.
  std::unordered_map<const UOp*, bool> on_path;
  for (const UOp* u : topo) {
    bool p = target_of(u).has_value();
    if (!p && u->op != Ops::DETACH)
      for (auto& s : u->src) p = p || on_path[s.get()];
    on_path[u] = p;
  }
  std::vector<std::optional<Tensor>> result(targets.size());
  if (!on_path[root_uop.get()]) return result;
  auto devices = node_devices(topo);
  // Walk users before sources; gradients of several users of one node add up.
  std::unordered_map<const UOp*, Tensor> grads;
  grads.emplace(root_uop.get(), root_grad);
  const TypedMatcher<GradCtx>& pm = pm_gradient();
  for (auto it = topo.rbegin(); it != topo.rend(); ++it) {
    const UOp* u = *it;
    auto found = grads.find(u);
    if (found == grads.end()) continue;
    Tensor g = found->second;
    grads.erase(found);  // the sources get theirs below; dropping it keeps memory flat on long graphs
    if (auto t = target_of(u)) result[*t] = result[*t] ? *result[*t] + g : g;
    bool any_src = false;
    for (auto& s : u->src) any_src = any_src || on_path[s.get()];
    if (!any_src) continue;
    auto add_grad = [&](const UOp* s, const Tensor& sg) {
      if (auto e = grads.find(s); e != grads.end()) e->second = e->second + sg;
      else grads.emplace(s, sg);
    };
    if (auto cg = custom_gradient(u)) {
      auto is_target = [&](const UOp* n) { return target_of(n).has_value(); };
      if (auto inputs = custom_inputs(*cg, is_target, u)) {
        std::vector<std::optional<Tensor>> out = cg->fn(g, *inputs);
        for (size_t i = 0; i < inputs->size() && i < out.size(); i++) {
          // the node the entry was made with: the tensor built from it may already read the realized buffer
          const UOp* s = cg->inputs[i].lock().get();
          if (!out[i] || !on_path[s]) continue;
          if (out[i]->shape() != s->shape)
            throw Error("gradient: a hand-written gradient gave shape " + to_string(out[i]->shape()) +
                        " for an input of shape " + to_string(s->shape));
          add_grad(s, *out[i]);
        }
        continue;
      }
    }
    GradCtx ctx{u, g, &devices, {}};
    if (!pm.rewrite(u->ptr(), ctx))
      throw Error(std::string("gradient: no gradient rule for ") + op_name(u->op));
    for (size_t i = 0; i < u->src.size() && i < ctx.out.size(); i++) {
      const UOp* s = u->src[i].get();
      if (!ctx.out[i] || !on_path[s]) continue;
      const Tensor& sg = *ctx.out[i];
      if (sg.shape() != s->shape)
        throw Error(std::string("gradient: the rule for ") + op_name(u->op) + " gave a gradient of shape " +
                    to_string(sg.shape()) + " for a source of shape " + to_string(s->shape));
      add_grad(s, sg);
    }
  }
  return result;
}

}  // namespace tg
