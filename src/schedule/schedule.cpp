// Realize points and kernel grouping (each kernel's AST: schedule/kernel_ast.h).
#include "schedule/schedule.h"

#include <algorithm>
#include <deque>
#include <map>
#include <queue>
#include <unordered_map>
#include <unordered_set>

#include "schedule/kernel_ast.h"
#include "schedule/realized.h"
#include "schedule/split_reduce.h"
#include "uop/movement.h"
#include "tg/error.h"
#include "uop/pattern.h"

namespace tg {
namespace {

using namespace kernel_ast;

const UOp* base_of(const UOp* u) { return u->op == Ops::VIEW ? u->src[0].get() : u; }

// Whether a view reads some element of its base more than once: a dim of stride 0 with more than one valid
// index (an expand). A pad reads each element once, however much larger the view is.
bool reads_elements_again(const ShapeTracker& st) {
  for (const View& v : st.views)
    for (size_t d = 0; d < v.shape.size(); d++) {
      if (!(v.strides[d] == 0)) continue;
      const sint valid = v.mask ? (*v.mask)[d].second - (*v.mask)[d].first : v.shape[d];
      if (!valid.is_int() || valid > 1) return true;
    }
  return false;
}

// An op cheap enough to compute again for every element that reads it: integer and bit arithmetic, float add and
// multiply, selects and conversions (no division, no transcendental, no reduce).
bool cheap_op(Ops op) {
  switch (op) {
    case Ops::CAST:
    case Ops::BITCAST:
    case Ops::ADD:
    case Ops::SUB:
    case Ops::MUL:
    case Ops::NEG:
    case Ops::MAX:
    case Ops::AND:
    case Ops::OR:
    case Ops::XOR:
    case Ops::SHL:
    case Ops::SHR:
    case Ops::CMPLT:
    case Ops::CMPNE:
    case Ops::WHERE:
      return true;
    default:
      return false;
  }
}

// The device each node computes on: the first BUFFER or DEVICE found below it, sources in order (COPY names
// its target first). `topo` lists sources before users, so one pass fills it in.
std::unordered_map<const UOp*, const UOp*> device_nodes(const std::vector<const UOp*>& topo) {
  std::unordered_map<const UOp*, const UOp*> dev;
  dev.reserve(topo.size());
  for (const UOp* u : topo) {
    const UOp* d = u->op == Ops::BUFFER || u->op == Ops::DEVICE ? u : nullptr;
    for (size_t i = 0; !d && i < u->src.size(); i++)
      if (auto it = dev.find(u->src[i].get()); it != dev.end()) d = it->second;
    if (d) dev.emplace(u, d);
  }
  return dev;
}

std::string device_name(const std::unordered_map<const UOp*, const UOp*>& dev, const UOp* u) {
  auto it = dev.find(u);
  if (it == dev.end()) throw Error("schedule: no device found for a " + std::string(op_name(u->op)));
  return it->second->op == Ops::BUFFER ? buffer_device(it->second) : it->second->get<std::string>();
}

// Folds movement ops into VIEWs (a base, or a VIEW of a base, under each), and VIEW(VIEW(x)) into one VIEW
// after realized nodes were swapped for views of their buffers.
UOpPtr fold_movement(const Captures& m, void*) {
  const UOpPtr& mv = m["mv"];
  const UOpPtr& x = m["x"];
  const UOpPtr& base = x->op == Ops::VIEW ? x->src[0] : x;
  ShapeTracker st = apply_movement(tracker_of(x), mv->op, mv->get<Shape>());
  return make_view(base, st);
}

const PatternMatcher& view_folding() {
  static const PatternMatcher pm({
      {UPat::op(Ops::RESHAPE, {UPat::var("x")}, "mv"), fold_movement},
      {UPat::op(Ops::PERMUTE, {UPat::var("x")}, "mv"), fold_movement},
      {UPat::op(Ops::EXPAND, {UPat::var("x")}, "mv"), fold_movement},
      {UPat::op(Ops::PAD, {UPat::var("x")}, "mv"), fold_movement},
      {UPat::op(Ops::SHRINK, {UPat::var("x")}, "mv"), fold_movement},
      {UPat::op(Ops::FLIP, {UPat::var("x")}, "mv"), fold_movement},
      {UPat::op(Ops::VIEW, {UPat::op(Ops::VIEW, {UPat::var("x")}, "inner")}, "outer"),
       [](const Captures& m, void*) -> UOpPtr {
         ShapeTracker st = m["inner"]->get<ShapeTracker>() + m["outer"]->get<ShapeTracker>();
         return UOp::make(Ops::VIEW, m["outer"]->dtype, {m["x"]}, st);
       }},
  });
  return pm;
}

// A kernel's source is compiled as a whole, and compilers take time that grows faster than its length (clang: 0.1 s
// for 1,000 dependent adds, 2.6 s for 10,000): a fused chain is cut into kernels of at most this many ops. The
// pieces of a uniform chain have one AST, so one compile.
constexpr int64_t kMaxKernelDepth = 256;

// Kernels were built with nodes inline that must be realized instead (now marked): build them all again.
struct StartOver {};

// One kernel of the schedule: its realized root, the realized reduces it hosts (computes and stores as more
// outputs), its AST and the nodes it loads (DEFINE_GLOBAL 1 + hosted.size() + i).
struct BuiltKernel {
  const UOp* root;
  UOpPtr ast;
  std::vector<const UOp*> inputs;
  std::vector<const UOp*> hosted;
  const UOp* reduce = nullptr;  // the reduce whose loops its output nests in (AstBuilder::kernel_reduce)
  std::vector<VarValue> vars;
  std::vector<const UOp*> inline_reduces;  // the reduces it computes inline (not realized)
};

class Scheduler {
 public:
  Schedule run(UOpPtr sink) {
    const UOpPtr unsplit = sink, split = split_reduces(sink);
    std::unordered_map<const UOp*, UOpPtr> folded;  // node of the tensor graph -> the one scheduled
    sink = graph_rewrite_map(split, view_folding(), folded);
    topo_ = toposort(sink);
    find_realize_points(sink);
    bound_kernel_depth();
    // Build every kernel; a kernel that cannot be built names a node to realize (or a reduce it may not host),
    // and we start over.
    std::vector<BuiltKernel> kernels;
    for (bool done = false; !done;) {
      try {
        kernels = build_kernels();
        done = true;
        if (const UOp* v = order_kernels(kernels)) {
          if (realize_.count(v)) throw Error("schedule: ordering the assigns did not converge");
          mark(v, realize_why::kAssignSource);
          done = false;
        }
      } catch (const KernelFailure& f) {
        if (realize_.count(f.must_realize)) throw Error("schedule: kernel grouping did not converge");
        mark(f.must_realize, f.why);
        done = false;
      } catch (const StartOver&) {  // (more nodes realized: the loop ends, as they are finitely many)
        done = false;
      } catch (const HostFailure& f) {
        if (!not_hostable_.insert(f.reduce).second) throw Error("schedule: hosting reduces did not converge");
        done = false;
      }
    }
    Schedule sched = emit(sink, kernels);
    // The folding made new nodes above every movement op: the tensor graph's node is realized too wherever the
    // one scheduled for it is, so a tensor (or a graph built before this realize) that holds it reads the result
    // instead of computing it again. Not a movement op that folded away into what it moves (a pad then a shrink
    // back): it is no computed value of its own, and autograd would take it for the realized node itself.
    for (const auto& [node, scheduled] : folded)
      if (node != scheduled.get() && !is_movement(node->op) && !becomes_.count(node))
        if (auto it = becomes_.find(scheduled.get()); it != becomes_.end()) become(sched, node->ptr(), it->second);
    // A root whose reduce was split is a new node: its original is realized into the same buffer too, so a
    // graph built on it before this realize reuses the result.
    for (size_t i = 0; i < unsplit->src.size(); i++)
      if (unsplit->src[i] != split->src[i] && !becomes_.count(unsplit->src[i].get()))
        become(sched, unsplit->src[i], sched.roots[i]);
    if (sink != unsplit) mark_rebuilt_assigns(sched, unsplit, kernels);  // (nothing was rebuilt otherwise)
    return sched;
  }

