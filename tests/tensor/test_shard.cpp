// Tensors spread over several CPU devices (Tensor::shard) against the same programs on one device.
#include <gtest/gtest.h>

#include <random>

#include "engine/buffers.h"
#include "runtime/device.h"
#include "schedule/realized.h"
#include "tg/nn.h"
#include "tg/tg.h"

namespace tg {
namespace {

const std::vector<std::string> kTwo{"CPU", "CPU:1"};
const std::vector<std::string> kThree{"CPU:1", "CPU:2", "CPU:3"};

Tensor random_tensor(const Shape& shape, uint32_t seed, DType dt = dtypes::float32) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-2, 2);
  std::vector<float> v(size_t(prod(shape).value()));
  for (float& x : v) x = dist(rng);
  return Tensor(v, shape, {.device = "CPU"}).cast(dt);
}

void expect_close(const Tensor& got, const Tensor& want, double tol = 1e-5) {
  ASSERT_EQ(got.shape(), want.shape());
  std::vector<double> g = got.tolist<double>(), w = want.tolist<double>();
  ASSERT_EQ(g.size(), w.size());
  for (size_t i = 0; i < g.size(); i++) ASSERT_NEAR(g[i], w[i], tol * (1 + std::abs(w[i]))) << "element " << i;
}

// Every way to place x on a device set: sharded along each axis its size allows, and replicated.
std::vector<Tensor> placements(const Tensor& x, const std::vector<std::string>& devs) {
  std::vector<Tensor> out{x.shard(devs)};
  for (int64_t a = 0; a < x.ndim(); a++)
    if (int64_t(x.shape()[size_t(a)]) % int64_t(devs.size()) == 0) out.push_back(x.shard(devs, a));
  return out;
}

TEST(Shard, DeviceSetsAreSpelledOneWay) {
  EXPECT_EQ(canonical_device("(cpu:0, cpu:1)"), "(CPU, CPU:1)");
  EXPECT_EQ(canonical_device("('CPU', 'CPU:2',)"), "(CPU, CPU:2)");
  EXPECT_THROW(canonical_device("(CPU, CPU:0)"), Error);  // the same device twice
  EXPECT_THROW(canonical_device("(CPU, NOPE)"), Error);
  EXPECT_THROW(canonical_device("CPU:64"), Error);
  EXPECT_EQ(canonical_device("CPU:63"), "CPU:63");
  try {
    get_device("(CPU, CPU:1)");
    FAIL() << "a device set opened as one device";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("set of devices"), std::string::npos) << e.what();
  }
}

TEST(Shard, PartsLiveOnTheirDevices) {
  Tensor x = random_tensor({6, 4}, 1);
  Tensor s = x.shard(kThree, 0).realize();
  EXPECT_EQ(s.device(), "(CPU:1, CPU:2, CPU:3)");
  EXPECT_EQ(s.devices(), kThree);
  ASSERT_EQ(s.shard_axis(), std::optional<int64_t>(0));
  EXPECT_EQ(s.shape(), (Shape{6, 4}));
  const UOpPtr& u = s.uop();
  ASSERT_EQ(u->op, Ops::MULTI);
  for (size_t i = 0; i < 3; i++) {
    const UOp* part = u->src[i + 1].get();
    EXPECT_EQ(part->shape, (Shape{2, 4}));
    ASSERT_EQ(part->op, Ops::VIEW);
    EXPECT_EQ(buffer_device(part->src[0].get()), kThree[i]);
  }
  expect_close(s, x, 0);
  EXPECT_EQ(x.shard(kThree).shard_axis(), std::nullopt);
  EXPECT_EQ(x.shard(kTwo, -1).shard_axis(), std::optional<int64_t>(1)) << "a negative axis counts from the end";
}

