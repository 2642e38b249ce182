// Shared-memory staging of a reduce's operands: see staging.h.
#include "codegen/staging.h"

#include <algorithm>

#include "shape/indexing.h"
#include "tg/context.h"
#include "uop/pass_log.h"
#include "uop/symbolic.h"

namespace tg {
namespace {

// STAGES: stages of the shared-memory ring (0: no staging; default: see plan). TC_STAGES, for tensor-core
// kernels only, wins over it.
ContextVar STAGES("STAGES", -1);
ContextVar TC_STAGES("TC_STAGES", -1);
// WGMMA_SWIZZLE=0: WGMMA operands in the unswizzled layout even where the 128-byte swizzle applies (to compare).
ContextVar WGMMA_SWIZZLE("WGMMA_SWIZZLE", 1);
// WGMMA_DEFER (default 1): a step's wgmmas stay in flight while the next step's are issued (waited for one step
// later), so the tensor cores keep running across the barrier; the copies then run S-2 steps ahead instead of
// S-1 (the stage a step's copies overwrite must be one whose wgmmas are known to be done). Needs 3 or more
// stages; taken by tiles that have the multiprocessor alone (see plan). WGMMA_DEFER=0: wait at each step's end.
ContextVar WGMMA_DEFER("WGMMA_DEFER", 1);

bool is_tile_dim(AxisKind kind) {
  return kind == AxisKind::LOCAL || kind == AxisKind::UPCAST || kind == AxisKind::UNROLL;
}

UOpPtr ci(int64_t v, DType dt) { return UOp::const_int(v, dt); }

// The tile's copies read 16-byte units through the tracker's last view (no mask of its own, offset whole units)
// and the views below it (a pad's mask, a reshape that did not merge), which must keep such units whole.
bool copies_whole_runs(const ShapeTracker& st, int64_t vec) {
  return !st.views.back().mask && st.views.back().offset % vec == 0 && st.lower_views_keep_runs(vec);
}

}  // namespace

UOpPtr Staging::thread_id(const StagingInput& in) {
  const DType idt = in.reduce_range->dtype;
  const Shape& fs = in.k.full_shape();
  UOpPtr tid = ci(0, idt);
  for (size_t d = 0; d < fs.size(); d++)
    if (in.k.kinds()[d] == AxisKind::LOCAL) tid = tid * ci(fs[d], idt) + in.dims[d];
  return tid;
}

UOpPtr Staging::at_step(const UOpPtr& x, const UOpPtr& r, const UOpPtr& step) {
  if (x == r) return step;
  return substitute(x, [&](const UOp* u) -> UOpPtr { return u == r.get() ? step : nullptr; });
}

std::optional<Staging::Layout> Staging::layout(const Kernel& k, size_t view, int64_t vec, bool ldmatrix) {
  const ShapeTracker& st = k.sts()[view];
  if (!copies_whole_runs(st, vec)) return std::nullopt;
  const View& v = st.views.back();
  const Shape& fs = k.full_shape();
  Layout L;
  for (int d = 0; d < int(fs.size()); d++) {
    const int64_t s = fs[size_t(d)] == 1 ? 0 : v.strides[size_t(d)].value();
    if (s == 0) continue;
    if (!is_tile_dim(k.kinds()[size_t(d)])) {
      if (s % vec != 0) return std::nullopt;  // a loop moves the tile by whole 16-byte units
      continue;
    }
    if (s < 0) return std::nullopt;
    L.dims.push_back(d);
  }
  if (v.offset % vec != 0) return std::nullopt;
  auto stride = [&](int d) { return v.strides[size_t(d)]; };
  std::sort(L.dims.begin(), L.dims.end(), [&](int a, int b) { return stride(a) > stride(b); });
  // the run: the innermost dims, each stepping over all the ones inside it
  L.run = 1;
  size_t c = L.dims.size();
  while (c > 0 && stride(L.dims[c - 1]) == L.run) L.run *= fs[size_t(L.dims[--c])];
  if (L.run % vec != 0) return std::nullopt;
  for (size_t i = 0; i < c; i++)
    if (stride(L.dims[i]) % vec != 0) return std::nullopt;
  // rows of an odd number of 16-byte units: 8 consecutive rows start in 8 different groups of 4 banks
  const int64_t pitch = (L.run / vec) % 2 == 1 ? L.run : L.run + vec;
  L.sstride.assign(L.dims.size(), 0);
  int64_t inner = 1;
  for (size_t i = L.dims.size(); i-- > c;) L.sstride[i] = inner, inner *= fs[size_t(L.dims[i])];
  int64_t rows = 1;
  for (size_t i = c; i-- > 0;) L.sstride[i] = pitch * rows, rows *= fs[size_t(L.dims[i])];
  L.stage = rows * pitch;
  L.box = rows * L.run;
  if (!ldmatrix) return L;
  // LDMATRIX: row pairs need (t, K_LO) as the row's first 8 elements; column pairs need g contiguous.
  auto sstride_of = [&](TcRole role) -> int64_t {
    const int d = k.dim_of(role);
    for (size_t i = 0; i < L.dims.size(); i++)
      if (L.dims[i] == d) return L.sstride[i];
    return -1;
  };
  if (sstride_of(TcRole::K_LO) == 1 && sstride_of(TcRole::LANE_T) == 2)
    L.trans = false;
  else if (sstride_of(TcRole::LANE_G) == 1)
    L.trans = true;
  else
    return std::nullopt;
  return L;
}

// WGMMA staging (see staging.h): the kernel's warp dim along M and n-tile dim along N, then both operands'
// core-matrix layouts.
bool Staging::plan_wgmma(const Kernel& k) {
  if (!k.renderer().wgmma() || k.tensor_core()->tc.acc != dtypes::float32) return false;  // (float32 lanes only)
  const Shape& fs = k.full_shape();
  const size_t a = k.tensor_core()->a, b = k.tensor_core()->b;
  auto st = [&](size_t view, int d) { return k.last_view_stride(view, d); };
  const int g = k.dim_of(TcRole::LANE_G), mhi = k.dim_of(TcRole::M_HI);
  int warp = -1;
  for (int d = int(fs.size()) - 1; d >= 0 && warp < 0; d--)  // the innermost warp dim (lidx1)
    if (k.kinds()[size_t(d)] == AxisKind::LOCAL && k.roles()[size_t(d)] == TcRole::NONE) warp = d;
  if (warp < 0 || fs[size_t(warp)] % 4 != 0 || st(a, g) <= 0 || st(b, g) <= 0 || st(b, warp) != 0 ||
      st(a, warp) != 16 * st(a, g) || st(a, mhi) != 8 * st(a, g))
    return false;
  // n-tile dims: UPCASTs along N (A does not read them) continuing N from 8 columns on
  std::vector<int> ntile;
  for (int64_t n = 8;;) {
    int next = -1;
    for (int d = 0; d < int(fs.size()); d++)
      if (k.kinds()[size_t(d)] == AxisKind::UPCAST && k.roles()[size_t(d)] == TcRole::NONE && st(a, d) == 0 &&
          st(b, d) == n * st(b, g))
        next = d;
    if (next < 0 || n * fs[size_t(next)] > 256) break;
    ntile.push_back(next);
    n *= fs[size_t(next)];
  }
  if (ntile.empty()) return false;
  // the warpgroups along M: LOCAL dims continuing A's rows past the warp dim's 64 (B does not read them)
  std::vector<int> warps{warp};
  for (int64_t rows = 16 * fs[size_t(warp)];;) {
    int next = -1;
    for (int d = 0; d < int(fs.size()); d++)
      if (d != warp && k.kinds()[size_t(d)] == AxisKind::LOCAL && k.roles()[size_t(d)] == TcRole::NONE &&
          st(b, d) == 0 && st(a, d) == rows * st(a, g))
        next = d;
    if (next < 0) break;
    warps.push_back(next);
    rows *= fs[size_t(next)];
  }
  for (int op = 0; op < 2; op++) {
    auto lw = wgmma_layout(k, op == 0 ? a : b, op, warps, ntile);
    if (!lw) return false;
    layout_.push_back(lw->first);
    wg_[size_t(op)] = lw->second;
    vec_.push_back(8);
  }
  wgmma_ = true;
  warp_dim_ = warp;
  ntile_dims_ = ntile;
  return true;
}

// Core matrices of 64 elements (8 rows of 16 bytes) follow each other 144 bytes apart along the operand's
// contiguous direction (the 16 bytes of padding put the 8 chunks of a 128-byte global row in 8 different bank
// groups), then along the other direction, then the other tile dims. The copies take a global row's chunks with
// consecutive threads (whole 128-byte lines from L2).
std::optional<std::pair<Staging::Layout, WgmmaOperand>> Staging::wgmma_layout(const Kernel& k, size_t view, int op,
                                                                              const std::vector<int>& warps,
                                                                              const std::vector<int>& ntile) {
  const ShapeTracker& tr = k.sts()[view];
  if (!copies_whole_runs(tr, 8)) return std::nullopt;
  const View& v = tr.views.back();
  const Shape& fs = k.full_shape();
  auto stride = [&](int d) { return fs[size_t(d)] == 1 ? 0 : v.strides[size_t(d)].value(); };
  for (int d = 0; d < int(fs.size()); d++)  // loops move the tile by whole 16-byte units
    if (!is_tile_dim(k.kinds()[size_t(d)]) && stride(d) % 8 != 0) return std::nullopt;
  const int g = k.dim_of(TcRole::LANE_G), t = k.dim_of(TcRole::LANE_T), klo = k.dim_of(TcRole::K_LO);
  const bool kmajor = stride(klo) == 1 && stride(t) == 2, mnmajor = !kmajor && stride(g) == 1;
  if (!kmajor && !mnmajor) return std::nullopt;
  std::vector<int> mn_dims{g};  // M (N) from the 8 rows of a core matrix on
  if (op == 0) mn_dims.push_back(k.dim_of(TcRole::M_HI)), mn_dims.insert(mn_dims.end(), warps.begin(), warps.end());
  else mn_dims.insert(mn_dims.end(), ntile.begin(), ntile.end());
  if (WGMMA_SWIZZLE > 0)
    if (auto sw = kmajor ? swizzled_layout(k, view, mn_dims) : swizzled_mn_layout(k, view, mn_dims)) return sw;
  std::vector<int> octet = kmajor ? std::vector<int>{klo, t} : std::vector<int>{g};
  std::vector<int> rows = kmajor ? std::vector<int>{g} : std::vector<int>{klo, t};
  std::vector<int> kgroups{k.dim_of(TcRole::K_HI)}, mngroups;
  mngroups.assign(mn_dims.begin() + 1, mn_dims.end());
  std::vector<int> rest;  // the other tile dims, innermost in global memory first; K dims join the K groups
  for (int d = 0; d < int(fs.size()); d++) {
    auto listed = [&](const std::vector<int>& l) { return std::find(l.begin(), l.end(), d) != l.end(); };
    if (stride(d) == 0 || listed(octet) || listed(rows) || listed(kgroups) || listed(mngroups)) continue;
    if (stride(d) < 0 || stride(d) % 8 != 0) return std::nullopt;  // whole 16-byte units, forward
    if (is_tile_dim(k.kinds()[size_t(d)])) rest.push_back(d);
  }
  std::sort(rest.begin(), rest.end(), [&](int x, int y) { return stride(x) < stride(y); });
  std::vector<int> others;
  for (int d : rest) (k.kinds()[size_t(d)] == AxisKind::UNROLL ? kgroups : others).push_back(d);
  std::vector<int>& lead = kmajor ? kgroups : mngroups;  // along the contiguous direction
  std::vector<int>& other = kmajor ? mngroups : kgroups;
  std::unordered_map<int, int64_t> sstride;
  int64_t next = 1;
  for (const std::vector<int>* group : {&octet, &rows}) for (int d : *group) sstride[d] = next, next *= fs[size_t(d)];
  next = 72;  // 144 bytes: a core matrix and 16 bytes of padding
  for (const std::vector<int>* group : {&lead, &other, &others}) for (int d : *group) sstride[d] = next, next *= fs[size_t(d)];
  for (const std::vector<int>* group : {&rows, &lead, &other, &others})
    for (int d : *group)
      if (stride(d) % 8 != 0) return std::nullopt;
  // copy order, innermost first: the 16 bytes, the chunks along the contiguous direction, the rows, the rest
  std::vector<int> order = octet;
  for (const std::vector<int>* group : {&lead, &rows, &other, &others}) order.insert(order.end(), group->begin(), group->end());
  Layout L;
  for (size_t i = order.size(); i-- > 0;) L.dims.push_back(order[i]), L.sstride.push_back(sstride.at(order[i]));
  L.run = 8;
  L.stage = next;
  L.box = 1;
  for (int d : order) L.box *= fs[size_t(d)];
  L.trans = mnmajor;
  const int64_t kstride = sstride.at(kgroups[0]), mnstride = sstride.at(mngroups[0]);
  return std::make_pair(L, WgmmaOperand{L.trans, false, kstride, mnstride});
}

// The 128-byte swizzle for a K-major operand whose K per step is one 128-byte row (64 16-bit elements: K_LO, t,
// K_HI and K steps of 4): rows of K at 64 elements, 8-row atoms along M (N) in mn_dims' order, then the other tile
// dims. The copies write a row's 8 chunks with 8 consecutive threads (a 128-byte line from L2), each chunk moved
// within its row by the swizzle, so they hit 8 different bank groups.
std::optional<std::pair<Staging::Layout, WgmmaOperand>> Staging::swizzled_layout(const Kernel& k, size_t view,
                                                                                 const std::vector<int>& mn_dims) {
  const View& v = k.sts()[view].views.back();
  const Shape& fs = k.full_shape();
  auto stride = [&](int d) { return fs[size_t(d)] == 1 ? 0 : v.strides[size_t(d)].value(); };
  std::vector<int> kdims{k.dim_of(TcRole::K_LO), k.dim_of(TcRole::LANE_T), k.dim_of(TcRole::K_HI)}, others;
  for (int d = 0; d < int(fs.size()); d++) {
    auto listed = [&](const std::vector<int>& l) { return std::find(l.begin(), l.end(), d) != l.end(); };
    if (stride(d) == 0 || listed(kdims) || listed(mn_dims) || !is_tile_dim(k.kinds()[size_t(d)])) continue;
    if (stride(d) < 0 || stride(d) % 8 != 0) return std::nullopt;
    others.push_back(d);
  }
  std::sort(others.begin(), others.end(), [&](int x, int y) { return stride(x) < stride(y); });
  // the K step dims (UNROLL) complete the row
  std::vector<int> rest;
  for (int d : others) (k.kinds()[size_t(d)] == AxisKind::UNROLL ? kdims : rest).push_back(d);
  int64_t row = 1;
  for (int d : kdims) row *= fs[size_t(d)];
  if (row != 64) return std::nullopt;
  for (size_t i = 2; i < kdims.size(); i++)  // K_HI and the K steps continue K contiguously
    if (stride(kdims[i]) != 8 * (i == 2 ? 1 : 2)) return std::nullopt;
  Layout L;
  std::vector<int> order = kdims;  // copy order, innermost first
  order.insert(order.end(), mn_dims.begin(), mn_dims.end());
  order.insert(order.end(), rest.begin(), rest.end());
  std::unordered_map<int, int64_t> sstride;
  int64_t next = 1;
  for (int d : order) sstride[d] = next, next *= fs[size_t(d)];
  if (sstride.at(mn_dims[0]) != 64 || fs[size_t(mn_dims[0])] != 8) return std::nullopt;
  for (size_t i = order.size(); i-- > 0;) L.dims.push_back(order[i]), L.sstride.push_back(sstride.at(order[i]));
  L.run = 8;
  L.stage = L.box = next;
  L.swizzle = true;
  return std::make_pair(L, WgmmaOperand{false, true, 0, 512});
}

// The 128-byte swizzle for an MN-major operand (N-major B: x @ w with w row-major): rows of 64 elements along N
// (g and an n-tile dim of 8), 8 rows along K (K_LO, t) to an atom, the atoms along K (K_HI and the K steps: SBO)
// then along N (the other n-tile dims: LBO), then the other tile dims. Copies as for K-major.
std::optional<std::pair<Staging::Layout, WgmmaOperand>> Staging::swizzled_mn_layout(const Kernel& k, size_t view,
                                                                                    const std::vector<int>& mn_dims) {
  const View& v = k.sts()[view].views.back();
  const Shape& fs = k.full_shape();
  auto stride = [&](int d) { return fs[size_t(d)] == 1 ? 0 : v.strides[size_t(d)].value(); };
  size_t in_row = 0;  // the first dims along M (N) make the 64-element row, the others step between atoms
  int64_t row_size = 1;
  while (row_size < 64 && in_row < mn_dims.size()) row_size *= fs[size_t(mn_dims[in_row++])];
  if (row_size != 64) return std::nullopt;
  std::vector<int> row(mn_dims.begin(), mn_dims.begin() + int64_t(in_row)), rows{k.dim_of(TcRole::K_LO), k.dim_of(TcRole::LANE_T)};
  std::vector<int> kgroups{k.dim_of(TcRole::K_HI)}, atoms(mn_dims.begin() + int64_t(in_row), mn_dims.end()), rest;
  for (int d = 0; d < int(fs.size()); d++) {
    auto listed = [&](const std::vector<int>& l) { return std::find(l.begin(), l.end(), d) != l.end(); };
    if (stride(d) == 0 || listed(row) || listed(rows) || listed(kgroups) || listed(atoms) ||
        !is_tile_dim(k.kinds()[size_t(d)]))
      continue;
    if (stride(d) < 0 || stride(d) % 8 != 0) return std::nullopt;
    rest.push_back(d);
  }
  std::sort(rest.begin(), rest.end(), [&](int x, int y) { return stride(x) < stride(y); });
  std::vector<int> others;
  for (int d : rest) (k.kinds()[size_t(d)] == AxisKind::UNROLL ? kgroups : others).push_back(d);
  for (const std::vector<int>* group : {&rows, &kgroups, &atoms, &others})
    for (int d : *group)
      if (stride(d) % 8 != 0) return std::nullopt;
  std::unordered_map<int, int64_t> sstride;
  int64_t next = 1;
  for (const std::vector<int>* group : {&row, &rows, &kgroups, &atoms, &others})
    for (int d : *group) sstride[d] = next, next *= fs[size_t(d)];
  if (sstride.at(kgroups[0]) != 512) return std::nullopt;
  // copy order, innermost first: along N (the row, then the next atoms), then K, then the rest
  std::vector<int> order = row;
  for (const std::vector<int>* group : {&atoms, &rows, &kgroups, &others})
    order.insert(order.end(), group->begin(), group->end());
  Layout L;
  for (size_t i = order.size(); i-- > 0;) L.dims.push_back(order[i]), L.sstride.push_back(sstride.at(order[i]));
  L.run = 8;
  L.stage = L.box = next;
  L.swizzle = L.trans = true;
  const int64_t atom_stride = atoms.empty() ? 512 * 64 : sstride.at(atoms[0]);  // (one atom along N: unused)
  return std::make_pair(L, WgmmaOperand{true, true, 512, atom_stride});
}

// The operand's first element for the warpgroup's WGMMA at K_HI 0: the lane and register dims of the tensor core
// at 0, the warp at its warpgroup's first warp, the n-tile dim at 0.
UOpPtr Staging::wgmma_offset(const StagingInput& in, int op) const {
  const Kernel& k = in.k;
  const DType idt = in.reduce_range->dtype;
  std::unordered_map<const UOp*, UOpPtr> value;
  for (TcRole r : {TcRole::LANE_G, TcRole::LANE_T, TcRole::K_LO, TcRole::K_HI, TcRole::M_HI})
    value[in.dims.at(size_t(k.dim_of(r))).get()] = ci(0, idt);
  const UOpPtr& w = in.dims.at(size_t(warp_dim_));
  value[w.get()] = idiv(w, ci(4, idt)) * ci(4, idt);
  for (int d : ntile_dims_) value[in.dims.at(size_t(d)).get()] = ci(0, idt);
  return simplify(substitute(stage_index(in, size_t(op)), [&](const UOp* u) -> UOpPtr {
    auto it = value.find(u);
    return it == value.end() ? nullptr : it->second;
  }));
}

// A tensor core with 16-bit inputs reads its operands as LDMATRIX fragments or by WGMMA; a tf32 one's operands
// are staged as any reduce's, its registers plain loads of the tile.
bool Staging::fragments(const Kernel& k) { return k.tensor_core() && k.tensor_core()->tc.in.itemsize() == 2; }

std::optional<Staging> Staging::plan(const StagingInput& in) {
  ScopedPass pass("staging");
  const Kernel& k = in.k;
  const bool tc = fragments(k);
  const int64_t knob = k.tensor_core() && TC_STAGES >= 0 ? int64_t(TC_STAGES) : int64_t(STAGES);
  if (knob == 0 || !k.renderer().async_copies() || !in.reduce_range || in.views.empty()) return std::nullopt;
  if (tc && in.views.size() != 2) return std::nullopt;
  const UOpPtr& end = in.reduce_range->src.at(1);
  if (end->op != Ops::CONST) return std::nullopt;
  Staging s;
  s.view_ = in.views;
  if (!s.plan_layouts(in) || !s.plan_stages(in, knob)) return std::nullopt;
  if (s.plan_tma(in))
    s.plan_tma_copies(in, end->const_int_value());
  else
    s.plan_copies(in, end->const_int_value());
  if (!tc) {
    for (size_t op = 0; op < in.views.size(); op++) s.index_.push_back(s.stage_index(in, op));
    return s;
  }
  if (!s.wgmma_) s.plan_fragments(in);
  return s;
}

bool Staging::plan_layouts(const StagingInput& in) {
  const Kernel& k = in.k;
  const bool tc = fragments(k);
  if (tc && plan_wgmma(k)) return true;
  for (size_t op = 0; op < in.views.size(); op++) {
    const DType dt = in.bufs[op]->dtype.base().scalar_type();
    auto L = layout(k, in.views[op], 16 / dt.itemsize(), tc);
    if (!L || 16 % dt.itemsize() != 0) return false;
    layout_.push_back(*L);
    vec_.push_back(16 / dt.itemsize());
  }
  return true;
}

bool Staging::plan_stages(const StagingInput& in, int64_t knob) {
  const Kernel& k = in.k;
  const Renderer& ren = k.renderer();
  int64_t stage_bytes = 0;
  for (size_t op = 0; op < in.views.size(); op++) {
    const int64_t itemsize = in.bufs[op]->dtype.base().scalar_type().itemsize();
    if (layout_[op].box % (vec_[op] * k.local_size()) != 0) return false;
    stage_bytes += layout_[op].stage * itemsize;
  }
  // as many stages as leave room for two workgroups per multiprocessor (one more hides a barrier), at most 4
  // (H100, fp16 4096^3, 128 x 128 blocks with K steps of 64: 3 stages 290 TFLOPS, 4 stages (one block) 273);
  // a wgmma tile too wide for two blocks of 3 stages takes the multiprocessor alone, with its wgmmas deferred
  // (128 x 256: 4 stages, 500 TFLOPS at 4096^3; deferring 128 x 128 blocks, 2 an SM with 3 stages, measured 2-4%
  // slower at 3072 and 4096: its copies are then only one step ahead)
  const int64_t two_blocks = ren.shared_memory() / 2 / stage_bytes, one_block = ren.shared_memory() / stage_bytes;
  const bool defer = wgmma_ && WGMMA_DEFER > 0 && two_blocks < 3;
  stages_ = knob > 0 ? int(knob) : int(std::min<int64_t>(4, defer && two_blocks < 3 ? one_block : two_blocks));
  if (stages_ < 2 || stages_ * stage_bytes > ren.shared_memory()) return false;
  deferred_ = defer && stages_ >= 3;
  const bool tc = k.tensor_core().has_value();
  for (size_t op = 0; op < in.views.size(); op++) {
    const std::string name = tc ? (op == 0 ? "tc_a" : "tc_b") : "tile" + std::to_string(op);
    smem_.push_back(UOp::make(Ops::DEFINE_LOCAL, in.bufs[op]->dtype.base().scalar_type().pointer(true), {},
                              NamedRange{name, 0, stages_ * layout_[op].stage - 1}));
  }
  return true;
}

// The ring: before the loop, steps 0 .. ahead-1 (one commit group each); in the loop, wait for step r, barrier,
// copy step r + ahead, commit. Loads of the stage wait for that commit (after_).
void Staging::plan_copies(const StagingInput& in, int64_t steps) {
  const DType idt = in.reduce_range->dtype;
  const int64_t ahead = stages_ - (deferred_ ? 2 : 1);  // steps a copy runs ahead of its use
  UOpPtr commit;
  for (int64_t st = 0; st < ahead; st++) {
    const UOpPtr gate = UOp::const_(dtypes::bool_, st < steps);
    std::vector<UOpPtr> group;
    for (size_t op = 0; op < in.views.size(); op++) {
      auto c = copies(in, op, ci(st, idt), ci(st, idt), gate, commit);  // after the previous group's commit
      group.insert(group.end(), c.begin(), c.end());
    }
    commit = UOp::make(Ops::ASYNC_COMMIT, dtypes::void_, std::move(group));
  }
  const UOpPtr& r = in.reduce_range;
  UOpPtr wait = UOp::make(Ops::ASYNC_WAIT, dtypes::void_, {commit, r}, int64_t(ahead - 1 + (wgmma_ ? 256 : 0)));
  UOpPtr barrier = UOp::make(Ops::BARRIER, dtypes::void_, {wait});
  const UOpPtr next = r + ci(ahead, idt);
  const UOpPtr gate = simplify(lt(next, steps));
  std::vector<UOpPtr> group;
  for (size_t op = 0; op < in.views.size(); op++) {
    auto c = copies(in, op, simplify(mod(next, stages_)), next, gate, barrier);
    group.insert(group.end(), c.begin(), c.end());
  }
  after_ = UOp::make(Ops::ASYNC_COMMIT, dtypes::void_, std::move(group));
}

// mma.sync operands: LDMATRIX fragments, B's two neighbouring tiles in one where its pair dim allows.
void Staging::plan_fragments(const StagingInput& in) {
  const Kernel& k = in.k;
  // B's pair dim: its innermost (smallest stride) upcast dim that is not the tensor core's, of even size
  const Layout& lb = layout_[1];
  for (size_t i = lb.dims.size(); i-- > 0;) {
    const int d = lb.dims[i];
    if (k.kinds()[size_t(d)] == AxisKind::UPCAST && k.roles()[size_t(d)] == TcRole::NONE && d != k.vector_dim() &&
        k.full_shape()[size_t(d)] % 2 == 0) {
      pair_dim_ = d;
      break;
    }
  }
  for (int op = 0; op < 2; op++) regs_[size_t(op)] = fragment(in, op, after_);
}

// The copies of one step of operand `op`'s tile into stage `slot`: thread tid copies 16-byte units tid, tid + T,
// ... (T threads), unit u being elements 8u .. 8u+7 of the tile in its dims' order.
std::vector<UOpPtr> Staging::copies(const StagingInput& in, size_t op, const UOpPtr& slot, const UOpPtr& step,
                                    const UOpPtr& gate, const UOpPtr& after) const {
  const Kernel& k = in.k;
  const Layout& L = layout_[op];
  const int64_t vec = vec_[op];
  const DType idt = in.reduce_range->dtype;
  const Shape& fs = k.full_shape();
  const UOpPtr tid = thread_id(in);
  const int64_t threads = k.local_size();
  std::vector<UOpPtr> out;
  for (int64_t c = 0; c < L.box / (vec * threads); c++) {
    const UOpPtr e = (tid + ci(c * threads, idt)) * ci(vec, idt);
    // each dim's value: the tile's dims from the unit's element, the reduce loop at `step`, the rest as they are
    std::vector<UOpPtr> value(in.dims);
    UOpPtr sidx = slot * ci(L.stage, idt);
    int64_t inner = 1;
    for (size_t i = L.dims.size(); i-- > 0;) {
      const int d = L.dims[i];
      value[size_t(d)] = mod(idiv(e, ci(inner, idt)), ci(fs[size_t(d)], idt));
      inner *= fs[size_t(d)];
      sidx = sidx + value[size_t(d)] * ci(L.sstride[i], idt);
    }
    // a reduce dim is the loop or a function of it (several loops flattened into one): at `step`
    for (size_t d = 0; d < fs.size(); d++) value[d] = at_step(value[d], in.reduce_range, step);
    // the unit's source and whether a pad mask below hides it (all its elements alike: copies_whole_runs)
    auto [gidx, valid] = to_indexed_uops(k.sts()[view_[op]], value, idt);
    if (L.swizzle) sidx = UOp::alu(Ops::XOR, {sidx, mod(idiv(sidx, ci(64, idt)), ci(8, idt)) * ci(8, idt)});
    std::vector<UOpPtr> src{smem_[op], simplify(sidx), in.bufs[op], simplify(gidx), gate, valid};
    if (after) src.push_back(after);
    out.push_back(UOp::make(Ops::CP_ASYNC, dtypes::void_, std::move(src), vec));
  }
  return out;
}

// One LDMATRIX for operand `op`'s fragment: x4 for A (matrix j = 2 K_HI + M_HI), x2 for B (matrix j = K_HI).
// Lane l = 4g + t gives row l % 8 of matrix l / 8: with row pairs that row is g (its 8 elements are (t, K_LO)),
// with column pairs it is (t, K_LO) = (r / 2, r % 2) (its 8 elements are g).
// Operand op's element in the current step's stage: stage r % S, each tile dim at its shared stride.
UOpPtr Staging::stage_index(const StagingInput& in, size_t op) const {
  const Layout& L = layout_[op];
  const DType idt = in.reduce_range->dtype;
  UOpPtr idx = mod(in.reduce_range, ci(stages_, idt)) * ci(L.stage, idt);
  for (size_t i = 0; i < L.dims.size(); i++) idx = idx + in.dims[size_t(L.dims[i])] * ci(L.sstride[i], idt);
  return idx;
}

int Staging::operand_of(size_t view) const {
  for (size_t i = 0; i < view_.size(); i++)
    if (view_[i] == view) return int(i);
  return -1;
}

std::vector<UOpPtr> Staging::fragment(const StagingInput& in, int op, const UOpPtr& commit) const {
  const Kernel& k = in.k;
  const Layout& L = layout_[size_t(op)];
  const DType idt = in.reduce_range->dtype;
  auto dim = [&](TcRole role) { return in.dims.at(size_t(k.dim_of(role))); };
  const UOpPtr lane = dim(TcRole::LANE_T) + dim(TcRole::LANE_G) * ci(4, idt);
  const UOpPtr j = idiv(lane, ci(8, idt)), row = mod(lane, ci(8, idt));
  std::unordered_map<const UOp*, UOpPtr> value;
  auto set = [&](TcRole role, const UOpPtr& v) { value[dim(role).get()] = v; };
  const int count = op == 0 || pair_dim_ >= 0 ? 4 : 2;
  if (op == 0)
    set(TcRole::M_HI, mod(j, ci(2, idt))), set(TcRole::K_HI, idiv(j, ci(2, idt)));
  else
    set(TcRole::K_HI, mod(j, ci(2, idt)));
  if (op == 1 && pair_dim_ >= 0) {  // matrices 2, 3: the next value of the pair dim
    const UOpPtr& p = in.dims[size_t(pair_dim_)];
    value[p.get()] = p + idiv(j, ci(2, idt));
  }
  if (L.trans) {
    set(TcRole::LANE_G, ci(0, idt));
    set(TcRole::LANE_T, idiv(row, ci(2, idt)));
    set(TcRole::K_LO, mod(row, ci(2, idt)));
  } else {
    set(TcRole::LANE_G, row);
    set(TcRole::LANE_T, ci(0, idt));
    set(TcRole::K_LO, ci(0, idt));
  }
  UOpPtr addr = simplify(substitute(stage_index(in, size_t(op)), [&](const UOp* u) -> UOpPtr {
    auto it = value.find(u);
    return it == value.end() ? nullptr : it->second;
  }));
  const DType elem = k.tensor_core()->tc.in;
  UOpPtr ldm = UOp::make(Ops::LDMATRIX, elem.vec(2 * count), {smem_[size_t(op)], addr, commit},
                         LdmatrixArg{count, L.trans}.pack());
  std::vector<UOpPtr> regs;
  for (int i = 0; i < 2 * count; i++) regs.push_back(UOp::make(Ops::GEP, elem, {ldm}, int64_t(i)));
  return regs;
}

}  // namespace tg
