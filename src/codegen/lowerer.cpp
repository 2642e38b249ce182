// AST -> index math, with upcast dims expanded. Each LOOP/REDUCE dim of the full shape becomes a RANGE,
// the THREAD dim becomes SPECIAL core_id, and each view's tracker turns those into a buffer index and a
// validity (shape/indexing.h).
//
// UNROLL/UPCAST dims are not loops. The lowerer writes the AST once per value of them ("lanes"): every
// node is lowered once per combination of the upcast values it depends on (a load that does not depend
// on an upcast dim is shared by all of them). The kernel's vector dim (Kernel::vector_dim) is kept
// together: a node that depends on it is one vector node (float4 ...) where the renderer takes vectors of
// that op and dtype, and W scalar lanes otherwise, with the same arithmetic per lane either way.
//
// A REDUCE_AXIS at one output lane reduces its source over the UNROLL values in a balanced tree
// ((x0+x1)+(x2+x3)), then accumulates that across the reduce loops (REDUCE(value, ranges...)). When the
// vector dim is an UNROLL dim, each of its lanes accumulates separately and the lanes are added in a tree
// after the loop. (On GPUs the linearizer then adds the tree's terms to the accumulator one by one: see
// LinearizeOptions::sequential_sums.)
//
// GPU launch: the innermost LOOP dims are the grid, LOCAL/GROUP dims the threads of a block; a tensor core's
// two lane dims share threadIdx.x. Loads that a workgroup shares in a matmul go through shared memory
// (codegen/staging.h): their values are loads of the staged tile, or LDMATRIX fragments for a tensor core.
#include "codegen/lowerer.h"

#include <algorithm>
#include <array>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "codegen/exact_products.h"
#include "codegen/linearize.h"
#include "codegen/staging.h"
#include "shape/indexing.h"
#include "tg/error.h"
#include "uop/decompositions.h"
#include "uop/pass_log.h"
#include "uop/pattern.h"
#include "uop/symbolic.h"
#include "uop/symbolic_linear.h"

namespace tg {
namespace {

// A node's value at one setting of the (non-vector) upcast dims.
struct Val {
  UOpPtr one;                 // the same for every vector lane (a scalar), or one vector node
  std::vector<UOpPtr> lanes;  // W scalars, when `one` is null
};

bool contains(const UOpPtr& root, const UOp* x) {
  if (!x) return false;
  for (const UOp* u : toposort(root))
    if (u == x) return true;
  return false;
}

// On a GPU renderer, which dims are launch indices: the innermost three LOOP dims are the grid (gidx0 the
// innermost: blockIdx.x allows 2^31-1 blocks, y and z only 65535, so a dim too large for them stays a loop),
// the LOCAL dims are the threads of a block (lidx0 the innermost, so a warp's threads are neighbours).
// No axis: a loop (RANGE).
// A tensor core's lane dims g and t share lidx0 (threadIdx.x = the lane 4g + t), so a kernel may have warps
// along two more dims; see lane_dims.
std::vector<std::optional<SpecialArg>> launch_axes(const Kernel& k) {
  const Shape& fs = k.full_shape();
  std::vector<std::optional<SpecialArg>> axes(fs.size());
  if (!k.renderer().has_local()) return axes;
  const int lane_t = k.dim_of(TcRole::LANE_T), lane_g = k.dim_of(TcRole::LANE_G);
  int g = 0, l = lane_t >= 0 ? 1 : 0;
  for (size_t d = fs.size(); d-- > 0;) {
    if (int(d) == lane_t || int(d) == lane_g) axes[d] = SpecialArg{LaunchAxis::LOCAL, 0, TensorCore::kLanes};
    else if (k.kinds()[d] == AxisKind::LOCAL || k.kinds()[d] == AxisKind::GROUP) axes[d] = SpecialArg{LaunchAxis::LOCAL, l++, fs[d]};
    if (k.kinds()[d] == AxisKind::LOOP && g < 3 && fs[d] <= (g == 0 ? int64_t(INT32_MAX) : 65535))
      axes[d] = SpecialArg{LaunchAxis::GROUP, g++, fs[d]};
  }
  return axes;
}

// The dtype of this kernel's index math: int32 where every index it computes provably fits (cheaper, and
// what GPUs index with natively), int64 where one may not. Bounds come from the shapes: a loop or launch
// dim's size; each view's reach, offset + sum((s-1)*stride) over its dims, which bounds every partial sum
// of idx*stride; and, for a view under another one (a reshape that could not merge), its row-major size,
// which bounds the linear index that is unravelled into it. Masks compare indices with bounds inside the
// shape, so they add nothing.
DType index_dtype(const Kernel& k, const UOpPtr& ast) {
  constexpr int64_t lim = INT32_MAX;
  auto fits = [](int64_t v) { return v <= lim && v >= -lim; };
  for (int64_t s : k.full_shape())
    if (!fits(s)) return dtypes::int64;
  for (const UOp* u : toposort(ast)) {
    if (u->op != Ops::VIEW) continue;
    const auto& views = u->get<ShapeTracker>().views;
    for (size_t i = 0; i < views.size(); i++) {
      const View& v = views[i];
      if (i + 1 < views.size() && !fits(prod(v.shape))) return dtypes::int64;
      int64_t lo = v.offset, hi = v.offset;
      for (size_t d = 0; d < v.shape.size(); d++) {
        if (v.shape[d] == 0) break;  // an empty view reads nothing
        // |(s-1)*stride| of a checked shape and its strides stays far below int64's overflow for any real
        // buffer; __int128 keeps a forged view from wrapping into a small value.
        __int128 ext = __int128(v.shape[d] - 1) * v.strides[d];
        __int128 nl = __int128(lo) + (ext < 0 ? ext : 0), nh = __int128(hi) + (ext > 0 ? ext : 0);
        if (nl < -lim || nh > lim) return dtypes::int64;
        lo = int64_t(nl), hi = int64_t(nh);
      }
    }
  }
  return dtypes::int32;
}

class Lowerer {
 public:
  Lowerer(const Kernel& k, const UOpPtr& ast) : k_(k), ren_(k.renderer()), idx_dt_(index_dtype(k, ast)) {
    const Shape& fs = k.full_shape();
    const auto& kinds = k.kinds();
    const int vdim = k.vector_dim();
    const std::vector<std::optional<SpecialArg>> launch = launch_axes(k);
    for (size_t d = 0; d < fs.size(); d++) {
      UOpPtr r = UOp::make(Ops::RANGE, idx_dt_, {ci(0), ci(fs[d])}, int64_t(d));
      switch (kinds[d]) {
        case AxisKind::THREAD:
          r = UOp::make(Ops::SPECIAL, idx_dt_, {}, SpecialArg{LaunchAxis::CORE, 0, fs[d]});
          break;
        case AxisKind::LOOP:
        case AxisKind::LOCAL:
        case AxisKind::GROUP:
          if (launch[d]) r = UOp::make(Ops::SPECIAL, idx_dt_, {}, *launch[d]);
          if (int(d) == k.dim_of(TcRole::LANE_T)) r = mod(r, ci(4));   // lane = 4g + t
          if (int(d) == k.dim_of(TcRole::LANE_G)) r = idiv(r, ci(4));
          if (kinds[d] == AxisKind::GROUP) group_dims_.push_back(d);
          if (kinds[d] != AxisKind::LOOP) thread_dims_.push_back(d);
          break;
        case AxisKind::REDUCE: reduce_ranges_.push_back(r); break;
        case AxisKind::UNROLL:
        case AxisKind::UPCAST:
          // A placeholder: substituted by each of its values before anything is built from it.
          if (int(d) == vdim) {
            vph_ = r;
            W_ = fs[d];
            vunroll_ = kinds[d] == AxisKind::UNROLL;
          } else {
            if (kinds[d] == AxisKind::UNROLL) unroll_mask_ |= uint64_t(1) << ua_.size();
            ua_.push_back({r, fs[d], d});
          }
          break;
      }
      dims_.push_back(r);
    }
    if (ua_.size() > 60) throw Error("lower: too many upcast dims");
    if (k.tensor_core() && ren_.async_copies()) flatten_reduce_loops();
    find_nested_reduces(ast);
  }

