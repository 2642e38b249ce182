#pragma once
// Gradients given by hand for a node whose own graph differentiates into slow kernels. A convolution's
// forward graph is a window view of its input times its weight, summed; differentiated op by op, its input
// gradient becomes a sum over output channels into a (batch, cin, oy, ox, ky, kx) buffer folded back onto the
// input with div/mod index math (two kernels at 15-25 GFLOPS on the CPU). The same gradient is a convolution
// of the output gradient with the flipped weight, which takes the fast conv path. An entry says: "the
// gradient of `out` reaches `inputs` through `fn`", and compute_gradient then skips the nodes in between.
#include <functional>
#include <optional>
#include <vector>

#include "tg/tensor.h"
#include "uop/uop.h"

namespace tg {

// fn(d(root)/d(out), inputs) gives one gradient per input (nullopt: none flows there), each of its input's
// shape. The inputs come back as tensors of the nodes they had when the entry was made.
using GradientFn =
    std::function<std::vector<std::optional<Tensor>>(const Tensor& grad, const std::vector<Tensor>& inputs)>;

// Inputs are held weakly (out's graph holds them while out lives), so an entry never keeps a batch of
// activations alive after its step; fn must capture no tensors for the same reason.
struct CustomGradient {
  std::vector<std::weak_ptr<const UOp>> inputs;
  std::vector<std::string> devices;
  GradientFn fn;
};

// Gives out's node a hand-written gradient; every input must be in out's graph. Nodes are interned, so an
// equal graph built elsewhere shares it: fn must be the exact derivative of out's graph. The entry lives as
// long as the node does.
void set_custom_gradient(const Tensor& out, const std::vector<Tensor>& inputs, GradientFn fn);

// The entry of a node, or null.
std::shared_ptr<const CustomGradient> custom_gradient(const UOp* node);

}  // namespace tg
