// The schedule cache: a training step builds a graph of the same structure every step, only over other buffers
// (new weights, new batches) and other variable values. Scheduling it again each time was most of an eager
// step's host time (bench/jit_step). So a graph is first normalized: every BUFFER leaf becomes a placeholder
// numbered in graph order, every bound variable loses its value. The normalized graph is interned like any
// graph, so it is its own cache key; its schedule is made once and instantiated for each graph of that
// structure: placeholders become the graph's buffers, the buffers the schedule made become new ones, variables
// take the graph's values, and the nodes it realized are mapped back to the graph's own nodes.
#include <atomic>
#include <list>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "schedule/realized.h"
#include "schedule/schedule.h"
#include "tg/context.h"
#include "tg/error.h"

namespace tg {
namespace {

ContextVar SCACHE("SCACHE", 1);  // 0: schedule every graph afresh (to compare)

// Entries kept before the oldest is dropped: a graph whose constants change every call (x * step) makes a new
// structure each time, and must not grow the cache without bound.
constexpr size_t kCapacity = 256;

struct Normalized {
  UOpPtr key;                                          // the graph with placeholders and unbound variables
  std::vector<UOpPtr> buffers;                         // placeholder i stands for buffers[i]
  std::unordered_map<const UOp*, const UOp*> node_of;  // normalized node -> the graph's node
  std::vector<std::pair<std::string, int64_t>> values;  // each variable's value in the graph
  bool usable = true;  // false where normalizing would merge nodes (a variable bound to two values)
};

// The normalized graph must share no node with real graphs: the cache keeps it alive, and a real node kept alive
// past its tensors would keep what it realized too (its buffer, and a stale value for the next graph that builds
// the same node). Every leaf of a tensor graph hangs from a DEVICE, so DEVICE nodes get a marker source (the
// device name, which the scheduler reads, stays), and everything above them is new. Markers are taken off what
// goes back to tensors (roots, realized views).
const UOpPtr& marker() {
  static const UOpPtr m = UOp::make(Ops::DEVICE, dtypes::void_, {}, std::string("<schedule cache>"));
  return m;
}
UOpPtr marked(const UOp& device) { return UOp::make(Ops::DEVICE, dtypes::void_, {marker()}, device.arg); }
bool is_marked(const UOp& u) { return u.op == Ops::DEVICE && u.src.size() == 1 && u.src[0] == marker(); }

UOpPtr placeholder(const UOp& buffer, size_t index) {
  const auto& b = buffer.get<BufferArg>();
  return UOp::make(Ops::BUFFER, buffer.dtype, {marked(*buffer.src.at(0))}, BufferArg{-1 - int64_t(index), b.size});
}
bool is_placeholder(const UOp& u) { return u.op == Ops::BUFFER && u.get<BufferArg>().id < 0; }

Normalized normalize(const UOpPtr& sink) {
  Normalized n;
  std::unordered_map<const UOp*, UOpPtr> norm;
  for (const UOp* u : toposort(sink)) {
    std::vector<UOpPtr> src;
    src.reserve(u->src.size());
    for (const UOpPtr& s : u->src) src.push_back(norm.at(s.get()));
    UOpPtr out;
    if (u->op == Ops::BUFFER) {
      out = placeholder(*u, n.buffers.size());
      n.buffers.push_back(u->ptr());
    } else if (u->op == Ops::DEVICE) {
      if (!u->src.empty()) n.usable = false;  // not a device node of a tensor graph
      out = marked(*u);
    } else if (u->op == Ops::BIND) {  // the value goes with the item (ScheduleItem::vars), not in the key
      const std::string& name = u->src[0]->get<NamedRange>().name;
      const int64_t value = u->get<int64_t>();
      for (auto& [other, v] : n.values) n.usable &= other != name || v == value;
      n.values.emplace_back(name, value);
      out = UOp::make(Ops::BIND, u->dtype, std::move(src), int64_t(0));
    } else {
      out = UOp::make(u->op, u->dtype, std::move(src), u->arg);
    }
    // A node with no DEVICE below would be shared with real graphs (a variable's DEFINE_VAR is only its name).
    if (out.get() == u && u->op != Ops::DEFINE_VAR) n.usable = false;
    n.usable &= n.node_of.emplace(out.get(), u).second;
    norm.emplace(u, std::move(out));
  }
  n.key = norm.at(sink.get());
  return n;
}

// One graph's copy of a cached schedule.
class Instance {
 public:
  explicit Instance(const Normalized& n) : n_(n) {}

