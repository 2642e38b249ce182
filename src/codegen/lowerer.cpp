// AST -> index math, with upcast dims expanded: named passes (graph_rewrite) whose typed context is the Lowerer.
//   reduce_ranges  each REDUCE_AXIS gets the RANGEs it reduces over as sources (fresh ones when nested)
//   expand         views -> index math; every node -> UNROLL(its values at each combination of upcast values)
//   symbolic       index math simplified
// Each LOOP/REDUCE dim of the full shape becomes a RANGE, the THREAD dim becomes SPECIAL core_id, and each
// view's tracker turns those into a buffer index and a validity (shape/indexing.h).
//
// UNROLL/UPCAST dims are not loops. The expander writes the AST once per value of them ("lanes"): every
// node is lowered once per combination of the upcast values it depends on (a load that does not depend
// on an upcast dim is shared by all of them), and stands in the graph as an UNROLL node holding those values
// (arg: the dims, a bit mask), which its users' rules read. A rule fires only on AST nodes or on nodes with an
// UNROLL source, so the lowered nodes it makes are final. The kernel's vector dim (Kernel::vector_dim) is kept
// together: a node that depends on it is one vector node (float4 ...) where the renderer takes vectors of
// that op and dtype, and W scalar lanes otherwise (VECTORIZE(lanes) inside an UNROLL), with the same arithmetic
// per lane either way. Vectors are chosen by what the renderer takes as they are made, so no devectorize pass
// follows.
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
#include <unordered_set>

#include "codegen/linearize.h"
#include "codegen/lowerer_internal.h"
#include "shape/indexing.h"
#include "tg/error.h"
#include "uop/pass_log.h"
#include "uop/pattern.h"
#include "uop/symbolic.h"
#include "uop/symbolic_linear.h"

