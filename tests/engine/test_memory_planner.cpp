// The memory planner of plain schedules (src/engine/memory_planner.h, src/schedule/liveness.h): intermediates no one
// can reach after their realize share memory, and nothing anyone can still reach is ever given away. Every check
// runs with MEMORY_POISON=1 (the shared memory is overwritten with NaN bytes once its schedule has run), so a
// buffer planned while still reachable shows up as NaN in a later read, compared against NO_MEMORY_PLANNER=1.
// PLANNER_MIN_BYTES=0 plans these small graphs too (by default a schedule must write 1 MiB).
#include <gtest/gtest.h>

#include <functional>
#include <random>
#include <vector>

#include "tg/context.h"
#include "tg/counters.h"
#include "tg/tg.h"

using tg::Tensor;

namespace {

Tensor seeded(std::vector<int64_t> shape, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  std::vector<float> v(static_cast<size_t>(n));
  for (float& f : v) f = dist(rng);
  return Tensor(v, tg::Shape(shape));
}

// `run` with the planner (and poisoning) and without: the values it returns must be the same bits.
void expect_same_with_and_without_planner(const std::function<std::vector<std::vector<float>>()>& run) {
  std::vector<std::vector<float>> planned, plain;
  {
    tg::Context ctx({{"MEMORY_POISON", 1}, {"PLANNER_MIN_BYTES", 0}});
    planned = run();
  }
  {
    tg::Context ctx({{"NO_MEMORY_PLANNER", 1}});
    plain = run();
  }
  ASSERT_EQ(planned.size(), plain.size());
  for (size_t i = 0; i < planned.size(); i++) EXPECT_EQ(planned[i], plain[i]) << "value " << i;
}

// Eight chained layers: each activation is read only by the next matmul.
Tensor layers(const Tensor& x, const Tensor& w) {
  Tensor h = x;
  for (int i = 0; i < 8; i++) h = (h.matmul(w) * 0.05f).relu() + 0.01f;
  return h;
}

}  // namespace

// The chain's activations take turns in a few slots: the peak drops, the result does not change.
TEST(MemoryPlanner, ChainedIntermediatesShareMemory) {
  Tensor x = seeded({256, 256}, 1), w = seeded({256, 256}, 2);
  Tensor::realize_all({x, w});
  auto peak = [&](long planner_off) {
    tg::Context ctx({{"NO_MEMORY_PLANNER", planner_off}, {"MEMORY_POISON", 1}});  // (2 MB written: planned)
    tg::GlobalCounters::reset();
    Tensor y = layers(x, w);
    y.realize();
    const int64_t bytes = tg::GlobalCounters::mem_peak - tg::GlobalCounters::mem_used;  // beyond what stays
    return std::make_pair(bytes, y.tolist<float>());
  };
  auto [off_bytes, off_values] = peak(1);
  auto [on_bytes, on_values] = peak(0);
  EXPECT_EQ(on_values, off_values);
  EXPECT_GE(off_bytes, 7 * 256 * 256 * 4) << "without the planner each of the 7 dead activations has its own memory";
  EXPECT_LE(on_bytes, off_bytes / 2) << "with it they share a few slots";
}

// A tensor the caller keeps on an intermediate keeps that intermediate's memory.
TEST(MemoryPlanner, HeldIntermediateKeepsItsValue) {
  expect_same_with_and_without_planner([] {
    Tensor x = seeded({64, 64}, 3), w = seeded({64, 64}, 4);
    Tensor mid = (x.matmul(w) + 1).relu().contiguous();  // (realized: not recomputed from x and w)
    Tensor y = layers(mid, w);
    y.realize();
    return std::vector<std::vector<float>>{y.tolist<float>(), mid.tolist<float>()};
  });
}

// Held through a lazy graph built before the realize: the graph's nodes, and everything below them, stay.
TEST(MemoryPlanner, IntermediateHeldThroughAnotherGraph) {
  expect_same_with_and_without_planner([] {
    Tensor x = seeded({64, 64}, 5), w = seeded({64, 64}, 6);
    Tensor a = (x.matmul(w) * 0.1f).relu().contiguous(), b = (a.matmul(w) * 0.1f).exp().contiguous();
    Tensor c = b.matmul(w).sum(1);
    Tensor later = (a * 2).sum() + b.max();  // reads a and b when it is realized
    c.realize();
    Tensor unrelated = layers(x, w);
    unrelated.realize();
    return std::vector<std::vector<float>>{c.tolist<float>(), later.tolist<float>(), unrelated.tolist<float>()};
  });
}

