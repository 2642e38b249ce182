// Variables (include/tg/variable.h): a bound variable as a tensor is a kernel argument. Its values are right at
// every value and on every device, one compiled kernel serves the whole range, a TinyJit replays it with each
// call's value, and every misuse is a tg::Error naming the variable.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "engine/realize.h"
#include "schedule/schedule.h"
#include "../common/expect_error.h"
#include "tg/counters.h"
#include "tg/tg.h"

using tg::Tensor;
using tg::TinyJit;
using tg::Variable;
using tgtest::expect_error;

namespace {

// The first `n` of 0..len-1 kept, the rest 0: the mask a decoder puts over a KV cache of `len` slots.
std::vector<float> first_n(int64_t len, int64_t n) {
  std::vector<float> out;
  for (int64_t i = 0; i < len; i++) out.push_back(i < n ? float(i) : 0.0f);
  return out;
}

Tensor masked(const Tensor& pos) {
  Tensor x = Tensor::arange(0, 10, 1, {.dtype = tg::dtypes::float32});
  return (Tensor::arange(10) < pos).where(x, 0.0f);
}

}  // namespace

TEST(TensorVariable, ValuesAtEveryBinding) {
  Variable n("n", 0, 10);
  for (int64_t k : {0, 1, 4, 9, 10}) {
    EXPECT_EQ(masked(Tensor(n.bind(k))).tolist<float>(), first_n(10, k)) << "n = " << k;
    EXPECT_EQ(Tensor(n.bind(k)).item<int32_t>(), k);
    EXPECT_EQ((Tensor(n.bind(k)) * 3 + Tensor::ones({2}, {.dtype = tg::dtypes::int32})).tolist<int32_t>(),
              std::vector<int32_t>(2, int32_t(3 * k + 1)));
  }
  Tensor t(n.bind(7));
  EXPECT_EQ(t.dtype(), tg::dtypes::int32);
  EXPECT_TRUE(t.shape().empty());
  ASSERT_TRUE(t.bound_variable());
  EXPECT_EQ(t.bound_variable()->var.name, "n");
  EXPECT_EQ(t.bound_variable()->value, 7);
  EXPECT_FALSE(Tensor(7).bound_variable());
  // in a reduce, expanded over a shape, and as a float
  EXPECT_EQ((Tensor(n.bind(4)).expand({3, 2}).sum()).item<int32_t>(), 24);
  EXPECT_FLOAT_EQ((Tensor(n.bind(5)).cast(tg::dtypes::float32) / 2).item<float>(), 2.5f);
}

TEST(TensorVariable, OneKernelServesEveryValue) {
  Variable n("n", 1, 100);
  Tensor x = Tensor::rand({8});
  x.realize();
  tg::Schedule a = tg::create_schedule({(x * Tensor(n.bind(3))).uop()});
  tg::Schedule b = tg::create_schedule({(x * Tensor(n.bind(42))).uop()});
  ASSERT_EQ(a.items.size(), 1u);
  ASSERT_EQ(b.items.size(), 1u);
  EXPECT_EQ(a.items[0].ast, b.items[0].ast) << "the kernel holds the variable, not its value";
  ASSERT_EQ(a.items[0].vars.size(), 1u);
  EXPECT_EQ(a.items[0].vars[0].value, 3);
  EXPECT_EQ(b.items[0].vars[0].value, 42);
  EXPECT_EQ(a.items[0].vars[0].var.name, "n");
  const std::string dev = x.device();
  EXPECT_EQ(&tg::get_runner(dev, a.items[0].ast), &tg::get_runner(dev, b.items[0].ast));
  EXPECT_EQ(tg::get_runner(dev, a.items[0].ast).spec.vars.size(), 1u);
}

TEST(TensorVariable, MisuseIsAnError) {
  expect_error([] { Variable("", 0, 1); }, "needs a name");
  expect_error([] { Variable("i", 3, 2); }, "empty range [3, 2]");
  expect_error([] { Variable("i", 0, int64_t(1) << 40); }, "past int32");
  Variable v("start_pos", 1, 1024);
  expect_error([&] { v.bind(0); }, "start_pos: bind(0) outside its range [1, 1024]");
  expect_error([&] { v.bind(1025); }, "bind(1025)");
  expect_error([&] { Tensor(v.bind(3), {.dtype = tg::dtypes::float32}); }, "int32, not");
  expect_error([&] { Tensor(v.bind(3), {.requires_grad = true}); }, "no gradient");
  expect_error([&] { Tensor(tg::BoundVariable{v, 2000}); }, "outside its range");  // made by hand, not by bind
  // one variable with two values in one kernel
  expect_error([&] { (Tensor(v.bind(2)) + Tensor(v.bind(3))).realize(); }, "bound to 2 and 3");
}

TEST(TinyJit, VariableInputsReplayWithEachValue) {
  Variable pos("pos", 0, 10);
  Tensor w = Tensor::rand({10});
  w.realize();
  TinyJit jit([&](const std::vector<Tensor>& in) {
    return std::vector<Tensor>{masked(in[1]) * in[0] + w, (masked(in[1]) * w).sum()};
  });
  for (int64_t k : {3, 5, 0, 10, 7, 7, 1}) {
    Tensor x = Tensor::rand({10});
    x.realize();
    std::vector<float> want = (masked(Tensor(pos.bind(k))) * x + w).tolist<float>();
    float want_sum = (masked(Tensor(pos.bind(k))) * w).sum().item<float>();
    const int64_t before = tg::GlobalCounters::kernel_count;
    std::vector<Tensor> got = jit({x, Tensor(pos.bind(k))});
    if (jit.calls() > 2) EXPECT_EQ(tg::GlobalCounters::kernel_count - before, int64_t(jit.kernel_count()));
    EXPECT_EQ(got[0].tolist<float>(), want) << "pos = " << k;
    EXPECT_EQ(got[1].item<float>(), want_sum) << "pos = " << k;
  }
  EXPECT_TRUE(jit.captured());
  // on CUDA one graph whose kernels take each replay's value in place
  EXPECT_EQ(jit.graphed(), tg::default_device().rfind("CUDA", 0) == 0);
  Tensor x = Tensor::rand({10});
  expect_error([&] { jit({x, Tensor(Variable("other", 0, 10).bind(2))}); }, "input 1");
  expect_error([&] { jit({x, Tensor(Variable("pos", 0, 20).bind(2))}); }, "pos [0, 10]");
  expect_error([&] { jit({x, Tensor(2)}); }, "captured with variable pos");
  expect_error(
      [&] {
        jit({Tensor(Variable("q", 0, 10).bind(2)), Tensor(pos.bind(2))});
      },
      "input 0 has the value variable q");
  TinyJit twice([](const std::vector<Tensor>& in) { return std::vector<Tensor>{in[0] + in[1]}; });
  twice({Tensor(pos.bind(1)), Tensor(pos.bind(1))});
  expect_error([&] { twice({Tensor(pos.bind(1)), Tensor(pos.bind(2))}); }, "given twice");
}
