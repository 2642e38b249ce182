#pragma once
// UOp: the one IR. Immutable, interned nodes {op, dtype, src, arg}: building the same structure twice
// returns the same object, so structural equality is pointer equality and a UOp can be a map key.
// Build them only through UOp::make (or the helpers below). Side data lives in side tables keyed by node.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "shape/shapetracker.h"
#include "tg/dtype.h"
#include "uop/ops.h"

namespace tg {

struct UOp;
using UOpPtr = std::shared_ptr<const UOp>;

// REDUCE_AXIS: which reduction over which axes.
struct ReduceArg {
  Ops op;  // ADD, MUL or MAX
  std::vector<int64_t> axes;
  bool operator==(const ReduceArg&) const = default;
};
// BUFFER: a unique id (so two empty buffers differ) and the element count.
struct BufferArg {
  int64_t id;
  int64_t size;
  bool operator==(const BufferArg&) const = default;
};
// DEFINE_VAR ("i" with bounds) and DEFINE_LOCAL (a shared buffer): a name and a range of values. A variable's value
// lives in the tensor graph only, as BIND(DEFINE_VAR, DEVICE) with the value (int64) as arg: the scheduler strips
// it into ScheduleItem::vars, so kernels hold the unbound DEFINE_VAR and one compile serves every value.
struct NamedRange {
  std::string name;
  int64_t min = 0, max = 0;
  bool operator==(const NamedRange&) const = default;
};
// SPECIAL: a launch index, typed. GROUP: the workgroup (block) id along dim; LOCAL: the thread id inside the
// workgroup; GLOBAL: the absolute thread id (group * local size + local); CORE: the CPU thread of a kernel
// split across threads (OptOps.THREAD, a kernel parameter). Values are 0 .. size-1.
enum class LaunchAxis : uint8_t { GROUP, LOCAL, GLOBAL, CORE };
struct SpecialArg {
  LaunchAxis axis;
  int dim = 0;  // 0..2 (x, y, z); 0 for CORE
  int64_t size = 1;
  bool operator==(const SpecialArg&) const = default;
  std::string name() const;  // tinygrad's spelling: "gidx0", "lidx1", "idx0", "core_id"
};

// Shape (sizes that may be symbolic) is the arg of the tensor graph's movement ops (RESHAPE, PERMUTE, ...).
using Arg = std::variant<std::monostate, bool, int64_t, double, std::string, std::vector<int64_t>, ShapeTracker,
                         ReduceArg, BufferArg, NamedRange, SpecialArg, Shape>;

struct UOp : std::enable_shared_from_this<UOp> {
  const Ops op;
  const DType dtype;
  const std::vector<UOpPtr> src;
  const Arg arg;
  // Derived at creation: the structural hash, the tensor-level shape (empty for lowered code and scalars),
  // and the integer range [vmin, vmax] of the value for int/bool nodes (dtype bounds when unknown).
  const size_t hash;
  Shape shape;
  int64_t vmin, vmax;
  bool has_multi = false;  // a MULTI node is this one or below it (schedule/multi.h lowers those graphs)

  static UOpPtr make(Ops op, DType dtype, std::vector<UOpPtr> src = {}, Arg arg = {});
  ~UOp();

  // Constants. const_ normalizes the stored value to the dtype (bool, int64 or double).
  static UOpPtr const_(DType dtype, double value);
  static UOpPtr const_int(int64_t value, DType dtype = dtypes::int32);
  bool is_const() const { return op == Ops::CONST; }
  double const_value() const;        // CONST value as double (throws if not CONST)
  int64_t const_int_value() const;   // CONST value as integer
  bool is_const_value(double v) const { return op == Ops::CONST && const_value() == v; }

  // ALU builder: infers the dtype (bool for comparisons, the value source's dtype otherwise).
  static UOpPtr alu(Ops op, std::vector<UOpPtr> src);
  UOpPtr cast(DType dt) const;
  UOpPtr ptr() const { return shared_from_this(); }

  template <class T> const T& get() const { return std::get<T>(arg); }
  std::string repr() const;   // tinygrad's printing: UOp(Ops.ADD, dtypes.float, arg=None, src=(...))
  std::string arg_repr() const;

  // From now on make() builds a new node where it would have returned `u`; u lives on for those that hold it.
  // For a node that came to stand for an old value: it was realized from a buffer that has since been
  // overwritten (schedule/realized.h), so a graph built afterwards must not find it.
  static void unintern(const UOp& u);

  // Internal: interned nodes are created by make() only.
  UOp(Ops op, DType dtype, std::vector<UOpPtr> src, Arg arg, size_t hash);
  bool same_structure(Ops op, DType dtype, const std::vector<UOpPtr>& src, const Arg& arg) const;

  // Called (once each) as a node dies, so side tables keyed by nodes (in any layer) can drop their entries.
  // Registered once per table, before nodes of interest exist; at most kMaxDestroyHooks.
  using DestroyHook = void (*)(const UOp*);
  static constexpr int kMaxDestroyHooks = 4;
  static void add_destroy_hook(DestroyHook hook);
};

// Arithmetic on index/ALU UOps, for pattern right-hand sides and lowering. Scalars become CONSTs of the
// other operand's dtype.
UOpPtr operator+(const UOpPtr& a, const UOpPtr& b);
UOpPtr operator-(const UOpPtr& a, const UOpPtr& b);
UOpPtr operator*(const UOpPtr& a, const UOpPtr& b);
UOpPtr operator+(const UOpPtr& a, int64_t b);
UOpPtr operator*(const UOpPtr& a, int64_t b);
UOpPtr operator-(const UOpPtr& a);
UOpPtr idiv(const UOpPtr& a, const UOpPtr& b);
UOpPtr idiv(const UOpPtr& a, int64_t b);
UOpPtr mod(const UOpPtr& a, const UOpPtr& b);
UOpPtr mod(const UOpPtr& a, int64_t b);
UOpPtr lt(const UOpPtr& a, const UOpPtr& b);
UOpPtr lt(const UOpPtr& a, int64_t b);
UOpPtr ne(const UOpPtr& a, const UOpPtr& b);
UOpPtr ge(const UOpPtr& a, int64_t b);          // NOT(a < b), as (a < b) != true
UOpPtr logical_and(const UOpPtr& a, const UOpPtr& b);
UOpPtr maximum(const UOpPtr& a, const UOpPtr& b);
UOpPtr where(const UOpPtr& c, const UOpPtr& t, const UOpPtr& f);

// The hash of an arg alone (a node's own fields, without its sources).
size_t arg_hash(const Arg& arg);
// All nodes reachable from root, sources before users, each once (iterative: no recursion).
std::vector<const UOp*> toposort(const UOpPtr& root);
// Replace nodes by the map's values everywhere below root (rebuilds the users; iterative).
UOpPtr substitute(const UOpPtr& root, const std::function<UOpPtr(const UOp*)>& replacement);

}  // namespace tg
