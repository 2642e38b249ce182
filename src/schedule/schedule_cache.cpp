// The schedule cache: a training step builds a graph of the same structure every step, only over other buffers
// (new weights, new batches) and other variable values. Scheduling it again each time was most of an eager
// step's host time (bench/jit_step). So each graph is read once as the scheduler would see it (realized nodes as
// their views), with a fingerprint of its structure in which buffers are numbered in graph order and variables
// carry no value. A graph of a fingerprint seen before is compared node by node with the one stored; a match takes
// its schedule, instantiated: the stored buffers become this graph's, the buffers the schedule made are made anew,
// variables take this graph's values, and the nodes it realized are mapped back to this graph's nodes.
//
// What is stored is a normalized copy of the first graph (BUFFERs as numbered placeholders, variables unbound) that
// shares no node with real graphs: the cache keeps it alive, and a real node kept alive past its tensors would keep
// what it realized too (its buffer, and a stale value for the next graph that builds the same node). Every leaf of
// a tensor graph hangs from a DEVICE, so the copy's DEVICE nodes get a marker source (the device name, which the
// scheduler reads, stays) and everything above them is new. Markers are taken off what goes back to tensors.
#include <atomic>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <unordered_map>

#include "schedule/realized.h"
#include "schedule/schedule.h"
#include "tg/context.h"
#include "tg/error.h"

