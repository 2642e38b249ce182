#include "codegen/exact_products.h"

#include "uop/pattern.h"

namespace tg {
namespace {

bool is_16bit_float(DType dt) { return dt == dtypes::float16 || dt == dtypes::bfloat16; }

UOpPtr widen_product(const Captures& m, void*) {
  const UOpPtr &r = m["r"], &cast = m["cast"], &mul = m["mul"];
  const DType wide = cast->dtype, narrow = mul->dtype;
  if (r->get<ReduceArg>().op != Ops::ADD || !is_16bit_float(narrow) || !wide.is_float() || wide.itemsize() < 4 ||
      wide.count != 1)
    return nullptr;
  UOpPtr exact = UOp::make(Ops::MUL, wide, {mul->src[0]->cast(wide), mul->src[1]->cast(wide)});
  return UOp::make(Ops::REDUCE_AXIS, r->dtype, {exact}, r->arg);
}

const PatternMatcher& pm_exact_products() {
  static const PatternMatcher pm({
      // a sum of 16-bit float products accumulated in a wider float: widen the factors (the product is exact)
      {UPat::op(Ops::REDUCE_AXIS,
                {UPat::op(Ops::CAST, {UPat::op(Ops::MUL, {UPat::var("a"), UPat::var("b")}, "mul")}, "cast")}, "r"),
       widen_product},
  });
  return pm;
}

}  // namespace

UOpPtr exact_products(const UOpPtr& ast) { return graph_rewrite("exact_products", ast, pm_exact_products()); }

}  // namespace tg
