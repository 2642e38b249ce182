// UOp interning (hash-consing), creation-time derived facts, and iterative destruction.
#include "uop/uop.h"

#include <cmath>
#include <cstring>
#include <unordered_map>
#include <mutex>
#include <unordered_set>

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
// last owner is already gone (expired weak_ptr) treat it as absent.
std::recursive_mutex& table_mutex() {
  static std::recursive_mutex m;
  return m;
}
std::unordered_multimap<size_t, const UOp*>& table() {
  static auto* t = new std::unordered_multimap<size_t, const UOp*>();  // never destroyed: outlives nodes
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
    // Movement ops (tensor graph): the arg says how; PAD and SHRINK args are flattened (begin, end) pairs.
    case Ops::RESHAPE: case Ops::EXPAND: return std::get<std::vector<int64_t>>(arg);
    case Ops::PERMUTE: {
      Shape s;
      for (int64_t a : std::get<std::vector<int64_t>>(arg)) s.push_back(src.at(0)->shape.at(size_t(a)));
      return s;
    }
    case Ops::PAD: case Ops::SHRINK: {
      Shape s = src.at(0)->shape;
      const auto& a = std::get<std::vector<int64_t>>(arg);
      for (size_t i = 0; i < s.size(); i++) {
        int64_t lo = a.at(2 * i), hi = a.at(2 * i + 1), r = 0;
        bool overflow = op == Ops::PAD ? __builtin_add_overflow(s[i], lo, &r) || __builtin_add_overflow(r, hi, &r)
                                       : __builtin_sub_overflow(hi, lo, &r);
        if (overflow)
          throw Error(std::string(op_name(op)) + ": dim " + std::to_string(i) + " of size " + std::to_string(s[i]) +
                      " with (" + std::to_string(lo) + ", " + std::to_string(hi) + ") has a size past int64");
        s[i] = r;
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
  auto [first, last] = table().equal_range(h);
  for (auto it = first; it != last; ++it) {
    const UOp* u = it->second;
    if (u->same_structure(op, dtype, src, arg))
      if (auto alive = u->weak_from_this().lock()) return alive;
  }
  // Every tensor-level shape is made here: refuse one whose element or byte count overflows int64 before
  // anything is built from it (a wrapped count would become a tiny buffer).
  Shape shape = infer_shape(op, src, arg);
  if (!shape.empty() && !dtype.ptr && dtype.scalar != Scalar::Void) checked_numel(shape, dtype.itemsize(), op_name(op));
  auto* node = new UOp(op, dtype, std::move(src), std::move(arg), h);
  node->shape = std::move(shape);
  auto [lo, hi] = compute_bounds(*node);
  node->vmin = lo, node->vmax = hi;
  UOpPtr p(node);
  table().emplace(h, node);  // a dying twin may still be listed: its destructor erases only itself
  return p;
}

UOp::~UOp() {
  {
    std::lock_guard<std::recursive_mutex> lock(table_mutex());
    auto [first, last] = table().equal_range(hash);
    for (auto it = first; it != last; ++it)
      if (it->second == this) {
        table().erase(it);
        break;
      }
  }
  if (destroy_hook) destroy_hook(this);
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
  std::unordered_map<const UOp*, UOpPtr> done;
  for (const UOp* u : toposort(root)) {
    if (UOpPtr r = replacement(u)) {
      done[u] = r;
      continue;
    }
    std::vector<UOpPtr> srcs;
    bool changed = false;
    for (auto& s : u->src) {
      srcs.push_back(done.at(s.get()));
      changed |= srcs.back() != s;
    }
    done[u] = changed ? UOp::make(u->op, u->dtype, std::move(srcs), u->arg) : u->ptr();
  }
  return done.at(root.get());
}

}  // namespace tg