namespace tg {
namespace {

ContextVar SCACHE("SCACHE", 1);  // 0: schedule every graph afresh (to compare)

// Entries kept before the least recently used is dropped: a graph whose constants change every call (x * step)
// has a new structure each time, and must not grow the cache without bound.
constexpr size_t kCapacity = 256;

size_t mix(size_t h, size_t v) { return h ^ (v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2)); }

// ---- symbolic sizes: args (views, movement ops) that hold their variables' values in BIND nodes ----
using Rebind = std::function<UOpPtr(const UOp& bind)>;
bool symbolic_arg(const Arg& a) {
  if (const auto* st = std::get_if<ShapeTracker>(&a)) return st->symbolic();
  if (const auto* sh = std::get_if<Shape>(&a)) return is_symbolic(*sh);
  return false;
}
// The arg with every BIND in its sizes replaced by what `f` gives for it.
Arg rebind_arg(const Arg& a, const Rebind& f) {
  if (const auto* st = std::get_if<ShapeTracker>(&a)) return st->rebind(f);
  Shape out = std::get<Shape>(a);
  for (sint& d : out) d = rebind(d, f);
  return out;
}
UOpPtr unbound(const UOp& bind) { return bind.src[0]; }
UOpPtr bound_to_zero(const UOp& bind) { return UOp::make(Ops::BIND, bind.dtype, bind.src, int64_t(0)); }
const std::string& var_name(const UOp& bind) { return bind.src.at(0)->get<NamedRange>().name; }

// A graph as the scheduler sees it, sources before users: each realized node is read as its view (tinygrad's
// "becomes"), as create_schedule's substitution would make it.
struct GraphWalk {
  std::vector<const UOp*> nodes;
  std::vector<uint32_t> src_index;     // the sources of node i, as indices: src_index[src_begin[i] .. src_begin[i+1])
  std::vector<uint32_t> src_begin{0};
  std::vector<uint32_t> roots;         // index of each root
  std::vector<UOpPtr> buffers;         // BUFFER nodes in order of first appearance
  std::vector<std::pair<std::string, int64_t>> values;  // each bound variable's value
  size_t fingerprint = 0;
  bool usable = true;  // false where the cache cannot stand for the graph (below)
};

GraphWalk walk(const std::vector<UOpPtr>& roots) {
  GraphWalk g;
  std::vector<size_t> fp;                           // per node: structure, buffers numbered, no variable values
  std::unordered_map<const UOp*, uint32_t> index;  // node (or the realized node it stands for) -> its index
  index.reserve(64);
  struct Frame {
    const UOp* node;
    const UOp* seen;  // what the scheduler sees for it: its realized view, if any (then walked instead)
    size_t next = 0;
  };
  std::vector<Frame> stack;
  auto add_value = [&](const UOp& bind) {  // a variable's value (one variable with two values: not cached)
    const std::string& name = var_name(bind);
    for (auto& [other, v] : g.values) g.usable &= other != name || v == bind.get<int64_t>();
    g.values.emplace_back(name, bind.get<int64_t>());
  };
  auto push = [&](const UOp* u) {
    if (index.count(u)) return;
    UOpPtr r = realized(u);  // (the view stays alive in the realized table while u lives)
    if (r && index.count(r.get())) return void(index.emplace(u, index.at(r.get())));
    stack.push_back({u, r ? r.get() : u});
  };
  for (const UOpPtr& root : roots) {
    push(root.get());
    while (!stack.empty()) {
      Frame& f = stack.back();
      const UOp* s = f.seen;
      if (f.next < s->src.size()) {
        push(s->src[f.next++].get());
        continue;
      }
      const UOp* u = f.node;
      stack.pop_back();
      if (index.count(u)) continue;
      const uint32_t i = uint32_t(g.nodes.size());
      size_t h = mix(size_t(s->op), std::hash<DType>()(s->dtype));
      if (s->op == Ops::BUFFER) {
        h = mix(mix(h, g.buffers.size()), size_t(s->get<BufferArg>().size));
        g.buffers.push_back(s->ptr());
      } else if (s->op == Ops::BIND) {
        add_value(*s);
      } else if (symbolic_arg(s->arg)) {  // sizes over variables: hashed without their values, kept as a BIND's
        h = mix(h, arg_hash(rebind_arg(s->arg, [&](const UOp& b) { return add_value(b), unbound(b); })));
      } else {
        h = mix(h, arg_hash(s->arg));
        if (s->op == Ops::DEVICE && !s->src.empty()) g.usable = false;  // not a device node of a tensor graph
      }
      for (const UOpPtr& src : s->src) {
        const uint32_t j = index.at(src.get());
        g.src_index.push_back(j);
        h = mix(h, fp[j]);
      }
      g.src_begin.push_back(uint32_t(g.src_index.size()));
      g.nodes.push_back(s);
      fp.push_back(h);
      index.emplace(u, i);
      if (s != u) index.emplace(s, i);
    }
    g.roots.push_back(index.at(root.get()));
    g.fingerprint = mix(g.fingerprint, fp[g.roots.back()]);
  }
  return g;
}

// ---- the stored copy ----

const UOpPtr& marker() {
  static const UOpPtr m = UOp::make(Ops::DEVICE, dtypes::void_, {}, std::string("<schedule cache>"));
  return m;
}
UOpPtr marked(const UOp& device) { return UOp::make(Ops::DEVICE, dtypes::void_, {marker()}, device.arg); }
bool is_marked(const UOp& u) { return u.op == Ops::DEVICE && u.src.size() == 1 && u.src[0] == marker(); }
bool is_placeholder(const UOp& u) { return u.op == Ops::BUFFER && u.get<BufferArg>().id < 0; }

struct Entry {
  UOpPtr key;                         // SINK of the normalized copy: keeps the nodes below alive
  std::vector<const UOp*> nodes;      // the copy's node i stands for the walk's node i
  std::vector<uint32_t> src_index, src_begin, roots;
  Schedule sched;                     // over placeholders (and the buffers it made); becomes unused
  std::vector<std::pair<uint32_t, UOpPtr>> becomes;  // node index -> its realized view
  bool symbolic = false;              // some arg has symbolic sizes (stored with every value 0)
  std::shared_ptr<std::atomic<int>> fruitless_plans = std::make_shared<std::atomic<int>>(0);
};

// The normalized copy of the walked graph, or nullptr where it would merge two nodes (a variable bound to two
// values) or share one with real graphs (a node with no DEVICE below).
std::shared_ptr<Entry> normalize(const GraphWalk& g) {
  auto e = std::make_shared<Entry>();
  std::vector<UOpPtr> copy(g.nodes.size());
  std::unordered_map<const UOp*, uint32_t> index;
  size_t placeholders = 0;
  for (uint32_t i = 0; i < g.nodes.size(); i++) {
    const UOp& u = *g.nodes[i];
    std::vector<UOpPtr> src;
    for (uint32_t k = g.src_begin[i]; k < g.src_begin[i + 1]; k++) src.push_back(copy[g.src_index[k]]);
    if (u.op == Ops::BUFFER)
      copy[i] = UOp::make(Ops::BUFFER, u.dtype, std::move(src),
                          BufferArg{-1 - int64_t(placeholders++), u.get<BufferArg>().size});
    else if (u.op == Ops::DEVICE)
      copy[i] = marked(u);
    else if (u.op == Ops::BIND)  // the value goes with the item (ScheduleItem::vars)
      copy[i] = UOp::make(Ops::BIND, u.dtype, std::move(src), int64_t(0));
    else if (symbolic_arg(u.arg))  // (the same, for the values inside sizes)
      e->symbolic = true, copy[i] = UOp::make(u.op, u.dtype, std::move(src), rebind_arg(u.arg, bound_to_zero));
    else
      copy[i] = UOp::make(u.op, u.dtype, std::move(src), u.arg);
    if (copy[i].get() == &u && u.op != Ops::DEFINE_VAR) return nullptr;  // (a DEFINE_VAR is only a name)
    if (!index.emplace(copy[i].get(), i).second) return nullptr;
  }
  std::vector<UOpPtr> roots;
  for (uint32_t r : g.roots) roots.push_back(copy[r]);
  e->key = UOp::make(Ops::SINK, dtypes::void_, std::move(roots));
  for (auto& c : copy) e->nodes.push_back(c.get());
  e->src_index = g.src_index;
  e->src_begin = g.src_begin;
  e->roots = g.roots;
  e->sched = schedule_graph(e->key);
  for (auto& [node, view] : e->sched.becomes)
    if (auto it = index.find(node.get()); it != index.end()) e->becomes.emplace_back(it->second, view);
  e->sched.becomes.clear();  // (they name nodes of the copy)
  return e;
}

// Is the walked graph the stored one, node for node (buffers and variable values aside)?
bool same_graph(const Entry& e, const GraphWalk& g) {
  if (e.nodes.size() != g.nodes.size() || e.roots != g.roots || e.src_index != g.src_index) return false;
  for (size_t i = 0; i < g.nodes.size(); i++) {
    const UOp &a = *e.nodes[i], &b = *g.nodes[i];
    if (a.op != b.op || a.dtype != b.dtype) return false;
    if (a.op == Ops::BUFFER) {
      if (a.get<BufferArg>().size != b.get<BufferArg>().size) return false;
    } else if (symbolic_arg(a.arg) || symbolic_arg(b.arg)) {
      if (!(rebind_arg(a.arg, unbound) == rebind_arg(b.arg, unbound))) return false;
    } else if (a.op != Ops::BIND && !(a.arg == b.arg)) {
      return false;
    }
  }
  return true;
}

// ---- one graph's copy of a stored schedule ----

class Instance {
 public:
  explicit Instance(const GraphWalk& g) : g_(g) {}

