// Kernel setup (views, reduce dims last, merged dims), the opts that reshape it, and its name.
#include "codegen/kernel.h"

#include <algorithm>
#include <cctype>
#include <functional>
#include <numeric>
#include <unordered_map>

#include "helpers/debug.h"

namespace tg {

std::string Opt::repr() const {
  static const char* names[] = {"UPCAST", "UNROLL", "LOCAL", "GROUP", "GROUPTOP", "TC", "PADTO", "NOLOCALS", "SWAP",
                                "THREAD"};
  return std::string("Opt(op=OptOps.") + names[int(op)] + ", axis=" + std::to_string(axis) +
         ", amount=" + std::to_string(amount) + ")";
}

namespace {
int rank(AxisKind k) {
  switch (k) {
    case AxisKind::THREAD: return 0;
    case AxisKind::LOOP: return 1;
    case AxisKind::LOCAL: return 2;
    case AxisKind::GROUP: return 3;
    case AxisKind::REDUCE: return 4;
    default: return 5;  // UNROLL and UPCAST share the upcast region, in the order they were made
  }
}
// A dim in a kernel name: its size, or a symbolic size's variables and constants ("start_pos", "start_pos_1").
std::string dim_name(const sint& s) {
  if (s.is_int()) return std::to_string(s.value());
  std::string out;
  for (char c : s.str()) {
    if (std::isalnum(static_cast<unsigned char>(c)) || c == '_') out += c;
    else if (!out.empty() && out.back() != '_') out += '_';
  }
  while (!out.empty() && out.back() == '_') out.pop_back();
  return out;
}

}  // namespace

Kernel::Kernel(const UOpPtr& ast, const Renderer& renderer) : ast_(ast), renderer_(renderer) {
  for (const UOp* u : toposort(ast)) {
    if (u->op == Ops::VIEW) views_.push_back(u);
    if (u->op == Ops::REDUCE_AXIS) {  // several: the outermost (last in order); all reduce the same dims
      if (reduce_ && !(reduce_->get<ReduceArg>().axes == u->get<ReduceArg>().axes))
        throw Error("Kernel: REDUCE_AXIS nodes over different axes in one kernel");
      reduce_ = u;
      reduce_count_++;
    }
  }
  // The output view first, so sts_[0] is the store's tracker.
  const UOp* out_view = ast->src.at(0)->src.at(1).get();
  std::stable_partition(views_.begin(), views_.end(), [&](const UOp* v) { return v == out_view; });
  for (const UOp* v : views_) sts_.push_back(v->get<ShapeTracker>());
  is_load_.assign(views_.size(), false);
  for (const UOp* u : toposort(ast))
    if (u->op == Ops::LOAD)
      for (size_t i = 0; i < views_.size(); i++)
        if (views_[i] == u->src.at(1).get()) is_load_[i] = true;
  // The full shape is the largest per dim (loads before the reduce have the reduce dims' sizes).
  full_shape_ = sts_[0].shape();
  for (auto& st : sts_) {
    if (st.shape().size() != full_shape_.size()) throw Error("Kernel: views of different rank in one kernel");
    for (size_t d = 0; d < full_shape_.size(); d++)
      if (st.shape()[d] != full_shape_[d] && full_shape_[d] == 1) full_shape_[d] = st.shape()[d];
  }
  kinds_.assign(full_shape_.size(), AxisKind::LOOP);
  permute_reduce_last();
  merge_dims();
  roles_.assign(kinds_.size(), TcRole::NONE);
  if (renderer_.has_local()) pad_symbolic_outputs();
}

int Kernel::dim_of(TcRole role) const {
  for (size_t d = 0; d < roles_.size(); d++)
    if (roles_[d] == role) return int(d);
  return -1;
}

int Kernel::first_reduce() const {
  int n = 0;
  while (n < int(kinds_.size()) && rank(kinds_[size_t(n)]) < 3) n++;
  return n;
}

int Kernel::first_upcast() const {
  int n = 0;
  while (n < int(kinds_.size()) && rank(kinds_[size_t(n)]) < 5) n++;
  return n;
}

int64_t Kernel::local_size() const {
  int64_t n = 1;
  for (size_t d = 0; d < kinds_.size(); d++)
    if (kinds_[d] == AxisKind::LOCAL || kinds_[d] == AxisKind::GROUP) n *= full_shape_[d];
  return n;
}

// The most copies of the body upcasts may ask for: 1024, or 4096 for a tensor core on a WGMMA renderer (one op
// covers a warpgroup's n-tiles, so most of those copies are one instruction's lanes).
int64_t Kernel::max_upcast() const { return tc_ && renderer_.wgmma() ? 4096 : 1024; }

int64_t Kernel::upcast_size() const {
  int64_t n = 1;
  for (size_t d = size_t(first_upcast()); d < full_shape_.size(); d++)
    if (roles_.empty() || roles_[d] != TcRole::K_MID) n *= full_shape_[d];  // K_MID is summed across lanes: no copies
  return n;
}

void Kernel::permute_reduce_last() {
  if (!reduce_) return;
  const auto& axes = reduce_->get<ReduceArg>().axes;
  std::vector<int64_t> order;
  for (int64_t d = 0; d < int64_t(full_shape_.size()); d++)
    if (std::find(axes.begin(), axes.end(), d) == axes.end()) order.push_back(d);
  size_t n_out = order.size();
  for (int64_t a : axes) order.push_back(a);
  for (auto& st : sts_) st = st.permute(order);
  Shape fs;
  for (int64_t d : order) fs.push_back(full_shape_[size_t(d)]);
  full_shape_ = fs;
  for (size_t d = 0; d < kinds_.size(); d++) kinds_[d] = d < n_out ? AxisKind::LOOP : AxisKind::REDUCE;
}

void Kernel::drop_ones() {
  auto shape_without = [](const Shape& s, size_t d) {
    Shape r = s;
    r.erase(r.begin() + int64_t(d));
    return r;
  };
  for (size_t d = 0; d < full_shape_.size();) {
    if (full_shape_[d] != 1) {
      d++;
      continue;
    }
    for (auto& st : sts_) st = st.reshape(shape_without(st.shape(), d));
    full_shape_.erase(full_shape_.begin() + int64_t(d));
    kinds_.erase(kinds_.begin() + int64_t(d));
    if (!roles_.empty()) roles_.erase(roles_.begin() + int64_t(d));
  }
}

void Kernel::merge_dims() {
  // Drop size-1 dims, then merge neighbours of the same kind when every tracker can take the merge
  // without stacking a new view.
  drop_ones();
  for (size_t d = 0; d + 1 < full_shape_.size();) {
    bool ok = kinds_[d] == kinds_[d + 1];
    std::vector<ShapeTracker> merged;
    for (auto& st : sts_) {
      if (!ok) break;
      Shape s = st.shape();
      Shape m = s;
      m[d] = s[d] * s[d + 1];
      m.erase(m.begin() + int64_t(d) + 1);
      ShapeTracker r = st.reshape(m);
      ok = r.views.size() == st.views.size();
      merged.push_back(r);
    }
    if (!ok) {
      d++;
      continue;
    }
    sts_ = merged;
    full_shape_[d] *= full_shape_[d + 1];
    full_shape_.erase(full_shape_.begin() + int64_t(d) + 1);
    kinds_.erase(kinds_.begin() + int64_t(d) + 1);
  }
}

void Kernel::shift_to(int d, int64_t amount, bool top, AxisKind kind, TcRole role) {
  const size_t ud = size_t(d);
  const int64_t size = full_shape_[ud];
  const int64_t outer = top ? amount : size / amount, inner = top ? size / amount : amount;
  for (auto& st : sts_) {
    Shape s = st.shape();
    Shape ns(s.begin(), s.begin() + d);
    if (s[ud] == 1) {
      ns.push_back(1);
      ns.push_back(1);
    } else {
      ns.push_back(outer);
      ns.push_back(inner);
    }
    ns.insert(ns.end(), s.begin() + d + 1, s.end());
    st = st.reshape(ns);
  }
  full_shape_[ud] = outer;
  full_shape_.insert(full_shape_.begin() + d + 1, inner);
  AxisKind old = kinds_[ud];
  kinds_.insert(kinds_.begin() + d + 1, old);
  const TcRole old_role = roles_[ud];
  roles_.insert(roles_.begin() + d + 1, old_role);
  const size_t moved = top ? ud : ud + 1;
  kinds_[moved] = kind;
  roles_[moved] = role;
  // Restore the order of kinds; the new dim goes last among its kind (first for THREAD).
  std::vector<int64_t> order;
  if (kind == AxisKind::THREAD) order.push_back(int64_t(moved));
  for (int r = 0; r < 6; r++)
    for (size_t i = 0; i < kinds_.size(); i++)
      if (i != moved && rank(kinds_[i]) == r) order.push_back(int64_t(i));
  if (kind != AxisKind::THREAD) {
    // insert after the last dim of rank <= rank(kind)
    size_t pos = 0;
    for (size_t i = 0; i < order.size(); i++)
      if (rank(kinds_[size_t(order[i])]) <= rank(kind)) pos = i + 1;
    // A tensor core's lanes stay the innermost threads, t inside g (lane 4g + t is threadIdx.x + 4 threadIdx.y):
    // other LOCAL dims go before both, g before t.
    if (kind == AxisKind::LOCAL && role != TcRole::LANE_T)
      for (size_t i = 0; i < order.size(); i++) {
        const TcRole r = roles_[size_t(order[i])];
        if (r == TcRole::LANE_T || (r == TcRole::LANE_G && role == TcRole::NONE)) {
          pos = i;
          break;
        }
      }
    order.insert(order.begin() + int64_t(pos), int64_t(moved));
  }
  for (auto& st : sts_) st = st.permute(order);
  Shape fs;
  std::vector<AxisKind> ks;
  std::vector<TcRole> rs;
  for (int64_t o : order) {
    fs.push_back(full_shape_[size_t(o)]);
    ks.push_back(kinds_[size_t(o)]);
    rs.push_back(roles_[size_t(o)]);
  }
  full_shape_ = fs;
  kinds_ = ks;
  roles_ = rs;
  drop_ones();
}

void Kernel::apply_opt(const Opt& opt) {
  auto fail = [&](const std::string& why) { throw KernelOptError("apply_opt " + opt.repr() + " on " + name() + ": " + why); };
  int d = opt.axis;
  if (opt.op == OptOps::SWAP) {  // exchange two output loops (their order in the loop nest) or two thread dims
    const int e = opt.amount;
    if (d < 0 || e < 0 || d >= int(full_shape_.size()) || e >= int(full_shape_.size()) || d == e) fail("no such axes");
    auto plain_local = [&](int x) { return kinds_[size_t(x)] == AxisKind::LOCAL && roles_[size_t(x)] == TcRole::NONE; };
    const bool loops = kinds_[size_t(d)] == AxisKind::LOOP && kinds_[size_t(e)] == AxisKind::LOOP;
    if (!loops && !(plain_local(d) && plain_local(e)))
      fail("SWAP needs two output loop dims or two LOCAL dims (not a tensor core's lanes)");
    std::vector<int64_t> order(full_shape_.size());
    std::iota(order.begin(), order.end(), 0);
    std::swap(order[size_t(d)], order[size_t(e)]);
    for (auto& st : sts_) st = st.permute(order);
    std::swap(full_shape_[size_t(d)], full_shape_[size_t(e)]);
    std::swap(roles_[size_t(d)], roles_[size_t(e)]);
    applied_.push_back(opt);
    return;
  }
  if (opt.op == OptOps::TC) return apply_tc(opt);
  if (opt.op == OptOps::PADTO) return apply_padto(opt);
  if (tc_ && (opt.op == OptOps::GROUP || opt.op == OptOps::GROUPTOP || opt.op == OptOps::THREAD))
    fail("a kernel with a tensor core takes no GROUP or THREAD");
  if (opt.op == OptOps::UNROLL || opt.op == OptOps::GROUP || opt.op == OptOps::GROUPTOP) d = first_reduce() + opt.axis;
  const bool grouped = std::find(kinds_.begin(), kinds_.end(), AxisKind::GROUP) != kinds_.end();
  // A grouped reduce meets in shared memory one value per thread: the unrolled reduce lanes are summed
  // before that, but upcast output lanes would each need their own slots.
  if (opt.op == OptOps::UPCAST && grouped) fail("upcasting an output dim of a kernel with a grouped reduce");
  if (d < 0 || d >= int(full_shape_.size())) fail("no such axis");
  if (full_shape_[size_t(d)].is_symbolic()) fail("the dim has a symbolic size (" + full_shape_[size_t(d)].str() + ")");
  const int64_t size = full_shape_[size_t(d)];
  const int64_t amount = opt.amount == 0 ? size : opt.amount;
  if (amount < 1 || size % amount != 0) fail("amount does not divide the dim of size " + std::to_string(size));
  switch (opt.op) {
    case OptOps::UPCAST:
      if (kinds_[size_t(d)] != AxisKind::LOOP) fail("UPCAST needs an output loop dim");
      if (amount > 256 || upcast_size() * amount > max_upcast()) fail("too much upcasting");
      if (amount > 1) shift_to(d, amount, false, AxisKind::UPCAST);
      break;
    case OptOps::UNROLL:
      if (kinds_[size_t(d)] != AxisKind::REDUCE) fail("UNROLL needs a reduce dim");
      if (amount > 256 || upcast_size() * amount > max_upcast()) fail("too much unrolling");
      if (amount > 1) shift_to(d, amount, false, AxisKind::UNROLL);
      break;
    case OptOps::THREAD:
      if (kinds_[size_t(d)] != AxisKind::LOOP) fail("THREAD needs an output loop dim");
      if (std::find(kinds_.begin(), kinds_.end(), AxisKind::THREAD) != kinds_.end()) fail("already threaded");
      if (amount > 256) fail("too many threads");
      if (amount > 1) shift_to(d, amount, true, AxisKind::THREAD);
      break;
    case OptOps::LOCAL:
    case OptOps::GROUP:
    case OptOps::GROUPTOP: {
      const bool group = opt.op != OptOps::LOCAL;
      if (!renderer_.has_local()) fail("needs a device with workgroups");
      if (!group && kinds_[size_t(d)] != AxisKind::LOOP) fail("LOCAL needs an output loop dim");
      if (group && kinds_[size_t(d)] != AxisKind::REDUCE) fail("GROUP needs a reduce dim");
      if (group && std::find(kinds_.begin(), kinds_.end(), AxisKind::UPCAST) != kinds_.end())
        fail("a grouped reduce with upcast output dims");
      // (a tensor core's two lane dims are one launch dim: lowerer.cpp's launch_axes)
      int n_threads_dims = int(std::count(kinds_.begin(), kinds_.end(), AxisKind::LOCAL) +
                               std::count(kinds_.begin(), kinds_.end(), AxisKind::GROUP)) - (tc_ ? 1 : 0);
      if (n_threads_dims >= 3) fail("at most 3 dims of workgroup threads (LOCAL and GROUP)");
      if (local_size() * amount > renderer_.max_local_size()) fail("too many threads in a workgroup");
      // GROUP: thread g takes elements g, g+amount, ... (neighbouring threads read neighbouring memory);
      // GROUPTOP: thread g takes the g-th contiguous chunk.
      if (amount > 1) shift_to(d, amount, opt.op == OptOps::GROUPTOP, group ? AxisKind::GROUP : AxisKind::LOCAL);
      break;
    }
    default: fail("not supported on this device yet");
  }
  applied_.push_back(opt);
}

size_t Kernel::view_index(const UOp* view) const {
  return size_t(std::find(views_.begin(), views_.end(), view) - views_.begin());
}

int64_t Kernel::stride_of(size_t i, int d) const {
  const ShapeTracker& st = sts_[i];
  const sint& size = st.shape()[size_t(d)];
  if (size.is_int() && size == 1) return 0;
  if (st.views.size() != 1) return -1;
  const View& v = st.views.back();
  // (a size, mask bound or stride over variables: no plain stride, as a masked one)
  auto fixed = [](const sint& a, const sint& b) { return a.is_int() && b.is_int() && a == b; };
  if (v.mask && (!fixed((*v.mask)[size_t(d)].first, 0) || !fixed((*v.mask)[size_t(d)].second, v.shape[size_t(d)])))
    return -1;
  return v.strides[size_t(d)].is_int() ? int64_t(v.strides[size_t(d)]) : -1;
}

bool Kernel::is_expanded_in_some_load(int d) const {
  for (size_t i = 1; i < sts_.size(); i++)
    if (is_load_[i] && stride_of(i, d) == 0) return true;
  return false;
}

int Kernel::vector_dim() const {
  if (tc_) return -1;  // a tensor core's registers are scalars gathered from the register dims
  auto good_size = [](int64_t s) { return s == 2 || s == 4 || s == 8 || s == 16; };
  int out_dim = -1, load_dim = -1;
  for (int d = int(full_shape_.size()) - 1; d >= first_upcast() && out_dim < 0; d--)
    if (kinds_[size_t(d)] == AxisKind::UPCAST && good_size(full_shape_[size_t(d)]) && stride_of(0, d) == 1) out_dim = d;
  // A reduce kernel's UPCAST dim that a load is contiguous along while the output is strided (a conv's
  // output channels against packed weights) wins when it is wider: vector loads and arithmetic, the lanes
  // stored one by one once per output tile. (CPUs only: GPU tiles keep their layout; the arithmetic per
  // lane is the same either way.)
  if (reduce_ && !renderer_.has_local())
    for (int d = int(full_shape_.size()) - 1; d >= first_upcast() && load_dim < 0; d--) {
      if (kinds_[size_t(d)] == AxisKind::UPCAST && good_size(full_shape_[size_t(d)]) && stride_of(0, d) != 1 &&
          some_load_contiguous_along(d))
        load_dim = d;
    }
  if (load_dim >= 0 && (out_dim < 0 || full_shape_[size_t(load_dim)] > full_shape_[size_t(out_dim)])) return load_dim;
  // The last UNROLL dim that some load is contiguous along (each vector lane then accumulates its own partial
  // sum; the lanes are added after the reduce loop).
  int unroll_dim = -1;
  for (int d = int(full_shape_.size()) - 1; d >= first_upcast() && unroll_dim < 0; d--)
    if (kinds_[size_t(d)] == AxisKind::UNROLL && good_size(full_shape_[size_t(d)]) && some_load_contiguous_along(d))
      unroll_dim = d;
  // On CPUs an output dim no load is contiguous along (the rows of a matrix-vector product) would gather one
  // scalar per lane from rows apart: the reduce's lanes win then, and the rows are separate accumulators.
  if (out_dim >= 0 && unroll_dim >= 0 && !renderer_.has_local() && !some_load_contiguous_along(out_dim))
    return unroll_dim;
  return out_dim >= 0 ? out_dim : unroll_dim;
}

bool Kernel::some_load_contiguous_along(int d) const {
  for (size_t i = 1; i < sts_.size(); i++)
    if (is_load_[i] && stride_of(i, d) == 1) return true;
  return false;
}

UOpPtr Kernel::optimized_ast() const {
  std::unordered_map<const UOp*, size_t> index;
  for (size_t i = 0; i < views_.size(); i++) index[views_[i]] = i;
  std::vector<int64_t> reduce_axes;
  for (size_t d = 0; d < kinds_.size(); d++)
    if (kinds_[d] == AxisKind::GROUP || kinds_[d] == AxisKind::REDUCE || kinds_[d] == AxisKind::UNROLL)
      reduce_axes.push_back(int64_t(d));
  std::unordered_map<const UOp*, UOpPtr> done;
  for (const UOp* u : toposort(ast_)) {
    std::vector<UOpPtr> srcs;
    for (auto& s : u->src) srcs.push_back(done.at(s.get()));
    Arg arg = u->arg;
    if (u->op == Ops::VIEW) arg = sts_[index.at(u)];
    if (u->op == Ops::REDUCE_AXIS) arg = ReduceArg{u->get<ReduceArg>().op, reduce_axes};
    done[u] = UOp::make(u->op, u->dtype, std::move(srcs), arg);
  }
  return done.at(ast_.get());
}

std::string Kernel::name() const {
  bool copy_only = true;
  for (const UOp* u : toposort(ast_))
    if (u->op != Ops::SINK && u->op != Ops::STORE && u->op != Ops::LOAD && u->op != Ops::VIEW &&
        u->op != Ops::DEFINE_GLOBAL)
      copy_only = false;
  std::string n = reduce_ ? "r" : copy_only ? "C" : "E";
  n += "_";
  for (size_t d = 0; d < full_shape_.size(); d++) n += (d ? "_" : "") + dim_name(full_shape_[d]);
  return n;
}

std::string Kernel::colored_name() const {
  // As tinygrad colors them: output loops blue, threads cyan, reduce loops red, upcast output dims yellow,
  // unrolled reduce dims magenta.
  std::string out = name().substr(0, 2);
  for (size_t d = 0; d < full_shape_.size(); d++) {
    if (d) out += colored("_", "black");
    const char* c = "blue";
    switch (kinds_[d]) {
      case AxisKind::THREAD: c = "cyan"; break;
      case AxisKind::LOOP: c = "blue"; break;
      case AxisKind::LOCAL: c = "cyan"; break;
      case AxisKind::GROUP: c = "green"; break;
      case AxisKind::REDUCE: c = "red"; break;
      case AxisKind::UNROLL: c = "magenta"; break;
      case AxisKind::UPCAST: c = "yellow"; break;
    }
    out += colored(dim_name(full_shape_[d]), c);
  }
  return out;
}

}  // namespace tg
