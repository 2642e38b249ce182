// Convolutions over a flattened channels-last image (tensor/conv_flat.h): on a device with tensor cores (CUDA, or
// INTERP with EMULATE=CUDA in the op suite) conv2d takes the path and its values and gradients match a float32
// conv on the CPU; elsewhere it does not apply. The kernel it makes reads the input through a pad mask that the
// shared-memory copies turn into zeros.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "../common/random_data.h"
#include "codegen/kernel.h"
#include "codegen/opt/heuristic.h"
#include "codegen/linearize.h"
#include "codegen/lowerer.h"
#include "renderer/cuda.h"
#include "runtime/device.h"
#include "schedule/schedule.h"
#include "tensor/conv_flat.h"
#include "tg/context.h"
#include "tg/tg.h"

using tg::Tensor;

namespace {

struct Case {
  int64_t n, c, h, w, o, kh, kw;
  tg::PadArg pads;  // (top, bottom), (left, right)
};

// CONV_FLAT for this thread (2: wherever the path applies, however small), restored after.
struct ConvFlat {
  explicit ConvFlat(long v) : var(*tg::ContextVar::find("CONV_FLAT")), old(var.value()) { var.set(v); }
  ~ConvFlat() { var.set(old); }
  tg::ContextVar& var;
  long old;
};

bool device_has_fp16_tensor_cores() {
  const tg::Renderer& r = tg::get_device(tg::default_device()).renderer();
  bool tc = false;
  for (const auto& t : r.tensor_cores()) tc |= t.in == tg::dtypes::float16;
  return tc && r.async_copies();
}

Tensor half_tensor(const tg::Shape& s, unsigned seed) {
  int64_t n = 1;
  for (int64_t v : s) n *= v;
  return Tensor(tgtest::random_floats(size_t(n), seed), s).half();
}

void expect_close(const std::vector<float>& got, const std::vector<float>& want, double tol, const char* what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); i++)
    ASSERT_LE(std::fabs(got[i] - want[i]), tol * (1 + std::fabs(want[i]))) << what << " at " << i;
}

}  // namespace

TEST(ConvFlat, MatchesFloatConvOnTheCpu) {
  const Case cases[] = {
      {2, 64, 10, 10, 64, 3, 3, {{1, 1}, {1, 1}}},  // WGMMA, A staged through the pad mask
      {1, 16, 9, 7, 24, 3, 3, {{1, 1}, {1, 1}}},    // mma.sync
      {1, 32, 7, 9, 16, 5, 5, {{2, 2}, {2, 2}}},   {3, 8, 5, 6, 8, 1, 1, {{0, 0}, {0, 0}}},  // 1x1
      {1, 64, 6, 9, 64, 3, 2, {{0, 2}, {1, 0}}},  // kh != kw, pads on one side
      {1, 64, 6, 6, 64, 3, 3, {{0, 0}, {0, 0}}},  // no padding
  };
  const bool tc = device_has_fp16_tensor_cores();
  ConvFlat on(2);
  unsigned seed = 1;
  for (const Case& k : cases) {
    Tensor x = half_tensor({k.n, k.c, k.h, k.w}, seed++), w = half_tensor({k.o, k.c, k.kh, k.kw}, seed++);
    Tensor b = half_tensor({k.o}, seed++);
    auto flat = tg::flat_window_conv2d(x, w, k.pads, 1, {1, 1}, {1, 1});
    ASSERT_EQ(flat.has_value(), tc) << "the path applies exactly where there are fp16 tensor cores";
    const std::vector<int64_t> pads = {k.pads[1].first, k.pads[1].second, k.pads[0].first, k.pads[0].second};
    const auto want = x.float_().to("CPU").conv2d(w.float_().to("CPU"), b.float_().to("CPU"), 1, {1}, {1}, pads);
    const auto got = x.conv2d(w, b, 1, {1}, {1}, pads);
    ASSERT_EQ(got.shape(), want.shape());
    expect_close(got.float_().tolist<float>(), want.tolist<float>(), 2e-2, "conv2d");
    if (flat)
      expect_close(flat->float_().tolist<float>(),
                   (want - b.float_().to("CPU").reshape({1, k.o, 1, 1})).tolist<float>(), 2e-2, "flat");
  }
}

TEST(ConvFlat, GradientsMatchTheDirectConv) {
  ConvFlat on(2);
  Tensor x = half_tensor({2, 16, 6, 5}, 7), w = half_tensor({16, 16, 3, 3}, 8);
  x.requires_grad_();
  w.requires_grad_();
  Tensor g = half_tensor({2, 16, 6, 5}, 9);
  (x.conv2d(w, std::nullopt, 1, {1}, {1}, {1}) * g).sum().backward();
  Tensor xf = x.detach().float_().to("CPU"), wf = w.detach().float_().to("CPU");
  xf.requires_grad_();
  wf.requires_grad_();
  (xf.conv2d(wf, std::nullopt, 1, {1}, {1}, {1}) * g.float_().to("CPU")).sum().backward();
  expect_close(x.grad().float_().tolist<float>(), xf.grad().tolist<float>(), 3e-2, "x.grad");
  expect_close(w.grad().float_().tolist<float>(), wf.grad().tolist<float>(), 3e-2, "w.grad");
}

// The kernel of a conv with 64 channels on Hopper: one WGMMA per warpgroup and step, A copied through the pad
// mask (the copies' `valid` is not a constant), nothing loaded from global memory inside the loop but the copies.
TEST(ConvFlat, HopperKernelStagesThePaddedInput) {
  tg::CUDARenderer cuda("sm_90");
  Tensor x = Tensor::empty({2, 64, 10, 10}, {.dtype = tg::dtypes::float16});
  Tensor w = Tensor::empty({64, 64, 3, 3}, {.dtype = tg::dtypes::float16});
  ConvFlat on(2);
  auto out = tg::flat_window_conv2d(x, w, {{1, 1}, {1, 1}}, 1, {1, 1}, {1, 1});
  if (!device_has_fp16_tensor_cores()) {
    EXPECT_FALSE(out.has_value());  // the kernel is checked where the op suite runs on CUDA and INTERP EMULATE=CUDA
    return;
  }
  ASSERT_TRUE(out.has_value());
  tg::Schedule s = tg::create_schedule({out->uop()});
  const auto reduce = std::find_if(s.items.begin(), s.items.end(), [](const tg::ScheduleItem& it) {
    for (const tg::UOp* u : tg::toposort(it.ast))
      if (u->op == tg::Ops::REDUCE_AXIS) return true;
    return false;
  });
  ASSERT_NE(reduce, s.items.end());
  tg::Kernel k(reduce->ast, cuda);
  hand_coded_optimizations(k);
  auto uops = tg::linearize_kernel(tg::lower_kernel(k));
  int wgmma = 0, masked_copies = 0;
  for (const auto& u : uops) {
    wgmma += u->op == tg::Ops::WGMMA;
    masked_copies += u->op == tg::Ops::CP_ASYNC && u->src.at(5)->op != tg::Ops::CONST;
  }
  EXPECT_GT(wgmma, 0);
  EXPECT_GT(masked_copies, 0);
}