  Schedule make(const Entry& e) {
    Schedule out;
    for (const ScheduleItem& item : e.sched.items) {
      ScheduleItem copy{item.ast, {}, item.outputs, item.vars, item.why, item.why_hosted};
      for (const UOpPtr& b : item.bufs) copy.bufs.push_back(buffer(*b));
      for (VarValue& v : copy.vars) v.value = value_of(v.var.name);
      out.items.push_back(std::move(copy));
    }
    for (const UOpPtr& r : e.sched.roots) out.roots.push_back(with_values(e, with_buffers(r)));
    for (const auto& [i, view] : e.becomes)
      out.becomes.emplace_back(g_.nodes[i]->ptr(), with_values(e, with_buffers(view)));
    return out;
  }

 private:
  // A placeholder's buffer is the graph's; a buffer the schedule made is made anew, once per instance.
  UOpPtr buffer(const UOp& b) {
    if (is_placeholder(b)) return g_.buffers.at(size_t(-1 - b.get<BufferArg>().id));
    for (auto& [made, fresh] : fresh_)  // (a handful per schedule: a list beats a hash map here)
      if (made == &b) return fresh;
    return fresh_.emplace_back(&b, new_buffer_uop(buffer_device(&b), b.get<BufferArg>().size, b.dtype)).second;
  }
  // A root or realized view for the graph: its buffers, and no markers.
  UOpPtr with_buffers(const UOpPtr& u) {
    if (u->op == Ops::VIEW && u->src.size() == 1 && u->src[0]->op == Ops::BUFFER)  // most: a view of a buffer
      return UOp::make(Ops::VIEW, u->dtype, {buffer(*u->src[0])}, u->arg);
    return substitute(u, [&](const UOp* x) -> UOpPtr {
      if (x->op == Ops::BUFFER) return buffer(*x);
      if (is_marked(*x)) return UOp::make(Ops::DEVICE, dtypes::void_, {}, x->arg);
      return nullptr;
    });
  }
  // A root or realized view with this graph's values in its symbolic sizes (stored with 0).
  UOpPtr with_values(const Entry& e, const UOpPtr& u) const {
    if (!e.symbolic) return u;
    return substitute(u, [&](const UOp* x) -> UOpPtr {
      if (!symbolic_arg(x->arg)) return nullptr;
      std::vector<UOpPtr> src;
      for (const UOpPtr& s : x->src) src.push_back(with_values(e, s));  // (views nest a few levels at most)
      return UOp::make(x->op, x->dtype, std::move(src), rebind_arg(x->arg, [&](const UOp& b) {
                         return UOp::make(Ops::BIND, b.dtype, b.src, value_of(var_name(b)));
                       }));
    });
  }
  int64_t value_of(const std::string& name) const {
    for (auto& [var, value] : g_.values)
      if (var == name) return value;
    throw Error("schedule: variable " + name + " has no value in the graph");  // the stored schedule read it
  }