  UOpPtr lower(const UOpPtr& ast) {
    std::vector<UOpPtr> stores;
    // Dims of size 0: an empty output has nothing to store; a reduce over nothing is its identity and reads
    // nothing. (The loops alone would not be enough: a RANGE over nothing simplifies away, and the loads in
    // it would run once, out of bounds.)
    const Shape& fs = k_.full_shape();
    bool empty_output = false;
    for (size_t d = 0; d < fs.size(); d++) {
      bool reduced = k_.kinds()[d] == AxisKind::REDUCE || k_.kinds()[d] == AxisKind::GROUP ||
                     k_.kinds()[d] == AxisKind::UNROLL;
      if (fs[d] == 0) (reduced ? empty_reduce_ : empty_output) = true;
    }
    if (!empty_output && !empty_reduce_) stage_shared_loads(ast);
    for (const UOp* u : toposort(ast)) {
      if (empty_output) break;
      switch (u->op) {
        case Ops::VIEW: break;  // consumed by its user
        case Ops::SINK: break;
        case Ops::STORE: lower_store(u, stores); break;
        default: lower_value(u); break;
      }
    }
    // Every buffer stays a parameter even when simplification drops its last load (WHERE(c, x, x) -> x),
    // so the kernel's signature always matches the schedule item's buffers.
    for (const UOp* u : toposort(ast))
      if (u->op == Ops::DEFINE_GLOBAL) stores.push_back(u->ptr());
    return graph_rewrite("symbolic", UOp::make(Ops::SINK, dtypes::void_, std::move(stores)), symbolic());
  }

 private:
  struct UAxis {
    UOpPtr ph;  // placeholder
    int64_t size;
    size_t dim;  // in the full shape
  };
  struct Info {
    uint64_t mask = 0;      // the upcast dims (ua_ bits) the value depends on
    std::vector<Val> vals;  // one per combination of those dims' values (mixed radix, ua_ order)
  };

  const Kernel& k_;
  const Renderer& ren_;
  const DType idx_dt_;  // int32 or int64: see index_dtype
  UOpPtr ci(int64_t v) const { return UOp::const_int(v, idx_dt_); }
  std::vector<UOpPtr> dims_;  // per dim: RANGE, SPECIAL or placeholder
  std::vector<UOpPtr> reduce_ranges_;
  bool empty_reduce_ = false;  // some reduce dim has size 0
  std::vector<size_t> group_dims_;   // GROUP dims: a reduce split across a workgroup's threads
  std::vector<size_t> thread_dims_;  // LOCAL and GROUP dims (the threads of a workgroup), in dim order
  std::vector<UAxis> ua_;  // upcast dims other than the vector dim
  uint64_t unroll_mask_ = 0;
  UOpPtr vph_;  // the vector dim's placeholder (null: no vector dim)
  int64_t W_ = 1;
  bool vunroll_ = false;
  std::unordered_map<const UOp*, Info> info_;
  std::unordered_set<const UOp*> nested_;  // REDUCE_AXIS nodes inside another one's source: loops of their own
  int64_t fresh_ids_ = 0;                  // RANGE args made so far, so each is distinct
  int group_temps_ = 0;                    // shared-memory buffers of grouped reduces made so far
  std::optional<Staging> staging_;                       // loads read through shared memory (no tensor core)
  std::unordered_map<const UOp*, size_t> staged_;        // such a LOAD -> its operand in staging_

