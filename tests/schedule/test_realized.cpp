// The realized table (src/schedule/realized.h): a node realized by one schedule is read, not computed again, by
// every graph that holds it; and once a buffer it was computed from is overwritten, a graph built afterwards that
// spells the same node computes it again from the new contents (a graph built before keeps the old value, as
// tinygrad's graphs keep the buffer a realize gave them).
#include <gtest/gtest.h>

#include <vector>

#include "tg/counters.h"
#include "tg/jit.h"
#include "tg/tg.h"

using tg::Tensor;

// An intermediate realized inside a larger graph is read back from its buffer: no kernel runs for it again.
TEST(Realized, IntermediateIsReadNotRecomputed) {
  Tensor x = Tensor::randn({32, 32});
  x.realize();
  Tensor mid = (x.matmul(x) + 1).relu().contiguous();
  Tensor y = (mid.matmul(x) * 2).sum();
  y.realize();
  tg::GlobalCounters::reset();
  std::vector<float> got = mid.tolist<float>();
  EXPECT_EQ(tg::GlobalCounters::kernel_count, 0) << "mid was realized with y";
  std::vector<float> xs = x.tolist<float>();
  for (int i = 0; i < 32; i += 7)
    for (int j = 0; j < 32; j += 5) {
      double want = 1;
      for (int k = 0; k < 32; k++) want += double(xs[size_t(i * 32 + k)]) * xs[size_t(k * 32 + j)];
      EXPECT_NEAR(got[size_t(i * 32 + j)], std::max(want, 0.0), 1e-4) << i << "," << j;
    }
}

// w * 2 realized, w overwritten, then w * 2 built again: the new contents, while `keep` (built before) keeps the
// old w * 2.
TEST(Realized, AGraphBuiltAfterAnAssignSeesTheNewContents) {
  Tensor w = Tensor(std::vector<float>{1, 2}).contiguous().realize();
  Tensor a = w * 2;
  Tensor keep = a + 1;
  a.realize();
  w.assign(w + 1).realize();
  EXPECT_EQ((w * 2).tolist<float>(), (std::vector<float>{4, 6}));
  EXPECT_EQ(keep.tolist<float>(), (std::vector<float>{3, 5}));
  EXPECT_EQ(a.tolist<float>(), (std::vector<float>{2, 4}));
}

// The same, with the read and the overwrite in one schedule (the read runs first), and through a matmul whose
// reduce is realized (the training-loop case: a loss read with item(), then an optimizer step).
TEST(Realized, ReadAndOverwriteInOneSchedule) {
  Tensor w = Tensor(std::vector<float>{1, 2, 3, 4}, {2, 2}).contiguous().realize();
  Tensor x = Tensor(std::vector<float>{1, 0, 0, 1}, {2, 2}).contiguous().realize();
  std::vector<Tensor> holds;  // keep each step's product node (and its realized value) alive
  for (int step = 0; step < 3; step++) {
    Tensor prod = x.matmul(w);
    holds.push_back(prod * 1);
    const float before = w.sum().item<float>();
    w.assign(w + 1);
    Tensor::realize_all({prod, w});
    EXPECT_EQ(prod.sum().item<float>(), before) << "step " << step << ": the product of the old w";
    EXPECT_EQ(x.matmul(w).sum().item<float>(), before + 4) << "step " << step << ": the product of the new w";
  }
}

// An ASSIGN that spells the same node as one realized before (still held) runs again.
TEST(Realized, AnAssignSpelledAgainRunsAgain) {
  Tensor x = Tensor(std::vector<float>{10, 20}).contiguous().realize();
  Tensor w = Tensor(std::vector<float>{0, 0}).contiguous().realize();
  Tensor hold = w.assign(x * 2) * 1;  // holds the ASSIGN node
  w.realize();
  w.assign(w + 1).realize();
  EXPECT_EQ(w.tolist<float>(), (std::vector<float>{21, 41}));
  w.assign(x * 2).realize();
  EXPECT_EQ(w.tolist<float>(), (std::vector<float>{20, 40}));
}

// A TinyJit replay overwrites its outputs: a value realized from the last call's output is not the new one's.
TEST(Realized, AReplayOverwritesWhatWasRealizedFromItsOutputs) {
  tg::TinyJit jit([](const std::vector<Tensor>& in) { return std::vector<Tensor>{(in[0] * 3).contiguous()}; });
  std::vector<Tensor> holds;  // keep each call's y * 2 node alive
  for (int call = 1; call <= 4; call++) {
    Tensor x = Tensor(std::vector<float>{float(call), 1}).contiguous().realize();
    Tensor y = jit({x})[0];
    Tensor z = y * 2;
    holds.push_back(z + 0);
    z.realize();
    EXPECT_EQ(z.tolist<float>(), (std::vector<float>{6.0f * float(call), 6})) << "call " << call;
  }
  EXPECT_EQ(holds[0].tolist<float>(), (std::vector<float>{6, 6})) << "built before the next call: the old value";
}

// Movement ops that fold away (a pad and a shrink back, as diagonal() of a 1x1 does) are not recorded as realized
// with their source: backward() would take them for the leaf itself and add its gradient twice.
TEST(Realized, AMovementThatFoldsAwayIsNotTheLeaf) {
  Tensor x = Tensor(std::vector<float>{1.5f}, {1, 1});
  x.requires_grad_();
  Tensor d = x.diagonal();
  EXPECT_EQ(d.tolist<float>(), std::vector<float>{1.5f});  // realizes x's copy to the device on the way
  (d + 1).square().mean().backward();
  EXPECT_EQ(x.grad().tolist<float>(), std::vector<float>{5.0f});
}
