// Symbolic shapes (tg::sint): a tensor shrunk to a bound variable's value has a dim whose size is known at launch.
// Each program is checked against the same program with the value written as a number, at several values and on
// every device of the op suite; one compiled kernel serves every value; sizes are checked over the variables'
// whole ranges; and a TinyJit replays a decoder-like step (a KV cache growing by one row) with each new value.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "../common/expect_error.h"
#include "engine/realize.h"
#include "schedule/schedule.h"
#include "tg/counters.h"
#include "tg/tg.h"

using tg::sint;
using tg::Tensor;
using tg::TinyJit;
using tg::Variable;
using tgtest::expect_error;

namespace {

// The CPU, the interpreter (under EMULATE=CUDA with the CUDA renderer's kernels) and the default device (DEV=CUDA on
// a GPU machine).
std::vector<std::string> devices() {
  std::vector<std::string> d = {"CPU", "INTERP"};
  if (std::find(d.begin(), d.end(), tg::default_device()) == d.end()) d.push_back(tg::default_device());
  return d;
}

void expect_near(const std::vector<float>& got, const std::vector<float>& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); i++) EXPECT_NEAR(got[i], want[i], 1e-4f * (1 + std::abs(want[i]))) << what << " [" << i << "]";
}

// One attention step of a decoder over the first `len` rows of a key/value cache: softmax(q k^T / sqrt(d)) v.
Tensor attend(const Tensor& q, const Tensor& k_cache, const Tensor& v_cache, const sint& len) {
  const sint d = k_cache.shape()[1];
  Tensor k = k_cache.shrink({{0, len}, {0, d}}), v = v_cache.shrink({{0, len}, {0, d}});
  Tensor scores = q.matmul(k.transpose()) / std::sqrt(double(d.value()));
  return scores.softmax(-1).matmul(v);
}

}  // namespace

TEST(SymbolicShapes, SizesAreExpressions) {
  Variable v("start_pos", 1, 10);
  sint a = v.bind(3), b = a + 1;
  EXPECT_TRUE(a.is_symbolic());
  EXPECT_EQ(a.str(), "start_pos");
  EXPECT_EQ(b.vmin(), 2);
  EXPECT_EQ(b.vmax(), 11);
  EXPECT_EQ(b.bound_value(), 4);
  EXPECT_EQ(b - 1, a) << "simplified to the same node";
  EXPECT_EQ((a * 4).bound_value(), 12);
  EXPECT_TRUE(b > a);
  EXPECT_TRUE(a >= 1);
  EXPECT_FALSE(a > 10);
  expect_error([&] { (void)(a > 5); }, "depends on the variables' values");
  expect_error([&] { int64_t n = b; (void)n; }, "a symbolic size (start_pos+1) where a number is needed");
  EXPECT_EQ(sint(6) / 4, 1);
  EXPECT_EQ(sint(-7) / 2, -4) << "floor division, as Python's";
  EXPECT_EQ(smax(a, sint(0)), a);
}

TEST(SymbolicShapes, ShrinkAndReduceMatchTheNumbers) {
  Variable var("n", 1, 12);
  for (const std::string& dev : devices()) {
    Tensor x = Tensor::rand({12, 5}, {.device = dev}).realize();
    for (int64_t n : {1, 4, 12}) {
      SCOPED_TRACE(std::string(dev) + " n=" + std::to_string(n));
      Tensor s = x.shrink({{0, var.bind(n)}, {0, 5}});
      EXPECT_EQ(s.shape()[0].str(), "n");
      Tensor c = x.shrink({{0, n}, {0, 5}});
      expect_near(s.sum(0).tolist<float>(), c.sum(0).tolist<float>(), "sum over n");
      expect_near(s.max(0).tolist<float>(), c.max(0).tolist<float>(), "max over n");
      expect_near((s * 2 + 1).sum(0).tolist<float>(), (c * 2 + 1).sum(0).tolist<float>(), "elementwise then sum");
      expect_near(s.exp().sum(1).max().reshape({1}).tolist<float>(), c.exp().sum(1).max().reshape({1}).tolist<float>(),
                  "a reduce to n values, then over them");
      // a symbolic start: the window [n-1, n)
      Tensor w = x.shrink({{sint(var.bind(n)) - 1, var.bind(n)}, {0, 5}});
      expect_near(w.tolist<float>(), x.shrink({{n - 1, n}, {0, 5}}).tolist<float>(), "row n-1");
    }
  }
}

