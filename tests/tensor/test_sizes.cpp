// Shapes and byte counts past int64, and tensors too large for memory: each is a tg::Error that names the
// op and the size. Before: ones({2^40, 2^40}).numel() was 0, empty({2^31, 2^31}) realized on a 64-byte
// buffer, arange(2^62) wrote past a 0-byte host vector (SIGSEGV), and arange/rand threw std:: exceptions.
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <string>

#include "tg/tg.h"

using tg::Tensor;

namespace {

constexpr int64_t P(int e) { return int64_t(1) << e; }

// The tg::Error message of f ("" when nothing was thrown); any other exception fails the test.
std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const tg::Error& e) {
    return e.what();
  }
  return "";
}

void expect_error(const std::function<void()>& f, const std::string& op, const std::string& detail) {
  std::string msg = error_of(f);
  EXPECT_NE(msg.find(op), std::string::npos) << "message: " << msg;
  EXPECT_NE(msg.find(detail), std::string::npos) << "message: " << msg;
}

}  // namespace

TEST(Sizes, ElementCountPastInt64IsRefusedWhereTheShapeIsMade) {
  expect_error([] { Tensor::ones({P(40), P(40)}); }, "full: shape (1099511627776, 1099511627776)", "2^63-1 elements");
  expect_error([] { Tensor::zeros({P(40), P(40)}).numel(); }, "full", "2^63-1 elements");
  EXPECT_EQ(error_of([] { Tensor::ones({1, 16}).expand({P(40), 16}).reshape({-1}); }), "");  // 2^44 fits
  EXPECT_EQ(Tensor::ones({1, 16}).expand({P(40), 16}).numel(), P(44));
  expect_error([] { Tensor::ones({1, 1}).expand({P(40), P(40)}); }, "EXPAND", "2^63-1 elements");
  expect_error([] { Tensor::ones({1}).pad({{P(62), P(62)}}); }, "PAD", "past int64");
}

TEST(Sizes, ByteCountPastInt64IsRefused) {
  expect_error([] { Tensor::empty({P(31), P(31)}).realize(); }, "empty: shape (2147483648, 2147483648)",
               "4 bytes: more than 2^63-1 bytes");
  // 2^62 int8 elements fit; the same shape as float64 does not.
  Tensor x = Tensor::ones({1}, {.dtype = tg::dtypes::int8}).expand({P(62)});
  EXPECT_EQ(x.numel(), P(62));
  expect_error([&] { x.cast(tg::dtypes::float64); }, "", "more than 2^63-1 bytes");
  EXPECT_EQ(error_of([] { Tensor(std::vector<float>{}, {0, P(62), P(62)}); }), "");  // a 0 dim: empty, fine
}

TEST(Sizes, HostSideCreationIsATgError) {
  expect_error([] { Tensor::arange(P(62)); }, "arange", "more than 2^63-1 bytes");
  expect_error([] { Tensor::arange(P(61)); }, "arange", "more than 2^63-1 bytes");
  expect_error([] { Tensor::arange(P(44)); }, "arange: 17592186044416 elements of", "do not fit in host memory");
  expect_error([] { Tensor::rand({P(61)}); }, "rand", "more than 2^63-1 bytes");
  expect_error([] { Tensor::rand({P(40)}); }, "rand", "random words");
  expect_error([] { Tensor::rand({P(33)}); }, "rand", "random words");
}

TEST(Sizes, TensorTooLargeForTheDeviceIsATgErrorNamingItsSize) {
  // 4 TiB: a valid shape, more memory than any test machine has.
  expect_error([] { Tensor::full({P(42)}, 1, {.dtype = tg::dtypes::int8}).contiguous().realize(); },
               "4398046511104 bytes", "out of memory");
}