  // Several reduce loops become one over their product, each dim read back by division: the shared-memory ring
  // (codegen/staging.h) steps through one loop. (A convolution over a flattened image reduces over kernel rows
  // and, inside, columns x channels.)
  void flatten_reduce_loops() {
    if (reduce_ranges_.size() < 2) return;
    int64_t total = 1;
    for (const UOpPtr& r : reduce_ranges_) total *= r->src.at(1)->const_int_value();
    if (total == 0) return;
    UOpPtr flat = UOp::make(Ops::RANGE, idx_dt_, {ci(0), ci(total)}, reduce_ranges_[0]->get<int64_t>());
    int64_t inner = total;
    for (UOpPtr& d : dims_) {
      auto it = std::find(reduce_ranges_.begin(), reduce_ranges_.end(), d);
      if (it == reduce_ranges_.end()) continue;
      const int64_t size = d->src.at(1)->const_int_value();
      inner /= size;
      UOpPtr v = inner == 1 ? flat : idiv(flat, ci(inner));
      d = inner * size == total ? v : mod(v, ci(size));
    }
    reduce_ranges_ = {flat};
  }

  // A multi-reduce kernel (schedule: a reduce computed in its consumer's kernel, as softmax's max inside the sum
  // of exp(x - max)) has REDUCE_AXIS nodes over the same dims inside another one's source. Each such inner reduce
  // runs its own loops to completion before the outer loop needs its value, so its ranges are fresh copies.
  void find_nested_reduces(const UOpPtr& ast) {
    for (const UOp* x : toposort(ast))
      if (x->op == Ops::REDUCE_AXIS)
        for (const UOp* y : toposort(x->src.at(0)))
          if (y != x && y->op == Ops::REDUCE_AXIS) nested_.insert(y);
  }
  int64_t fresh_id() { return int64_t(k_.full_shape().size()) * 2 + fresh_ids_++; }
  // The reduce ranges for one REDUCE_AXIS: the kernel's own, or fresh ones for a nested reduce.
  std::vector<UOpPtr> ranges_for(const UOp* reduce) {
    if (!nested_.count(reduce)) return reduce_ranges_;
    std::vector<UOpPtr> out;
    for (const UOpPtr& r : reduce_ranges_) out.push_back(UOp::make(Ops::RANGE, r->dtype, r->src, fresh_id()));
    return out;
  }
  UOpPtr with_ranges(const UOpPtr& x, const std::vector<UOpPtr>& ranges) const {
    if (ranges == reduce_ranges_) return x;
    std::unordered_map<const UOp*, UOpPtr> to;
    for (size_t i = 0; i < ranges.size(); i++) to[reduce_ranges_[i].get()] = ranges[i];
    return substitute(x, [&](const UOp* u) -> UOpPtr {
      auto it = to.find(u);
      return it == to.end() ? nullptr : it->second;
    });
  }

  // Loads under the reduce that the threads of a workgroup share (a matmul's A and B: some thread dim does not
  // move them) go through shared memory where the kernel allows it (codegen/staging.h).
  void stage_shared_loads(const UOpPtr& ast) {
    const auto& kinds = k_.kinds();
    if (k_.tensor_core() || reduce_ranges_.size() != 1 || !group_dims_.empty() || !ren_.async_copies() ||
        k_.reduce_count() != 1)
      return;
    const UOp* reduce = k_.reduce();
    if (!reduce) return;
    std::vector<const UOp*> loads;
    StagingInput in{k_, dims_, reduce_ranges_[0], {}, {}};
    for (const UOp* x : toposort(ast)) {
      if (x->op != Ops::REDUCE_AXIS) continue;
      for (const UOp* l : toposort(x->src.at(0))) {
        if (l->op != Ops::LOAD) continue;
        const ShapeTracker& st = l->src.at(1)->get<ShapeTracker>();
        if (st.views.size() != 1) return;
        bool shared = false;
        for (size_t d = 0; d < kinds.size(); d++)
          shared |= kinds[d] == AxisKind::LOCAL && st.views[0].strides[d] == 0 && k_.full_shape()[d] > 1;
        if (!shared) return;  // all the reduce's loads, or none
        size_t view = 0;
        while (view < k_.sts().size() && !(k_.sts()[view] == st)) view++;
        loads.push_back(l);
        in.views.push_back(view);
        in.bufs.push_back(l->src.at(0));
      }
    }
    if (loads.empty() || !(staging_ = Staging::plan(in))) return;
    for (size_t i = 0; i < loads.size(); i++) staged_[loads[i]] = i;
  }

  // ---- combinations of upcast values ----
  using Combo = std::vector<int64_t>;  // a value per ua_ entry
  int64_t count(uint64_t mask) const {
    int64_t n = 1;
    for (size_t i = 0; i < ua_.size(); i++)
      if (mask >> i & 1) n *= ua_[i].size;
    return n;
  }
  int64_t key(uint64_t mask, const Combo& c) const {
    int64_t k = 0;
    for (size_t i = 0; i < ua_.size(); i++)
      if (mask >> i & 1) k = k * ua_[i].size + c[i];
    return k;
  }
  Combo decode(uint64_t mask, int64_t k) const {
    Combo c(ua_.size(), 0);
    for (size_t i = ua_.size(); i-- > 0;)
      if (mask >> i & 1) {
        c[i] = k % ua_[i].size;
        k /= ua_[i].size;
      }
    return c;
  }
  uint64_t deps(const UOpPtr& e) const {
    uint64_t m = 0;
    auto topo = toposort(e);
    for (size_t i = 0; i < ua_.size(); i++)
      for (const UOp* u : topo)
        if (u == ua_[i].ph.get()) m |= uint64_t(1) << i;
    return m;
  }
  // e with the upcast placeholders set to the combination (and the vector dim to `lane`, if >= 0).
  UOpPtr subst(const UOpPtr& e, const Combo& c, int64_t lane = -1) const {
    return simplify(substitute(e, [&](const UOp* u) -> UOpPtr {
      if (u->op != Ops::RANGE) return nullptr;
      for (size_t i = 0; i < ua_.size(); i++)
        if (u == ua_[i].ph.get()) return ci(c[i]);
      if (lane >= 0 && u == vph_.get()) return ci(lane);
      return nullptr;
    }));
  }
  const Val& val(const UOp* u, const Combo& c) const {
    const Info& in = info_.at(u);
    return in.vals.at(size_t(key(in.mask, c)));
  }