TEST(Shard, ElementwiseOnEveryPlacementMatchesOneDevice) {
  Tensor a = random_tensor({4, 6}, 2), b = random_tensor({4, 6}, 3);
  Tensor want = (a * b + a.exp()).maximum(b) - 1;
  for (const Tensor& sa : placements(a, kTwo))
    for (const Tensor& sb : placements(b, kTwo)) {
      Tensor got = (sa * sb + sa.exp()).maximum(sb) - 1;
      EXPECT_EQ(got.device(), "(CPU, CPU:1)");
      expect_close(got, want);
    }
  // broadcasting a smaller operand against a sharded one
  Tensor row = random_tensor({1, 6}, 4);
  expect_close(a.shard(kTwo, 0) + row.shard(kTwo), a + row);
  expect_close(a.shard(kTwo, 1) + row.shard(kTwo, 1), a + row);
}

TEST(Shard, ReducesOverEveryAxisMatchOneDevice) {
  Tensor x = random_tensor({6, 4, 3}, 5);
  for (const auto& devs : {kTwo, kThree})
    for (const Tensor& s : placements(x, devs)) {
      expect_close(s.sum(), x.sum(), 1e-5);
      for (int64_t axis = 0; axis < 3; axis++) {
        expect_close(s.sum(axis), x.sum(axis));
        expect_close(s.max(axis, true), x.max(axis, true));
        expect_close(s.mean(axis), x.mean(axis));
      }
      expect_close(s.softmax(1), x.softmax(1));
      expect_close(s.softmax(0), x.softmax(0));
    }
}

TEST(Shard, AllReducedReplicasAreEqualBitForBit) {
  Tensor x = random_tensor({8, 33}, 6);
  Tensor s = x.shard(kThree, 1).sum(1).realize();  // 33 = 3 x 11: over the sharded axis
  EXPECT_EQ(s.shard_axis(), std::nullopt);
  ASSERT_EQ(s.uop()->op, Ops::MULTI);
  std::vector<std::vector<float>> replicas;
  for (size_t i = 1; i < s.uop()->src.size(); i++)
    replicas.push_back(Tensor(s.uop()->src[i], s.devices()[i - 1]).tolist<float>());
  EXPECT_EQ(replicas[0], replicas[1]);
  EXPECT_EQ(replicas[0], replicas[2]);
  expect_close(s, x.sum(1));
}

TEST(Shard, MovementOpsMoveOrGatherTheAxis) {
  Tensor x = random_tensor({4, 6}, 7);
  for (const Tensor& s : placements(x, kTwo)) {
    expect_close(s.reshape({24}), x.reshape({24}));
    expect_close(s.reshape({2, 2, 6}), x.reshape({2, 2, 6}));
    expect_close(s.reshape({4, 3, 2}), x.reshape({4, 3, 2}));
    expect_close(s.reshape({8, 3}), x.reshape({8, 3}));
    expect_close(s.transpose(), x.transpose());
    expect_close(s.reshape({4, 6, 1}).expand({4, 6, 5}), x.reshape({4, 6, 1}).expand({4, 6, 5}));
    expect_close(s.pad({{1, 2}, {0, 0}}), x.pad({{1, 2}, {0, 0}}));
    expect_close(s.pad({{0, 0}, {3, 1}}), x.pad({{0, 0}, {3, 1}}));
    expect_close(s.shrink({{1, 3}, {0, 6}}), x.shrink({{1, 3}, {0, 6}}));
    expect_close(s.shrink({{0, 4}, {2, 5}}), x.shrink({{0, 4}, {2, 5}}));
    expect_close(s.flip(0), x.flip(0));
    expect_close(s.flip(1), x.flip(1));
    expect_close(s[1], x[1]);
  }
  EXPECT_EQ(x.shard(kTwo, 1).transpose().shard_axis(), std::optional<int64_t>(0));
  EXPECT_EQ(x.shard(kTwo, 0).reshape({2, 2, 6}).shard_axis(), std::optional<int64_t>(0));
  EXPECT_EQ(x.shard(kTwo, 1).reshape({24}).shard_axis(), std::nullopt) << "the axis cannot be kept: gathered";
}

