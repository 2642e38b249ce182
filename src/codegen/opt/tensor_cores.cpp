// OptOps.TC: give a matmul-shaped kernel a tensor core (renderer/tensor_core.h).
//
// The kernel must reduce (ADD, in the tensor core's accumulator dtype) products of two loads A and B of its
// input dtype, with an output dim M that B does not depend on, an output dim N that A does not depend on
// and a reduce dim K both do, each a multiple of the tensor core's size. Those dims are split as the
// hardware lays out one warp's work (lane 4g + t):
//
//   M = (.., M_HI 2 [UPCAST], g 8 [LOCAL])         m = 8 * M_HI + g
//   N = (.., t 4 [LOCAL], N_LO 2 [UPCAST])          n = 2 * t + N_LO
//   K = (.., K_HI 2, K_MID 4, K_LO 2 [UNROLL])      k = 8 * K_HI + 2 * K_MID + K_LO
//       (tf32, m16n8k8: no K_LO, k = 4 * K_HI + K_MID)
//
// which is C's layout: a lane holds C's register M_HI * 2 + N_LO at (m, n). A and B hold other elements in
// their registers, so their views are swizzled: in A's view the lane dim t walks K (by 2, as K_MID did)
// instead of N; in B's, g walks N (all 8 columns, as 2 * t + N_LO did) and t walks K. K_MID then indexes
// nothing: the hardware sums over it across the lanes. The lowerer gathers each lane's registers from the
// register dims and emits one WMMA per warp tile (codegen/lowerer.cpp).
#include <algorithm>

#include "codegen/kernel.h"
#include "codegen/opt/tile_knob.h"
#include "tg/context.h"