 private:
  std::vector<const UOp*> topo_;
  std::unordered_set<const UOp*> realize_;
  std::unordered_set<const UOp*> not_hostable_;  // realized reduces that a kernel may not compute as a second output
  std::unordered_map<const UOp*, UOpPtr> becomes_;  // sched.becomes, by node
  std::unordered_map<const UOp*, uint32_t> why_;     // realized node -> realize_why bits

  void mark(const UOp* u, uint32_t why) {
    realize_.insert(u);
    why_[u] |= why;
  }
  uint32_t why_of(const UOp* u) const {
    auto it = why_.find(u);
    return it == why_.end() ? 0 : it->second;
  }

  void become(Schedule& sched, const UOpPtr& node, const UOpPtr& view) {
    becomes_[node.get()] = view;
    sched.becomes.emplace_back(node, view);
  }

  // One kernel per realized node, in graph order. A realized reduce whose kernel hosts nothing may be hosted by a
  // later kernel (AstBuilder::can_host): then that kernel computes and stores it, and its own kernel is dropped.
  //
  // A kernel that cannot be built names a node v (below it) to realize. When no kernel built so far reached v, the
  // kernels built so far are exactly what a new pass would build again (their walks never saw v), so v's kernel is
  // built at its place in graph order and the failed one retried; otherwise the failure goes to run(), which
  // starts over. (A training step's schedule took 14 passes over every kernel before.)
  std::vector<BuiltKernel> build_kernels() {
    std::vector<BuiltKernel> out;
    std::vector<size_t> position;                         // per kernel of out: its root's index in topo_
    std::unordered_map<const UOp*, size_t> topo_index;    // made at the first resumed kernel (most schedules: none)
    auto index_of = [&](const UOp* u, size_t root_index) {
      if (u == topo_[root_index]) return root_index;
      if (topo_index.empty())
        for (size_t i = 0; i < topo_.size(); i++) topo_index.emplace(topo_[i], i);
      return topo_index.at(u);
    };
    std::unordered_map<const UOp*, const UOp*> hostable;  // node -> the reduce its kernel nests in
    std::unordered_set<const UOp*> hosted, reached;
    for (size_t root_index = 0; root_index < topo_.size(); root_index++) {
      const UOp* root = topo_[root_index];
      if (!realize_.count(root)) continue;
      std::vector<const UOp*> pending{root};
      while (!pending.empty()) {
        const UOp* u = pending.back();
        std::unordered_set<const UOp*> walked;
        BuiltKernel k;
        try {
          k = build_kernel(u, hostable, walked);
        } catch (const KernelFailure& f) {
          if (reached.count(f.must_realize) || realize_.count(f.must_realize)) throw;
          mark(f.must_realize, f.why);
          pending.push_back(f.must_realize);
          continue;
        }
        pending.pop_back();
        for (const UOp* n : walked)
          if (n->op == Ops::REDUCE_AXIS && !realize_.count(n)) k.inline_reduces.push_back(n);
        reached.insert(walked.begin(), walked.end());
        for (const UOp* r : k.hosted) {
          hostable.erase(r);
          hosted.insert(r);
        }
        if (k.reduce && u->op != Ops::ASSIGN && k.hosted.empty() && !not_hostable_.count(u)) hostable.emplace(u, k.reduce);
        const size_t at = index_of(u, root_index);
        const size_t slot = size_t(std::upper_bound(position.begin(), position.end(), at) - position.begin());
        position.insert(position.begin() + ptrdiff_t(slot), at);
        out.insert(out.begin() + ptrdiff_t(slot), std::move(k));
      }
    }
    if (!hosted.empty()) std::erase_if(out, [&](const BuiltKernel& k) { return hosted.count(k.root) > 0; });
    realize_recomputed_reduces(out);
    return out;
  }

