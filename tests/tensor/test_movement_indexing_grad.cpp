// Gradients of the extra movement ops and the indexing ops, against finite differences (tests/common/gradcheck.h).
// Index tensors are fixed data (no gradient); duplicates are included on purpose, so that gradients must add up.
#include <gtest/gtest.h>

#include "../common/gradcheck.h"
#include "tg/tg.h"

using tg::Slice;
using tg::Tensor;
using tgtest::expect_grad_close_random;
using X = std::vector<Tensor>;

namespace {
Tensor ints(std::vector<int32_t> v, tg::Shape s) { return Tensor(v, s); }
}  // namespace

TEST(MovementExtraGrad, ReshapesRepeatAndRoll) {
  expect_grad_close_random([](const X& x) { return x[0].unsqueeze(1).squeeze().flatten(0, 1).unflatten(0, {3, 2}); },
                           {{2, 1, 3}});
  expect_grad_close_random([](const X& x) { return x[0].repeat({2, 1, 3}); }, {{2, 3}}, 1);
  expect_grad_close_random([](const X& x) { return x[0].roll({1, -2}, {0, 1}); }, {{3, 4}}, 2);
}

TEST(MovementExtraGrad, CatStackSplitChunk) {
  expect_grad_close_random([](const X& x) { return Tensor::cat({x[0], x[1], x[0]}, 1); }, {{2, 3}, {2, 1}}, 3);
  expect_grad_close_random([](const X& x) { return Tensor::stack({x[0], x[1] * 2}, -1); }, {{2, 3}, {2, 3}}, 4);
  expect_grad_close_random(
      [](const X& x) {
        auto p = x[0].split(std::vector<int64_t>{1, 3}, 1);
        auto c = x[0].chunk(2, 0);
        return p[1].sum(1) * p[0].squeeze(1) + c[1].sum(1);
      },
      {{2, 4}}, 5);
}

TEST(MovementExtraGrad, PadModes) {
  for (const std::string mode : {"constant", "reflect", "replicate", "circular"}) {
    SCOPED_TRACE(mode);
    expect_grad_close_random([&](const X& x) { return x[0].pad({{1, 2}, {2, -1}}, mode, 0.5); }, {{3, 4}}, 6);
  }
}

TEST(IndexingGrad, SlicesAndTensorIndices) {
  expect_grad_close_random(
      [](const X& x) { return x[0][{Slice(std::nullopt, std::nullopt, -2), tg::None, 1, Slice(1, std::nullopt, 2)}]; },
      {{5, 3, 4}}, 7);
  expect_grad_close_random([](const X& x) { return x[0][{ints({2, 0, 2, -1}, {2, 2}), Slice(1)}]; }, {{3, 4}}, 8);
  expect_grad_close_random([](const X& x) { return x[0][{Slice(), ints({1, 1, 0}, {3}), ints({2, 0, 2}, {3})}]; },
                           {{2, 3, 4}}, 9);
  expect_grad_close_random([](const X& x) { return x[0][{ints({1, 0}, {2}), Slice(), ints({3, 3}, {2})}]; },
                           {{2, 3, 4}}, 10);
}

TEST(IndexingGrad, GatherScatterMaskedFillTri) {
  Tensor idx = ints({0, 2, 2, 1, 0, 0}, {2, 3});
  expect_grad_close_random([&](const X& x) { return x[0].gather(1, idx); }, {{2, 4}}, 11);
  Tensor sidx = ints({0, 2, 2, 1, 1, 0}, {2, 3});
  for (const std::string reduce : {"", "add", "multiply"}) {
    SCOPED_TRACE(reduce);
    expect_grad_close_random([&](const X& x) { return x[0].scatter(1, sidx, x[1], reduce); }, {{2, 4}, {2, 3}}, 12);
  }
  expect_grad_close_random([](const X& x) { return x[0].masked_fill(x[0] > 0.3, 2.0); }, {{3, 4}}, 13);
  expect_grad_close_random([](const X& x) { return x[0].tril(-1) + x[0].triu(2); }, {{3, 4}}, 14);
}