  // ---- values ----
  static bool varying(const Val& v) { return !v.one || v.one->dtype.count > 1; }
  UOpPtr lane(const Val& v, int64_t i) const {
    if (!v.one) return v.lanes.at(size_t(i));
    if (v.one->dtype.count == 1) return v.one;
    if (v.one->op == Ops::VECTORIZE) return v.one->src.at(size_t(i));
    return UOp::make(Ops::GEP, v.one->dtype.scalar_type(), {v.one}, i);
  }
  UOpPtr as_vec(const Val& v) const {
    if (v.one && v.one->dtype.count > 1) return v.one;
    std::vector<UOpPtr> l;
    for (int64_t i = 0; i < W_; i++) l.push_back(lane(v, i));
    DType dt = l[0]->dtype.vec(int(W_));
    return UOp::make(Ops::VECTORIZE, dt, std::move(l));
  }
  bool vec_ok(Ops op, DType dt) const {
    return W_ > 1 && dt.count == 1 && !dt.ptr && ren_.vectorizes(op, dt) && ren_.vector_width_ok(int(W_), dt);
  }

  Val alu(Ops op, DType dt, const std::vector<Val>& srcs, const Arg& arg = {}) const {
    bool any = false, same = true;
    for (auto& s : srcs) {
      any |= varying(s);
      DType sd = s.one ? s.one->dtype.scalar_type() : s.lanes[0]->dtype;
      same &= sd == dt;
    }
    if (!any) {
      std::vector<UOpPtr> o;
      for (auto& s : srcs) o.push_back(s.one);
      return Val{UOp::make(op, dt, std::move(o), arg), {}};
    }
    if (same && vec_ok(op, dt)) {
      std::vector<UOpPtr> o;
      for (auto& s : srcs) o.push_back(as_vec(s));
      return Val{UOp::make(op, dt.vec(int(W_)), std::move(o), arg), {}};
    }
    Val r;
    for (int64_t i = 0; i < W_; i++) {
      std::vector<UOpPtr> o;
      for (auto& s : srcs) o.push_back(lane(s, i));
      r.lanes.push_back(UOp::make(op, dt, std::move(o), arg));
    }
    return r;
  }
  // A balanced tree of `op` over xs: ((x0 op x1) op (x2 op x3)) ...
  Val tree(Ops op, DType dt, std::vector<Val> xs) const {
    while (xs.size() > 1) {
      std::vector<Val> next;
      for (size_t i = 0; i + 1 < xs.size(); i += 2) next.push_back(alu(op, dt, {xs[i], xs[i + 1]}));
      if (xs.size() % 2) next.push_back(xs.back());
      xs = std::move(next);
    }
    return xs.at(0);
  }

  // ---- memory ----
  static bool always(const UOpPtr& valid) { return valid->op == Ops::CONST && valid->const_value() != 0; }

  // Index and validity of a view, with placeholders for the upcast dims.
  std::pair<UOpPtr, UOpPtr> index_of(const UOp* view) const {
    const ShapeTracker& st = view->get<ShapeTracker>();
    std::vector<UOpPtr> idxs;
    for (size_t d = 0; d < st.shape().size(); d++)
      idxs.push_back(st.shape()[d] == 1 ? ci(0) : dims_.at(d));
    return to_indexed_uops(st, idxs, idx_dt_);
  }

  // The index at vector lane 0 when idx steps by exactly 1 along the vector dim and valid does not depend
  // on it (one vector access covers the lanes); nullptr otherwise.
  UOpPtr contiguous_base(const UOpPtr& idx, const UOpPtr& valid, const Combo& c) const {
    if (contains(valid, vph_.get())) return nullptr;
    auto lin = linearize(idx);
    if (!lin) return nullptr;
    int hits = 0;
    for (auto& t : lin->terms) {
      if (t.x == vph_) {
        if (t.coef != 1) return nullptr;
        hits++;
      } else if (contains(t.x, vph_.get())) {
        return nullptr;
      }
    }
    if (hits != 1) return nullptr;
    UOpPtr base = subst(idx, c, 0);
    return aligned(base, W_) ? base : nullptr;
  }

  // On a GPU, a load that is one scalar per combination but steps by exactly 1 along an upcast dim other than
  // the vector dim (a matmul's A tile along K, while the vector dim runs along N) is read as runs of `width`
  // values (float4, half8: one 16-byte load instead of four or eight), each value a GEP of its run's load.
  struct LoadRun {
    size_t ua = 0;      // the upcast dim (ua_ index) the run steps along
    int64_t width = 1;  // 1: no runs
  };
  LoadRun load_run(const UOpPtr& idx, const UOpPtr& valid, uint64_t mask, DType dt) const {
    if (!ren_.has_local() || dt.count != 1 || dt.ptr || !ren_.vectorizes(Ops::LOAD, dt)) return {};
    auto lin = linearize(idx);
    if (!lin) return {};
    for (size_t i = 0; i < ua_.size(); i++) {
      if (!(mask >> i & 1) || contains(valid, ua_[i].ph.get())) continue;
      int64_t coef = 0;
      bool other = false;
      for (auto& t : lin->terms) {
        if (t.x == ua_[i].ph) coef = t.coef;
        else other |= contains(t.x, ua_[i].ph.get());
      }
      if (coef != 1 || other) continue;
      for (int64_t w : {16 / int64_t(dt.itemsize()), int64_t(4), int64_t(2)})
        if (w > 1 && ua_[i].size % w == 0 && ren_.vector_width_ok(int(w), dt)) return {i, w};
    }
    return {};
  }
  // Whether index `base` is a provable multiple of `width` (GPUs read a vector only from an address aligned to
  // its size; buffers themselves start aligned).
  bool aligned(const UOpPtr& base, int64_t width) const {
    if (!ren_.aligned_vectors()) return true;
    auto bl = linearize(base);
    if (!bl || bl->c % width != 0) return false;
    for (auto& t : bl->terms)
      if (t.coef % width != 0) return false;
    return true;
  }