  // A reduce that several kernels compute inline (two outputs of one realize that read it, a value and its
  // gradient) is computed once instead: realized, and every kernel built again.
  void realize_recomputed_reduces(const std::vector<BuiltKernel>& kernels) {
    std::unordered_set<const UOp*> seen, recomputed;
    for (const BuiltKernel& k : kernels)
      for (const UOp* r : k.inline_reduces)
        if (!seen.insert(r).second) recomputed.insert(r);
    if (recomputed.empty()) return;
    for (const UOp* r : recomputed) mark(r, realize_why::kSharedReduce);
    throw StartOver{};
  }

  // An ASSIGN that the rewrites above rebuilt (its sources folded) ran as its copy; the original, which a tensor
  // holds, is realized into the same target view too: else realizing that tensor later would write its value a
  // second time (w.assign(w + 1) realized through w * 1, then w read: w + 2).
  void mark_rebuilt_assigns(Schedule& sched, const UOpPtr& original, const std::vector<BuiltKernel>& kernels) {
    std::map<std::pair<const UOp*, const UOp*>, UOpPtr> done;  // (target BUFFER, target VIEW arg) -> realized
    auto key = [](const UOp* a) { return std::make_pair(a->src[0]->src[0].get(), a->src[0].get()); };
    for (const BuiltKernel& k : kernels)
      if (k.root->op == Ops::ASSIGN)
        if (auto it = becomes_.find(k.root); it != becomes_.end()) done[key(k.root)] = it->second;
    if (done.empty()) return;
    for (const UOp* u : toposort(original))
      if (u->op == Ops::ASSIGN && !becomes_.count(u))
        if (auto it = done.find(key(u)); it != done.end()) become(sched, u->ptr(), it->second);
  }

