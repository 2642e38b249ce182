// Whole-graph fuzz: random chains of elementwise, movement and reduce ops realized on the CPU (generated C)
// and on the interpreter device must give the same numbers.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>

#include "tg/tg.h"

using tg::Tensor;

namespace {

using Step = std::function<Tensor(const Tensor&, const std::string& device)>;

// One random op, valid for `shape`, which it updates to the result's shape.
Step random_step(std::mt19937& g, tg::Shape& shape) {
  auto pick = [&](int n) { return int(g() % unsigned(n)); };
  size_t rank = shape.size();
  switch (pick(9)) {
    case 0: {  // binary with a fresh random tensor, sometimes broadcast along one dim
      tg::Shape other = shape;
      if (rank && pick(2)) other[size_t(pick(int(rank)))] = 1;
      int64_t n = 1;
      for (auto s : other) n *= s;
      std::vector<float> data(static_cast<size_t>(n));
      for (auto& x : data) x = float(int(g() % 200) - 100) / 50.0f;
      int op = pick(4);
      return [data, other, op](const Tensor& t, const std::string& dev) {
        Tensor o(data, other, {.device = dev});
        if (op == 0) return t + o;
        if (op == 1) return t * o;
        if (op == 2) return t.maximum(o);
        return (t < o).where(t, o);
      };
    }
    case 1: {  // unary
      int op = pick(4);
      return [op](const Tensor& t, const std::string&) {
        if (op == 0) return -t;
        if (op == 1) return t.relu();
        if (op == 2) return (t * 0.25f).exp2();
        return (t * t + 1.0f).sqrt();
      };
    }
    case 2: {  // permute
      if (rank < 2) break;
      std::vector<int64_t> order(rank);
      for (size_t i = 0; i < rank; i++) order[i] = int64_t(i);
      std::shuffle(order.begin(), order.end(), g);
      tg::Shape s;
      for (auto o : order) s.push_back(shape[size_t(o)]);
      shape = s;
      return [order](const Tensor& t, const std::string&) { return t.permute(order); };
    }
    case 3: {  // pad
      tg::PadArg p;
      for (size_t i = 0; i < rank; i++) {
        p.emplace_back(pick(2), pick(3));
        shape[i] += p.back().first + p.back().second;
      }
      return [p](const Tensor& t, const std::string&) { return t.pad(p); };
    }
    case 4: {  // shrink
      tg::PadArg b;
      for (size_t i = 0; i < rank; i++) {
        int64_t lo = shape[i] > 1 ? pick(2) : 0, hi = shape[i] - (shape[i] - lo > 1 ? pick(2) : 0);
        b.emplace_back(lo, hi);
        shape[i] = hi - lo;
      }
      return [b](const Tensor& t, const std::string&) { return t.shrink(b); };
    }
    case 5: {  // flip
      if (rank == 0) break;
      int64_t a = pick(int(rank));
      return [a](const Tensor& t, const std::string&) { return t.flip(a); };
    }
    case 6: {  // reshape: merge the last two dims, or split a dim
      if (rank >= 2 && pick(2)) {
        tg::Shape s(shape.begin(), shape.end() - 2);
        s.push_back(shape[rank - 2] * shape[rank - 1]);
        shape = s;
      } else if (rank >= 1 && rank < 4 && shape[0] % 2 == 0 && shape[0] > 0) {
        tg::Shape s{2, shape[0] / 2};
        s.insert(s.end(), shape.begin() + 1, shape.end());
        shape = s;
      } else {
        break;
      }
      tg::Shape target = shape;
      return [target](const Tensor& t, const std::string&) { return t.reshape(target); };
    }
    case 7: {  // reduce one axis, keepdim
      if (rank == 0) break;
      int64_t a = pick(int(rank));
      int op = pick(2);
      shape[size_t(a)] = 1;
      return [a, op](const Tensor& t, const std::string&) { return op ? t.sum(a, true) : t.max(a, true); };
    }
    case 8: {  // expand a size-1 dim, or force a realize
      for (size_t i = 0; i < rank; i++)
        if (shape[i] == 1) {
          shape[i] = 3;
          tg::Shape target = shape;
          return [target](const Tensor& t, const std::string&) { return t.expand(target); };
        }
      return [](const Tensor& t, const std::string&) { return t.contiguous(); };
    }
  }
  return [](const Tensor& t, const std::string&) { return t; };
}

}  // namespace

TEST(BackendsAgree, RandomGraphsCpuEqualsInterpreter) {
  std::mt19937 g(1234);
  for (int trial = 0; trial < 60; trial++) {
    tg::Shape shape;
    int rank = 1 + int(g() % 3);
    for (int i = 0; i < rank; i++) shape.push_back(1 + int64_t(g() % 4));
    int64_t n = 1;
    for (auto s : shape) n *= s;
    std::vector<float> data(static_cast<size_t>(n));
    for (auto& x : data) x = float(int(g() % 200) - 100) / 50.0f;
    std::vector<Step> steps;
    tg::Shape start = shape;
    int len = 1 + int(g() % 6);
    for (int i = 0; i < len; i++) steps.push_back(random_step(g, shape));
    auto run = [&](const std::string& dev) {
      Tensor t(data, start, {.device = dev});
      for (auto& s : steps) t = s(t, dev);
      return t.tolist<float>();
    };
    auto cpu = run("CPU"), interp = run("INTERP");
    ASSERT_EQ(cpu.size(), interp.size()) << "trial " << trial;
    for (size_t i = 0; i < cpu.size(); i++) {
      if ((std::isnan(cpu[i]) && std::isnan(interp[i])) || cpu[i] == interp[i]) continue;
      ASSERT_NEAR(cpu[i], interp[i], 1e-4 * std::max(1.0f, std::abs(cpu[i]))) << "trial " << trial << " at " << i;
    }
  }
}