  // `after`: the node a load of shared memory waits for (its third source); such loads are never gated.
  static UOpPtr load(const UOpPtr& buf, DType dt, const UOpPtr& idx, const UOpPtr& valid, const UOpPtr& alt,
                     const UOpPtr& after = nullptr) {
    if (after) return UOp::make(Ops::LOAD, dt, {buf, idx, after});
    if (always(valid)) return UOp::make(Ops::LOAD, dt, {buf, idx});
    return UOp::make(Ops::LOAD, dt, {buf, idx, valid, alt});
  }

  // ---- lowering, node by node ----
  void lower_value(const UOp* u) {
    Info& in = info_[u];
    switch (u->op) {
      case Ops::DEFINE_GLOBAL:
      case Ops::DEFINE_VAR:
        in.vals.push_back(Val{u->ptr(), {}});
        return;
      case Ops::CONST: {
        auto c = UOp::make(Ops::CONST, u->dtype, {}, u->arg);
        if (u->src.empty()) {
          in.vals.push_back(Val{c, {}});
          return;
        }
        auto [idx, valid] = index_of(u->src[0].get());
        if (always(valid)) {
          in.vals.push_back(Val{c, {}});
          return;
        }
        in.mask = deps(valid);
        UOpPtr zero = UOp::const_(u->dtype, 0);
        for (int64_t k = 0; k < count(in.mask); k++) {
          Combo cb = decode(in.mask, k);
          UOpPtr vc = subst(valid, cb);
          if (!contains(vc, vph_.get())) {
            in.vals.push_back(Val{simplify(where(vc, c, zero)), {}});
            continue;
          }
          Val v;
          for (int64_t i = 0; i < W_; i++) v.lanes.push_back(simplify(where(subst(vc, cb, i), c, zero)));
          in.vals.push_back(std::move(v));
        }
        return;
      }
      case Ops::LOAD: {
        auto [idx, valid] = index_of(u->src[1].get());
        UOpPtr buf = u->src[0];
        UOpPtr after;  // a staged load reads shared memory once its step's copies are in (codegen/staging.h)
        if (auto it = staged_.find(u); it != staged_.end()) {
          buf = staging_->buffer(it->second);
          idx = staging_->index(it->second);
          valid = UOp::const_(dtypes::bool_, 1);
          after = staging_->after();
        }
        in.mask = deps(idx) | deps(valid);
        UOpPtr zero = UOp::const_(u->dtype, 0);
        const LoadRun run = load_run(idx, valid, in.mask, u->dtype);
        std::unordered_map<int64_t, UOpPtr> run_loads;  // the combination at a run's start -> its vector load
        for (int64_t k = 0; k < count(in.mask); k++) {
          Combo cb = decode(in.mask, k);
          UOpPtr ic = subst(idx, cb), vc = subst(valid, cb);
          if (!contains(ic, vph_.get()) && !contains(vc, vph_.get())) {
            if (run.width > 1) {
              Combo start = cb;
              start[run.ua] -= cb[run.ua] % run.width;
              auto [it, fresh] = run_loads.try_emplace(key(in.mask, start));
              if (fresh) {
                UOpPtr base = cb == start ? ic : subst(idx, start);
                const DType vdt = u->dtype.vec(int(run.width));
                if (aligned(base, run.width))
                  it->second = load(buf, vdt, base, vc, UOp::make(Ops::VECTORIZE, vdt, std::vector<UOpPtr>(size_t(run.width), zero)), after);
              }
              if (it->second) {
                in.vals.push_back(Val{UOp::make(Ops::GEP, u->dtype, {it->second}, cb[run.ua] % run.width), {}});
                continue;
              }
            }
            in.vals.push_back(Val{load(buf, u->dtype, ic, vc, zero, after), {}});
            continue;
          }
          if (vec_ok(Ops::LOAD, u->dtype))
            if (UOpPtr base = contiguous_base(ic, vc, cb)) {
              UOpPtr alt = as_vec(Val{zero, {}});
              in.vals.push_back(Val{load(buf, u->dtype.vec(int(W_)), base, vc, alt, after), {}});
              continue;
            }
          Val v;
          for (int64_t i = 0; i < W_; i++)
            v.lanes.push_back(load(buf, u->dtype, subst(ic, cb, i), subst(vc, cb, i), zero, after));
          in.vals.push_back(std::move(v));
        }
        return;
      }
      case Ops::REDUCE_AXIS: {
        lower_reduce(u, in);
        return;
      }
      default: {
        if (!is_alu(u->op) && u->op != Ops::CAST && u->op != Ops::BITCAST)
          throw Error(std::string("lower: unexpected ") + op_name(u->op) + " in a kernel AST");
        for (auto& s : u->src) in.mask |= info_.at(s.get()).mask;
        for (int64_t k = 0; k < count(in.mask); k++) {
          Combo cb = decode(in.mask, k);
          std::vector<Val> srcs;
          for (auto& s : u->src) srcs.push_back(val(s.get(), cb));
          in.vals.push_back(alu(u->op, u->dtype, srcs, u->arg));
        }
        return;
      }
    }
  }