  // Whether `u` is a short elementwise computation of loaded values (at most kRecomputeOps cheap ops down to buffers,
  // realized nodes and constants), cheaper to compute again for every copy an expand makes than to store and load:
  // a quantized block's dequantization (nibbles, scale, offset: 8 ops) inside a matmul over several rows. Realized,
  // it would also stay as a dense copy of the weight for as long as the model holds the expression.
  // Many copies (more than kRecomputeCopies) only where the inputs are narrower than the result: realizing would
  // write more bytes than every copy reads (4- and 8-bit weights against float32), while an RMSNorm's output read
  // by every row of a matmul is computed once.
  static constexpr int kRecomputeOps = 12;
  static constexpr int64_t kRecomputeCopies = 16;
  bool cheap_to_recompute(const UOp* u, int64_t copies) const {
    std::vector<const UOp*> stack{u};
    std::unordered_set<const UOp*> seen{u};
    int ops = 0, widest_input = 0;
    while (!stack.empty()) {
      const UOp* x = stack.back();
      stack.pop_back();
      if (x != u && realize_.count(x)) {
        widest_input = std::max(widest_input, x->dtype.itemsize());
        continue;
      }
      if (x->op == Ops::VIEW) {
        if (!x->src.empty() && seen.insert(x->src[0].get()).second) stack.push_back(x->src[0].get());
        continue;
      }
      if (x->op == Ops::BUFFER) widest_input = std::max(widest_input, x->dtype.itemsize());
      if (!is_base_compute(x)) continue;  // a buffer or a constant
      if (!cheap_op(x->op) || ++ops > kRecomputeOps) return false;
      for (auto& s : x->src)
        if (seen.insert(s.get()).second) stack.push_back(s.get());
    }
    return copies <= kRecomputeCopies || widest_input < u->dtype.itemsize();
  }

