// CPU reductions along contiguous rows (codegen/opt/heuristic.cpp step 1): the reduce dim becomes the vector
// (lanes accumulate apart, added after the loop) instead of a vector of rows gathered with strided loads.
// Row sums, maxes and softmax on random shapes (odd sizes, 1-sized dims, several thread counts) against the
// interpreter.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "codegen/kernel.h"
#include "codegen/opt/heuristic.h"
#include "renderer/cpu_isa.h"
#include "runtime/device.h"
#include "schedule/schedule.h"
#include "tg/context.h"
#include "tg/tg.h"
#include "../common/random_data.h"

using tg::Tensor;

namespace {

void expect_close(const std::vector<float>& want, const std::vector<float>& got, float tol, const std::string& what) {
  ASSERT_EQ(want.size(), got.size()) << what;
  for (size_t i = 0; i < want.size(); i++)
    ASSERT_NEAR(got[i], want[i], tol * (1.0f + std::fabs(want[i]))) << what << " at " << i;
}

}  // namespace

TEST(CpuReduce, RowReductionsAgreeWithInterpreter) {
  const int64_t sizes[] = {1, 3, 16, 17, 64, 100, 256, 1000};
  std::mt19937 g(3);
  for (int threads : {1, 2, 3}) {
    tg::Context ctx({{"THREADS", threads}});
    for (int i = 0; i < 8; i++) {
      const int64_t rows = sizes[g() % std::size(sizes)], cols = sizes[g() % std::size(sizes)];
      auto v = tgtest::random_floats(size_t(rows * cols), uint32_t(i), -3.0f, 3.0f);
      const std::string what = std::to_string(rows) + "x" + std::to_string(cols);
      auto run = [&](const std::string& dev, int op) {
        Tensor x(v, {rows, cols}, {.device = dev});
        Tensor y = op == 0 ? x.sum(1) : op == 1 ? x.max(1) : x.softmax(-1);
        return y.tolist<float>();
      };
      for (int op = 0; op < 3; op++)
        expect_close(run("INTERP", op), run("CPU", op), 1e-5f, what + " op " + std::to_string(op));
    }
  }
}

TEST(CpuReduce, RowSumVectorizesTheReduce) {
  Tensor x = Tensor::rand({256, 1024}, {.device = "CPU"});
  x.realize();
  tg::Schedule s = tg::create_schedule({x.sum(1).uop()});
  tg::Kernel k(s.items.back().ast, tg::get_device("CPU").renderer());
  hand_coded_optimizations(k);
  bool unroll = false;
  for (auto& o : k.applied_opts()) {
    EXPECT_NE(o.op, tg::OptOps::UPCAST) << o.repr();  // no vector of rows
    unroll |= o.op == tg::OptOps::UNROLL && o.amount == tg::cpu_isa().vector_floats();
  }
  EXPECT_TRUE(unroll);
  // a large sum split in two kernels: its partials run along contiguous chunks too
  Tensor big = Tensor::rand({int64_t(1) << 22}, {.device = "CPU"});
  big.realize();
  std::vector<float> v = big.tolist<float>();
  double want = 0;
  for (float f : v) want += f;
  EXPECT_NEAR(big.sum().item<float>(), want, 1e-5 * want);
}

// Attention over a symbolic number of keys (codegen/opt/heuristic.cpp, cpu_symbolic_vectors): q . k vectorizes
// the concrete head dim, probs @ V the output's head dim; the values match the interpreter at several lengths.
TEST(CpuReduce, SymbolicAttentionVectorizesItsConcreteDims) {
  tg::Variable n("start_pos", 1, 64);
  auto attend = [&](const std::string& dev, int64_t len) {
    Tensor k(tgtest::random_floats(64 * 3 * 64, 1), {64, 3, 64}, {.device = dev});
    Tensor v(tgtest::random_floats(64 * 3 * 64, 2), {64, 3, 64}, {.device = dev});
    Tensor q(tgtest::random_floats(3 * 64, 3), {3, 1, 64}, {.device = dev});
    const tg::sint keys = n.bind(len);
    Tensor ks = k.shrink({{0, keys}, {0, 3}, {0, 64}}).permute({1, 2, 0});  // (3, 64, keys)
    Tensor vs = v.shrink({{0, keys}, {0, 3}, {0, 64}}).permute({1, 0, 2});  // (3, keys, 64)
    return (q.matmul(ks) * 0.125f).softmax(-1).matmul(vs);
  };
  tg::Schedule s = tg::create_schedule({attend("CPU", 9).uop()});
  int vectorized = 0;
  for (const tg::ScheduleItem& item : s.items) {
    if (item.ast->op != tg::Ops::SINK) continue;  // (the copies of the inputs)
    tg::Kernel k(item.ast, tg::get_device("CPU").renderer());
    hand_coded_optimizations(k);
    for (auto& o : k.applied_opts())
      vectorized += (o.op == tg::OptOps::UPCAST || o.op == tg::OptOps::UNROLL) && o.amount == tg::cpu_isa().vector_floats();
  }
  EXPECT_GE(vectorized, 2) << "q . k along the head dim and probs @ V along the output's";
  for (int64_t len : {1, 7, 33, 64})
    expect_close(attend("INTERP", len).tolist<float>(), attend("CPU", len).tolist<float>(), 1e-5f,
                 "keys " + std::to_string(len));
}
