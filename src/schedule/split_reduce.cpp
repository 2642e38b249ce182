// split_reduceop (see split_reduce.h): REDUCE_AXIS(x, axes) ->
//   x.reshape(.., d, N/d, ..).permute(d last).reduce(axes).contiguous().reduce(last).reshape(out)
#include "schedule/split_reduce.h"

#include <algorithm>
#include <numeric>

#include "tg/context.h"
#include "uop/movement.h"
#include "uop/pattern.h"

namespace tg {

static ContextVar SPLIT_REDUCEOP("SPLIT_REDUCEOP", 1);
static ContextVar REDUCEOP_SPLIT_THRESHOLD("REDUCEOP_SPLIT_THRESHOLD", 32768);
static ContextVar REDUCEOP_SPLIT_SIZE("REDUCEOP_SPLIT_SIZE", 22);

std::pair<int64_t, int64_t> split_reduce_choice(const UOp* r) {
  const Shape& in = r->src.at(0)->shape;
  const Shape& out = r->shape;
  // A symbolic reduce is not split: its size is known only at run time (tinygrad does the same).
  if (prod(in).is_symbolic() || prod(out).is_symbolic()) return {-1, 0};
  const int64_t n_in = prod(in), n_out = prod(out);
  if (SPLIT_REDUCEOP <= 0 || n_out <= 0 || n_in / n_out < std::max<long>(REDUCEOP_SPLIT_THRESHOLD, 2)) return {-1, 0};
  // Enough outputs already give every GPU block or CPU thread work of its own; splitting them anyway costs a
  // kernel and, on the CPU, worse loops (beautiful_mnist's step: 3.9 s -> 7.4 s with its conv bias and weight
  // gradients split). Unlike tinygrad, only reduces to fewer than kSplitOutputs values are split.
  constexpr int64_t kSplitOutputs = 256;
  if (n_out >= kSplitOutputs) return {-1, 0};
  const long size_bits = std::clamp<long>(REDUCEOP_SPLIT_SIZE, 0, 40);
  const int64_t most = std::min<int64_t>(256, (int64_t(1) << size_bits) / n_out);
  // The first reduce axis (in memory order, the outermost) with a divisor in [8, most]: each partial then
  // reduces a contiguous chunk when the input is contiguous.
  for (int64_t a : r->get<ReduceArg>().axes)
    for (int64_t d = std::min(most, in[size_t(a)].value() / 2); d >= 8; d--)
      if (in[size_t(a)] % d == 0) return {a, d};
  return {-1, 0};
}

namespace {

UOpPtr split_one(const UOpPtr& r) {
  auto [a, d] = split_reduce_choice(r.get());
  if (a < 0) return nullptr;
  const UOpPtr& x = r->src[0];
  const ReduceArg& ra = r->get<ReduceArg>();
  const Shape& in = x->shape;
  const size_t ua = size_t(a);
  // (.., N, ..) -> (.., d, N/d, ..) -> (.., N/d, .., d): the reduce axes keep their numbers.
  Shape split(in.begin(), in.begin() + a);
  split.push_back(d);
  split.push_back(in[ua] / d);
  split.insert(split.end(), in.begin() + a + 1, in.end());
  std::vector<int64_t> order;
  for (int64_t i = 0; i < int64_t(split.size()); i++)
    if (i != a) order.push_back(i);
  order.push_back(a);
  UOpPtr moved = movement_uop(Ops::PERMUTE, movement_uop(Ops::RESHAPE, x, split), Shape(order.begin(), order.end()));
  UOpPtr partials = UOp::make(Ops::REDUCE_AXIS, r->dtype, {moved}, ra);
  partials = UOp::make(Ops::CONTIGUOUS, r->dtype, {partials});
  UOpPtr total = UOp::make(Ops::REDUCE_AXIS, r->dtype, {partials}, ReduceArg{ra.op, {int64_t(r->shape.size())}});
  return movement_uop(Ops::RESHAPE, total, r->shape);
}

const PatternMatcher& pm_split_reduceop() {
  static const PatternMatcher pm({
      // a large reduce to few outputs: two stages (the second stage is small and is never split again)
      {UPat::op(Ops::REDUCE_AXIS, {UPat::var("x")}, "r"), [](const Captures& m, void*) { return split_one(m["r"]); }},
  });
  return pm;
}

}  // namespace

UOpPtr split_reduces(const UOpPtr& sink) {
  if (SPLIT_REDUCEOP <= 0) return sink;
  return graph_rewrite("split_reduceop", sink, pm_split_reduceop());
}

}  // namespace tg
