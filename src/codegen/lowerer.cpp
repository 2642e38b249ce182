// AST -> index math. Each dim of the full shape becomes a RANGE; each view's tracker turns those into a
// buffer index and a validity (shape/indexing.h).
#include "codegen/lowerer.h"

#include <unordered_map>

#include "shape/indexing.h"
#include "tg/error.h"
#include "uop/symbolic.h"

namespace tg {
namespace {

class Lowerer {
 public:
  explicit Lowerer(const Kernel& k) : k_(k) {
    const Shape& fs = k.full_shape();
    for (size_t d = 0; d < fs.size(); d++)
      ranges_.push_back(UOp::make(Ops::RANGE, dtypes::int32, {UOp::const_int(0), UOp::const_int(fs[d])}, int64_t(d)));
  }

  UOpPtr lower(const UOpPtr& ast) {
    std::unordered_map<const UOp*, UOpPtr> done;
    for (const UOp* u : toposort(ast)) done[u] = lower_one(u, done);
    return simplify(done.at(ast.get()));
  }

 private:
  const Kernel& k_;
  std::vector<UOpPtr> ranges_;

  // Index and validity of a view: dims of size 1 in the view (broadcast or reduced) index with 0.
  std::pair<UOpPtr, UOpPtr> index_of(const UOp* view) {
    const ShapeTracker& st = view->get<ShapeTracker>();
    std::vector<UOpPtr> idxs;
    for (size_t d = 0; d < st.shape().size(); d++)
      idxs.push_back(st.shape()[d] == 1 ? UOp::const_int(0) : ranges_.at(d));
    return to_indexed_uops(st, idxs);
  }

  static bool always(const UOpPtr& valid) { return valid->op == Ops::CONST && valid->const_value() != 0; }

  UOpPtr lower_one(const UOp* u, const std::unordered_map<const UOp*, UOpPtr>& done) {
    auto src = [&](size_t i) { return done.at(u->src[i].get()); };
    switch (u->op) {
      case Ops::VIEW: return u->ptr();  // consumed by its user below
      case Ops::DEFINE_GLOBAL: return u->ptr();
      case Ops::LOAD: {
        auto [idx, valid] = index_of(u->src[1].get());
        if (always(valid)) return UOp::make(Ops::LOAD, u->dtype, {src(0), idx});
        return UOp::make(Ops::LOAD, u->dtype, {src(0), idx, valid, UOp::const_(u->dtype, 0)});
      }
      case Ops::CONST: {
        auto c = UOp::make(Ops::CONST, u->dtype, {}, u->arg);
        if (u->src.empty()) return c;
        auto [idx, valid] = index_of(u->src[0].get());
        return always(valid) ? c : where(valid, c, UOp::const_(u->dtype, 0));
      }
      case Ops::STORE: {
        auto [idx, valid] = index_of(u->src[1].get());
        if (always(valid)) return UOp::make(Ops::STORE, dtypes::void_, {src(0), idx, src(2)});
        return UOp::make(Ops::STORE, dtypes::void_, {src(0), idx, src(2), valid});
      }
      case Ops::REDUCE_AXIS: {
        std::vector<UOpPtr> srcs{src(0)};
        for (int64_t a : u->get<ReduceArg>().axes) srcs.push_back(ranges_.at(size_t(a)));
        return UOp::make(Ops::REDUCE, u->dtype, std::move(srcs), int64_t(u->get<ReduceArg>().op));
      }
      case Ops::SINK: {
        std::vector<UOpPtr> srcs;
        for (size_t i = 0; i < u->src.size(); i++) srcs.push_back(src(i));
        return UOp::make(Ops::SINK, dtypes::void_, std::move(srcs));
      }
      default: {
        if (!is_alu(u->op) && u->op != Ops::CAST && u->op != Ops::BITCAST)
          throw Error(std::string("lower: unexpected ") + op_name(u->op) + " in a kernel AST");
        std::vector<UOpPtr> srcs;
        for (size_t i = 0; i < u->src.size(); i++) srcs.push_back(src(i));
        return UOp::make(u->op, u->dtype, std::move(srcs), u->arg);
      }
    }
  }
};

}  // namespace

UOpPtr lower_kernel(const Kernel& k) { return Lowerer(k).lower(k.optimized_ast()); }

}  // namespace tg