TEST(Shard, MatmulWithEachOperandSharded) {
  Tensor a = random_tensor({6, 4}, 8), w = random_tensor({4, 3}, 9);
  Tensor want = a.matmul(w);
  expect_close(a.shard(kThree, 0).matmul(w.shard(kThree)), want, 1e-5);  // data parallel
  expect_close(a.shard(kTwo).matmul(w.shard(kTwo, 0)), want, 1e-5);      // contraction dim: all-reduce
  expect_close(a.shard(kTwo, 1).matmul(w.shard(kTwo, 0)), want, 1e-5);
  expect_close(a.shard(kThree).matmul(w.shard(kThree, 1)), want, 1e-5);  // output columns
  EXPECT_EQ(a.shard(kThree, 0).matmul(w.shard(kThree)).shard_axis(), std::optional<int64_t>(0));
  EXPECT_EQ(a.shard(kTwo, 1).matmul(w.shard(kTwo, 0)).shard_axis(), std::nullopt);
}

TEST(Shard, IntegerBoolAndHalfValues) {
  Tensor x = random_tensor({4, 4}, 10);
  Tensor xi = (x * 10).cast(dtypes::int32);
  for (const Tensor& s : placements(xi, kTwo)) {
    EXPECT_EQ((s * 3 - 1).sum(0).tolist<int32_t>(), (xi * 3 - 1).sum(0).tolist<int32_t>());
    EXPECT_EQ((s > 2).cast(dtypes::int32).tolist<int32_t>(), (xi > 2).cast(dtypes::int32).tolist<int32_t>());
    EXPECT_EQ((s > 2).transpose().reshape({16}).cast(dtypes::int32).tolist<int32_t>(),
              (xi > 2).transpose().reshape({16}).cast(dtypes::int32).tolist<int32_t>());
  }
  Tensor xh = x.cast(dtypes::float16);
  expect_close(xh.shard(kTwo, 1).sum(1), xh.sum(1), 1e-2);
}

TEST(Shard, ToMovesBetweenOneDeviceAndSets) {
  Tensor x = random_tensor({4, 6}, 11);
  Tensor r = x.to("(CPU:2, CPU:3)");
  EXPECT_EQ(r.device(), "(CPU:2, CPU:3)");
  EXPECT_EQ(r.shard_axis(), std::nullopt);
  Tensor s = x.shard(kTwo, 1);
  Tensor back = s.to("CPU:5");
  EXPECT_EQ(back.device(), "CPU:5");
  expect_close(back, x, 0);
  Tensor moved = s.to("(CPU:2, CPU:3, CPU:4)");
  EXPECT_EQ(moved.shard_axis(), std::optional<int64_t>(1));
  expect_close(moved, x, 0);
  expect_close(Tensor::zeros({4, 2}, {.device = "(CPU, CPU:1)"}) + s.shrink({{0, 4}, {0, 2}}).to("CPU").shard(kTwo),
               x.shrink({{0, 4}, {0, 2}}), 0);
  Tensor made(std::vector<float>{1, 2, 3}, {3}, {.device = "(CPU, CPU:1)"});
  EXPECT_EQ(made.device(), "(CPU, CPU:1)");
  EXPECT_EQ(made.tolist<float>(), (std::vector<float>{1, 2, 3}));
}

TEST(Shard, EmptyAndSizeOneParts) {
  Tensor z = Tensor::zeros({0, 3}, {.device = "CPU"});
  Tensor s = z.shard(kTwo, 0);
  EXPECT_EQ(s.shape(), (Shape{0, 3}));
  EXPECT_EQ((s + 1).sum(0).tolist<float>(), (std::vector<float>{0, 0, 0}));
  Tensor one = random_tensor({2, 5}, 12);
  expect_close(one.shard(kTwo, 0).sum(0), one.sum(0));
  expect_close(one.shard(kTwo, 0).reshape({2, 5, 1}).permute({2, 1, 0}), one.reshape({2, 5, 1}).permute({2, 1, 0}));
}

