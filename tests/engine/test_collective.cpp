// Collectives of sharded tensors (engine/collective.h): the multi pass's ALLREDUCE items, their merging, and their
// order in a TinyJit replay. NCCL needs GPUs (devrun/bench on the GPU machine); here CPU devices have a collective.
#include <gtest/gtest.h>

#include "engine/collective.h"
#include "engine/replay_plan.h"
#include "schedule/multi.h"
#include "schedule/realized.h"
#include "tg/nn.h"
#include "tg/tg.h"

namespace tg {
namespace {

TEST(Collective, CudaSetsWithNcclAndCpuSetsHaveOne) {
  EXPECT_TRUE(has_collective({"CPU", "CPU:1"}, dtypes::float32));
  EXPECT_TRUE(has_collective({"CPU:2", "CPU:1", "CPU"}, dtypes::int64));
  EXPECT_FALSE(has_collective({"CPU", "CPU:1"}, dtypes::float16));  // (those all-reduce through copies)
  EXPECT_FALSE(has_collective({"CPU", "LLVM"}, dtypes::float32));
  EXPECT_FALSE(has_collective({"CUDA"}, dtypes::float32));          // one device: nothing to reduce
  EXPECT_FALSE(has_collective({"CUDA", "CUDA:1"}, dtypes::bool_));  // NCCL has no bool
  EXPECT_FALSE(has_collective({"CUDA", "CUDA:1"}, dtypes::int16));
}

TEST(Collective, ReduceOverTheShardedAxisIsOneItemAfterMerging) {
  Tensor x = Tensor::ones({6, 4}, {.device = "CPU"}).shard({"CPU", "CPU:1", "CPU:2"}, 0).contiguous().realize();
  Tensor y = x.sum(0);
  auto yes = [](const std::vector<std::string>&, DType) { return true; };
  const MultiLowered lowered = lower_multi({y.uop()}, yes);
  ASSERT_EQ(lowered.flat.size(), 3u);
  for (size_t i = 0; i < 3; i++) {  // (sum(0) is the reduce reshaped to (4,))
    ASSERT_EQ(lowered.flat[i]->op, Ops::RESHAPE);
    const UOpPtr& ar = lowered.flat[i]->src[0];
    ASSERT_EQ(ar->op, Ops::ALLREDUCE);
    EXPECT_EQ(ar->get<ReduceArg>().axes, std::vector<int64_t>{int64_t(i)});
    EXPECT_EQ(ar->shape, (Shape{1, 4}));
    EXPECT_EQ(ar->src.size(), 4u) << "its device, then every device's part";
  }
  Schedule sched = create_schedule(lowered.flat);
  size_t collectives = 0, kernels_before = sched.items.size();
  std::vector<ScheduleItem> merged = merge_collectives(sched.items);
  for (const ScheduleItem& item : merged) {
    if (item.ast->op != Ops::ALLREDUCE) continue;
    collectives++;
    ASSERT_EQ(item.outputs, 3u);
    ASSERT_EQ(item.bufs.size(), 6u);
    EXPECT_EQ(item.ast->src.at(0)->get<std::string>(), "(CPU, CPU:1, CPU:2)");
    for (size_t i = 0; i < 3; i++) {
      EXPECT_EQ(buffer_device(item.bufs[i].get()), i == 0 ? "CPU" : "CPU:" + std::to_string(i)) << "result " << i;
      EXPECT_EQ(buffer_device(item.bufs[3 + i].get()), buffer_device(item.bufs[i].get())) << "part " << i;
    }
  }
  EXPECT_EQ(collectives, 1u);
  EXPECT_EQ(merged.size(), kernels_before - 2);
  // A schedule that needs one device's result only still runs the whole collective (the others into new buffers).
  std::vector<ScheduleItem> one;
  for (const ScheduleItem& item : sched.items)
    if (item.ast->op != Ops::ALLREDUCE || item.ast->get<ReduceArg>().axes[0] == 1) one.push_back(item);
  std::vector<ScheduleItem> alone = merge_collectives(one);
  const ScheduleItem& c = alone.back().ast->op == Ops::ALLREDUCE ? alone.back() : alone.front();
  ASSERT_EQ(c.ast->op, Ops::ALLREDUCE);
  EXPECT_EQ(c.outputs, 3u);
  EXPECT_EQ(buffer_device(c.bufs[0].get()), "CPU");
  EXPECT_EQ(buffer_device(c.bufs[2].get()), "CPU:2");
}

TEST(Collective, AReplayAllReducesAStepsGradientsAsOneGroup) {
  // The schedule puts each parameter's update right after its gradient's all-reduce; a replay holds the updates
  // back so the all-reduces (the gradients' and the loss's) are one rendezvous, between two runs of kernels.
  const std::vector<std::string> devs{"CPU", "CPU:1"};
  std::vector<Tensor> p{Tensor::ones({6, 8}) * 0.1f, Tensor::ones({8}), Tensor::ones({8, 3}) * 0.2f};
  for (Tensor& t : p) t = t.shard(devs).contiguous().realize().requires_grad_();
  nn::optim::SGD opt(p, 0.05);
  Tensor x = Tensor::ones({10, 6}).shard(devs, 0).contiguous().realize();
  Tensor y = Tensor::zeros({10, 3}).shard(devs, 0).contiguous().realize();
  std::vector<ScheduleItem> items;
  {
    ScheduleCapture capture;
    nn::TrainingScope train;
    opt.zero_grad();
    Tensor loss = ((x.matmul(p[0]) + p[1]).relu().matmul(p[2]) - y).square().mean();
    loss.backward();
    opt.step({loss});
    items = std::move(capture.items);
  }
  size_t alternations = 0;  // collectives with a kernel right after them, in the schedule's order
  for (size_t i = 0; i + 1 < items.size(); i++)
    alternations += items[i].ast->op == Ops::ALLREDUCE && items[i + 1].ast->op != Ops::ALLREDUCE;
  EXPECT_GT(alternations, 1u) << "the schedule already groups them: this test shows nothing";
  const ReplayShape shape = ReplayPlan(std::move(items), {}, {}).shape();
  EXPECT_EQ(shape.collectives, 4u) << "three gradients and the loss";
  EXPECT_EQ(shape.groups, 1u);
  EXPECT_EQ(shape.runs, 2u) << "forward and backward; the updates";
}

}  // namespace
}  // namespace tg
