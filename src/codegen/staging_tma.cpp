// Bulk tensor copies (TMA) of WGMMA operands: one thread copies a stage, barriers count its bytes (staging.h).
#include <algorithm>

#include "codegen/staging.h"
#include "renderer/tensor_map.h"
#include "shape/indexing.h"
#include "uop/symbolic.h"

namespace tg {
namespace {

UOpPtr ci(int64_t v, DType dt) { return UOp::const_int(v, dt); }

constexpr int64_t kMaxBoxes = 16;  // boxes (TMA_LOADs a step) an operand's tile may take

}  // namespace

// An operand's tile as boxes of a tensor map: the buffer as a matrix whose rows are the stride of the layout's
// first dim past the 128-byte row, box rows the dims that continue those rows in both memories (up to 256), a box
// per value of the other dims. Needs one view without a mask, strides >= 0, and every dim but the row's stepping
// by whole box rows (so no box row crosses a matrix row).
std::optional<Staging::TmaOperand> Staging::tma_operand(const StagingInput& in, size_t op, const Layout& L) {
  const Kernel& k = in.k;
  const ShapeTracker& st = k.sts()[in.views[op]];
  if (st.views.size() != 1 || !L.swizzle || st.views[0].mask) return std::nullopt;
  const View& v = st.views[0];
  const Shape& fs = k.full_shape();
  const int64_t itemsize = int64_t(in.bufs[op]->dtype.base().scalar_type().itemsize());
  const int64_t width = 128 / itemsize;
  auto gstride = [&](int d) { return fs[size_t(d)] == 1 ? 0 : v.strides[size_t(d)].value(); };
  std::vector<std::pair<int64_t, int>> outer;  // (stride in shared memory, dim) of the dims past the row
  std::vector<int> row_dims;
  int64_t row = 1;
  for (size_t i = 0; i < L.dims.size(); i++) {
    const int d = L.dims[i];
    if (L.sstride[i] >= width) {
      outer.emplace_back(L.sstride[i], d);
    } else {
      if (gstride(d) != L.sstride[i]) return std::nullopt;
      row *= fs[size_t(d)];
      row_dims.push_back(d);
    }
  }
  if (row != width || outer.empty() || v.offset < 0 || v.offset % width != 0) return std::nullopt;
  int64_t last = v.offset;  // the last element the view reaches
  for (int d = 0; d < int(fs.size()); d++) {
    const int64_t s = gstride(d);
    const bool in_row = std::find(row_dims.begin(), row_dims.end(), d) != row_dims.end();
    if (s < 0 || (!in_row && s % width != 0)) return std::nullopt;
    last += (fs[size_t(d)] - 1) * s;
  }
  std::sort(outer.begin(), outer.end());
  TmaOperand t;
  t.cols = gstride(outer[0].second);
  if (t.cols <= 0 || t.cols % width != 0) return std::nullopt;
  int64_t rows = 1;
  size_t i = 0;
  for (; i < outer.size(); i++) {
    const auto [ss, d] = outer[i];
    if (ss != width * rows || gstride(d) != t.cols * rows || rows * fs[size_t(d)] > 256) break;
    rows *= fs[size_t(d)];
  }
  t.smem_offset = {0};
  t.global_offset = {0};
  for (; i < outer.size(); i++) {
    const auto [ss, d] = outer[i];
    std::vector<int64_t> so, go;
    for (int64_t x = 0; x < fs[size_t(d)]; x++)
      for (size_t b = 0; b < t.smem_offset.size(); b++) {
        so.push_back(t.smem_offset[b] + x * ss);
        go.push_back(t.global_offset[b] + x * gstride(d));
      }
    if (int64_t(so.size()) > kMaxBoxes) return std::nullopt;
    t.smem_offset = std::move(so);
    t.global_offset = std::move(go);
  }
  for (int64_t so : t.smem_offset)  // each box starts an atom of the swizzle (1024 bytes)
    if (so * itemsize % 1024 != 0) return std::nullopt;
  const TensorMapArg arg{int64_t(op), itemsize, t.cols, last / t.cols + 1, rows};
  t.map = UOp::make(Ops::TENSOR_MAP, in.bufs[op]->dtype, {in.bufs[op]}, arg.pack());
  return t;
}

bool Staging::plan_tma(const StagingInput& in) {
  const Kernel& k = in.k;
  if (!wgmma_ || !k.renderer().tma()) return false;
  std::vector<TmaOperand> ops;
  int64_t bytes = 0;
  for (size_t op = 0; op < in.views.size(); op++) {
    const int64_t itemsize = int64_t(in.bufs[op]->dtype.base().scalar_type().itemsize());
    if (layout_[op].stage * itemsize % 1024 != 0) return false;
    auto t = tma_operand(in, op, layout_[op]);
    if (!t) return false;
    ops.push_back(std::move(*t));
    bytes += stages_ * layout_[op].stage * itemsize;
  }
  if (bytes + 1024 > k.renderer().shared_memory()) return false;  // the barriers, past the ring's alignment
  tma_ = std::move(ops);
  const DType idt = in.reduce_range->dtype;
  bars_ = UOp::make(Ops::DEFINE_LOCAL, dtypes::uint64.pointer(true), {}, NamedRange{"tma_bar", 0, stages_ - 1});
  leader_ = simplify(lt(thread_id(in), ci(1, idt)));
  return true;
}

// Thread 0 sets up a barrier per stage and copies steps 0 .. ahead-1; each step r waits for its stage's barrier
// (phase r / S, mod 2), then a BARRIER, then thread 0 copies step r + ahead. The stage's WGMMAs follow its copies.
void Staging::plan_tma_copies(const StagingInput& in, int64_t steps) {
  const DType idt = in.reduce_range->dtype;
  const int64_t ahead = stages_ - (deferred_ ? 2 : 1);
  std::vector<UOpPtr> inits;
  for (int64_t s = 0; s < stages_; s++)
    inits.push_back(UOp::make(Ops::MBAR_INIT, dtypes::void_, {bars_, ci(s, idt), leader_}, int64_t(1)));
  UOpPtr last = UOp::make(Ops::BARRIER, dtypes::void_, std::move(inits));
  for (int64_t s = 0; s < ahead; s++)
    last = tma_copies(in, ci(s, idt), ci(s, idt), UOp::const_(dtypes::bool_, s < steps), last);
  const UOpPtr& r = in.reduce_range;
  const UOpPtr parity = simplify(mod(idiv(r, ci(stages_, idt)), ci(2, idt)));
  UOpPtr wait = UOp::make(Ops::MBAR_WAIT, dtypes::void_, {bars_, simplify(mod(r, ci(stages_, idt))), parity, last});
  UOpPtr barrier = UOp::make(Ops::BARRIER, dtypes::void_, {wait});
  const UOpPtr next = r + ci(ahead, idt);
  after_ = tma_copies(in, simplify(mod(next, ci(stages_, idt))), next, simplify(lt(next, ci(steps, idt))), barrier);
}

// Step `step` of both operands into stage `slot`, if `gate`: the leader announces the stage's bytes on its
// barrier, then copies each box. The last copy (later nodes order themselves after it).
UOpPtr Staging::tma_copies(const StagingInput& in, const UOpPtr& slot, const UOpPtr& step, const UOpPtr& gate,
                           const UOpPtr& after) const {
  const Kernel& k = in.k;
  const DType idt = in.reduce_range->dtype;
  const UOpPtr go = simplify(UOp::alu(Ops::AND, {gate, leader_}));
  int64_t bytes = 0;
  for (size_t op = 0; op < tma_.size(); op++)
    bytes += layout_[op].box * int64_t(in.bufs[op]->dtype.base().scalar_type().itemsize());
  UOpPtr last = UOp::make(Ops::MBAR_EXPECT, dtypes::void_, {bars_, slot, go, after}, bytes);
  for (size_t op = 0; op < tma_.size(); op++) {
    const TmaOperand& t = tma_[op];
    // the tile's first element: its dims at 0, the reduce loop at `step`
    std::vector<UOpPtr> value(in.dims);
    for (int d : layout_[op].dims) value[size_t(d)] = ci(0, idt);
    for (auto& x : value) x = at_step(x, in.reduce_range, step);
    const UOpPtr first = to_indexed_uops(k.sts()[view_[op]], value, idt).first;
    for (size_t b = 0; b < t.smem_offset.size(); b++) {
      const UOpPtr e = first + ci(t.global_offset[b], idt);
      const UOpPtr dst = slot * ci(layout_[op].stage, idt) + ci(t.smem_offset[b], idt);
      last = UOp::make(Ops::TMA_LOAD, dtypes::void_,
                       {smem_[op], simplify(dst), t.map, simplify(mod(e, ci(t.cols, idt))),
                        simplify(idiv(e, ci(t.cols, idt))), bars_, slot, go, last});
    }
  }
  return last;
}

}  // namespace tg