  void find_realize_points(const UOpPtr& sink) {
    std::unordered_map<const UOp*, int> reduce_users;  // distinct users of each REDUCE_AXIS
    for (const UOp* u : topo_)
      for (size_t i = 0; i < u->src.size(); i++) {
        const UOp* s = u->src[i].get();
        bool repeated = false;
        for (size_t j = 0; j < i; j++) repeated |= u->src[j].get() == s;
        if (s->op == Ops::REDUCE_AXIS && !repeated) reduce_users[s]++;
      }
    for (auto& r : sink->src) {
      const UOp* b = base_of(r.get());
      if (is_base_compute(b)) mark(b, realize_why::kOutput);
      // A realized constant (or variable) gets a buffer of its full shape, as tinygrad does.
      if ((b->op == Ops::CONST || b->op == Ops::BIND) && r->op == Ops::VIEW) mark(r.get(), realize_why::kConstant);
    }
    // Nodes computed from constants and variables alone (a variable cast to float): cheaper to compute again than
    // to store and load.
    std::unordered_set<const UOp*> from_constants;
    for (const UOp* u : topo_) {
      bool leaf = u->op == Ops::CONST || u->op == Ops::BIND || u->op == Ops::DEVICE || u->op == Ops::DEFINE_VAR;
      bool pure = is_alu(u->op) || u->op == Ops::CAST || u->op == Ops::BITCAST || u->op == Ops::VIEW;
      for (const UOpPtr& s : u->src) pure &= from_constants.count(s.get()) > 0;
      if (leaf || (pure && !u->src.empty())) from_constants.insert(u);
    }
    for (const UOp* u : topo_) {
      switch (u->op) {
        case Ops::CONTIGUOUS: mark(u, realize_why::kContiguous); break;
        case Ops::COPY: mark(u, realize_why::kCopy); break;
        case Ops::ASSIGN: mark(u, realize_why::kAssign); break;
        case Ops::ALLREDUCE: mark(u, realize_why::kAllReduce); break;
        case Ops::REDUCE_AXIS:
          if (reduce_users[u] > 1) mark(u, realize_why::kSharedReduce);  // never compute a reduce twice
          break;
        case Ops::VIEW: {
          // A base read through an expanding view would be recomputed per copy: realize it, unless it is a few
          // cheap ops on loaded values (a quantized block's dequantization inside a matmul over several rows) and
          // the copies are a known number. An expand by a symbolic size may make any number (attention's query,
          // rotated, once per key); a pad only (cat's halves) reads each element once however large the view is.
          const UOp* b = u->src[0].get();
          const ShapeTracker& st = u->get<ShapeTracker>();
          const sint seen = st.size(), own = prod(b->shape);
          const bool concrete = seen.is_int() && own.is_int();
          const bool expands =
              concrete ? seen > own && reads_elements_again(st) : !(seen == own) && (seen - own).vmax() > 0;
          if (is_base_compute(b) && !from_constants.count(b) && expands &&
              !(concrete && cheap_to_recompute(b, int64_t(seen) / std::max<int64_t>(1, int64_t(own)))))
            mark(b, realize_why::kExpanded);
          break;
        }
        default: break;
      }
      if (u->op == Ops::COPY || u->op == Ops::ALLREDUCE)  // (they read their sources' buffers whole)
        for (size_t i = 1; i < u->src.size(); i++)
          if (const UOp* b = base_of(u->src[i].get()); is_base_compute(b)) mark(b, realize_why::kReadWhole);
    }
  }

  // A fused chain of more than kMaxKernelDepth ops is cut into kernels of at most that many.
  void bound_kernel_depth() {
    std::unordered_map<const UOp*, int64_t> depth;  // ops on the longest fused path ending at a node
    depth.reserve(topo_.size());
    for (const UOp* u : topo_) {
      int64_t d = 0;
      for (auto& s : u->src)
        if (auto it = depth.find(s.get()); it != depth.end() && !realize_.count(s.get())) d = std::max(d, it->second);
      if (is_alu(u->op) || u->op == Ops::CAST || u->op == Ops::BITCAST || u->op == Ops::REDUCE_AXIS) d++;
      if (d >= kMaxKernelDepth && is_base_compute(u)) mark(u, realize_why::kDepth);
      depth.emplace(u, d);
    }
  }

