// Movement op nodes and VIEW construction.
#include "uop/movement.h"

#include "tg/error.h"

namespace tg {

ShapeTracker tracker_of(const UOpPtr& u) {
  if (u->op == Ops::VIEW) return u->get<ShapeTracker>();
  return ShapeTracker::from_shape(u->shape);
}

UOpPtr make_view(const UOpPtr& u, const ShapeTracker& st) {
  const UOpPtr& base = u->op == Ops::VIEW ? u->src[0] : u;
  bool keeps_view = base->op == Ops::BUFFER || base->op == Ops::CONST;
  if (!keeps_view && st.contiguous() && st.shape() == base->shape) return base;
  return UOp::make(Ops::VIEW, base->dtype, {base}, st);
}

UOpPtr movement_uop(Ops op, const UOpPtr& u, Shape arg) {
  return UOp::make(op, u->dtype, {u}, std::move(arg));
}

ShapeTracker apply_movement(const ShapeTracker& st, Ops op, const Shape& arg) {
  auto pairs = [&] {
    Mask m;
    for (size_t i = 0; i + 1 < arg.size(); i += 2) m.emplace_back(arg[i], arg[i + 1]);
    return m;
  };
  switch (op) {
    case Ops::RESHAPE: return st.reshape(arg);
    case Ops::PERMUTE: return st.permute(std::vector<int64_t>(arg.begin(), arg.end()));
    case Ops::EXPAND: return st.expand(arg);
    case Ops::PAD: return st.pad(pairs());
    case Ops::SHRINK: return st.shrink(pairs());
    case Ops::FLIP: {
      std::vector<bool> f;
      for (const sint& a : arg) f.push_back(a != 0);
      return st.flip(f);
    }
    default: throw Error(std::string("apply_movement: not a movement op: ") + op_name(op));
  }
}

}  // namespace tg
