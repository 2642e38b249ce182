// UOp interning (hash-consing), creation-time derived facts, and iterative destruction.
#include "uop/uop.h"

#include <array>
#include <atomic>
#include <cmath>
#include <cstring>
#include <mutex>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "tg/error.h"
#include "uop/bounds.h"

namespace tg {
namespace {

size_t hash_combine(size_t h, size_t v) { return h ^ (v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2)); }

struct ArgHash {
  size_t operator()(const std::monostate&) const { return 0; }
  size_t operator()(bool b) const { return b ? 1 : 2; }
  size_t operator()(int64_t v) const { return std::hash<int64_t>()(v); }
  size_t operator()(double v) const { return std::hash<double>()(v); }
  size_t operator()(const std::string& s) const { return std::hash<std::string>()(s); }
  size_t operator()(const std::vector<int64_t>& v) const {
    size_t h = v.size();
    for (int64_t x : v) h = hash_combine(h, std::hash<int64_t>()(x));
    return h;
  }
  size_t operator()(const Shape& v) const {
    size_t h = v.size() + 1;
    for (const sint& x : v)
      h = hash_combine(h, x.hash());
    return h;
  }
  size_t operator()(const ShapeTracker& st) const { return st.hash(); }
  size_t operator()(const ReduceArg& r) const { return hash_combine((*this)(r.axes), size_t(r.op)); }
  size_t operator()(const BufferArg& b) const { return hash_combine(size_t(b.id), size_t(b.size)); }
  size_t operator()(const NamedRange& n) const {
    return hash_combine(hash_combine((*this)(n.name), size_t(n.min)), size_t(n.max));
  }
  size_t operator()(const SpecialArg& s) const {
    return hash_combine(hash_combine(size_t(s.axis), size_t(s.dim)), size_t(s.size));
  }
};

}  // namespace

size_t arg_hash(const Arg& arg) { return std::visit(ArgHash{}, arg); }

std::string SpecialArg::name() const {
  switch (axis) {
    case LaunchAxis::GROUP: return "gidx" + std::to_string(dim);
    case LaunchAxis::LOCAL: return "lidx" + std::to_string(dim);
    case LaunchAxis::GLOBAL: return "idx" + std::to_string(dim);
    case LaunchAxis::CORE: return "core_id";
  }
  return "?";
}

namespace {

// Doubles compare bitwise so that 0.0 and -0.0 (and NaNs) are distinct constants.
bool arg_equal(const Arg& a, const Arg& b) {
  if (a.index() != b.index()) return false;
  if (auto* da = std::get_if<double>(&a)) {
    double db = std::get<double>(b);
    return std::memcmp(da, &db, sizeof(double)) == 0;
  }
  return a == b;
}

size_t structural_hash(Ops op, DType dtype, const std::vector<UOpPtr>& src, const Arg& arg) {
  size_t h = hash_combine(size_t(op), std::hash<DType>()(dtype));
  h = hash_combine(h, std::visit(ArgHash{}, arg));
  for (auto& s : src) h = hash_combine(h, s->hash);
  return h;
}

// The intern table holds raw pointers; a node removes itself as it dies. Lookups that find a node whose
// last owner is already gone (expired weak_ptr) treat it as absent. Open addressing with linear probing over
// (hash, node) slots: a lookup reads one or two cache lines and compares stored hashes before touching a
// node, where a std::unordered_multimap chased a list node per entry (a third of the time of building and
// scheduling a 1M-node graph). Erasing shifts the following entries back, so there are no tombstones.
class InternTable {
 public:
  // Calls f(node) on each node stored under hash h until f returns true; returns whether one did.
  template <class F>
  bool any_of(size_t h, F&& f) const {
    for (size_t i = home(h);; i = (i + 1) & mask_) {
      const Slot& s = slots_[i];
      if (!s.node) return false;
      if (s.hash == h && f(s.node)) return true;
    }
  }
  void insert(size_t h, const UOp* u) {  // a dying twin may still be listed: its destructor erases only itself
    if (2 * (count_ + 1) > slots_.size()) resize(2 * slots_.size());
    place({h, u});
    count_++;
  }
  void erase(size_t h, const UOp* u) {
    size_t i = home(h);
    for (; slots_[i].node != u; i = (i + 1) & mask_)
      if (!slots_[i].node) return;  // never listed (its creation threw)
    for (size_t j = i;;) {  // move back each later entry of the run that may sit at i (Knuth's algorithm R)
      j = (j + 1) & mask_;
      if (!slots_[j].node) break;
      size_t k = home(slots_[j].hash);
      if (i <= j ? (i < k && k <= j) : (i < k || k <= j)) continue;  // its home is after the hole
      slots_[i] = slots_[j];
      i = j;
    }
    slots_[i] = {};
    if (--count_ * 8 < slots_.size() && slots_.size() > kMinSlots) resize(slots_.size() / 2);
  }