  // Does the ASSIGN kernel `ast` read its own target buffer (DEFINE_GLOBAL `idx`) through a view other than
  // the one it stores through? Then an element may be read after it was overwritten.
  static bool reads_target_elsewhere(const UOp* assign, const UOpPtr& ast, int64_t idx) {
    const ShapeTracker& out_st = assign->src[0]->get<ShapeTracker>();
    for (const UOp* x : toposort(ast))
      if (x->op == Ops::LOAD && x->src[0]->op == Ops::DEFINE_GLOBAL && x->src[0]->get<int64_t>() == idx &&
          !(x->src[1]->get<ShapeTracker>() == out_st))
        return true;
    return false;
  }

  // Kernels run in graph order, except that every kernel reading a buffer's old value must run before the
  // ASSIGN that overwrites it (an optimizer's gradients read all parameters before any is updated), and a kernel
  // reading a hosted reduce runs after its host. Reorders the kernels accordingly, or returns an ASSIGN's value to
  // realize into a temporary first, where no order works: an ASSIGN reading its own buffer through another view,
  // or ASSIGNs reading each other's buffers. (A cycle through a hosted reduce throws HostFailure.)
  const UOp* order_kernels(std::vector<BuiltKernel>& kernels) {
    size_t n = kernels.size();
    std::unordered_map<const UOp*, size_t> index;                 // realized node -> its kernel
    std::unordered_map<const UOp*, std::vector<size_t>> writers;  // assigned BUFFER -> the ASSIGN kernels
    const UOp* some_hosted = nullptr;
    for (size_t k = 0; k < n; k++) {
      index[kernels[k].root] = k;
      for (const UOp* r : kernels[k].hosted) index[r] = k, some_hosted = r;
      if (kernels[k].root->op == Ops::ASSIGN) writers[kernels[k].root->src[0]->src[0].get()].push_back(k);
    }
    if (writers.empty() && !some_hosted) return nullptr;
    std::vector<std::vector<size_t>> after(n);
    std::vector<size_t> indeg(n, 0);
    std::vector<bool> reads_other_target(n, false);
    auto edge = [&](size_t from, size_t to) {
      after[from].push_back(to);
      indeg[to]++;
    };
    for (size_t k = 0; k < n; k++) {
      const UOp* u = kernels[k].root;
      for (size_t i = 0; i < kernels[k].inputs.size(); i++) {
        const UOp* in = kernels[k].inputs[i];
        if (in->op != Ops::BUFFER) {  // the value of another kernel of this schedule
          if (auto it = index.find(in); it != index.end()) edge(it->second, k);
          continue;
        }
        auto w = writers.find(in);
        if (w == writers.end()) continue;
        for (size_t writer : w->second) {  // an old value that an ASSIGN overwrites
          if (writer == k) {
            if (reads_target_elsewhere(u, kernels[k].ast, int64_t(i + 1 + kernels[k].hosted.size())))
              return u->src[1].get();
            continue;
          }
          edge(k, writer);
          reads_other_target[k] = true;
        }
      }
    }
    // Kahn's algorithm, taking the earliest kernel of the graph order whenever several are ready.
    std::priority_queue<size_t, std::vector<size_t>, std::greater<>> ready;
    for (size_t k = 0; k < n; k++)
      if (indeg[k] == 0) ready.push(k);
    std::vector<size_t> order;
    while (!ready.empty()) {
      size_t k = ready.top();
      ready.pop();
      order.push_back(k);
      for (size_t b : after[k])
        if (--indeg[b] == 0) ready.push(b);
    }
    if (order.size() < n) {
      if (some_hosted) throw HostFailure{some_hosted};
      for (size_t k = 0; k < n; k++) {
        const UOp* u = kernels[k].root;
        if (indeg[k] && u->op == Ops::ASSIGN && reads_other_target[k] && !realize_.count(u->src[1].get()))
          return u->src[1].get();
      }
      throw Error("schedule: a kernel reads both the old and the new value of an assigned buffer");
    }
    std::vector<BuiltKernel> sorted;
    for (size_t k : order) sorted.push_back(std::move(kernels[k]));
    kernels = std::move(sorted);
    return nullptr;
  }

