// Tensor::from_blob and Tensor::memory: other libraries' memory used in place, and ours handed out in place. Tests
// that read the memory here put their tensors on the CPU (under DEV=CUDA it would be the GPU's).
#include <gtest/gtest.h>

#include <numeric>

#include "../common/expect_error.h"
#include "tg/tg.h"

using tg::Tensor;

namespace {

std::vector<float> iota(size_t n) {
  std::vector<float> v(n);
  std::iota(v.begin(), v.end(), 0.0f);
  return v;
}

}  // namespace

TEST(FromBlob, KernelsReadTheCallersMemoryInPlace) {
  std::vector<float> v = iota(6);
  Tensor t = Tensor::from_blob(v.data(), {2, 3}, tg::dtypes::float32, "CPU");
  EXPECT_EQ(t.shape(), (tg::Shape{2, 3}));
  EXPECT_EQ((t * 2).tolist<float>(), (std::vector<float>{0, 2, 4, 6, 8, 10}));
  v[5] = 50;  // no copy was made: a later computation sees the change
  EXPECT_EQ(t.sum().item<float>(), 60.0f);
}

TEST(FromBlob, AssignWritesTheCallersMemory) {
  std::vector<int32_t> v{1, 2, 3, 4};
  Tensor t = Tensor::from_blob(v.data(), {4}, tg::dtypes::int32, "CPU");
  t.assign(t * 10).realize();
  EXPECT_EQ(v, (std::vector<int32_t>{10, 20, 30, 40}));
}

TEST(FromBlob, StridesDescribeTransposedAndReversedLayouts) {
  std::vector<float> v = iota(6);  // a 2x3 row-major array
  Tensor tr = Tensor::from_blob(v.data(), {3, 2}, tg::dtypes::float32, "CPU", nullptr, tg::Shape{1, 3});
  EXPECT_EQ(tr.tolist<float>(), (std::vector<float>{0, 3, 1, 4, 2, 5}));
  // Negative strides reach below `data`: start at the last element and walk back.
  Tensor rev = Tensor::from_blob(v.data() + 5, {2, 3}, tg::dtypes::float32, "CPU", nullptr, tg::Shape{-3, -1});
  EXPECT_EQ(rev.tolist<float>(), (std::vector<float>{5, 4, 3, 2, 1, 0}));
  Tensor bcast = Tensor::from_blob(v.data(), {2, 3}, tg::dtypes::float32, "CPU", nullptr, tg::Shape{0, 1});
  EXPECT_EQ(bcast.tolist<float>(), (std::vector<float>{0, 1, 2, 0, 1, 2}));
}

TEST(FromBlob, OwnerLivesAsLongAsTheBuffer) {
  auto storage = std::make_shared<std::vector<double>>(std::vector<double>{1.5, 2.5});
  std::weak_ptr<std::vector<double>> watch = storage;
  Tensor t = Tensor::from_blob(storage->data(), {2}, tg::dtypes::float64, "CPU", storage);
  storage.reset();
  EXPECT_FALSE(watch.expired());
  EXPECT_EQ(t.sum().item<double>(), 4.0);
  t = Tensor::zeros({1});
  EXPECT_TRUE(watch.expired());
}

TEST(FromBlob, EmptyShapesNeedNoData) {
  Tensor t = Tensor::from_blob(nullptr, {0, 3}, tg::dtypes::float32, "CPU");
  EXPECT_EQ(t.shape(), (tg::Shape{0, 3}));
  EXPECT_EQ(t.sum(0).tolist<float>(), (std::vector<float>{0, 0, 0}));
}

TEST(FromBlob, BadArgumentsNameTheProblem) {
  float x = 0;
  auto fails_with = [](auto f, const std::string& part) {
    try {
      f();
      ADD_FAILURE() << "no error, expected one mentioning " << part;
    } catch (const tg::Error& e) {
      EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
    }
  };
  fails_with([&] { Tensor::from_blob(&x, {-1}, tg::dtypes::float32, "CPU"); }, "negative dimension");
  fails_with(
      [&] {
        Tensor::from_blob(&x, {1, 1}, tg::dtypes::float32, "CPU", nullptr, tg::Shape{1});
      },
      "expected one per dim");
  fails_with([&] { Tensor::from_blob(nullptr, {2}, tg::dtypes::float32, "CPU"); }, "null data");
  fails_with([&] { Tensor::from_blob(&x, {1}, tg::dtypes::float32, "INTERP"); }, "cannot share memory");
  fails_with(
      [&] {
        Tensor::from_blob(&x, {2, 2}, tg::dtypes::float32, "CPU", nullptr, tg::Shape{INT64_MAX, 1});
      },
      "overflow");
}