TEST(Shard, BadShardingIsAnErrorNamingTheShapes) {
  Tensor x = random_tensor({5, 4}, 13);
  try {
    x.shard(kTwo, 0);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("(5, 4)"), std::string::npos) << e.what();
  }
  EXPECT_THROW(x.shard({}, 0), Error);
  EXPECT_THROW(x.shard({"CPU", "CPU"}), Error);
  EXPECT_THROW(x.shard(kTwo, 2), Error);
  EXPECT_THROW(x.shard(kTwo).shard(kTwo), Error);
  Tensor a = random_tensor({4, 4}, 14).shard(kTwo, 0), b = random_tensor({4, 4}, 15).shard({"CPU:1", "CPU:2"}, 0);
  EXPECT_THROW(a + b, Error);                          // different device sets
  EXPECT_THROW(a + random_tensor({4, 4}, 16), Error);  // a set and one device
}

TEST(Shard, GradientsOfShardedLeavesMatchOneDevice) {
  Tensor x = random_tensor({6, 4}, 17), w0 = random_tensor({4, 3}, 18), t = random_tensor({6, 3}, 19);
  auto loss_of = [](const Tensor& x, const Tensor& w, const Tensor& t) {
    return ((x.matmul(w).relu() - t) * 2).square().mean();
  };
  Tensor w = w0.contiguous().realize();
  w.requires_grad_();
  Tensor ref = loss_of(x, w, t);
  ref.backward();
  Tensor ws = w0.shard(kThree).realize();
  ws.requires_grad_();
  Tensor loss = loss_of(x.shard(kThree, 0), ws, t.shard(kThree, 0));
  loss.backward();
  expect_close(loss, ref);
  EXPECT_EQ(ws.grad().device(), "(CPU:1, CPU:2, CPU:3)");
  EXPECT_EQ(ws.grad().shard_axis(), std::nullopt) << "the gradient of a replicated weight is all-reduced";
  expect_close(ws.grad(), w.grad());
  // through shard(): a tensor on one device that is sharded inside the graph
  Tensor v = w0.contiguous().realize();
  v.requires_grad_();
  loss_of(x.shard(kTwo, 1), v.shard(kTwo, 0), t.shard(kTwo)).backward();  // (the contraction split)
  expect_close(v.grad(), w.grad());
  EXPECT_EQ(v.grad().device(), "CPU");
}

TEST(Shard, DataParallelTrainingMatchesOneDevice) {
  // Two identical MLPs, one trained on one device and one with its batch split over three; SGD in place.
  auto make = [](uint32_t seed) {
    std::vector<Tensor> p{random_tensor({8, 16}, seed) * 0.3, random_tensor({16}, seed + 1) * 0.1,
                          random_tensor({16, 4}, seed + 2) * 0.3};
    for (Tensor& t : p) t = t.contiguous().realize();
    return p;
  };
  std::vector<Tensor> one = make(20), many = make(20);
  for (Tensor& t : many) t.shard_(kThree);
  for (auto* ps : {&one, &many})
    for (Tensor& t : *ps) t.requires_grad_();
  Tensor::training = true;
  nn::optim::SGD opt_one(one, 0.1), opt_many(many, 0.1);
  for (int step = 0; step < 4; step++) {
    Tensor x = random_tensor({12, 8}, 100 + step), y = random_tensor({12, 4}, 200 + step);
    auto loss_of = [](const std::vector<Tensor>& p, const Tensor& x, const Tensor& y) {
      return ((x.matmul(p[0]) + p[1]).relu().matmul(p[2]) - y).square().mean();
    };
    opt_one.zero_grad();
    opt_many.zero_grad();
    Tensor l1 = loss_of(one, x, y), l2 = loss_of(many, x.shard(kThree, 0), y.shard(kThree, 0));
    l1.backward();
    l2.backward();
    opt_one.step({l1});
    opt_many.step({l2});
    expect_close(l2, l1, 1e-5);
  }
  Tensor::training = false;
  for (size_t i = 0; i < one.size(); i++) {
    EXPECT_EQ(many[i].device(), "(CPU:1, CPU:2, CPU:3)");
    ASSERT_EQ(many[i].uop()->op, Ops::MULTI) << "the parameters stay realized on their devices";
    expect_close(many[i], one[i], 1e-5);
  }
}