  // `walked` gets every node the kernel's walk reached.
  BuiltKernel build_kernel(const UOp* u, const std::unordered_map<const UOp*, const UOp*>& hostable,
                           std::unordered_set<const UOp*>& walked) {
    if (u->op == Ops::COPY) return {u, u->ptr(), {base_of(u->src[1].get())}, {}};
    if (u->op == Ops::ALLREDUCE) {  // one device's result; the engine runs the collective's items as one
      std::vector<const UOp*> parts;
      for (size_t i = 1; i < u->src.size(); i++) parts.push_back(base_of(u->src[i].get()));
      return {u, u->ptr(), parts, {}};
    }
    AstBuilder b(u, realize_, hostable);
    struct Reached {  // filled on every way out, a finished kernel's
      AstBuilder& b;
      std::unordered_set<const UOp*>& walked;
      ~Reached() { b.for_each_reached([&](const UOp* n) { walked.insert(n); }); }
    } reached{b, walked};
    UOpPtr value;
    ShapeTracker out_st = ShapeTracker::from_shape(u->op == Ops::ASSIGN ? u->shape : b.iteration_shape());
    if (u->op == Ops::ASSIGN) {
      // ASSIGN(target view of a buffer, value): store the value through the target's view.
      const UOp* target = u->src[0].get();
      if (target->op != Ops::VIEW || target->src[0]->op != Ops::BUFFER)
        throw Error("assign: the target must be a realized buffer");
      out_st = target->get<ShapeTracker>();
      value = b.build(u->src[1], ShapeTracker::from_shape(u->src[1]->shape));
    } else {
      value = b.build(u->ptr(), out_st);
    }
    auto out = UOp::make(Ops::DEFINE_GLOBAL, u->dtype.pointer(), {}, int64_t(0));
    auto view = UOp::make(Ops::VIEW, dtypes::void_, {}, out_st);
    std::vector<UOpPtr> stores{UOp::make(Ops::STORE, dtypes::void_, {out, view, value})};
    if (b.hosted.empty())
      return {u, unbind_views(UOp::make(Ops::SINK, dtypes::void_, stores), b), b.inputs, {}, b.kernel_reduce(), b.vars};
    // Hosted reduces are outputs 1..h, stored through the same view (they have the kernel reduce's shape); the
    // inputs move up behind them. (Building a hosted value may host another: the loop reads the size each time.)
    std::vector<UOpPtr> hosted_values;
    for (size_t i = 0; i < b.hosted.size(); i++) hosted_values.push_back(b.build(b.hosted[i]->ptr(), out_st));
    const int64_t h = int64_t(b.hosted.size());
    auto shift = [&](const UOpPtr& x) {
      return substitute(x, [&](const UOp* d) -> UOpPtr {
        if (d->op != Ops::DEFINE_GLOBAL) return nullptr;
        return UOp::make(Ops::DEFINE_GLOBAL, d->dtype, {}, d->get<int64_t>() + h);
      });
    };
    stores = {UOp::make(Ops::STORE, dtypes::void_, {out, view, shift(value)})};
    for (int64_t i = 0; i < h; i++) {
      const UOp* r = b.hosted[size_t(i)];
      auto buf = UOp::make(Ops::DEFINE_GLOBAL, r->dtype.pointer(), {}, i + 1);
      stores.push_back(UOp::make(Ops::STORE, dtypes::void_, {buf, view, shift(hosted_values[size_t(i)])}));
    }
    UOpPtr sink = unbind_views(UOp::make(Ops::SINK, dtypes::void_, std::move(stores)), b);
    return {u, sink, b.inputs, b.hosted, b.kernel_reduce(), b.vars};
  }

