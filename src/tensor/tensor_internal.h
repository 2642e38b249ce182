#pragma once
// Helpers shared by the Tensor implementation files (not public).
#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "tg/tensor.h"
#include "uop/movement.h"
#include "uop/uop.h"

namespace tg {

struct Tensor::Data : std::enable_shared_from_this<Tensor::Data> {
  // A bool that, when set, also enters its tensor in the registry backward() searches for leaves (tinygrad's
  // all_tensors, narrowed to the tensors that want a gradient), so any code may simply assign it.
  class GradFlag {
   public:
    explicit GradFlag(Data* owner) : owner_(owner) {}
    GradFlag(const GradFlag&) = delete;
    GradFlag& operator=(const GradFlag& o) { return *this = bool(o); }
    GradFlag& operator=(bool on);  // autograd.cpp
    operator bool() const { return on_; }  // NOLINT: reads as the bool it stands for

   private:
    Data* owner_;
    std::atomic<bool> on_ = false;  // read by backward() in any thread (the leaf search)
  };

  // The node, written only by the thread using the tensor, under uop_mu; backward() in another thread reads
  // it (its leaf search looks at every tensor that requires grad) through uop_snapshot().
  UOpPtr uop;
  std::mutex uop_mu;
  void set_uop(UOpPtr u) {
    std::lock_guard<std::mutex> lock(uop_mu);
    uop = std::move(u);
  }
  UOpPtr uop_snapshot() {
    std::lock_guard<std::mutex> lock(uop_mu);
    return uop;
  }
  std::string device;
  GradFlag requires_grad{this};
  std::shared_ptr<Data> grad;  // the accumulated gradient (a lazy tensor), or null

  // The live tensors whose requires_grad is set (autograd.cpp).
  static std::vector<std::shared_ptr<Data>> requiring_grad();
};

// The device a tensor is made on: TensorOptions::device canonicalized, or the default device when it is "".
std::string device_or_default(const std::string& device);
// Size relations that hold for every value of the variables in them (tinygrad checks symbolic shapes the same way
// only where it can decide; here an undecided one is refused). Plain comparisons for integers.
bool always_le(const sint& a, const sint& b);
bool same_size(const sint& a, const sint& b);  // equal for every value: the same int or expression, or a - b == 0
bool bounds_symbolic(const PadArg& p);
// A size as a 0-d int32 tensor: a constant, or the expression over its bound variables (their values reach the
// kernel as arguments). Throws for an expression op it cannot build.
Tensor sint_tensor(const sint& s, const std::string& device);
std::string fmt_pairs(const PadArg& p);  // "((1, 2), (0, 0))", for pad / shrink errors
// Normalize a possibly negative axis; throws "<op>: axis A is out of range for shape S".
int64_t normalize_axis(const char* op, int64_t axis, const Shape& shape);
// A CONST of `dtype` on `device`, viewed (broadcast) to `shape`.
UOpPtr const_uop(double value, DType dtype, const std::string& device, const Shape& shape);
// The same from a C++ number: an integer into an int dtype keeps all 64 bits (2^64 - 1 as uint64, int64 near 2^63).
UOpPtr const_uop(const ConstValue& value, DType dtype, const std::string& device, const Shape& shape);
// Values made on the host first (arange, rand's counters): more bytes than the machine's physical memory is
// a tg::Error naming `what` and the size, checked before allocating (an allocator may abort instead of
// throwing bad_alloc, as ASan's does, and a near-miss would only swap).
void check_host_bytes(const std::string& what, int64_t bytes);
// d(root)/d(target) for each target given d(root)/d(root) = root_grad, as lazy tensors (gradient_rules.cpp,
// tinygrad's compute_gradient). Targets are matched as themselves or as the node realized into them;
// nullopt where no path leads from root to the target.
std::vector<std::optional<Tensor>> compute_gradient(const Tensor& root, const Tensor& root_grad,
                                                    const std::vector<UOpPtr>& targets);

}  // namespace tg