TEST(SymbolicShapes, AttentionOverAGrowingCache) {
  Variable var("start_pos", 1, 16);
  for (const std::string& dev : devices()) {
    Tensor kc = Tensor::rand({16, 8}, {.device = dev}).realize(), vc = Tensor::rand({16, 8}, {.device = dev}).realize();
    Tensor q = Tensor::rand({1, 8}, {.device = dev}).realize();
    for (int64_t n : {1, 5, 16}) {
      SCOPED_TRACE(std::string(dev) + " start_pos=" + std::to_string(n));
      expect_near(attend(q, kc, vc, var.bind(n)).tolist<float>(), attend(q, kc, vc, n).tolist<float>(), "attention");
    }
  }
}

TEST(SymbolicShapes, OneKernelServesEveryValue) {
  Variable var("n", 1, 64);
  Tensor x = Tensor::rand({64, 4}).realize();
  auto item = [&](int64_t n) {
    tg::Schedule s = tg::create_schedule({x.shrink({{0, var.bind(n)}, {0, 4}}).sum(0).uop()});
    EXPECT_EQ(s.items.size(), 1u);
    return s.items.at(0);
  };
  tg::Context cached({{"SCACHE", 1}});
  const tg::ScheduleCacheStats before = tg::schedule_cache_stats();
  tg::ScheduleItem a = item(3), b = item(40);
  EXPECT_GE(tg::schedule_cache_stats().hits - before.hits, 1) << "the second value takes the stored schedule";
  EXPECT_EQ(a.ast, b.ast) << "the kernel holds the variable, not its value";
  ASSERT_EQ(a.vars.size(), 1u);
  EXPECT_EQ(a.vars[0].value, 3);
  EXPECT_EQ(b.vars[0].value, 40);
  EXPECT_EQ(&tg::get_runner(x.device(), a.ast), &tg::get_runner(x.device(), b.ast));
}

TEST(SymbolicShapes, AssignIntoASymbolicRow) {
  Variable var("start_pos", 0, 7);
  for (const std::string& dev : devices()) {
    Tensor cache = Tensor::zeros({8, 3}, {.device = dev}).contiguous().realize();
    for (int64_t p = 0; p < 8; p++) {
      sint pos = var.bind(p);
      Tensor row = Tensor::full({1, 3}, float(p + 1), {.device = dev});
      cache.shrink({{pos, pos + 1}, {0, 3}}).assign(row).realize();
    }
    std::vector<float> want;
    for (int p = 0; p < 8; p++) want.insert(want.end(), 3, float(p + 1));
    EXPECT_EQ(cache.tolist<float>(), want) << dev;
  }
}

TEST(SymbolicShapes, SizesAreCheckedOverTheWholeRange) {
  Variable var("start_pos", 0, 8);
  Tensor cache = Tensor::zeros({8, 3});
  sint pos = var.bind(2);
  // start_pos + 1 reaches 9 > 8 for start_pos = 8, though 2 + 1 fits
  expect_error([&] { cache.shrink({{pos, pos + 1}, {0, 3}}); }, "over the variables' whole ranges");
  expect_error([&] { cache.shrink({{0, pos + 1}, {0, 3}}); }, "shrink: bounds ((0, (start_pos+1)), (0, 3))");
  EXPECT_NO_THROW(cache.shrink({{0, pos}, {0, 3}}));
  // a symbolic size where an operation needs a number
  Tensor s = cache.shrink({{0, pos}, {0, 3}});
  expect_error([&] { s.reshape({-1}).contiguous().realize().tolist<float>(); }, "start_pos");
}

