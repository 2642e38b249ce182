#pragma once
// Values spread over several devices, lowered to one graph per device before scheduling (tinygrad's multi rewrite).
//
// A sharded tensor's node is MULTI(DEVICE "(CPU, CPU:1)", part 0, ..., part n-1) with the sharded axis as arg (-1:
// replicated, every part the whole value); part i is an ordinary graph on the set's device i, of the shard's shape.
// Everything built on top of it is an ordinary tensor graph of the whole shape, so autograd and every Tensor op work
// on it unchanged. The pass "multi" pushes MULTI up to the roots: an elementwise op runs per part (a replicated
// operand is shrunk to each part, a part of another axis is gathered first), a reduce over the sharded axis becomes an
// all-reduce, movement ops move the axis (or gather when they cut across it), a copy to one device gathers.
#include <functional>
#include <string>
#include <vector>

#include "uop/device_set.h"
#include "uop/uop.h"

namespace tg {

// Whether the devices can all-reduce values of a dtype with one collective (NCCL between GPUs): then a reduce over
// the sharded axis becomes ALLREDUCE nodes, one per device, that the engine runs as one call; otherwise each device
// adds the others' parts, copied to it. Given by the engine (schedule/ knows no devices).
using CollectiveSupport = std::function<bool(const std::vector<std::string>& devices, DType dtype)>;

// The graphs to realize, one device each, and how to put the roots back together from what they become.
class MultiLowered {
 public:
  std::vector<UOpPtr> flat;
  // Each root as its realized value: a MULTI of the realized parts where the root was spread, else the value.
  std::vector<UOpPtr> rebuild(const std::vector<UOpPtr>& realized) const;

 private:
  friend MultiLowered lower_multi(const std::vector<UOpPtr>& roots, const CollectiveSupport& collective);
  struct Root {
    size_t first = 0, count = 1;  // flat[first .. first + count)
    UOpPtr multi;                 // the lowered MULTI (device set and axis), or null for a plain root
  };
  std::vector<Root> roots_;
};


// Runs the pass over the roots' graphs (any root may be plain: it is passed through).
MultiLowered lower_multi(const std::vector<UOpPtr>& roots, const CollectiveSupport& collective = nullptr);
// The pass alone over a SINK: every MULTI that remains is a root's source.
UOpPtr lower_multi_sink(const UOpPtr& sink, const CollectiveSupport& collective = nullptr);

}  // namespace tg