TEST(Memory, RealizedTensorsAreSharedInPlace) {
  Tensor t = (Tensor::arange(6).reshape({2, 3}).cast(tg::dtypes::float32) + 1).to("CPU");  // (whatever DEV says)
  tg::MemoryView m = t.memory();
  EXPECT_EQ(m.shape, (tg::Shape{2, 3}));
  EXPECT_EQ(m.strides, (tg::Shape{3, 1}));
  EXPECT_EQ(m.device, "CPU");
  EXPECT_TRUE(m.host());
  EXPECT_EQ(m.device_type, 1);  // DLPack's kDLCPU
  EXPECT_EQ(m.device_id, 0);
  EXPECT_FALSE(m.readonly);
  auto* p = static_cast<float*>(m.data);
  EXPECT_EQ(std::vector<float>(p, p + 6), (std::vector<float>{1, 2, 3, 4, 5, 6}));
  p[0] = 100;  // the tensor's own buffer
  EXPECT_EQ(t.tolist<float>()[0], 100.0f);
  tg::MemoryView again = t.memory();
  EXPECT_EQ(again.data, m.data);
}

TEST(Memory, StridedViewsAreSharedWithTheirStrides) {
  Tensor base = Tensor::arange(12).reshape({3, 4}).to("CPU").contiguous();  // (host memory to read here)
  base.realize();
  Tensor view = base.permute({1, 0}).shrink({{1, 3}, {0, 3}});  // 2x3, a window of the same buffer
  tg::MemoryView m = view.memory();
  tg::MemoryView b = base.memory();
  EXPECT_EQ(m.shape, (tg::Shape{2, 3}));
  EXPECT_EQ(m.strides, (tg::Shape{1, 4}));
  EXPECT_EQ(static_cast<int32_t*>(m.data) - static_cast<int32_t*>(b.data), 1);
  auto at = [&](int i, int j) { return static_cast<int32_t*>(m.data)[i * m.strides[0] + j * m.strides[1]]; };
  EXPECT_EQ(at(0, 0), 1);
  EXPECT_EQ(at(1, 2), 10);
}

TEST(Memory, PaddedViewsAreSharedAsAContiguousCopy) {
  Tensor base = Tensor::ones({2}, {.device = "CPU"});
  base.realize();
  tg::MemoryView m = base.pad({{1, 1}}).memory();
  EXPECT_EQ(m.strides, (tg::Shape{1}));
  auto* p = static_cast<float*>(m.data);
  EXPECT_EQ(std::vector<float>(p, p + 4), (std::vector<float>{0, 1, 1, 0}));
}

TEST(Memory, OwnerKeepsTheBufferAfterTheTensorIsGone) {
  tg::MemoryView m;
  {
    Tensor t = Tensor::full({3}, 7.0f, {.device = "CPU"});
    m = t.memory();
  }
  auto* p = static_cast<float*>(m.data);
  EXPECT_EQ(std::vector<float>(p, p + 3), (std::vector<float>{7, 7, 7}));
}

TEST(Memory, RoundTripsThroughFromBlob) {
  Tensor t = Tensor::arange(4).cast(tg::dtypes::float32);
  tg::MemoryView m = t.memory();
  Tensor u = Tensor::from_blob(m.data, m.shape, m.dtype, m.device, m.owner, m.strides);
  EXPECT_EQ((u * u).tolist<float>(), (std::vector<float>{0, 1, 4, 9}));
}

TEST(Memory, PrivateDevicesRefuse) {
  Tensor t = Tensor::ones({2}, {.device = "INTERP"});
  EXPECT_THROW(t.memory(), tg::Error);
}

// Each backend declares where its buffers live in DLPack's terms (runtime/device.cpp's table): host memory is the
// CPU's (one device for every id), CUDA's type is 2, and memory no device of this build has is a tg::Error.
TEST(Memory, DevicesDeclareTheirMemoryInDLPacksTerms) {
  EXPECT_EQ(tg::device_for_memory(1, 0), "CPU");
  EXPECT_EQ(tg::device_for_memory(1, 3), "CPU");
  EXPECT_EQ(tg::device_for_memory(2, 0), "CUDA");  // (a name only: opening it is what needs a GPU)
  tgtest::expect_error([] { tg::device_for_memory(4, 0); }, "DLPack device type 4");
  tgtest::expect_error([] { tg::device_for_memory(0, 0); }, "DLPack device type 0");
  EXPECT_EQ(Tensor::ones({2}).to("HOST").memory().device_type, 1);
}