TEST(SymbolicShapes, TinyJitReplaysADecoderStepWithEachValue) {
  Variable var("start_pos", 0, 15);
  Tensor kc = Tensor::zeros({16, 8}).contiguous().realize(), vc = Tensor::zeros({16, 8}).contiguous().realize();
  Tensor kc_ref = Tensor::zeros({16, 8}).contiguous().realize(), vc_ref = Tensor::zeros({16, 8}).contiguous().realize();
  // One step: write this token's key and value at start_pos, then attend over rows 0..start_pos.
  auto step = [](Tensor& kcache, Tensor& vcache, const Tensor& x, const sint& pos) {
    kcache.shrink({{pos, pos + 1}, {0, 8}}).assign(x * 0.5f).realize();
    vcache.shrink({{pos, pos + 1}, {0, 8}}).assign(x + 1).realize();
    return attend(x, kcache, vcache, pos + 1);
  };
  // Also returned: the keys' scores, of shape (1, start_pos + 1), whose size follows each call's value.
  TinyJit jit([&](const std::vector<Tensor>& in) {
    const sint pos = *in[1].bound_variable();
    Tensor out = step(kc, vc, in[0], pos).contiguous();
    return std::vector<Tensor>{out, in[0].matmul(kc.shrink({{0, pos + 1}, {0, 8}}).transpose()).contiguous()};
  });
  for (int64_t p = 0; p < 8; p++) {
    Tensor x = Tensor::rand({1, 8}).realize();
    std::vector<float> want = step(kc_ref, vc_ref, x, p).tolist<float>();
    const int64_t before = tg::GlobalCounters::kernel_count;
    std::vector<Tensor> got = jit({x, Tensor(var.bind(p))});
    if (jit.calls() > 2) EXPECT_EQ(tg::GlobalCounters::kernel_count - before, int64_t(jit.kernel_count()));
    expect_near(got[0].tolist<float>(), want, "step " + std::to_string(p));
    ASSERT_EQ(got[1].shape()[1].bound_value(), p + 1) << "the call's value, also on a replay";
    expect_near(got[1].reshape({1, p + 1}).tolist<float>(),
                x.matmul(kc_ref.shrink({{0, p + 1}, {0, 8}}).transpose()).tolist<float>(), "scores " + std::to_string(p));
  }
  EXPECT_TRUE(jit.captured());
  expect_near(kc.tolist<float>(), kc_ref.tolist<float>(), "key cache");
}

// Every op either matches the program with numbers (a mean's count is computed from the variables) or throws a tg::Error naming the symbolic size: none computes
// with a wrong size.
TEST(SymbolicShapes, OpsMatchOrRefuseLoudly) {
  Variable var("n", 1, 8);
  Tensor x = Tensor::rand({8, 3}).realize();
  using Op = std::function<Tensor(const Tensor&)>;
  const std::vector<std::pair<const char*, Op>> supported = {
      {"flip", [](const Tensor& t) { return t.flip(0); }},
      {"pad", [](const Tensor& t) { return t.pad({{1, 2}, {0, 0}}); }},
      {"permute", [](const Tensor& t) { return t.permute({1, 0}).contiguous(); }},
      {"max", [](const Tensor& t) { return t.max(0); }},
      {"softmax", [](const Tensor& t) { return t.softmax(0); }},
      {"log_softmax", [](const Tensor& t) { return t.log_softmax(1); }},
      {"expand", [](const Tensor& t) { return t.reshape({t.shape()[0], 1, 3}).expand({t.shape()[0], 2, 3}).contiguous(); }},
      {"sum", [](const Tensor& t) { return t.sum().reshape({1}); }},
      {"matmul", [](const Tensor& t) { return t.transpose().matmul(t); }},
      {"mean", [](const Tensor& t) { return t.mean(0); }},
      {"mean_all", [](const Tensor& t) { return t.mean().reshape({1}); }},
      {"var", [](const Tensor& t) { return t.var(0); }},
  };
  for (int64_t n : {2, 5}) {
    Tensor s = x.shrink({{0, var.bind(n)}, {0, 3}}), c = x.shrink({{0, n}, {0, 3}});
    for (const auto& [name, f] : supported) {
      Tensor a = f(s), b = f(c);
      if (tg::is_symbolic(a.shape())) a = a.reshape(std::vector<int64_t>(b.shape()));
      expect_near(a.tolist<float>(), b.tolist<float>(), std::string(name) + " n=" + std::to_string(n));
    }
    const std::vector<std::pair<const char*, Op>> refused = {
        {"cumsum", [](const Tensor& t) { return t.cumsum(0); }},
        {"argmax", [](const Tensor& t) { return t.argmax(0); }},
        {"cat", [](const Tensor& t) { return Tensor::cat({t, t}, 0); }},
        {"getitem", [](const Tensor& t) { return t[1]; }},
    };
    for (const auto& [name, f] : refused) {
      SCOPED_TRACE(name);
      expect_error([&] { f(s).realize(); }, "a symbolic size");
    }
  }
}