// backward() after part of the forward graph was realized reads the forward intermediates' buffers.
TEST(MemoryPlanner, BackwardAfterARealizeReadsTheForwardBuffers) {
  expect_same_with_and_without_planner([] {
    Tensor x = seeded({32, 64}, 7);
    Tensor w1 = seeded({64, 64}, 8).requires_grad_(), w2 = seeded({64, 16}, 9).requires_grad_();
    Tensor h = x;
    for (int i = 0; i < 4; i++) h = (h.matmul(w1) * 0.1f).tanh().contiguous();
    Tensor out = h.matmul(w2);
    Tensor loss = (out * out).mean();
    out.realize();  // the forward's intermediates, realized; loss's graph still holds them
    loss.backward();
    Tensor::realize_all({w1.grad(), w2.grad()});
    return std::vector<std::vector<float>>{w1.grad().tolist<float>(), w2.grad().tolist<float>(), loss.tolist<float>()};
  });
}

// A root that is a view of an intermediate's buffer (a reshape, a shrink) keeps that buffer.
TEST(MemoryPlanner, RootsThatViewAnIntermediateKeepIt) {
  expect_same_with_and_without_planner([] {
    Tensor x = seeded({64, 64}, 10), w = seeded({64, 64}, 11);
    Tensor h = layers(x, w);
    Tensor r = h.reshape({32, 128}), s = h.shrink({{0, 8}, {0, 64}}), t = h.transpose();
    Tensor::realize_all({r, s, t});
    Tensor again = layers(x, w);  // the same nodes: the same results, read from the realized buffers
    return std::vector<std::vector<float>>{r.tolist<float>(), s.tolist<float>(), t.tolist<float>(),
                                           again.tolist<float>()};
  });
}

// Two handles on one node, and one tensor passed twice: the other handle still reads the result.
TEST(MemoryPlanner, SharedRootsAndHandles) {
  expect_same_with_and_without_planner([] {
    Tensor x = seeded({64, 64}, 12), w = seeded({64, 64}, 13);
    Tensor y = layers(x, w), same = layers(x, w), copy = y;
    Tensor::realize_all({y, y, copy});
    return std::vector<std::vector<float>>{y.tolist<float>(), same.tolist<float>(), copy.tolist<float>()};
  });
}

// Random graphs of realized and lazy nodes, random handles kept, random orders of realizes.
TEST(MemoryPlanner, RandomGraphsMatchTheUnplannedRun) {
  for (unsigned seed = 0; seed < 16; seed++) {
    expect_same_with_and_without_planner([seed] {
      std::mt19937 rng(seed);
      std::vector<Tensor> pool{seeded({16, 16}, seed * 7 + 1), seeded({16, 16}, seed * 7 + 2)};
      std::vector<std::vector<float>> out;
      for (int step = 0; step < 40; step++) {
        const Tensor& a = pool[rng() % pool.size()];
        const Tensor& b = pool[rng() % pool.size()];
        Tensor n = a;
        switch (rng() % 5) {
          case 0:
            n = (a.matmul(b) * 0.1f).tanh();
            break;
          case 1:
            n = a + b * 0.5f;
            break;
          case 2:
            n = (a - b.sum(1, true) * 0.01f).relu();
            break;
          case 3:
            n = a.transpose() * b.max();
            break;
          default:
            n = (a * b).contiguous();
            break;
        }
        pool.push_back(n);
        if (rng() % 4 == 0) pool.back().realize();
        if (rng() % 6 == 0) out.push_back(pool[rng() % pool.size()].tolist<float>());
        if (pool.size() > 8 && rng() % 2) pool.erase(pool.begin() + long(rng() % pool.size()));  // drop a handle
      }
      for (const Tensor& t : pool) out.push_back(t.tolist<float>());
      return out;
    });
  }
}
