// Tensor::assign: replace a tensor's value in place, as tinygrad's assign. A realized tensor keeps its buffer
// (the optimizer's `p.assign(p - lr * g)` writes the new values into the parameter's memory); anything else
// simply takes the new graph.
#include "tensor/tensor_internal.h"

namespace tg {

namespace {
// A view of a realized buffer seen through movement ops (cache.shrink(...), t.reshape(...).permute(...)) as one VIEW
// of that buffer, so that an assign writes into the buffer; null when the chain ends at anything else.
UOpPtr buffer_view_of(const UOpPtr& u) {
  std::vector<const UOp*> moves;
  const UOp* n = u.get();
  for (; is_movement(n->op); n = n->src[0].get()) moves.push_back(n);
  if (moves.empty() || n->op != Ops::VIEW || n->src[0]->op != Ops::BUFFER) return nullptr;
  ShapeTracker st = n->get<ShapeTracker>();
  for (auto it = moves.rbegin(); it != moves.rend(); ++it) st = apply_movement(st, (*it)->op, (*it)->get<Shape>());
  return UOp::make(Ops::VIEW, n->dtype, {n->src[0]}, st);
}

// Every part of a MULTI a buffer view (a realized sharded or replicated tensor).
bool realized_parts(const UOp& multi) {
  for (size_t i = 1; i < multi.src.size(); i++)
    if (multi.src[i]->op != Ops::VIEW || multi.src[i]->src[0]->op != Ops::BUFFER) return false;
  return true;
}
}  // namespace

Tensor& Tensor::assign(const Tensor& x) {
  if (x.shape() != shape())
    throw Error("assign: cannot assign a tensor of shape " + to_string(x.shape()) + " to one of shape " +
                to_string(shape()));
  if (!(x.dtype() == dtype()))
    throw Error("assign: cannot assign a " + std::string(x.dtype().name()) + " tensor to a " +
                std::string(dtype().name()) + " tensor (cast it first)");
  if (x.device() != device())
    throw Error("assign: cannot assign a tensor on " + x.device() + " to one on " + device() + " (use to() first)");
  const UOpPtr& cur = uop();  // a node realized through another handle becomes its buffer view here
  const UOpPtr& value = x.uop();
  if (value == cur) return *this;
  if (UOpPtr view = buffer_view_of(cur)) {
    // A window of a realized buffer (a KV cache's row at start_pos): the value is stored through the window.
    d_->set_uop(UOp::make(Ops::ASSIGN, dtype(), {view, value}));
  } else if (cur->op == Ops::VIEW && cur->src[0]->op == Ops::BUFFER) {
    // The scheduler stores the value through this view into the same buffer; once realized, the ASSIGN is
    // replaced by that view again, so the tensor's node is the same from one step to the next.
    d_->set_uop(UOp::make(Ops::ASSIGN, dtype(), {cur, value}));
  } else if (cur->op == Ops::MULTI && realized_parts(*cur)) {
    // A realized tensor spread over several devices: the multi pass splits this into one ASSIGN per part.
    d_->set_uop(UOp::make(Ops::ASSIGN, dtype(), {cur, value}));
  } else if (cur->op == Ops::ASSIGN) {
    // A second assign before realizing writes into the same buffer too (after the first, if x reads it).
    d_->set_uop(UOp::make(Ops::ASSIGN, dtype(), {cur->src[0], value}));
  } else {
    d_->set_uop(value);
  }
  return *this;
}

}  // namespace tg