 private:
  struct Slot {
    size_t hash = 0;
    const UOp* node = nullptr;
  };
  static constexpr size_t kMinSlots = 1024;
  std::vector<Slot> slots_ = std::vector<Slot>(kMinSlots);
  size_t mask_ = kMinSlots - 1, count_ = 0;

  size_t home(size_t h) const { return (h * 0x9e3779b97f4a7c15ULL >> 20) & mask_; }  // mixes weak low bits
  void place(Slot s) {
    size_t i = home(s.hash);
    while (slots_[i].node) i = (i + 1) & mask_;
    slots_[i] = s;
  }
  void resize(size_t n) {
    std::vector<Slot> old = std::exchange(slots_, std::vector<Slot>(n));
    mask_ = n - 1;
    for (const Slot& s : old)
      if (s.node) place(s);
  }
};

std::recursive_mutex& table_mutex() {
  static std::recursive_mutex m;
  return m;
}
InternTable& table() {
  static auto* t = new InternTable();  // never destroyed: outlives nodes
  return *t;
}

// Shape of a tensor-level node, derived from its sources (empty for kernel and lowered nodes).
Shape infer_shape(Ops op, const std::vector<UOpPtr>& src, const Arg& arg) {
  switch (op) {
    case Ops::VIEW: return std::get<ShapeTracker>(arg).shape();
    case Ops::BUFFER: return {std::get<BufferArg>(arg).size};
    case Ops::REDUCE_AXIS: {
      Shape s = src.at(0)->shape;
      for (int64_t a : std::get<ReduceArg>(arg).axes)
        if (a >= 0 && a < int64_t(s.size())) s[a] = 1;
      return s;
    }
    case Ops::CONST: case Ops::DEVICE: case Ops::SINK: return {};
    case Ops::COPY: return src.at(1)->shape;  // COPY(DEVICE target, value)
    // ALLREDUCE(DEVICE of this result, part 0, ..., part n-1); the engine's merged item is ALLREDUCE(DEVICE set)
    case Ops::ALLREDUCE: return src.size() > 1 ? src[1]->shape : Shape{};
    case Ops::MULTI: {  // MULTI(DEVICE set, shard 0, ..., shard n-1), arg the sharded axis (-1: replicated)
      if (src.size() < 2) throw Error("MULTI: expected a device set and at least one shard");
      Shape s = src[1]->shape;
      int64_t axis = std::get<int64_t>(arg);
      if (axis >= 0 && axis < int64_t(s.size())) s[size_t(axis)] = s[size_t(axis)] * int64_t(src.size() - 1);
      return s;
    }
    // Movement ops (tensor graph): the arg says how; PAD and SHRINK args are flattened (begin, end) pairs.
    case Ops::RESHAPE: case Ops::EXPAND: return std::get<Shape>(arg);
    case Ops::PERMUTE: {
      Shape s;
      for (const sint& a : std::get<Shape>(arg)) s.push_back(src.at(0)->shape.at(size_t(a.value())));
      return s;
    }
    case Ops::PAD: case Ops::SHRINK: {  // sint arithmetic: an int64 overflow throws tg::Error
      Shape s = src.at(0)->shape;
      const auto& a = std::get<Shape>(arg);
      for (size_t i = 0; i < s.size(); i++) {
        const sint &lo = a.at(2 * i), &hi = a.at(2 * i + 1);
        try {
          s[i] = op == Ops::PAD ? s[i] + lo + hi : hi - lo;
        } catch (const Error&) {
          throw Error(std::string(op_name(op)) + ": dim " + std::to_string(i) + " of size " + s[i].str() + " with (" +
                      lo.str() + ", " + hi.str() + ") has a size past int64");
        }
      }
      return s;
    }
    default:
      if (op == Ops::WHERE && src.size() == 3) return src[1]->shape;
      return src.empty() ? Shape{} : src[0]->shape;
  }
}

}  // namespace

UOp::UOp(Ops op_, DType dtype_, std::vector<UOpPtr> src_, Arg arg_, size_t hash_)
    : op(op_), dtype(dtype_), src(std::move(src_)), arg(std::move(arg_)), hash(hash_), vmin(0), vmax(0) {}

bool UOp::same_structure(Ops o, DType d, const std::vector<UOpPtr>& s, const Arg& a) const {
  if (op != o || !(dtype == d) || src.size() != s.size()) return false;
  for (size_t i = 0; i < s.size(); i++)
    if (src[i].get() != s[i].get()) return false;
  return arg_equal(arg, a);
}