  const GraphWalk& g_;
  std::vector<std::pair<const UOp*, UOpPtr>> fresh_;
};

// fingerprint -> entries, least recently used first.
class Cache {
 public:
  std::shared_ptr<const Entry> find(const GraphWalk& g) {
    std::lock_guard<std::mutex> lock(mu_);
    auto [lo, hi] = index_.equal_range(g.fingerprint);
    for (auto it = lo; it != hi; ++it)
      if (same_graph(*it->second->second, g)) {
        order_.splice(order_.end(), order_, it->second);
        return it->second->second;
      }
    return nullptr;
  }
  void insert(size_t fingerprint, std::shared_ptr<const Entry> e) {
    std::lock_guard<std::mutex> lock(mu_);
    if (order_.size() >= kCapacity) {
      auto [lo, hi] = index_.equal_range(order_.front().first);
      for (auto it = lo; it != hi; ++it)
        if (it->second == order_.begin()) {
          index_.erase(it);
          break;
        }
      order_.pop_front();
    }
    order_.emplace_back(fingerprint, std::move(e));
    index_.emplace(fingerprint, std::prev(order_.end()));
  }
  size_t size() {
    std::lock_guard<std::mutex> lock(mu_);
    return order_.size();
  }

 private:
  using Item = std::pair<size_t, std::shared_ptr<const Entry>>;
  std::mutex mu_;
  std::list<Item> order_;
  std::unordered_multimap<size_t, std::list<Item>::iterator> index_;
};

std::atomic<int64_t> hits{0}, misses{0}, bypassed{0};

Cache& cache() {
  static Cache* c = new Cache();  // never destroyed: its nodes may outlive static destruction order
  return *c;
}

// The scheduler on the graph itself, realized nodes substituted.
Schedule schedule_uncached(const std::vector<UOpPtr>& roots) {
  auto sink = substitute(UOp::make(Ops::SINK, dtypes::void_, roots), [](const UOp* u) { return realized(u); });
  return schedule_graph(sink);
}

Schedule schedule_cached(const std::vector<UOpPtr>& roots) {
  const GraphWalk g = walk(roots);
  std::shared_ptr<const Entry> e = g.usable ? cache().find(g) : nullptr;
  const bool hit = e != nullptr;
  if (hit) {
    hits++;
  } else if (std::shared_ptr<Entry> made = g.usable ? normalize(g) : nullptr) {
    misses++;
    cache().insert(g.fingerprint, made);
    e = std::move(made);
  } else {
    bypassed++;
    return schedule_uncached(roots);
  }
  Schedule sched = Instance(g).make(*e);
  sched.cached = hit;
  sched.fruitless_plans = e->fruitless_plans;
  return sched;
}

}  // namespace

ScheduleCacheStats schedule_cache_stats() { return {hits.load(), misses.load(), bypassed.load(), cache().size()}; }

void record_realized(const Schedule& sched) {
  const std::vector<ScheduleItem>& items = sched.items;
  for (const ScheduleItem& item : items)
    buffers_overwritten(std::span(item.bufs).first(std::min(item.outputs, item.bufs.size())));
  // Each buffer's (last) writer: a scan of the few items of most realizes, a map on long schedules.
  std::unordered_map<const UOp*, size_t> writers;
  if (items.size() > 8)
    for (size_t i = 0; i < items.size(); i++)
      for (size_t j = 0; j < items[i].outputs && j < items[i].bufs.size(); j++) writers[items[i].bufs[j].get()] = i;
  auto writer = [&](const UOp* buf) -> std::optional<size_t> {
    if (items.size() > 8) {
      auto it = writers.find(buf);
      return it == writers.end() ? std::nullopt : std::optional<size_t>(it->second);
    }
    for (size_t i = items.size(); i-- > 0;)
      for (size_t j = 0; j < items[i].outputs && j < items[i].bufs.size(); j++)
        if (items[i].bufs[j].get() == buf) return i;
    return std::nullopt;
  };
  for (const auto& [node, view] : sched.becomes) {
    const UOp* buf = buffer_under(view.get());
    const std::optional<size_t> k = buf ? writer(buf) : std::nullopt;
    if (!k) {
      set_realized(node, view);
      continue;
    }
    const ScheduleItem& item = items[*k];
    std::span<const UOpPtr> reads = std::span(item.bufs).subspan(std::min(item.outputs, item.bufs.size()));
    set_realized(node, view, reads);
    bool old_contents = node->op == Ops::ASSIGN;
    for (const UOpPtr& in : reads) {
      const std::optional<size_t> w = writer(in.get());
      old_contents = old_contents || (w && *w > *k);
    }
    if (old_contents) UOp::unintern(*node);
  }
}

Schedule create_schedule(const std::vector<UOpPtr>& roots) {
  return SCACHE ? schedule_cached(roots) : schedule_uncached(roots);
}

}  // namespace tg