namespace tg {
namespace {

// tf32 tensor cores for float32 matmuls (10-bit mantissas in the products), as tinygrad's ALLOW_TF32
ContextVar ALLOW_TF32("ALLOW_TF32", 0);

const UOp* strip_cast(const UOp* u) { return u->op == Ops::CAST ? u->src.at(0).get() : u; }

}  // namespace

bool allow_tf32() { return ALLOW_TF32 > 0; }

int64_t Kernel::last_view_stride(size_t i, int d) const {
  const View& v = sts_[i].views.back();
  if (v.mask) return -1;
  if (full_shape_[size_t(d)] == 1) return 0;
  return v.strides[size_t(d)].is_int() ? v.strides[size_t(d)].value() : -1;  // (a stride over variables: none)
}

void Kernel::apply_tc(const Opt& opt) {
  auto fail = [&](const std::string& why) { throw KernelOptError("apply_opt " + opt.repr() + " on " + name() + ": " + why); };
  if (!applied_.empty()) fail("a tensor core must be the first opt");
  if (opt.axis != 0) fail("axis picks the tensor core and must be 0");
  if (!reduce_ || reduce_->get<ReduceArg>().op != Ops::ADD) fail("needs a sum");
  if (reduce_count_ != 1) fail("a multi-reduce kernel");
  for (const ShapeTracker& st : sts_)
    if (st.symbolic()) fail("a view's size or mask depends on a variable");
  // SUM(CAST(MUL(a, b))) or SUM(MUL(CAST(a), CAST(b))) of two loads
  const UOp* mul = strip_cast(reduce_->src.at(0).get());
  if (mul->op != Ops::MUL) fail("needs a sum of products");
  const UOp* la = strip_cast(mul->src.at(0).get());
  const UOp* lb = strip_cast(mul->src.at(1).get());
  if (la->op != Ops::LOAD || lb->op != Ops::LOAD) fail("needs products of two loads");
  const TensorCore* tc = nullptr;
  for (const TensorCore& t : renderer_.tensor_cores())
    if (t.in == la->dtype && t.in == lb->dtype && t.acc == reduce_->dtype && (!t.tf32() || allow_tf32())) tc = &t;
  if (!tc)
    fail("no tensor core for " + la->dtype.repr() + " x " + lb->dtype.repr() + " -> " + reduce_->dtype.repr() +
         (la->dtype == dtypes::float32 ? " (float32 takes tf32 ones with ALLOW_TF32=1)" : ""));
  size_t ia = view_index(la->src.at(1).get()), ib = view_index(lb->src.at(1).get());
  if (ia == ib) fail("A and B read through the same view");
  // The swizzle permutes strides of the last view (the index into the views below it, which may be masked,
  // as a convolution's padded input is): that view must have no mask of its own.
  for (size_t i : {size_t(0), ia, ib})
    if (sts_[i].views.back().mask) fail("needs operands whose last view has no mask");
  if (sts_[0].views.size() != 1) fail("needs a plainly strided output");
  auto stride = [&](size_t i, int d) { return last_view_stride(i, d); };
  // The innermost dims that fit each role.
  int m = -1, n = -1, k = -1;
  for (int d = 0; d < first_reduce(); d++) {
    int64_t sa = stride(ia, d), sb = stride(ib, d), s = full_shape_[size_t(d)];
    if (s <= 0 || stride(0, d) <= 0) continue;
    if (sb == 0 && sa > 0 && s % tc->m == 0) m = d;
    if (sa == 0 && sb > 0 && s % tc->n == 0) n = d;
  }
  for (int d = first_reduce(); d < int(full_shape_.size()); d++)
    if (stride(ia, d) > 0 && stride(ib, d) > 0 && full_shape_[size_t(d)] % tc->k == 0 && full_shape_[size_t(d)] > 0)
      k = d;
  if (m < 0 || n < 0 || k < 0)
    fail("needs M, N and K dims that are multiples of " + std::to_string(tc->m) + ", " + std::to_string(tc->n) + ", " +
         std::to_string(tc->k) + " in " + name());
  split_tc_dims(*tc, ia, ib, m, n, k);
  tc_ = TcSetup{*tc, ia, ib};
  applied_.push_back(opt);
}

// The M, N and K dims split as the warp lays out its work, then A's and B's views swizzled to their registers
// (the comment at the top).
void Kernel::split_tc_dims(const TensorCore& tc, size_t ia, size_t ib, int m, int n, int k) {
  // Split K, then the later of M and N, then the earlier: a split moves only dims after the one split (its
  // new dims join the LOCAL/UPCAST/UNROLL regions after the loops, a remainder of 1 is dropped).
  if (tc.k_lo() > 1) shift_to(k, tc.k_lo(), false, AxisKind::UNROLL, TcRole::K_LO);
  shift_to(k, 4, false, AxisKind::UNROLL, TcRole::K_MID);
  shift_to(k, 2, false, AxisKind::UNROLL, TcRole::K_HI);
  auto split_m = [&] {
    shift_to(m, 8, false, AxisKind::LOCAL, TcRole::LANE_G);
    shift_to(m, 2, false, AxisKind::UPCAST, TcRole::M_HI);
  };
  auto split_n = [&] {
    shift_to(n, 2, false, AxisKind::UPCAST, TcRole::N_LO);
    shift_to(n, 4, false, AxisKind::LOCAL, TcRole::LANE_T);
  };
  if (m > n) split_m(), split_n();
  else split_n(), split_m();
  for (TcRole r : {TcRole::LANE_G, TcRole::LANE_T, TcRole::M_HI, TcRole::N_LO, TcRole::K_HI, TcRole::K_MID, TcRole::K_LO})
    if (dim_of(r) < 0 && (r != TcRole::K_LO || tc.k_lo() > 1))
      throw Error("apply_tc: lost the tensor core dim " + std::to_string(int(r)) + " in " + name());

  // Swizzle A and B to their register layouts.
  const size_t g = size_t(dim_of(TcRole::LANE_G)), t = size_t(dim_of(TcRole::LANE_T));
  const size_t nlo = size_t(dim_of(TcRole::N_LO)), kmid = size_t(dim_of(TcRole::K_MID));
  auto swizzle = [&](size_t i, bool is_b) {
    const View v = sts_[i].views.back();
    Shape st = v.strides;
    st[t] = st[kmid];
    st[kmid] = 0;
    if (is_b) {
      st[g] = st[nlo];
      st[nlo] = 0;
    }
    sts_[i].views.back() = View::create(v.shape, st, v.offset);
  };
  swizzle(ia, false);
  swizzle(ib, true);
}

}  // namespace tg