namespace tg::lowering {

namespace {
std::vector<Ops> alu_and_casts() {
  std::vector<Ops> out{Ops::CAST, Ops::BITCAST};
  for (int i = 0; i < kNumOps; i++)
    if (is_alu(Ops(i))) out.push_back(Ops(i));
  return out;
}

// The ops a kernel AST is made of (schedule/): anything else is a bug upstream, named here.
bool is_ast_op(Ops op) {
  static const std::vector<Ops> ast_ops{Ops::SINK,          Ops::STORE,      Ops::LOAD,        Ops::VIEW, Ops::CONST,
                                        Ops::DEFINE_GLOBAL, Ops::DEFINE_VAR, Ops::REDUCE_AXIS, Ops::CAST, Ops::BITCAST};
  return is_alu(op) || std::find(ast_ops.begin(), ast_ops.end(), op) != ast_ops.end();
}

bool has_unroll_src(const UOpPtr& u) {
  return std::any_of(u->src.begin(), u->src.end(), [](const UOpPtr& s) { return s->op == Ops::UNROLL; });
}
}  // namespace

bool contains(const UOpPtr& root, const UOp* x) {
  if (!x) return false;
  for (const UOp* u : toposort(root))
    if (u == x) return true;
  return false;
}

Lowerer::Lowerer(const Kernel& k, const UOpPtr& ast) : k_(k), ren_(k.renderer()), idx_dt_(index_dtype(k, ast)) {
  const Shape& fs = k.full_shape();
  const auto& kinds = k.kinds();
  const int vdim = k.vector_dim();
  const std::vector<std::optional<SpecialArg>> launch = launch_axes(k);
  for (size_t d = 0; d < fs.size(); d++) {
    UOpPtr r = UOp::make(Ops::RANGE, idx_dt_, {ci(0), sint_to_uop(fs[d], idx_dt_)}, int64_t(d));
    switch (kinds[d]) {
      case AxisKind::THREAD:
        r = UOp::make(Ops::SPECIAL, idx_dt_, {}, SpecialArg{LaunchAxis::CORE, 0, fs[d]});
        break;
      case AxisKind::LOOP:
      case AxisKind::LOCAL:
      case AxisKind::GROUP:
        if (launch[d]) r = UOp::make(Ops::SPECIAL, idx_dt_, {}, *launch[d]);
        if (int(d) == k.dim_of(TcRole::LANE_T)) r = mod(r, ci(4));  // lane = 4g + t
        if (int(d) == k.dim_of(TcRole::LANE_G)) r = idiv(r, ci(4));
        if (kinds[d] == AxisKind::GROUP) group_dims_.push_back(d);
        if (kinds[d] != AxisKind::LOOP) thread_dims_.push_back(d);
        break;
      case AxisKind::REDUCE:
        reduce_ranges_.push_back(r);
        break;
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
  // Dims of size 0: an empty output has nothing to store; a reduce over nothing is its identity and reads
  // nothing. (The loops alone would not be enough: a RANGE over nothing simplifies away, and the loads in
  // it would run once, out of bounds.)
  for (size_t d = 0; d < fs.size(); d++) {
    bool reduced = kinds[d] == AxisKind::REDUCE || kinds[d] == AxisKind::GROUP || kinds[d] == AxisKind::UNROLL;
    if (fs[d] == 0) (reduced ? empty_reduce_ : empty_output_) = true;
  }
  if (k.tensor_core() && ren_.async_copies()) flatten_reduce_loops();
  if (k.tensor_core()) swizzle_block_order(launch);
  for (const UOp* u : toposort(ast)) {
    if (!is_ast_op(u->op)) throw Error(std::string("lower: unexpected ") + op_name(u->op) + " in a kernel AST");
    if (u->op == Ops::DEFINE_GLOBAL) globals_.push_back(u->ptr());
  }
  find_nested_reduces(ast);
  if (k.tensor_core()) find_tc_loads(ast);
}

UOpPtr Lowerer::lower(const UOpPtr& ast) {
  // Every buffer stays a parameter even when simplification drops its last load (WHERE(c, x, x) -> x),
  // so the kernel's signature always matches the schedule item's buffers.
  if (empty_output_) return UOp::make(Ops::SINK, dtypes::void_, globals_);
  if (!empty_reduce_) stage_shared_loads(ast);
  UOpPtr x = graph_rewrite("reduce_ranges", ast, pm_reduce_ranges(), *this, /*bottom_up=*/true);
  x = graph_rewrite("expand", x, pm_expand(), *this);
  return graph_rewrite("symbolic", x, symbolic());
}

namespace {
// A rule that hands the matched node (captured as "x") to a method of the Lowerer.
template <class Method>
std::pair<UPat, TypedMatcher<Lowerer>::Fn> on(UPat pat, Method method) {
  return {pat.named("x"), [method](const Captures& m, Lowerer& l) { return (l.*method)(m["x"]); }};
}
}  // namespace

const TypedMatcher<Lowerer>& Lowerer::pm_reduce_ranges() {
  // (bottom up: a nested reduce is still the AST's node when its rule runs, so nested_ knows it)
  static const TypedMatcher<Lowerer> pm({on(UPat::op(Ops::REDUCE_AXIS, {UPat::any()}), &Lowerer::add_reduce_ranges)});
  return pm;
}

const TypedMatcher<Lowerer>& Lowerer::pm_expand() {
  static const UPat view = UPat::ops_of({Ops::VIEW}), global = UPat::ops_of({Ops::DEFINE_GLOBAL});
  static const TypedMatcher<Lowerer> pm({
      // leaves: views become index math, one value per combination of the upcast values they depend on
      on(UPat::op(Ops::CONST, {view}), &Lowerer::lower_const),
      on(UPat::op(Ops::DEFINE_VAR, {view}), &Lowerer::lower_const),  // a variable: a value known at launch
      on(UPat::op(Ops::LOAD, {global, view}), &Lowerer::lower_load),
      // compute: per combination of the sources' upcast values (lowered nodes have no UNROLL source: no match)
      on(UPat::ops_of(alu_and_casts()), &Lowerer::lower_alu),
      // reduces: over the UNROLL values, then the ranges (tensor cores, GROUP partials: lower_reduce.cpp)
      on(UPat::ops_of({Ops::REDUCE_AXIS}), &Lowerer::lower_reduce),
      // stores, and the SINK that gathers them
      on(UPat::op(Ops::STORE, {global, view, UPat::any()}), &Lowerer::lower_store),
      on(UPat::ops_of({Ops::SINK}), &Lowerer::lower_sink),
  });
  return pm;
}

UOpPtr Lowerer::unroll(DType dt, const Info& in) {
  std::vector<UOpPtr> srcs;
  for (const Val& v : in.vals)
    srcs.push_back(v.one ? v.one : UOp::make(Ops::VECTORIZE, v.lanes[0]->dtype.vec(int(v.lanes.size())), v.lanes));
  return UOp::make(Ops::UNROLL, dt, std::move(srcs), int64_t(in.mask));
}

Lowerer::Info Lowerer::unpack(const UOpPtr& x) {
  if (x->op != Ops::UNROLL) return Info{0, {Val{x, {}}}};
  Info in{uint64_t(x->get<int64_t>()), {}};
  for (const UOpPtr& v : x->src) in.vals.push_back(v->op == Ops::VECTORIZE ? Val{nullptr, v->src} : Val{v, {}});
  return in;
}

void Lowerer::stage_shared_loads(const UOpPtr& ast) {
  const auto& kinds = k_.kinds();
  if (Staging::fragments(k_) || reduce_ranges_.size() != 1 || !group_dims_.empty() || !ren_.async_copies() ||
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

int64_t Lowerer::count(uint64_t mask) const {
  int64_t n = 1;
  for (size_t i = 0; i < ua_.size(); i++)
    if (mask >> i & 1) n *= ua_[i].size;
  return n;
}

int64_t Lowerer::key(uint64_t mask, const Combo& c) const {
  int64_t k = 0;
  for (size_t i = 0; i < ua_.size(); i++)
    if (mask >> i & 1) k = k * ua_[i].size + c[i];
  return k;
}

Lowerer::Combo Lowerer::decode(uint64_t mask, int64_t k) const {
  Combo c(ua_.size(), 0);
  for (size_t i = ua_.size(); i-- > 0;)
    if (mask >> i & 1) {
      c[i] = k % ua_[i].size;
      k /= ua_[i].size;
    }
  return c;
}

uint64_t Lowerer::deps(const UOpPtr& e) const {
  uint64_t m = 0;
  auto topo = toposort(e);
  for (size_t i = 0; i < ua_.size(); i++)
    for (const UOp* u : topo)
      if (u == ua_[i].ph.get()) m |= uint64_t(1) << i;
  return m;
}

UOpPtr Lowerer::subst(const UOpPtr& e, const Combo& c, int64_t lane) const {
  return simplify(substitute(e, [&](const UOp* u) -> UOpPtr {
    if (u->op != Ops::RANGE) return nullptr;
    for (size_t i = 0; i < ua_.size(); i++)
      if (u == ua_[i].ph.get()) return ci(c[i]);
    if (lane >= 0 && u == vph_.get()) return ci(lane);
    return nullptr;
  }));
}

UOpPtr Lowerer::lane(const Val& v, int64_t i) const {
  if (!v.one) return v.lanes.at(size_t(i));
  if (v.one->dtype.count == 1) return v.one;
  if (v.one->op == Ops::VECTORIZE) return v.one->src.at(size_t(i));
  return UOp::make(Ops::GEP, v.one->dtype.scalar_type(), {v.one}, i);
}

UOpPtr Lowerer::as_vec(const Val& v) const {
  if (v.one && v.one->dtype.count > 1) return v.one;
  std::vector<UOpPtr> l;
  for (int64_t i = 0; i < W_; i++) l.push_back(lane(v, i));
  DType dt = l[0]->dtype.vec(int(W_));
  return UOp::make(Ops::VECTORIZE, dt, std::move(l));
}

bool Lowerer::vec_ok(Ops op, DType dt) const {
  return W_ > 1 && dt.count == 1 && !dt.ptr && ren_.vectorizes(op, dt) && ren_.vector_width_ok(int(W_), dt);
}

Val Lowerer::alu(Ops op, DType dt, const std::vector<Val>& srcs, const Arg& arg) const {
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
  // A conversion of a vector the backend converts whole (bytes to floats: __builtin_convertvector).
  const bool vec_cast = op == Ops::CAST && srcs.size() == 1 && srcs[0].one && srcs[0].one->dtype.count == W_ &&
                        dt.count == 1 && ren_.vectorizes_cast(srcs[0].one->dtype.scalar_type(), dt) &&
                        ren_.vector_width_ok(int(W_), dt);
  if ((same && vec_ok(op, dt)) || vec_cast) {
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

Val Lowerer::tree(Ops op, DType dt, std::vector<Val> xs) const {
  while (xs.size() > 1) {
    std::vector<Val> next;
    for (size_t i = 0; i + 1 < xs.size(); i += 2) next.push_back(alu(op, dt, {xs[i], xs[i + 1]}));
    if (xs.size() % 2) next.push_back(xs.back());
    xs = std::move(next);
  }
  return xs.at(0);
}

std::pair<UOpPtr, UOpPtr> Lowerer::index_of(const UOp* view) const {
  const ShapeTracker& st = view->get<ShapeTracker>();
  std::vector<UOpPtr> idxs;
  for (size_t d = 0; d < st.shape().size(); d++) idxs.push_back(st.shape()[d] == 1 ? ci(0) : dims_.at(d));
  return to_indexed_uops(st, idxs, idx_dt_);
}

UOpPtr Lowerer::contiguous_base(const UOpPtr& idx, const UOpPtr& valid, const Combo& c) const {
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

Lowerer::AccessRun Lowerer::access_run(Ops op, const UOpPtr& idx, const UOpPtr& valid, uint64_t mask,
                                       DType dt) const {
  if (!ren_.has_local() || dt.count != 1 || dt.ptr || !ren_.vectorizes(op, dt)) return {};
  auto lin = linearize(idx);
  if (!lin) return {};
  for (size_t i = 0; i < ua_.size(); i++) {
    if (!(mask >> i & 1) || contains(valid, ua_[i].ph.get())) continue;
    int64_t coef = 0;
    bool other = false;
    for (auto& t : lin->terms) {
      if (t.x == ua_[i].ph)
        coef = t.coef;
      else
        other |= contains(t.x, ua_[i].ph.get());
    }
    if (coef != 1 || other) continue;
    for (int64_t w : {16 / int64_t(dt.itemsize()), int64_t(4), int64_t(2)})
      if (w > 1 && ua_[i].size % w == 0 && ren_.vector_width_ok(int(w), dt)) return {i, w};
  }
  return {};
}

bool Lowerer::distinct_addresses(const UOpPtr& idx, uint64_t mask) const {
  auto lin = linearize(idx);
  if (!lin) return false;
  std::vector<int64_t> coef(ua_.size(), 0);
  for (auto& t : lin->terms)
    for (size_t i = 0; i < ua_.size(); i++)
      if (mask >> i & 1) {
        if (t.x == ua_[i].ph) coef[i] += t.coef;
        else if (contains(t.x, ua_[i].ph.get())) return false;  // not linear in it
      }
  std::unordered_set<int64_t> seen;
  for (int64_t k = 0; k < count(mask); k++) {
    const Combo cb = decode(mask, k);
    int64_t off = 0;
    for (size_t i = 0; i < ua_.size(); i++) off += coef[i] * cb[i];
    if (!seen.insert(off).second) return false;
  }
  return true;
}

UOpPtr Lowerer::run_store(const UOpPtr& buf, const Info& value, const AccessRun& run, const Combo& start,
                          const UOpPtr& base, const UOpPtr& valid) const {
  if (!aligned(base, run.width)) return nullptr;
  std::vector<UOpPtr> lanes;
  for (int64_t j = 0; j < run.width; j++) {
    Combo m = start;
    m[run.ua] += j;
    const Val v = val(value, m);
    if (varying(v)) return nullptr;
    lanes.push_back(v.one);
  }
  const DType vdt = lanes[0]->dtype.vec(int(run.width));
  UOpPtr vec = UOp::make(Ops::VECTORIZE, vdt, std::move(lanes));
  if (always(valid)) return UOp::make(Ops::STORE, dtypes::void_, {buf, base, vec});
  return UOp::make(Ops::STORE, dtypes::void_, {buf, base, vec, valid});
}

bool Lowerer::aligned(const UOpPtr& base, int64_t width) const {
  if (!ren_.aligned_vectors()) return true;
  auto bl = linearize(base);
  if (!bl || bl->c % width != 0) return false;
  for (auto& t : bl->terms)
    if (t.coef % width != 0) return false;
  return true;
}

UOpPtr Lowerer::load(const UOpPtr& buf, DType dt, const UOpPtr& idx, const UOpPtr& valid, const UOpPtr& alt,
                     const UOpPtr& after) {
  if (after) return UOp::make(Ops::LOAD, dt, {buf, idx, after});
  if (always(valid)) return UOp::make(Ops::LOAD, dt, {buf, idx});
  return UOp::make(Ops::LOAD, dt, {buf, idx, valid, alt});
}

// A CONST or DEFINE_VAR leaf seen through a view: the value where the view is valid, 0 elsewhere.
UOpPtr Lowerer::lower_const(const UOpPtr& u) {
  auto c = UOp::make(u->op, u->dtype, {}, u->arg);
  auto [idx, valid] = index_of(u->src[0].get());
  if (always(valid)) return c;
  Info in{deps(valid), {}};
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
  return unroll(u->dtype, in);
}

UOpPtr Lowerer::lower_load(const UOpPtr& u) {
  auto [idx, valid] = index_of(u->src[1].get());
  UOpPtr buf = u->src[0];
  UOpPtr after;  // a staged load reads shared memory once its step's copies are in (codegen/staging.h)
  if (auto it = staged_.find(u.get()); it != staged_.end()) {
    buf = staging_->buffer(it->second);
    idx = staging_->index(it->second);
    valid = UOp::const_(dtypes::bool_, 1);
    after = staging_->after();
  }
  Info in{deps(idx) | deps(valid), {}};
  UOpPtr zero = UOp::const_(u->dtype, 0);
  const AccessRun run = access_run(Ops::LOAD, idx, valid, in.mask, u->dtype);
  std::unordered_map<int64_t, UOpPtr> run_loads;  // the combination at a run's start -> its vector load
  for (int64_t k = 0; k < count(in.mask); k++) {
    Combo cb = decode(in.mask, k);
    UOpPtr ic = subst(idx, cb), vc = subst(valid, cb);
    if (vc->op == Ops::CONST && vc->const_value() == 0) {  // never valid here (the other side of a cat): no load
      in.vals.push_back(Val{zero, {}});
      continue;
    }
    if (!contains(ic, vph_.get()) && !contains(vc, vph_.get())) {
      if (run.width > 1) {
        Combo start = cb;
        start[run.ua] -= cb[run.ua] % run.width;
        auto [it, fresh] = run_loads.try_emplace(key(in.mask, start));
        if (fresh) {
          UOpPtr base = cb == start ? ic : subst(idx, start);
          const DType vdt = u->dtype.vec(int(run.width));
          if (aligned(base, run.width))
            it->second = load(buf, vdt, base, vc,
                              UOp::make(Ops::VECTORIZE, vdt, std::vector<UOpPtr>(size_t(run.width), zero)), after);
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
  UOpPtr out = unroll(u->dtype, in);
  if (u.get() == tc_a_ || u.get() == tc_b_) tc_regs_[u.get()] = out;
  return out;
}

UOpPtr Lowerer::lower_alu(const UOpPtr& u) const {
  if (!has_unroll_src(u)) return nullptr;
  std::vector<Info> srcs;
  Info in;
  for (const UOpPtr& s : u->src) {
    srcs.push_back(unpack(s));
    in.mask |= srcs.back().mask;
  }
  for (int64_t k = 0; k < count(in.mask); k++) {
    Combo cb = decode(in.mask, k);
    std::vector<Val> vs;
    for (const Info& s : srcs) vs.push_back(val(s, cb));
    in.vals.push_back(alu(u->op, u->dtype, vs, u->arg));
  }
  return unroll(u->dtype, in);
}

UOpPtr Lowerer::lower_store(const UOpPtr& u) {
  auto [idx, valid] = index_of(u->src[1].get());
  // After a grouped reduce every GROUP sibling holds the result; the one of GROUP index 0 writes it.
  for (size_t d : group_dims_) valid = logical_and(valid, lt(dims_[d], 1));  // lidx < 1: index 0
  valid = simplify(valid);
  const UOpPtr& buf = u->src[0];
  const Info value = unpack(u->src[2]);
  const DType dt = u->src[2]->dtype;
  const uint64_t mask = deps(idx) | deps(valid) | value.mask;
  auto store = [&](const UOpPtr& i, const UOpPtr& v, const UOpPtr& g) {
    if (always(g)) return UOp::make(Ops::STORE, dtypes::void_, {buf, i, v});
    return UOp::make(Ops::STORE, dtypes::void_, {buf, i, v, g});
  };
  std::vector<UOpPtr> stores;
  // (a tensor core's output pairs as half2/float2: H100 fp16 4096^3 550 -> 624-632 TFLOPS, bf16 538-543 -> 643-647)
  AccessRun run = access_run(Ops::STORE, idx, valid, mask, dt);
  if (run.width > 1 && !distinct_addresses(idx, mask)) run = AccessRun{};
  std::unordered_set<int64_t> run_done;  // runs (by the key of their first combination) stored as one vector
  for (int64_t k = 0; k < count(mask); k++) {
    Combo cb = decode(mask, k);
    UOpPtr ic = subst(idx, cb), vc = subst(valid, cb);
    const Val v = val(value, cb);
    bool vdep = contains(ic, vph_.get()) || contains(vc, vph_.get());
    if (!vdep && !varying(v)) {
      if (run.width > 1) {
        Combo start = cb;
        start[run.ua] -= cb[run.ua] % run.width;
        if (cb == start)
          if (UOpPtr vs = run_store(buf, value, run, start, ic, vc)) {
            stores.push_back(vs);
            run_done.insert(key(mask, start));
            continue;
          }
        if (run_done.count(key(mask, start))) continue;
      }
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
  return UOp::make(Ops::UNROLL, dtypes::void_, std::move(stores), int64_t(mask));
}

UOpPtr Lowerer::lower_sink(const UOpPtr& u) const {
  if (!has_unroll_src(u)) return nullptr;
  std::vector<UOpPtr> out;
  for (const UOpPtr& s : u->src) {
    if (s->op != Ops::UNROLL) throw Error(std::string("lower: the kernel's SINK holds a ") + op_name(s->op));
    out.insert(out.end(), s->src.begin(), s->src.end());
  }
  out.insert(out.end(), globals_.begin(), globals_.end());
  return UOp::make(Ops::SINK, dtypes::void_, std::move(out));
}

}  // namespace tg::lowering