UOpPtr UOp::make(Ops op, DType dtype, std::vector<UOpPtr> src, Arg arg) {
  for (auto& s : src)
    if (!s) throw Error(std::string("UOp::make(") + op_name(op) + "): null source");
  size_t h = structural_hash(op, dtype, src, arg);
  std::lock_guard<std::recursive_mutex> lock(table_mutex());
  UOpPtr found;
  table().any_of(h, [&](const UOp* u) {
    return u->same_structure(op, dtype, src, arg) && (found = u->weak_from_this().lock());
  });
  if (found) return found;
  // Every tensor-level shape is made here: refuse one whose element or byte count overflows int64 before
  // anything is built from it (a wrapped count would become a tiny buffer).
  Shape shape = infer_shape(op, src, arg);
  if (!shape.empty() && !dtype.ptr && dtype.scalar != Scalar::Void) checked_numel(shape, dtype.itemsize(), op_name(op));
  UOpPtr p = std::make_shared<UOp>(op, dtype, std::move(src), std::move(arg), h);  // one allocation
  auto* node = const_cast<UOp*>(p.get());
  node->shape = std::move(shape);
  auto [lo, hi] = compute_bounds(*node);
  node->vmin = lo, node->vmax = hi;
  node->has_multi = op == Ops::MULTI;
  for (const UOpPtr& s : node->src) node->has_multi = node->has_multi || s->has_multi;
  table().insert(h, node);
  return p;
}

namespace {
std::array<UOp::DestroyHook, UOp::kMaxDestroyHooks>& destroy_hooks() {
  static std::array<UOp::DestroyHook, UOp::kMaxDestroyHooks> hooks{};
  return hooks;
}
std::atomic<int>& destroy_hook_count() {
  static std::atomic<int> n{0};
  return n;
}
}  // namespace

void UOp::add_destroy_hook(DestroyHook hook) {
  static std::mutex mu;
  std::lock_guard<std::mutex> lock(mu);
  const int n = destroy_hook_count().load();
  for (int i = 0; i < n; i++)
    if (destroy_hooks()[size_t(i)] == hook) return;
  if (n == kMaxDestroyHooks) throw Error("UOp::add_destroy_hook: more than " + std::to_string(kMaxDestroyHooks) + " hooks");
  destroy_hooks()[size_t(n)] = hook;
  destroy_hook_count().store(n + 1, std::memory_order_release);
}

void UOp::unintern(const UOp& u) {
  std::lock_guard<std::recursive_mutex> lock(table_mutex());
  table().erase(u.hash, &u);  // (its destructor's erase then finds nothing, as for a node never listed)
}

UOp::~UOp() {
  {
    std::lock_guard<std::recursive_mutex> lock(table_mutex());
    table().erase(hash, this);
  }
  for (int i = 0, n = destroy_hook_count().load(std::memory_order_acquire); i < n; i++) destroy_hooks()[size_t(i)](this);
  // Release sources without recursion: a 200k-deep chain must not overflow the stack. The outermost
  // destructor drains a worklist; nested ones only hand their sources to it.
  thread_local std::vector<UOpPtr>* pending = nullptr;
  auto& srcs = const_cast<std::vector<UOpPtr>&>(src);
  if (pending) {
    for (auto& s : srcs) pending->push_back(std::move(s));
    return;
  }
  std::vector<UOpPtr> work;
  pending = &work;
  for (auto& s : srcs) work.push_back(std::move(s));
  while (!work.empty()) {
    UOpPtr p = std::move(work.back());
    work.pop_back();
    p.reset();
  }
  pending = nullptr;
}

UOpPtr UOp::const_(DType dtype, double value) {
  DType s = dtype.scalar_type();
  Arg a;
  if (s.is_bool()) a = value != 0;
  else if (s.is_int()) a = static_cast<int64_t>(value);
  else a = value;
  return make(Ops::CONST, dtype, {}, a);
}

UOpPtr UOp::const_int(int64_t value, DType dtype) {
  if (dtype.is_float()) return const_(dtype, double(value));
  if (dtype.is_bool()) return make(Ops::CONST, dtype, {}, value != 0);
  return make(Ops::CONST, dtype, {}, value);
}

double UOp::const_value() const {
  if (op != Ops::CONST) throw Error("const_value on a " + std::string(op_name(op)));
  if (auto* b = std::get_if<bool>(&arg)) return *b;
  if (auto* i = std::get_if<int64_t>(&arg)) return double(*i);
  return std::get<double>(arg);
}

int64_t UOp::const_int_value() const {
  if (op != Ops::CONST) throw Error("const_int_value on a " + std::string(op_name(op)));
  if (auto* b = std::get_if<bool>(&arg)) return *b;
  if (auto* i = std::get_if<int64_t>(&arg)) return *i;
  return int64_t(std::get<double>(arg));
}

