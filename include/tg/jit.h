#pragma once
// TinyJit, as tinygrad's: wrap a function of tensors; the first call runs it as usual, the second runs it while
// recording every kernel it launches, and each later call replays those kernels on the new inputs' memory (no
// graph building, scheduling or codegen: the host cost of a call is a few microseconds per kernel).
//
//   tg::TinyJit step([&](const std::vector<tg::Tensor>& in) { return std::vector<tg::Tensor>{model(in[0])}; });
//   for (auto& x : batches) tg::Tensor y = step({x})[0];
//
// What the function does with tensors it did not get as inputs is frozen at capture: constants, weights (their
// memory, not their values: updated weights are seen). Random numbers drawn in it are not: each replay draws the
// next ones, the numbers the same calls would draw without the JIT.
// An input may be a bound variable (tg::Tensor(v.bind(n)), include/tg/variable.h): its kernels take the value as
// an argument, so each replay runs them with the new value (checked against the variable's range), compiled once
// (on CUDA the replay's graph takes a new value in place).
// The outputs of a replay live in the same buffers every call (copy them to keep them). Replays check the inputs
// against the capture (count, shape, dtype, device) and a function whose output is one of its inputs, or that
// ran no kernel, is refused: each a tg::Error naming what differs. JIT=0 runs the function every call.
//
// The intermediate buffers of a capture that nothing outside it can see share memory where their lifetimes do not
// overlap (JIT_PLAN=0: they keep their own).
// On CUDA a replay whose kernels write no input is one CUDA graph per GPU and run of kernels between copies and
// all-reduces (a sharded step: one per GPU between its all-reduces): the new inputs are copied into the captured
// ones on the GPU, then the graphs are launched (JIT=2: no graphs, as tinygrad). Inputs may be sharded tensors.
#include <functional>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "tg/tensor.h"

namespace tg {

class TinyJit {
 public:
  using Fn = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;
  explicit TinyJit(Fn fn);
  std::vector<Tensor> operator()(const std::vector<Tensor>& inputs);

  int64_t calls() const;        // calls so far
  bool captured() const;        // whether later calls replay
  size_t kernel_count() const;  // kernels (and copies) a replay runs
  bool graphed() const;         // whether replays launch them as one device graph (after the first replay)
  // The captured intermediates that share memory (no one else sees them): bytes they took, bytes they take now.
  std::pair<int64_t, int64_t> planned_memory() const;
  void reset();                 // forget the capture: the next call runs the function again, then captures

 private:
  struct State;
  std::shared_ptr<State> s_;
  std::vector<Tensor> capture(const std::vector<Tensor>& in, std::vector<std::string> variable_names);
  std::vector<Tensor> replay(const std::vector<Tensor>& in);
};

}  // namespace tg
