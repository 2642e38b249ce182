// Collectives of sharded tensors (engine/collective.h): the multi pass's ALLREDUCE items and their merging. Running
// them needs GPUs and NCCL (devrun/bench on the GPU machine); here the pass is told CPU devices have a collective.
#include <gtest/gtest.h>

#include "engine/collective.h"
#include "schedule/multi.h"
#include "schedule/realized.h"
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

}  // namespace
}  // namespace tg