TEST(Shard, BatchNormWithPerDeviceStatisticsMatchesEachPartAlone) {
  // sync_stats = false: each device's part of the batch normalized as if it were the whole batch on one device (what
  // torch's BatchNorm does under DistributedDataParallel); the running statistics the mean of the parts' updates.
  nn::TrainingScope train;
  Tensor x = random_tensor({4, 3, 2, 5}, 50), t = random_tensor({4, 3, 2, 5}, 51);
  auto make = [&] {  // (each its own tensors: shard_ moves them)
    nn::BatchNorm bn(3);
    bn.weight = random_tensor({3}, 52).contiguous().realize().requires_grad_();
    bn.bias = random_tensor({3}, 53).contiguous().realize().requires_grad_();
    return bn;
  };
  nn::BatchNorm local = make(), synced = make(), whole = make();
  std::vector<nn::BatchNorm> halves{make(), make()};
  local.sync_stats = false;
  for (nn::BatchNorm* bn : {&local, &synced})
    for (auto& [name, p] : nn::get_state_dict(*bn)) p.shard_(kTwo);
  Tensor xs = x.shard(kTwo, 0).contiguous().realize().requires_grad_();
  Tensor y = local(xs);
  (y * t.shard(kTwo, 0)).sum().backward();
  std::vector<Tensor> want, want_x_grad;
  for (int64_t h = 0; h < 2; h++) {
    Tensor xh = x.shrink({{2 * h, 2 * h + 2}, {0, 3}, {0, 2}, {0, 5}}).contiguous().realize().requires_grad_();
    want.push_back(halves[size_t(h)](xh));
    (want.back() * t.shrink({{2 * h, 2 * h + 2}, {0, 3}, {0, 2}, {0, 5}})).sum().backward();
    want_x_grad.push_back(xh.grad());
  }
  expect_close(y, Tensor::cat({want[0], want[1]}, 0));
  expect_close(xs.grad(), Tensor::cat({want_x_grad[0], want_x_grad[1]}, 0));
  expect_close(local.weight->grad(), halves[0].weight->grad() + halves[1].weight->grad());
  expect_close(local.bias->grad(), halves[0].bias->grad() + halves[1].bias->grad());
  expect_close(*local.running_mean, (*halves[0].running_mean + *halves[1].running_mean) / 2);
  expect_close(*local.running_var, (*halves[0].running_var + *halves[1].running_var) / 2);
  EXPECT_EQ(local.num_batches_tracked.item<int64_t>(), 1);
  // sync_stats = true (the default): the whole batch's statistics, as on one device
  expect_close(synced(x.shard(kTwo, 0)), whole(x));
  expect_close(*synced.running_var, *whole.running_var);
}


