// The pass "multi" (schedule/multi.h): MULTI nodes pushed up to the roots, leaving one graph per device.
#include "schedule/multi.h"

#include <string>

#include "tg/error.h"
#include "uop/device_set.h"
#include "uop/movement.h"
#include "uop/pattern.h"

namespace tg {
namespace {

// A MULTI node taken apart.
struct Parts {
  UOpPtr device;  // DEVICE of the set
  std::vector<std::string> devices;
  int64_t axis = -1;  // -1: replicated
  std::vector<UOpPtr> parts;
  size_t n() const { return parts.size(); }
};

Parts parts_of(const UOpPtr& m) {
  Parts p{m->src[0], device_set_members(m->src[0]->get<std::string>()), m->get<int64_t>(), {}};
  p.parts.assign(m->src.begin() + 1, m->src.end());
  return p;
}

UOpPtr make_multi(const UOpPtr& device, int64_t axis, const std::vector<UOpPtr>& parts) {
  return multi_uop(device->get<std::string>(), axis, parts);
}

UOpPtr device_node(const std::string& d) { return UOp::make(Ops::DEVICE, dtypes::void_, {}, d); }

// Each part through `f` (the same op on every device), the axis as given.
template <class F>
UOpPtr per_part(const Parts& p, int64_t axis, F f) {
  std::vector<UOpPtr> out;
  for (size_t i = 0; i < p.n(); i++) out.push_back(f(p.parts[i], i));
  return make_multi(p.device, axis, out);
}

// ---- moving parts between devices ----

// The value as a whole buffer (a copy reads its source's buffer whole), as Tensor::contiguous.
UOpPtr contiguous_of(const UOpPtr& u) {
  if (u->op == Ops::CONTIGUOUS) return u;
  if (u->op == Ops::VIEW && u->src[0]->op == Ops::BUFFER) {
    const ShapeTracker& st = u->get<ShapeTracker>();
    if (st.contiguous() && prod(st.shape()) == u->src[0]->get<BufferArg>().size) return u;
  }
  return UOp::make(Ops::CONTIGUOUS, u->dtype, {u});
}

UOpPtr copy_to(const std::string& to, const std::string& from, const UOpPtr& u) {
  if (to == from) return u;
  return UOp::make(Ops::COPY, u->dtype, {device_node(to), contiguous_of(u)});
}

int64_t part_size(const Parts& p) {
  const sint& s = p.parts[0]->shape.at(size_t(p.axis));
  if (!s.is_int()) throw Error("multi: the sharded axis " + std::to_string(p.axis) + " has a symbolic size");
  return int64_t(s);
}

// Begin/end pairs of every dim of `shape`, the whole dim except [lo, hi) on `axis`.
Shape axis_window(const Shape& shape, int64_t axis, const sint& lo, const sint& hi) {
  Shape arg;
  for (size_t i = 0; i < shape.size(); i++) {
    arg.push_back(int64_t(i) == axis ? lo : sint(0));
    arg.push_back(int64_t(i) == axis ? hi : shape[i]);
  }
  return arg;
}

// Parts that other devices read, each made a whole buffer once (its own device's use reads the same buffer).
Parts contiguous_parts(Parts p) {
  for (UOpPtr& part : p.parts) part = contiguous_of(part);
  return p;
}

// The whole value on `dev`: every part copied there and put side by side along the axis (padded to the whole size,
// then added, as cat; bools go through uint8 since a sum of bools is not their concatenation).
UOpPtr gather_on(const Parts& p, const std::string& dev) {
  const int64_t k = part_size(p), n = int64_t(p.n());
  const DType dt = p.parts[0]->dtype;
  UOpPtr total;
  for (int64_t j = 0; j < n; j++) {
    UOpPtr part = copy_to(dev, p.devices[size_t(j)], p.parts[size_t(j)]);
    if (dt == dtypes::bool_) part = part->cast(dtypes::uint8);
    Shape pad;
    for (size_t i = 0; i < part->shape.size(); i++) {
      pad.push_back(int64_t(i) == p.axis ? j * k : 0);
      pad.push_back(int64_t(i) == p.axis ? (n - 1 - j) * k : 0);
    }
    part = movement_uop(Ops::PAD, part, pad);
    total = total ? UOp::alu(Ops::ADD, {total, part}) : part;
  }
  return dt == dtypes::bool_ ? total->cast(dt) : total;
}

// Every device holding the whole value.
Parts gathered(const Parts& p) {
  if (p.axis < 0) return p;
  Parts out{p.device, p.devices, -1, {}};
  const Parts whole = contiguous_parts(p);
  for (const std::string& d : p.devices) out.parts.push_back(gather_on(whole, d));
  return out;
}

// The value sharded along `axis` (-1: replicated): replicas keep their part; another axis is gathered first.
Parts resharded(const Parts& p, int64_t axis) {
  if (p.axis == axis) return p;
  Parts full = gathered(p);
  if (axis < 0) return full;
  const sint& size = full.parts[0]->shape.at(size_t(axis));
  const int64_t n = int64_t(p.n());
  if (!size.is_int() || int64_t(size) % n != 0)
    throw Error("multi: cannot shard dim " + std::to_string(axis) + " of size " + size.str() + " over " +
                std::to_string(n) + " devices (not a multiple)");
  const int64_t k = int64_t(size) / n;
  full.axis = axis;
  for (int64_t i = 0; i < n; i++) {
    UOpPtr& part = full.parts[size_t(i)];
    part = movement_uop(Ops::SHRINK, part, axis_window(part->shape, axis, i * k, (i + 1) * k));
  }
  return full;
}

// Past two devices and kRingBytes, the copies form a ring: the flattened value in n chunks, chunk c summed along the
// ring from device c + 1 (each device adds its part to what it receives and passes it on) to device c, which sends
// the finished chunk to every other device. A device then sends and receives about 2 (n - 1) / n of the value,
// not n - 1 times it. Every device gets each chunk's one sum: the replicas are the same bits. Null below the size.
constexpr int64_t kRingBytes = int64_t(1) << 18;
UOpPtr ring_all_reduced(const Parts& p, Ops op) {
  const int64_t n = int64_t(p.n());
  const sint size = prod(p.parts[0]->shape);
  const DType dt = p.parts[0]->dtype;
  if (n <= 2 || !size.is_int() || int64_t(size) * dt.itemsize() < kRingBytes) return nullptr;
  const int64_t numel = int64_t(size), k = (numel + n - 1) / n;
  auto chunk = [&](size_t j, int64_t c) {  // part j's chunk c, (k,)
    UOpPtr flat = movement_uop(Ops::RESHAPE, p.parts[j], Shape{numel});
    if (n * k != numel) flat = movement_uop(Ops::PAD, flat, Shape{0, n * k - numel});
    return movement_uop(Ops::SHRINK, flat, Shape{c * k, (c + 1) * k});
  };
  std::vector<UOpPtr> summed;  // chunk c's sum, on device c
  for (int64_t c = 0; c < n; c++) {
    size_t at = size_t((c + 1) % n);
    UOpPtr acc = chunk(at, c);
    for (int64_t step = 2; step <= n; step++) {
      const size_t next = size_t((c + step) % n);
      acc = UOp::alu(op, {copy_to(p.devices[next], p.devices[at], acc), chunk(next, c)});
      at = next;
    }
    summed.push_back(contiguous_of(acc));
  }
  std::vector<UOpPtr> parts;
  for (size_t i = 0; i < size_t(n); i++) {
    UOpPtr whole;  // the chunks side by side (padded, then added: cat)
    for (int64_t c = 0; c < n; c++) {
      UOpPtr piece = copy_to(p.devices[i], p.devices[size_t(c)], summed[size_t(c)]);
      if (dt == dtypes::bool_) piece = piece->cast(dtypes::uint8);
      piece = movement_uop(Ops::PAD, piece, Shape{c * k, (n - 1 - c) * k});
      whole = whole ? UOp::alu(Ops::ADD, {whole, piece}) : piece;
    }
    if (dt == dtypes::bool_) whole = whole->cast(dt);
    whole = movement_uop(Ops::SHRINK, whole, Shape{0, numel});
    parts.push_back(movement_uop(Ops::RESHAPE, whole, p.parts[0]->shape));
  }
  return make_multi(p.device, -1, parts);
}

// The pass's state: how the devices all-reduce.
struct MultiCtx {
  const CollectiveSupport* collective = nullptr;
};

// The reduce of the parts on every device, in the same order everywhere (so the replicas are equal bit for bit).
// One collective where the devices have one (ALLREDUCE nodes: device i's result, arg the op and i), else each
// device adds the others' parts, copied to it: n - 1 copies of the reduced value per device.
Parts all_reduced(const Parts& partial, Ops op, const MultiCtx& ctx) {
  const Parts p = contiguous_parts(partial);
  Parts out{p.device, p.devices, -1, {}};
  if (ctx.collective && *ctx.collective && (*ctx.collective)(p.devices, p.parts[0]->dtype)) {
    for (size_t i = 0; i < p.n(); i++) {
      std::vector<UOpPtr> src{device_node(p.devices[i])};
      src.insert(src.end(), p.parts.begin(), p.parts.end());
      out.parts.push_back(UOp::make(Ops::ALLREDUCE, p.parts[0]->dtype, std::move(src), ReduceArg{op, {int64_t(i)}}));
    }
    return out;
  }
  if (UOpPtr m = ring_all_reduced(p, op)) return parts_of(m);
  for (size_t i = 0; i < p.n(); i++) {
    UOpPtr total;
    for (size_t j = 0; j < p.n(); j++) {
      UOpPtr part = copy_to(p.devices[i], p.devices[j], p.parts[j]);
      total = total ? UOp::alu(op, {total, part}) : part;
    }
    out.parts.push_back(total);
  }
  return out;
}

// ---- rules ----

bool any_multi_source(const UOp& u) {
  for (const UOpPtr& s : u.src)
    if (s->op == Ops::MULTI) return true;
  return false;
}

// Elementwise: every source on the same device set, brought to the axis of the first sharded one.
UOpPtr elementwise(const Captures& m, MultiCtx&) {
  const UOpPtr& u = m["x"];
  if (!any_multi_source(*u)) return nullptr;
  std::vector<Parts> srcs;
  int64_t axis = -1;
  for (const UOpPtr& s : u->src) {
    if (s->op != Ops::MULTI)
      throw Error(std::string(op_name(u->op)) + ": a source on one device beside sources sharded over several");
    srcs.push_back(parts_of(s));
    if (srcs.back().device != srcs[0].device)
      throw Error(std::string(op_name(u->op)) + ": sources on different device sets (" +
                  srcs[0].device->get<std::string>() + " and " + srcs.back().device->get<std::string>() + ")");
    if (axis < 0) axis = srcs.back().axis;
  }
  for (Parts& p : srcs) p = resharded(p, axis);
  return per_part(srcs[0], axis, [&](const UOpPtr&, size_t i) {
    std::vector<UOpPtr> src;
    for (const Parts& p : srcs) src.push_back(p.parts[i]);
    return UOp::make(u->op, u->dtype, std::move(src), u->arg);
  });
}

// A reduce per part; over the sharded axis the partial results are all-reduced (the result is replicated).
UOpPtr reduce(const Captures& m, MultiCtx& ctx) {
  const UOpPtr& r = m["r"];
  const Parts p = parts_of(m["x"]);
  const auto& arg = r->get<ReduceArg>();
  bool identity = true;  // every reduced dim of the parts has size 1 (one row per device): nothing to reduce
  for (int64_t a : arg.axes) identity = identity && p.parts[0]->shape.at(size_t(a)) == 1;
  UOpPtr partial = per_part(p, p.axis, [&](const UOpPtr& x, size_t) {
    return identity && x->dtype == r->dtype ? x : UOp::make(Ops::REDUCE_AXIS, r->dtype, {x}, arg);
  });
  bool over_axis = false;
  for (int64_t a : arg.axes) over_axis = over_axis || a == p.axis;
  if (!over_axis) return partial;
  const Parts all = all_reduced(parts_of(partial), arg.op, ctx);
  return make_multi(all.device, -1, all.parts);
}

// The same movement on every replica of the whole value.
UOpPtr move_whole(const UOpPtr& mv, const Parts& p) {
  return per_part(gathered(p), -1, [&](const UOpPtr& x, size_t) { return movement_uop(mv->op, x, mv->get<Shape>()); });
}

// RESHAPE keeps a sharded axis when the new shape has an axis starting at the same element stride whose size the
// devices divide: each part is then a contiguous slice of it. Otherwise the reshape runs on the whole value.
UOpPtr reshape(const Captures& m, MultiCtx&) {
  const UOpPtr& mv = m["mv"];
  const Parts p = parts_of(m["x"]);
  const Shape& to = mv->get<Shape>();
  if (p.axis < 0) return per_part(p, -1, [&](const UOpPtr& x, size_t) { return movement_uop(Ops::RESHAPE, x, to); });
  const Shape& from = m["x"]->shape;
  const int64_t n = int64_t(p.n());
  sint before = 1;
  for (int64_t i = 0; i < p.axis; i++) before = before * from[size_t(i)];
  sint acc = 1;
  for (size_t k = 0; k < to.size() && before.is_int() && acc.is_int(); k++) {
    if (int64_t(acc) == int64_t(before) && to[k].is_int() && int64_t(to[k]) > 1 && int64_t(to[k]) % n == 0) {
      Shape part_shape = to;
      part_shape[k] = int64_t(to[k]) / n;
      return per_part(p, int64_t(k),
                      [&](const UOpPtr& x, size_t) { return movement_uop(Ops::RESHAPE, x, part_shape); });
    }
    acc = acc * to[k];
  }
  return move_whole(mv, p);
}

UOpPtr permute(const Captures& m, MultiCtx&) {
  const UOpPtr& mv = m["mv"];
  const Parts p = parts_of(m["x"]);
  const Shape& perm = mv->get<Shape>();
  int64_t axis = -1;
  for (size_t i = 0; i < perm.size(); i++)
    if (int64_t(perm[i]) == p.axis) axis = int64_t(i);
  return per_part(p, axis, [&](const UOpPtr& x, size_t) { return movement_uop(Ops::PERMUTE, x, perm); });
}

// EXPAND leaves the sharded axis alone (its size is never 1 over several devices).
UOpPtr expand(const Captures& m, MultiCtx&) {
  const UOpPtr& mv = m["mv"];
  const Parts p = parts_of(m["x"]);
  Shape to = mv->get<Shape>();
  if (p.axis >= 0) {
    if (!(to[size_t(p.axis)] == m["x"]->shape[size_t(p.axis)])) return move_whole(mv, p);
    to[size_t(p.axis)] = p.parts[0]->shape[size_t(p.axis)];
  }
  return per_part(p, p.axis, [&](const UOpPtr& x, size_t) { return movement_uop(Ops::EXPAND, x, to); });
}

// PAD, SHRINK and FLIP run per part when they leave the sharded axis whole, else on the whole value.
UOpPtr pad_shrink_flip(const Captures& m, MultiCtx&) {
  const UOpPtr& mv = m["mv"];
  const Parts p = parts_of(m["x"]);
  Shape arg = mv->get<Shape>();
  if (p.axis >= 0) {
    const size_t a = size_t(p.axis);
    const sint& whole = m["x"]->shape[a];
    bool keeps_axis = mv->op == Ops::FLIP  ? arg[a] == 0
                      : mv->op == Ops::PAD ? arg[2 * a] == 0 && arg[2 * a + 1] == 0
                                           : arg[2 * a] == 0 && arg[2 * a + 1] == whole;
    if (!keeps_axis) return move_whole(mv, p);
    if (mv->op == Ops::SHRINK) arg[2 * a + 1] = p.parts[0]->shape[a];
  }
  return per_part(p, p.axis, [&](const UOpPtr& x, size_t) { return movement_uop(mv->op, x, arg); });
}

// COPY of a spread value to one device: the whole value, gathered there (a replica when one is there already).
UOpPtr copy(const Captures& m, MultiCtx&) {
  const std::string to = m["d"]->get<std::string>();
  if (is_device_set(to)) throw Error("COPY: a sharded tensor goes to another device set through Tensor::to");
  const Parts p = parts_of(m["x"]);
  if (p.axis >= 0) return gather_on(p, to);
  for (size_t i = 0; i < p.n(); i++)
    if (p.devices[i] == to) return p.parts[i];
  return copy_to(to, p.devices[0], p.parts[0]);
}

// Nodes that apply to each part as they are.
UOpPtr each_part(const Captures& m, MultiCtx&) {
  const UOpPtr& u = m["u"];
  const Parts p = parts_of(m["x"]);
  if (u->op == Ops::VIEW && p.axis >= 0) throw Error("multi: a VIEW over a sharded value");
  return per_part(p, p.axis, [&](const UOpPtr& x, size_t) { return UOp::make(u->op, u->dtype, {x}, u->arg); });
}

// ASSIGN into a spread buffer: the value brought to the target's axis, then one ASSIGN per part.
UOpPtr assign(const Captures& m, MultiCtx&) {
  const UOpPtr& u = m["u"];
  const Parts target = parts_of(m["t"]);
  if (m["v"]->op != Ops::MULTI) throw Error("assign: a value on one device into a tensor sharded over several");
  const Parts value = resharded(parts_of(m["v"]), target.axis);
  return per_part(target, target.axis, [&](const UOpPtr& t, size_t i) {
    return UOp::make(Ops::ASSIGN, u->dtype, {t, value.parts[i]}, u->arg);
  });
}

// Leaves made on a device set (a constant, a bound variable): the same leaf on each device.
UOpPtr leaf_on_set(const Captures& m, MultiCtx&) {
  const UOpPtr& u = m["u"];
  const std::string& set = m["d"]->get<std::string>();
  if (!is_device_set(set)) return nullptr;
  std::vector<UOpPtr> parts;
  for (const std::string& d : device_set_members(set)) {
    std::vector<UOpPtr> src = u->src;
    for (UOpPtr& s : src)
      if (s == m["d"]) s = device_node(d);
    parts.push_back(UOp::make(u->op, u->dtype, std::move(src), u->arg));
  }
  return make_multi(m["d"], -1, parts);
}

UOpPtr unsupported(const Captures& m, MultiCtx&) {
  const UOpPtr& u = m["u"];
  if (u->op == Ops::SINK || u->op == Ops::MULTI || !any_multi_source(*u)) return nullptr;
  throw Error(std::string("multi: ") + op_name(u->op) + " of a sharded tensor is not supported");
}

std::vector<Ops> elementwise_ops() {
  std::vector<Ops> ops{Ops::CAST, Ops::BITCAST};
  for (int i = 0; i < kNumOps; i++)
    if (is_alu(Ops(i))) ops.push_back(Ops(i));
  return ops;
}

// MULTI with any parts, captured as x.
UPat multi_node() {
  UPat p = UPat::op(Ops::MULTI, {}, "x");
  p.src.reset();
  return p;
}

const TypedMatcher<MultiCtx>& multi_rules() {
  const UPat any_multi = multi_node();
  static const TypedMatcher<MultiCtx> pm({
      // leaves on a device set become one leaf per device
      {UPat::op(Ops::CONST, {UPat::op(Ops::DEVICE, {}, "d")}, "u"), leaf_on_set},
      {UPat::op(Ops::BIND, {UPat::var(), UPat::op(Ops::DEVICE, {}, "d")}, "u"), leaf_on_set},
      // elementwise and reduce
      {UPat::ops_of(elementwise_ops(), "x"), elementwise},
      {UPat::op(Ops::REDUCE_AXIS, {any_multi}, "r"), reduce},
      // movement: the sharded axis moves with the op, or the op runs on the whole value
      {UPat::op(Ops::RESHAPE, {any_multi}, "mv"), reshape},
      {UPat::op(Ops::PERMUTE, {any_multi}, "mv"), permute},
      {UPat::op(Ops::EXPAND, {any_multi}, "mv"), expand},
      {UPat::op(Ops::PAD, {any_multi}, "mv"), pad_shrink_flip},
      {UPat::op(Ops::SHRINK, {any_multi}, "mv"), pad_shrink_flip},
      {UPat::op(Ops::FLIP, {any_multi}, "mv"), pad_shrink_flip},
      // buffers: copies gather, assigns go per part, the rest applies to each part
      {UPat::op(Ops::COPY, {UPat::op(Ops::DEVICE, {}, "d"), any_multi}), copy},
      {UPat::op(Ops::ASSIGN, {multi_node().named("t"), UPat::var("v")}, "u"), assign},
      {UPat::ops_of({Ops::CONTIGUOUS, Ops::DETACH, Ops::VIEW}, "u"),
       [](const Captures& m, MultiCtx& c) -> UOpPtr {
         const UOpPtr& u = m["u"];
         if (u->src.size() != 1 || u->src[0]->op != Ops::MULTI) return nullptr;
         Captures inner = m;
         inner.set("x", u->src[0]);
         return each_part(inner, c);
       }},
      // anything else over a MULTI is refused, by name
      {UPat::any("u"), unsupported},
  });
  return pm;
}

}  // namespace

UOpPtr lower_multi_sink(const UOpPtr& sink, const CollectiveSupport& collective) {
  MultiCtx ctx{&collective};
  return graph_rewrite("multi", sink, multi_rules(), ctx);
}

MultiLowered lower_multi(const std::vector<UOpPtr>& roots, const CollectiveSupport& collective) {
  const UOpPtr sink = lower_multi_sink(UOp::make(Ops::SINK, dtypes::void_, roots), collective);
  MultiLowered out;
  for (const UOpPtr& r : sink->src) {
    MultiLowered::Root root{out.flat.size(), 1, nullptr};
    if (r->op == Ops::MULTI) {
      root.multi = r;
      root.count = r->src.size() - 1;
      out.flat.insert(out.flat.end(), r->src.begin() + 1, r->src.end());
    } else {
      out.flat.push_back(r);
    }
    out.roots_.push_back(root);
  }
  return out;
}

std::vector<UOpPtr> MultiLowered::rebuild(const std::vector<UOpPtr>& realized) const {
  std::vector<UOpPtr> out;
  for (const Root& r : roots_) {
    if (!r.multi) {
      out.push_back(realized.at(r.first));
      continue;
    }
    std::vector<UOpPtr> parts(realized.begin() + long(r.first), realized.begin() + long(r.first + r.count));
    out.push_back(make_multi(r.multi->src[0], r.multi->get<int64_t>(), parts));
  }
  return out;
}

}  // namespace tg