UOpPtr UOp::alu(Ops op, std::vector<UOpPtr> src) {
  DType dt = is_comparison(op) ? dtypes::bool_.vec(src.at(0)->dtype.count)
             : op == Ops::WHERE ? src.at(1)->dtype
                                : src.at(0)->dtype;
  return make(op, dt, std::move(src));
}

UOpPtr UOp::cast(DType dt) const {
  if (dt == dtype) return shared_from_this();
  return make(Ops::CAST, dt, {shared_from_this()});
}

// ---- arithmetic helpers ----
namespace {
UOpPtr c_like(const UOpPtr& like, int64_t v) { return UOp::const_int(v, like->dtype.scalar_type()); }
}  // namespace
UOpPtr operator+(const UOpPtr& a, const UOpPtr& b) { return UOp::alu(Ops::ADD, {a, b}); }
UOpPtr operator-(const UOpPtr& a, const UOpPtr& b) { return a + (-b); }
UOpPtr operator*(const UOpPtr& a, const UOpPtr& b) { return UOp::alu(Ops::MUL, {a, b}); }
UOpPtr operator+(const UOpPtr& a, int64_t b) { return a + c_like(a, b); }
UOpPtr operator*(const UOpPtr& a, int64_t b) { return a * c_like(a, b); }
UOpPtr operator-(const UOpPtr& a) { return a * c_like(a, -1); }
UOpPtr idiv(const UOpPtr& a, const UOpPtr& b) { return UOp::alu(Ops::IDIV, {a, b}); }
UOpPtr idiv(const UOpPtr& a, int64_t b) { return idiv(a, c_like(a, b)); }
UOpPtr mod(const UOpPtr& a, const UOpPtr& b) { return UOp::alu(Ops::MOD, {a, b}); }
UOpPtr mod(const UOpPtr& a, int64_t b) { return mod(a, c_like(a, b)); }
UOpPtr lt(const UOpPtr& a, const UOpPtr& b) { return UOp::alu(Ops::CMPLT, {a, b}); }
UOpPtr lt(const UOpPtr& a, int64_t b) { return lt(a, c_like(a, b)); }
UOpPtr ne(const UOpPtr& a, const UOpPtr& b) { return UOp::alu(Ops::CMPNE, {a, b}); }
UOpPtr ge(const UOpPtr& a, int64_t b) { return ne(lt(a, b), UOp::const_int(1, dtypes::bool_)); }
UOpPtr logical_and(const UOpPtr& a, const UOpPtr& b) { return UOp::alu(Ops::AND, {a, b}); }
UOpPtr maximum(const UOpPtr& a, const UOpPtr& b) { return UOp::alu(Ops::MAX, {a, b}); }
UOpPtr where(const UOpPtr& c, const UOpPtr& t, const UOpPtr& f) { return UOp::alu(Ops::WHERE, {c, t, f}); }

// ---- graph walks ----
std::vector<const UOp*> toposort(const UOpPtr& root) {
  std::vector<const UOp*> order;
  std::unordered_set<const UOp*> visited;
  std::vector<std::pair<const UOp*, size_t>> stack{{root.get(), 0}};
  visited.insert(root.get());
  while (!stack.empty()) {
    auto& [node, next] = stack.back();
    if (next < node->src.size()) {
      const UOp* s = node->src[next++].get();
      if (visited.insert(s).second) stack.emplace_back(s, 0);
    } else {
      order.push_back(node);
      stack.pop_back();
    }
  }
  return order;
}

UOpPtr substitute(const UOpPtr& root, const std::function<UOpPtr(const UOp*)>& replacement) {
  // Depth-first with an explicit stack, sources before users. Nothing below a replaced node is visited: a
  // realized 1M-node chain is replaced at its top without walking the chain again.
  std::unordered_map<const UOp*, UOpPtr> done;
  auto finished = [&](const UOp* u) {
    if (done.count(u)) return true;
    UOpPtr r = replacement(u);
    return r ? done.emplace(u, std::move(r)), true : false;
  };
  if (finished(root.get())) return done.at(root.get());
  std::vector<std::pair<const UOp*, size_t>> stack{{root.get(), 0}};
  while (!stack.empty()) {
    auto& [u, next] = stack.back();
    if (next < u->src.size()) {
      const UOp* s = u->src[next++].get();
      if (!finished(s)) stack.emplace_back(s, 0);  // a DAG: a node in progress is never reached again
      continue;
    }
    std::vector<UOpPtr> srcs;
    bool changed = false;
    for (auto& s : u->src) {
      srcs.push_back(done.at(s.get()));
      changed |= srcs.back() != s;
    }
    done.emplace(u, changed ? UOp::make(u->op, u->dtype, std::move(srcs), u->arg) : u->ptr());
    stack.pop_back();
  }
  return done.at(root.get());
}

}  // namespace tg