TEST(Shard, JitReplaysAShardedStepInPlace) {
  const std::vector<std::string> devs{"CPU", "CPU:1"};
  Tensor w = Tensor::ones({4, 3}).shard(devs).contiguous().realize();
  const UOpPtr parts = w.uop();
  TinyJit jit([&](const std::vector<Tensor>& in) {
    Tensor y = in[0].matmul(w).sum(0);
    w.assign(w + 0.5f);  // in place: each part's buffer
    return std::vector<Tensor>{y.realize(), w.realize()};
  });
  float wv = 1;
  for (int i = 0; i < 5; i++) {
    Tensor x = (Tensor::ones({4, 4}) * float(i)).shard(devs, 0).contiguous().realize();
    std::vector<Tensor> out = jit({x});
    EXPECT_EQ(out[0].tolist<float>(), std::vector<float>(3, 16.0f * float(i) * wv)) << "call " << i;
    wv += 0.5f;
    EXPECT_EQ(w.tolist<float>(), std::vector<float>(12, wv)) << "call " << i;
    EXPECT_EQ(w.uop(), parts) << "the parameter keeps its buffers";
  }
  EXPECT_TRUE(jit.captured());
}


TEST(Shard, RingAllReduceOfLargeValuesWithoutACollective) {
  // float16 and bool have no collective on CPU devices: past two devices and 256 KiB their all-reduce is a ring of
  // copies (schedule/multi.cpp); its result must be the one-device result, on every device alike.
  const std::vector<std::string> devs{"CPU", "CPU:1", "CPU:2"};
  Tensor x = random_tensor({6, 50001}, 30);
  Tensor h = x.cast(dtypes::float16);
  Tensor s = h.shard(devs, 0).sum(0).realize();
  expect_close(s, h.sum(0), 1e-2);
  for (size_t i = 2; i < s.uop()->src.size(); i++)
    EXPECT_EQ(Tensor(s.uop()->src[i], devs[i - 1]).cast(dtypes::float32).tolist<float>(),
              Tensor(s.uop()->src[1], devs[0]).cast(dtypes::float32).tolist<float>());
  Tensor b = x > 1.5f;
  EXPECT_EQ(b.shard(devs, 0).max(0).cast(dtypes::int32).tolist<int32_t>(),
            b.max(0).cast(dtypes::int32).tolist<int32_t>());
  expect_close(h.shard(devs, 0).max(0), h.max(0), 0);
}


TEST(Shard, JitDataParallelStepMatchesEagerOnOneDevice) {
  // The replay moves each all-reduce down to its first reader, so the gradients' all-reduces run together (one NCCL
  // group on GPUs; here the CPU devices' shared-memory reduce); the values must not change.
  const std::vector<std::string> devs{"CPU", "CPU:1"};
  auto params = [] {
    std::vector<Tensor> p{random_tensor({6, 8}, 40), random_tensor({8}, 41), random_tensor({8, 3}, 42)};
    for (Tensor& t : p) t = t.contiguous().realize().requires_grad_();
    return p;
  };
  std::vector<Tensor> one = params(), many = params();
  for (Tensor& t : many) t.shard_(devs);
  nn::optim::SGD opt_one(one, 0.05), opt_many(many, 0.05);
  auto step = [](std::vector<Tensor>& p, nn::optim::SGD& opt) {
    return [&p, &opt](const std::vector<Tensor>& in) {
      nn::TrainingScope train;
      opt.zero_grad();
      Tensor loss = ((in[0].matmul(p[0]) + p[1]).relu().matmul(p[2]) - in[1]).square().mean();
      loss.backward();
      opt.step({loss});
      return std::vector<Tensor>{loss};
    };
  };
  TinyJit jit_many(step(many, opt_many));
  auto eager_one = step(one, opt_one);
  for (int i = 0; i < 5; i++) {
    Tensor x = random_tensor({10, 6}, 300 + uint32_t(i)), y = random_tensor({10, 3}, 400 + uint32_t(i));
    Tensor l1 = eager_one({x, y})[0];
    Tensor l2 = jit_many({x.shard(devs, 0), y.shard(devs, 0)})[0];
    expect_close(l2, l1, 1e-5);
  }
  EXPECT_TRUE(jit_many.captured());
  for (size_t i = 0; i < one.size(); i++) expect_close(many[i], one[i], 1e-5);
}

}  // namespace
}  // namespace tg
