#pragma once
// Kernel: a kernel AST plus one ShapeTracker per buffer view, all reshaped to one full shape whose
// last dims are the reduce dims. Optimizations (Opt) reshape/permute these trackers; the kernel name
// (E_16, r_2 ...) is read off the final shape.
#include <string>
#include <vector>

#include "renderer/renderer.h"
#include "uop/uop.h"

namespace tg {

enum class OptOps { UPCAST, UNROLL, LOCAL, GROUP, GROUPTOP, TC, PADTO, NOLOCALS, SWAP, THREAD };
struct Opt {
  OptOps op;
  int axis;
  int amount;
  std::string repr() const;  // Opt(op=OptOps.UPCAST, axis=0, amount=4)
};

class Kernel {
 public:
  Kernel(const UOpPtr& ast, const Renderer& renderer);

  const UOpPtr& ast() const { return ast_; }
  const Shape& full_shape() const { return full_shape_; }
  int first_reduce() const { return first_reduce_; }  // dims [first_reduce, n) are reduced
  bool has_reduce() const { return reduce_ != nullptr; }
  const std::vector<ShapeTracker>& sts() const { return sts_; }
  const std::vector<Opt>& applied_opts() const { return applied_; }

  // Default heuristics (skipped under NOOPT=1).
  void hand_coded_optimizations();
  // The AST with every VIEW replaced by this kernel's (reshaped) tracker and the reduce axes renumbered.
  UOpPtr optimized_ast() const;
  // "r_2", "E_16": the plain name (not yet made unique) and the colored one for DEBUG output.
  std::string name() const;
  std::string colored_name() const;

 private:
  UOpPtr ast_;
  const Renderer& renderer_;
  std::vector<const UOp*> views_;  // the AST's VIEW nodes, output first, in a fixed order
  std::vector<ShapeTracker> sts_;  // their trackers, as reshaped by the kernel
  const UOp* reduce_ = nullptr;
  Shape full_shape_;
  int first_reduce_ = 0;
  std::vector<Opt> applied_;

  void permute_reduce_last();
  void merge_dims();
};

}  // namespace tg