  void lower_reduce(const UOp* u, Info& in) {
    if (k_.tensor_core()) return lower_tc_reduce(u, in);
    const Ops op = u->get<ReduceArg>().op;
    const DType dt = u->dtype;
    if (empty_reduce_) {
      in.vals.push_back(Val{reduce_identity(op, dt), {}});
      return;
    }
    const UOp* src = u->src[0].get();
    in.mask = info_.at(src).mask & ~unroll_mask_;
    for (int64_t k = 0; k < count(in.mask); k++) {
      Combo cb = decode(in.mask, k);
      // every UNROLL value counts, whether or not the source depends on it
      std::vector<Val> xs;
      for (int64_t j = 0; j < count(unroll_mask_); j++) {
        Combo uc = decode(unroll_mask_, j);
        Combo full = cb;
        for (size_t i = 0; i < ua_.size(); i++)
          if (unroll_mask_ >> i & 1) full[i] = uc[i];
        xs.push_back(val(src, full));
      }
      Val value = tree(op, dt, std::move(xs));
      if (vunroll_ && !varying(value)) {  // each vector lane accumulates the value
        if (vec_ok(op, dt)) value = Val{as_vec(value), {}};
        else value = Val{nullptr, std::vector<UOpPtr>(size_t(W_), value.one)};
      }
      if (value.one && value.one->dtype.count > 1 && !vec_ok(op, dt)) {  // the accumulator update is per lane
        Val l;
        for (int64_t i = 0; i < W_; i++) l.lanes.push_back(lane(value, i));
        value = std::move(l);
      }
      Val r = value;
      if (!reduce_ranges_.empty()) {
        const std::vector<UOpPtr> ranges = ranges_for(u);
        auto reduce = [&](const UOpPtr& x) {
          std::vector<UOpPtr> s{with_ranges(x, ranges)};
          s.insert(s.end(), ranges.begin(), ranges.end());
          return UOp::make(Ops::REDUCE, x->dtype, std::move(s), int64_t(op));
        };
        if (value.one) {
          r = Val{reduce(value.one), {}};
        } else {
          r = Val{};
          for (auto& l : value.lanes) r.lanes.push_back(reduce(l));
        }
      }
      if (vunroll_) {
        std::vector<Val> ls;
        for (int64_t i = 0; i < W_; i++) ls.push_back(Val{lane(r, i), {}});
        r = tree(op, dt, std::move(ls));
      }
      // after the lanes are summed: one partial per thread meets its group siblings in shared memory
      if (!group_dims_.empty()) r = Val{group_reduce(op, r.one), {}};
      in.vals.push_back(std::move(r));
    }
  }

  // ---- tensor cores (codegen/opt/tensor_cores.cpp) ----
  // The ua_ index of the register dim with `role`.
  size_t ua_of(TcRole role) const { return ua_of_dim(k_.dim_of(role)); }
  size_t ua_of_dim(int d) const {
    for (size_t i = 0; i < ua_.size(); i++)
      if (int(ua_[i].dim) == d) return i;
    throw Error("lower: dim " + std::to_string(d) + " is not an upcast dim");
  }

  // A sum of A*B lowered to WMMA: per tile (the non-tensor-core upcast values), one WMMA per unrolled K step
  // chained through its accumulator input, whose 4 lanes are C's registers M_HI * 2 + N_LO; each lane then
  // accumulates over the reduce loops.
  void lower_tc_reduce(const UOp* u, Info& in) {
    const TcSetup& tcs = *k_.tensor_core();
    const UOp *la = nullptr, *lb = nullptr;
    for (const UOp* x : toposort(u->src.at(0)))
      if (x->op == Ops::LOAD) {
        if (x->src.at(1)->get<ShapeTracker>() == k_.sts()[tcs.a]) la = x;
        else if (x->src.at(1)->get<ShapeTracker>() == k_.sts()[tcs.b]) lb = x;
      }
    if (!la || !lb) throw Error("lower: the tensor core's loads are not under the reduce");
    const size_t mhi = ua_of(TcRole::M_HI), nlo = ua_of(TcRole::N_LO);
    const size_t khi = ua_of(TcRole::K_HI), klo = ua_of(TcRole::K_LO), kmid = ua_of(TcRole::K_MID);
    const uint64_t tc_unroll = (uint64_t(1) << khi) | (uint64_t(1) << klo) | (uint64_t(1) << kmid);
    const uint64_t other_unroll = unroll_mask_ & ~tc_unroll;
    in.mask = ((info_.at(la).mask | info_.at(lb).mask) & ~unroll_mask_) | (uint64_t(1) << mhi) | (uint64_t(1) << nlo);
    // A and B through shared memory where the kernel allows (codegen/tc_staging.h)
    std::optional<Staging> staging;
    if (reduce_ranges_.size() == 1)
      staging = Staging::plan({k_, dims_, reduce_ranges_[0], {tcs.a, tcs.b}, {la->src[0], lb->src[0]}});
    // WGMMA: one per warpgroup, tile and K step; its lanes are C's registers 4 j + 2 M_HI + N_LO (j: n-tile dim)
    const bool wg = staging && staging->wgmma();
    std::vector<size_t> jx;  // the n-tile dims (ua_ indices), innermost first
    if (wg)
      for (int d : staging->ntile_dims()) jx.push_back(ua_of_dim(d));
    auto ntile = [&](const Combo& cb) {  // j, the 8-column tile of the WGMMA's n
      int64_t j = 0;
      for (size_t i = jx.size(); i-- > 0;) j = j * ua_[jx[i]].size + cb[jx[i]];
      return j;
    };
    std::unordered_map<int64_t, std::vector<UOpPtr>> tiles;  // tile (M_HI = N_LO = 0) -> C's lanes
    for (int64_t k = 0; k < count(in.mask); k++) {
      Combo cb = decode(in.mask, k), base = cb;
      base[mhi] = base[nlo] = 0;
      for (size_t x : jx) base[x] = 0;
      auto [it, fresh] = tiles.try_emplace(key(in.mask, base));
      if (fresh && wg) it->second = wgmma_tile(tcs, la, lb, base, other_unroll, *staging);
      else if (fresh) it->second = wmma_tile(tcs.tc, la, lb, base, other_unroll, {mhi, khi, klo}, staging ? &*staging : nullptr);
      UOpPtr v = it->second.at(size_t(cb[nlo] + 2 * cb[mhi] + 4 * ntile(cb)));
      if (!reduce_ranges_.empty()) {
        std::vector<UOpPtr> s{v};
        s.insert(s.end(), reduce_ranges_.begin(), reduce_ranges_.end());
        v = UOp::make(Ops::REDUCE, v->dtype, std::move(s), int64_t(Ops::ADD));
      }
      in.vals.push_back(Val{v, {}});
    }
  }