  Schedule make(const Schedule& cached) {
    Schedule out;
    for (const ScheduleItem& item : cached.items) {
      ScheduleItem copy{item.ast, {}, item.outputs, item.vars};
      for (const UOpPtr& b : item.bufs) copy.bufs.push_back(buffer(*b));
      for (VarValue& v : copy.vars) v.value = value_of(v.var.name);
      out.items.push_back(std::move(copy));
    }
    for (const UOpPtr& r : cached.roots) out.roots.push_back(with_buffers(r));
    for (const auto& [node, view] : cached.becomes)
      if (auto it = n_.node_of.find(node.get()); it != n_.node_of.end())  // else made by the scheduler's rewrites
        out.becomes.emplace_back(it->second->ptr(), with_buffers(view));
    return out;
  }

 private:
  // A placeholder's buffer is the graph's; a buffer the schedule made is made anew, once per instance.
  UOpPtr buffer(const UOp& b) {
    if (is_placeholder(b)) return n_.buffers.at(size_t(-1 - b.get<BufferArg>().id));
    UOpPtr& fresh = fresh_[&b];
    if (!fresh) fresh = new_buffer_uop(buffer_device(&b), b.get<BufferArg>().size, b.dtype);
    return fresh;
  }
  // A root or realized view for the graph: its buffers, and no markers.
  UOpPtr with_buffers(const UOpPtr& u) {
    return substitute(u, [&](const UOp* x) -> UOpPtr {
      if (x->op == Ops::BUFFER) return buffer(*x);
      if (is_marked(*x)) return UOp::make(Ops::DEVICE, dtypes::void_, {}, x->arg);
      return nullptr;
    });
  }
  int64_t value_of(const std::string& name) const {
    for (auto& [var, value] : n_.values)
      if (var == name) return value;
    throw Error("schedule: variable " + name + " has no value in the graph");  // the cached schedule read it
  }

  const Normalized& n_;
  std::unordered_map<const UOp*, UOpPtr> fresh_;
};

// key -> schedule, least recently used first.
class Cache {
 public:
  std::shared_ptr<const Schedule> find(const UOpPtr& key) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = index_.find(key.get());
    if (it == index_.end()) return nullptr;
    order_.splice(order_.end(), order_, it->second);
    return it->second->second;
  }
  size_t size() {
    std::lock_guard<std::mutex> lock(mu_);
    return order_.size();
  }
  void insert(const UOpPtr& key, std::shared_ptr<const Schedule> sched) {
    std::lock_guard<std::mutex> lock(mu_);
    if (index_.count(key.get())) return;  // another thread scheduled it too
    if (order_.size() >= kCapacity) {
      index_.erase(order_.front().first.get());
      order_.pop_front();
    }
    order_.emplace_back(key, std::move(sched));
    index_.emplace(key.get(), std::prev(order_.end()));
  }

 private:
  using Entry = std::pair<UOpPtr, std::shared_ptr<const Schedule>>;
  std::mutex mu_;
  std::list<Entry> order_;
  std::unordered_map<const UOp*, std::list<Entry>::iterator> index_;
};

std::atomic<int64_t> hits{0}, misses{0}, bypassed{0};

Cache& cache() {
  static Cache* c = new Cache();  // never destroyed: its nodes may outlive static destruction order
  return *c;
}

}  // namespace

ScheduleCacheStats schedule_cache_stats() { return {hits.load(), misses.load(), bypassed.load(), cache().size()}; }

Schedule create_schedule(const std::vector<UOpPtr>& roots) {
  // Nodes realized earlier are swapped for views of their buffers.
  auto sink = substitute(UOp::make(Ops::SINK, dtypes::void_, roots), [](const UOp* u) { return realized(u); });
  Schedule sched;
  if (!SCACHE) {
    sched = schedule_graph(sink);
  } else if (Normalized n = normalize(sink); !n.usable) {
    bypassed++;
    sched = schedule_graph(sink);
  } else {
    std::shared_ptr<const Schedule> cached = cache().find(n.key);
    const bool hit = cached != nullptr;
    (hit ? hits : misses)++;
    if (!hit) {
      cached = std::make_shared<const Schedule>(schedule_graph(n.key));
      cache().insert(n.key, cached);
    }
    sched = Instance(n).make(*cached);
    sched.cached = hit;
  }
  for (const auto& [node, view] : sched.becomes) set_realized(node, view);
  return sched;
}

}  // namespace tg