  // The kernel reads symbolic sizes through its variables, unbound; their values join the item's (b.vars).
  static UOpPtr unbind_views(const UOpPtr& sink, AstBuilder& b) {
    return substitute(sink, [&](const UOp* u) -> UOpPtr {
      if (u->op != Ops::VIEW || !u->get<ShapeTracker>().symbolic()) return nullptr;
      ShapeTracker st = u->get<ShapeTracker>().unbind([&](const UOp& bind) { b.bind(bind); });
      return UOp::make(Ops::VIEW, u->dtype, u->src, st);
    });
  }

  Schedule emit(const UOpPtr& sink, const std::vector<BuiltKernel>& kernels) {
    Schedule sched;
    const auto devices = device_nodes(topo_);
    std::unordered_map<const UOp*, UOpPtr> buffer_node;  // realized node -> its BUFFER
    std::unordered_map<const UOp*, UOpPtr> replacement;  // realized node -> VIEW(BUFFER) of its shape
    auto output = [&](const UOp* u) {
      // A symbolic shape gets a buffer for its largest size.
      UOpPtr buf = u->op == Ops::ASSIGN ? u->src[0]->src[0]
                                        : new_buffer_uop(device_name(devices, u), prod(u->shape).vmax(), u->dtype);
      buffer_node[u] = buf;
      ShapeTracker st = u->op == Ops::ASSIGN ? u->src[0]->get<ShapeTracker>()
                                             : ShapeTracker::from_shape({prod(u->shape)}).reshape(u->shape);
      replacement[u] = UOp::make(Ops::VIEW, u->dtype, {buf}, st);
      return buf;
    };
    for (const BuiltKernel& k : kernels) {
      ScheduleItem item{k.ast, {output(k.root)}, 1 + k.hosted.size(), k.vars, why_of(k.root)};
      for (const UOp* r : k.hosted) {
        item.bufs.push_back(output(r));
        item.why_hosted |= why_of(r);
      }
      for (const UOp* in : k.inputs) item.bufs.push_back(in->op == Ops::BUFFER ? in->ptr() : buffer_node.at(in));
      if (prod(k.root->shape).vmax() > 0) sched.items.push_back(std::move(item));
    }
    for (auto& [node, view] : replacement) become(sched, node->ptr(), view);
    auto out = substitute(sink, [&](const UOp* u) -> UOpPtr {
      auto it = replacement.find(u);
      return it == replacement.end() ? nullptr : it->second;
    });
    out = graph_rewrite(out, view_folding());
    sched.roots = out->src;
    return sched;
  }
};

}  // namespace

Schedule schedule_graph(const UOpPtr& sink) { return Scheduler().run(sink); }

std::string realize_why_text(uint32_t why) {
  using namespace realize_why;
  static const std::pair<uint32_t, const char*> kWords[] = {
      {kOutput, "a tensor the realize asked for"},
      {kContiguous, "contiguous()"},
      {kCopy, "a copy from another device or the host"},
      {kAssign, "an assign into an existing buffer"},
      {kAllReduce, "an all-reduce's result"},
      {kReadWhole, "a copy or an all-reduce reads it whole"},
      {kSharedReduce, "a reduce with several users (never computed twice)"},
      {kExpanded, "read through an expanding view (inline it would be computed once per copy)"},
      {kConstant, "a constant output (a buffer of its full shape)"},
      {kDepth, "it ends a fused chain at the most ops a kernel takes"},
      {kPadded, "read through a zero pad that its ops would not keep zero (or it holds a reduce)"},
      {kReduceView, "a reduce read through a view other than its whole output"},
      {kReduceLoops, "a reduce over other loops than the kernel's own reduce"},
      {kAssignSource, "an assign's value, read where the assign's order cannot be kept"},
  };
  std::string out;
  for (const auto& [bit, words] : kWords)
    if (why & bit) out += (out.empty() ? "" : "; ") + std::string(words);
  return out;
}

}  // namespace tg