  // C's lanes for one warpgroup tile: WGMMA(A, B in shared memory, C) over the unrolled K values outside the
  // tensor core, the first after a fence, the last waited for (renderer/tensor_core.h).
  std::vector<UOpPtr> wgmma_tile(const TcSetup& tcs, const UOp* la, const UOp* lb, const Combo& base,
                                 uint64_t other_unroll, const Staging& staging) {
    const StagingInput sin{k_, dims_, reduce_ranges_[0], {tcs.a, tcs.b}, {la->src[0], lb->src[0]}};
    const UOpPtr off_a = staging.wgmma_offset(sin, 0), off_b = staging.wgmma_offset(sin, 1);
    int n = 8;
    for (int d : staging.ntile_dims()) n *= int(k_.full_shape()[size_t(d)]);
    std::vector<UOpPtr> c(size_t(n / 2), UOp::const_(tcs.tc.acc, 0));
    const int64_t steps = count(other_unroll);
    for (int64_t j = 0; j < steps; j++) {
      Combo cb = base, uc = decode(other_unroll, j);
      for (size_t i = 0; i < ua_.size(); i++)
        if (other_unroll >> i & 1) cb[i] = uc[i];
      const WgmmaArg arg{n, tcs.tc.in == dtypes::bfloat16, staging.wgmma_operand(0), staging.wgmma_operand(1), j == 0,
                         j + 1 == steps};
      std::vector<UOpPtr> srcs{staging.buffer(0), subst(off_a, cb), staging.buffer(1), subst(off_b, cb), staging.after()};
      srcs.insert(srcs.end(), c.begin(), c.end());
      UOpPtr w = UOp::make(Ops::WGMMA, tcs.tc.acc.vec(n / 2), std::move(srcs), arg.pack());
      for (int i = 0; i < n / 2; i++) c[size_t(i)] = UOp::make(Ops::GEP, tcs.tc.acc, {w}, int64_t(i));
    }
    return c;
  }

  // C's 4 lanes for one tile: WMMA(A regs, B regs, C) over the unrolled K values outside the tensor core.
  std::vector<UOpPtr> wmma_tile(const TensorCore& tc, const UOp* la, const UOp* lb, const Combo& base,
                                uint64_t other_unroll, std::array<size_t, 3> mhi_khi_klo, const Staging* staging) {
    // (plain variables, not structured bindings: lambdas below capture them, which clang accepts from 16 on)
    const size_t mhi = mhi_khi_klo[0], khi = mhi_khi_klo[1], klo = mhi_khi_klo[2];
    std::vector<UOpPtr> c(TensorCore::kC, UOp::const_(tc.acc, 0));
    auto reg = [&](const UOp* load, Combo cb) {
      if (staging) {  // register i of the LDMATRIX fragment, at this tile's other upcast values
        const bool is_a = load == la;
        int i = is_a ? int(cb[klo] + 2 * cb[mhi] + 4 * cb[khi]) : int(cb[klo] + 2 * cb[khi]);
        if (!is_a && staging->pair_dim() >= 0) {  // B tiles 2v and 2v + 1 share one LDMATRIX x4
          const size_t p = ua_of_dim(staging->pair_dim());
          i += 4 * int(cb[p] % 2);
          cb[p] -= cb[p] % 2;
        }
        return subst(staging->regs(is_a ? 0 : 1).at(size_t(i)), cb);
      }
      const Val& v = val(load, cb);
      if (!v.one || v.one->dtype.count != 1) throw Error("lower: a tensor core register is not a scalar");
      return v.one;
    };
    for (int64_t j = 0; j < count(other_unroll); j++) {
      Combo cb = base, uc = decode(other_unroll, j);
      for (size_t i = 0; i < ua_.size(); i++)
        if (other_unroll >> i & 1) cb[i] = uc[i];
      std::vector<UOpPtr> srcs;
      for (int i = 0; i < TensorCore::kA; i++) {  // A: (K_LO, M_HI, K_HI) = (i % 2, i / 2 % 2, i / 4)
        cb[klo] = i % 2, cb[mhi] = i / 2 % 2, cb[khi] = i / 4;
        srcs.push_back(reg(la, cb));
      }
      cb[mhi] = 0;
      for (int i = 0; i < TensorCore::kB; i++) {  // B: (K_LO, K_HI) = (i % 2, i / 2)
        cb[klo] = i % 2, cb[khi] = i / 2;
        srcs.push_back(reg(lb, cb));
      }
      srcs.insert(srcs.end(), c.begin(), c.end());
      UOpPtr w = UOp::make(Ops::WMMA, tc.acc.vec(TensorCore::kC), std::move(srcs), tc.name());
      for (int i = 0; i < TensorCore::kC; i++) c[size_t(i)] = UOp::make(Ops::GEP, tc.acc, {w}, int64_t(i));
    }
    return c;
  }

  // The second stage of a grouped reduce. Every thread holds the partial `part` of its GROUP index; the
  // partials go to shared memory (one slot per thread of the workgroup), and after a barrier each thread
  // reduces the slots of its GROUP siblings: the slot index with the GROUP ids replaced by new loops.
  // (Every thread gets the total; only GROUP index 0 stores it, see lower_store.)
  UOpPtr group_reduce(Ops op, const UOpPtr& part) {
    if (!part) throw Error("lower: a grouped reduce with vector lanes");
    const Shape& fs = k_.full_shape();
    UOpPtr slot = ci(0);
    for (size_t d : thread_dims_) slot = slot * ci(fs[d]) + dims_[d];
    slot = simplify(slot);
    UOpPtr partials = shared_partials(part, slot, nullptr);
    const size_t last = group_dims_.back();
    // One GROUP dim of many siblings (a row of 256 threads): every thread reading all 256 partials is 256
    // shared loads per warp and reduce, which an H100's softmax rows spent most of their time on. Instead the
    // first `n1` threads each reduce `n2` partials (thread i: i, i + n1, ...; neighbouring threads read
    // neighbouring banks) into a second buffer, and after a barrier every thread reads those n1: n1 + n2 loads.
    if (group_dims_.size() == 1 && fs[last] >= 64) {
      const int64_t n = fs[last], n2 = n >= 256 ? 16 : 8, n1 = n / n2;
      if (n % n2 == 0) {
        const UOpPtr& g = dims_[last];
        std::vector<Val> run;
        for (int64_t j = 0; j < n2; j++)
          run.push_back(Val{load_sibling(partials, slot, part->dtype, g, mod(g, ci(n1)) + ci(n1 * j)), {}});
        UOpPtr runs = shared_partials(tree(op, part->dtype, std::move(run)).one, slot, lt(g, n1));
        return sibling_reduce(op, runs, slot, part->dtype, n1);
      }
    }
    return sibling_reduce(op, partials, slot, part->dtype, fs[last]);
  }

