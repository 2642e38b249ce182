// TinyJit (include/tg/jit.h): capture on the second call, replay from the third (engine/capture.h).
#include "tg/jit.h"

#include <cstdio>
#include <optional>

#include "engine/capture.h"
#include "engine/replay_plan.h"
#include "tensor/tensor_internal.h"
#include "tg/context.h"
#include "tg/error.h"

namespace tg {

struct TinyJit::State {
  Fn fn;
  int64_t calls = 0;
  bool captured = false;
  std::unique_ptr<ReplayPlan> plan;    // what a replay runs, bound to memory (made at capture)
  std::vector<UOpPtr> input_buffers;   // the BUFFER node each input had at capture (variables have none)
  std::vector<std::optional<Variable>> variables;  // per input: the variable it is, if one
  std::vector<Shape> shapes;
  std::vector<DType> dtypes;
  std::vector<std::string> devices;
  std::vector<Tensor> outputs;         // views of the buffers the captured kernels write
};

namespace {

// An input as a realized contiguous buffer of its own (a view of one would bake its layout into the kernels).
Tensor as_buffer(const Tensor& t) {
  Tensor c = t.contiguous();
  c.realize();
  return c;
}

// An output of a symbolic shape with this call's values (a decoder's scores over start_pos + 1 keys): the captured
// tensor's sizes hold the capture's values.
Tensor with_values(const Tensor& t, const std::vector<std::pair<std::string, int64_t>>& values) {
  const UOpPtr& u = t.uop();
  if (u->op != Ops::VIEW || !u->get<ShapeTracker>().symbolic()) return t;
  ShapeTracker st = u->get<ShapeTracker>().rebind([&](const UOp& b) -> UOpPtr {
    for (const auto& [name, v] : values)
      if (b.src[0]->get<NamedRange>().name == name) return UOp::make(Ops::BIND, b.dtype, b.src, v);
    return nullptr;
  });
  return Tensor(UOp::make(Ops::VIEW, u->dtype, u->src, st), t.device());
}

const UOp* buffer_of_view(const UOp* u) {
  return u->op == Ops::VIEW && !u->src.empty() && u->src[0]->op == Ops::BUFFER ? u->src[0].get() : nullptr;
}

// The buffers a realized tensor is: one, or one per device of a tensor spread over several; none when it is not
// (all) buffers.
std::vector<const UOp*> buffer_nodes(const Tensor& realized) {
  const UOpPtr& u = realized.uop();
  if (u->op != Ops::MULTI) {
    const UOp* b = buffer_of_view(u.get());
    return b ? std::vector<const UOp*>{b} : std::vector<const UOp*>{};
  }
  std::vector<const UOp*> out;
  for (size_t i = 1; i < u->src.size(); i++) {
    const UOp* b = buffer_of_view(u->src[i].get());
    if (!b) return {};
    out.push_back(b);
  }
  return out;
}

// The buffers of input i (made by as_buffer); an input with no memory of its own (no elements) cannot be rebound.
std::vector<const UOp*> input_buffers(const Tensor& in, size_t i) {
  std::vector<const UOp*> b = buffer_nodes(in);
  if (b.empty())
    throw Error("TinyJit: input " + std::to_string(i) + " of shape " + to_string(in.shape()) +
                " has no buffer to replay on (an empty tensor?)");
  return b;
}

// Inputs as buffers of their own; bound variables stay variables (each replay passes their values to the kernels).
// Also the variables' names, in order (each at most once).
std::vector<Tensor> jit_inputs(const std::vector<Tensor>& inputs, std::vector<std::string>& variable_names) {
  std::vector<Tensor> in;
  for (const Tensor& t : inputs) {
    std::optional<BoundVariable> bv = t.bound_variable();
    if (bv) {
      for (const std::string& n : variable_names)
        if (n == bv->var.name) throw Error("TinyJit: variable " + n + " is given twice as an input");
      variable_names.push_back(bv->var.name);
    }
    in.push_back(bv ? t : as_buffer(t));
  }
  return in;
}

}  // namespace

TinyJit::TinyJit(Fn fn) : s_(std::make_shared<State>()) {
  if (!fn) throw Error("TinyJit: needs a function");
  s_->fn = std::move(fn);
}

int64_t TinyJit::calls() const { return s_->calls; }
bool TinyJit::captured() const { return s_->captured; }
size_t TinyJit::kernel_count() const { return s_->plan ? s_->plan->size() : 0; }
bool TinyJit::graphed() const { return s_->plan && s_->plan->graphed(); }
std::pair<int64_t, int64_t> TinyJit::planned_memory() const {
  if (!s_->plan) return {0, 0};
  return {s_->plan->memory().bytes, s_->plan->memory().arena_bytes};
}

void TinyJit::reset() {
  Fn fn = std::move(s_->fn);
  s_ = std::make_shared<State>();
  s_->fn = std::move(fn);
}

// The second call: run the function while recording what it launches, then bind the record to memory.
std::vector<Tensor> TinyJit::capture(const std::vector<Tensor>& in, std::vector<std::string> variable_names) {
  State& s = *s_;
  std::vector<Tensor> out;
  std::vector<ScheduleItem> items;
  std::vector<HostInput> host_inputs;
  {
    ScheduleCapture capture;
    out = s.fn(in);
    Tensor::realize_all(out);
    items = std::move(capture.items);
    host_inputs = std::move(capture.host_inputs);
  }
  if (items.empty()) throw Error("TinyJit: the function ran no kernel while it was captured (nothing to replay)");
  for (size_t i = 0; i < in.size(); i++) {
    s.variables.push_back(in[i].bound_variable() ? std::optional(in[i].bound_variable()->var) : std::nullopt);
    s.shapes.push_back(in[i].shape());
    s.dtypes.push_back(in[i].dtype());
    s.devices.push_back(in[i].device());
    if (s.variables[i]) continue;
    for (const UOp* b : input_buffers(in[i], i)) {
      for (size_t o = 0; o < out.size(); o++)
        for (const UOp* ob : buffer_nodes(out[o]))
          if (ob == b)
            throw Error("TinyJit: output " + std::to_string(o) + " is input " + std::to_string(i) +
                        " (a replay would return the capture's input, not the new one): return a copy");
      s.input_buffers.push_back(b->ptr());
    }
  }
  std::vector<UOpPtr> out_buffers;
  for (const Tensor& o : out)
    for (const UOp* b : buffer_nodes(o)) out_buffers.push_back(b->ptr());
  s.plan = std::make_unique<ReplayPlan>(std::move(items), s.input_buffers, out_buffers, std::move(host_inputs),
                                        std::move(variable_names));
  s.outputs = out;
  s.captured = true;
  return out;
}

// A later call: its inputs checked against the capture's, then the plan run on their buffers and values.
std::vector<Tensor> TinyJit::replay(const std::vector<Tensor>& in) {
  State& s = *s_;
  if (in.size() != s.shapes.size())
    throw Error("TinyJit: called with " + std::to_string(in.size()) + " inputs, captured with " +
                std::to_string(s.shapes.size()));
  std::vector<UOpPtr> buffers;
  std::vector<int64_t> values;
  for (size_t i = 0; i < in.size(); i++) {
    auto bad = [&](const std::string& what, const std::string& now, const std::string& then) {
      return Error("TinyJit: input " + std::to_string(i) + " has " + what + " " + now + ", captured with " + then);
    };
    std::optional<BoundVariable> bv = in[i].bound_variable();
    const std::optional<Variable>& was = s.variables[i];
    if (bool(bv) != bool(was) || (bv && !(bv->var == *was)))
      throw bad("the value", bv ? "variable " + bv->var.name : "a tensor",
                was ? "variable " + was->name + " [" + std::to_string(was->min) + ", " + std::to_string(was->max) + "]"
                    : "a tensor");
    if (bv) {
      values.push_back(bv->value);
      continue;
    }
    if (in[i].shape() != s.shapes[i]) throw bad("shape", to_string(in[i].shape()), to_string(s.shapes[i]));
    if (in[i].dtype() != s.dtypes[i]) throw bad("dtype", in[i].dtype().repr(), s.dtypes[i].repr());
    if (in[i].device() != s.devices[i]) throw bad("device", in[i].device(), s.devices[i]);
    for (const UOp* b : input_buffers(in[i], i)) buffers.push_back(b->ptr());
  }
  if (DEBUG == 2) {  // the batch as one line (DEBUG>=3 lists its kernels too)
    {
      Context quiet({{"DEBUG", 1}});
      s.plan->run(buffers, values);
    }
    std::printf("*** JIT      replay of %zu kernels%s\n", s.plan->size(), s.plan->graphed() ? " (one graph)" : "");
  } else {
    s.plan->run(buffers, values);
  }
  std::vector<std::pair<std::string, int64_t>> named;
  for (size_t i = 0, k = 0; i < in.size(); i++)
    if (s.variables[i]) named.emplace_back(s.variables[i]->name, values[k++]);
  if (named.empty()) return s.outputs;
  std::vector<Tensor> out;
  for (const Tensor& o : s.outputs) out.push_back(with_values(o, named));
  return out;
}

std::vector<Tensor> TinyJit::operator()(const std::vector<Tensor>& inputs) {
  State& s = *s_;
  s.calls++;
  if (JIT <= 0 || (!s.captured && s.calls == 1)) {  // not jitted, or the first call: as usual
    std::vector<Tensor> out = s.fn(inputs);
    Tensor::realize_all(out);
    return out;
  }
  std::vector<std::string> variable_names;
  std::vector<Tensor> in = jit_inputs(inputs, variable_names);
  return s.captured ? replay(in) : capture(in, std::move(variable_names));
}

}  // namespace tg