  // A buffer of shared memory per store (a second grouped reduce, another output lane, or a reduce that reads
  // this one's total, must not overwrite partials that sibling threads may still be reading); `x` is stored at
  // the thread's slot (where `gate` holds), and the result is the barrier after the store.
  UOpPtr shared_partials(const UOpPtr& x, const UOpPtr& slot, const UOpPtr& gate) {
    UOpPtr temp = UOp::make(Ops::DEFINE_LOCAL, x->dtype.pointer(true), {},
                            NamedRange{"temp" + std::to_string(group_temps_++), 0, k_.local_size() - 1});
    std::vector<UOpPtr> s{temp, slot, x};
    if (gate) s.push_back(simplify(gate));
    return UOp::make(Ops::BARRIER, dtypes::void_, {UOp::make(Ops::STORE, dtypes::void_, std::move(s))});
  }
  // The value a sibling stored before `barrier`: the slot with the thread's own index `g` (of the last GROUP
  // dim) replaced by `sibling`.
  UOpPtr load_sibling(const UOpPtr& barrier, const UOpPtr& slot, DType dt, const UOpPtr& g, const UOpPtr& sibling) {
    UOpPtr idx = simplify(substitute(slot, [&](const UOp* u) -> UOpPtr { return u == g.get() ? sibling : nullptr; }));
    const UOpPtr& temp = barrier->src.at(0)->src.at(0);
    return UOp::make(Ops::LOAD, dt, {temp, idx, barrier});
  }
  // Every thread reduces the values its siblings stored before `barrier`: the first `n` indices of the last
  // GROUP dim and every index of the others. The last dim's siblings are read `unroll` at a time and combined
  // in a tree (one dependent load-and-add per value kept an H100's rows waiting).
  UOpPtr sibling_reduce(Ops op, const UOpPtr& barrier, const UOpPtr& slot, DType dt, int64_t n) {
    const Shape& fs = k_.full_shape();
    const size_t last = group_dims_.back();
    int64_t unroll = 1;
    for (int64_t u : {16, 8, 4, 2})
      if (n % u == 0 && n >= u) {
        unroll = u;
        break;
      }
    std::vector<UOpPtr> loops;
    std::unordered_map<const UOp*, UOpPtr> to_loop;
    for (size_t d : group_dims_) {
      const int64_t size = d == last ? n / unroll : fs[d];
      if (size == 1 && d == last) continue;  // the unrolled values cover it
      loops.push_back(UOp::make(Ops::RANGE, idx_dt_, {ci(0), ci(size)}, fresh_id()));
      to_loop[dims_[d].get()] = loops.back();
    }
    const UOp* g = dims_[last].get();
    std::vector<Val> loads;
    for (int64_t j = 0; j < unroll; j++) {
      UOpPtr idx = simplify(substitute(slot, [&](const UOp* u) -> UOpPtr {
        if (u == g) return to_loop.count(g) ? to_loop[g] * ci(unroll) + ci(j) : ci(j);
        auto it = to_loop.find(u);
        return it == to_loop.end() ? nullptr : it->second;
      }));
      loads.push_back(Val{UOp::make(Ops::LOAD, dt, {barrier->src.at(0)->src.at(0), idx, barrier}), {}});
    }
    UOpPtr value = tree(op, dt, std::move(loads)).one;
    if (loops.empty()) return value;
    std::vector<UOpPtr> s{value};
    s.insert(s.end(), loops.begin(), loops.end());
    return UOp::make(Ops::REDUCE, dt, std::move(s), int64_t(op));
  }

  void lower_store(const UOp* u, std::vector<UOpPtr>& stores) {
    auto [idx, valid] = index_of(u->src[1].get());
    // After a grouped reduce every GROUP sibling holds the result; the one of GROUP index 0 writes it.
    for (size_t d : group_dims_) valid = logical_and(valid, lt(dims_[d], 1));  // lidx < 1: index 0
    valid = simplify(valid);
    const UOpPtr& buf = u->src[0];
    const UOp* value = u->src[2].get();
    const DType dt = value->dtype;
    uint64_t mask = deps(idx) | deps(valid) | info_.at(value).mask;
    auto store = [&](const UOpPtr& i, const UOpPtr& v, const UOpPtr& g) {
      if (always(g)) return UOp::make(Ops::STORE, dtypes::void_, {buf, i, v});
      return UOp::make(Ops::STORE, dtypes::void_, {buf, i, v, g});
    };
    for (int64_t k = 0; k < count(mask); k++) {
      Combo cb = decode(mask, k);
      UOpPtr ic = subst(idx, cb), vc = subst(valid, cb);
      const Val& v = val(value, cb);
      bool vdep = contains(ic, vph_.get()) || contains(vc, vph_.get());
      if (!vdep && !varying(v)) {
        stores.push_back(store(ic, v.one, vc));
        continue;
      }
      if (vdep && vec_ok(Ops::STORE, dt))
        if (UOpPtr base = contiguous_base(ic, vc, cb)) {
          stores.push_back(store(base, as_vec(v), vc));
          continue;
        }
      // lane by lane, in order (where lanes write one address, the last wins, as the loop would)
      for (int64_t i = 0; i < W_; i++) stores.push_back(store(subst(ic, cb, i), lane(v, i), subst(vc, cb, i)));
    }
  }
};

}  // namespace

UOpPtr lower_kernel(const Kernel& k) {
  UOpPtr ast = decompositions(exact_products(k.optimized_ast()));
  ScopedPass pass("lower");
  UOpPtr out = Lowerer(k, ast).lower(ast);
  pass.set(-1, int64_t(toposort(out).size()));
  return out;
}

}  // namespace tg
