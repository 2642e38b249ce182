// tg::nn::datasets::mnist on small idx files the test writes itself (plain and gzip), corrupt and hostile
// files, and the progress bar that training loops over those datasets print.
#include <gtest/gtest.h>
#include <unistd.h>
#include <zlib.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>

#include "tg/tg.h"

using tg::Shape;
using tg::Tensor;
namespace fs = std::filesystem;
namespace datasets = tg::nn::datasets;

namespace {

std::vector<uint8_t> idx_bytes(uint8_t type, const std::vector<uint32_t>& dims, const std::vector<uint8_t>& data) {
  std::vector<uint8_t> b = {0, 0, type, uint8_t(dims.size())};
  for (uint32_t d : dims)
    for (int s = 24; s >= 0; s -= 8) b.push_back(uint8_t(d >> s));
  b.insert(b.end(), data.begin(), data.end());
  return b;
}

void write_plain(const fs::path& p, const std::vector<uint8_t>& bytes) {
  std::ofstream f(p, std::ios::binary);
  f.write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
}

void write_gz(const fs::path& p, const std::vector<uint8_t>& bytes) {
  gzFile f = gzopen(p.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  if (!bytes.empty()) {
    ASSERT_EQ(gzwrite(f, bytes.data(), unsigned(bytes.size())), int(bytes.size()));
  }
  gzclose(f);
}

std::vector<uint8_t> read_all(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

// A scratch directory removed at the end of the test.
struct TempDir {
  fs::path path;
  TempDir() {
    path = fs::temp_directory_path() / ("tg_nn_datasets_" + std::to_string(getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
};

// A tiny MNIST: 3 training and 2 test images of 2x3 pixels; pixel value = 10 * image + pixel.
void write_mnist(const fs::path& dir, bool gz) {
  auto images = [](uint32_t n) {
    std::vector<uint8_t> d;
    for (uint32_t i = 0; i < n; i++)
      for (uint8_t p = 0; p < 6; p++) d.push_back(uint8_t(10 * i + p));
    return idx_bytes(0x08, {n, 2, 3}, d);
  };
  auto write = [&](const std::string& name, const std::vector<uint8_t>& b) {
    if (gz) write_gz(dir / (name + ".gz"), b);
    else write_plain(dir / name, b);
  };
  write("train-images-idx3-ubyte", images(3));
  write("train-labels-idx1-ubyte", idx_bytes(0x08, {3}, {7, 0, 9}));
  write("t10k-images-idx3-ubyte", images(2));
  write("t10k-labels-idx1-ubyte", idx_bytes(0x08, {2}, {1, 2}));
}

void expect_error(const std::function<void()>& f, const std::string& fragment) {
  try {
    f();
    ADD_FAILURE() << "no tg::Error (expected one mentioning '" << fragment << "')";
  } catch (const tg::Error& e) {
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

}  // namespace

TEST(NNDatasets, ReadsPlainAndGzipMnist) {
  for (bool gz : {false, true}) {
    TempDir dir;
    write_mnist(dir.path, gz);
    auto [X_train, Y_train, X_test, Y_test] = datasets::mnist(dir.path.string());
    EXPECT_EQ(X_train.shape(), (Shape{3, 1, 2, 3}));
    EXPECT_EQ(X_train.dtype(), tg::dtypes::uint8);
    EXPECT_EQ(Y_train.shape(), (Shape{3}));
    EXPECT_EQ(Y_train.dtype(), tg::dtypes::uint8);
    EXPECT_EQ(X_test.shape(), (Shape{2, 1, 2, 3}));
    EXPECT_EQ(Y_test.tolist<int>(), (std::vector<int>{1, 2}));
    EXPECT_EQ(Y_train.tolist<int>(), (std::vector<int>{7, 0, 9}));
    std::vector<int> x = X_train.tolist<int>();
    EXPECT_EQ(x[0], 0);
    EXPECT_EQ(x[7], 11);
    EXPECT_EQ(x[17], 25);
  }
}

TEST(NNDatasets, ReadIdxChecksHeaderAndSize) {
  TempDir dir;
  fs::path p = dir.path / "f";
  write_plain(p, idx_bytes(0x08, {2, 2}, {1, 2, 3, 4}));
  datasets::IdxFile f = datasets::read_idx(p.string());
  EXPECT_EQ(f.dims, (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(f.data, (std::vector<uint8_t>{1, 2, 3, 4}));

  write_plain(p, {0x12, 0x34, 0x08, 0x01, 0, 0, 0, 1, 5});
  expect_error([&] { datasets::read_idx(p.string()); }, "bad magic");
  write_plain(p, idx_bytes(0x0D, {1}, {0, 0, 0, 0}));  // float data
  expect_error([&] { datasets::read_idx(p.string()); }, "element type 0x0d");
  write_plain(p, idx_bytes(0x08, {}, {}));
  expect_error([&] { datasets::read_idx(p.string()); }, "0 dims");
  write_plain(p, idx_bytes(0x08, {2, 2}, {1, 2, 3}));
  expect_error([&] { datasets::read_idx(p.string()); }, "ends after 3 of 4 bytes");
  write_plain(p, idx_bytes(0x08, {2, 2}, {1, 2, 3, 4, 5}));
  expect_error([&] { datasets::read_idx(p.string()); }, "bytes after");
  write_plain(p, {0, 0, 8});
  expect_error([&] { datasets::read_idx(p.string()); }, "header");
  write_plain(p, {0, 0, 8, 3, 0, 0});
  expect_error([&] { datasets::read_idx(p.string()); }, "header");
  // A header claiming 2^32 * 2^32 bytes is refused before anything is allocated.
  write_plain(p, idx_bytes(0x08, {0xFFFFFFFFu, 0xFFFFFFFFu, 16}, {}));
  expect_error([&] { datasets::read_idx(p.string()); }, "claims more than");
  write_plain(p, {});
  expect_error([&] { datasets::read_idx(p.string()); }, "ends after 0 of 4");
  expect_error([&] { datasets::read_idx((dir.path / "nope").string()); }, "cannot open");
}

// A header claiming 4 GiB (65536 x 65536, at the cap) in a file of a few bytes: refused from the file's
// size before the 4 GiB are allocated and zero-filled (which took seconds and 4 GiB of memory before the
// short read was noticed). Plain and gzip (deflate expands at most ~1032:1).
TEST(NNDatasets, HugeClaimInATinyFileIsRefusedBeforeAllocating) {
  TempDir dir;
  for (bool gz : {false, true}) {
    fs::path p = dir.path / (gz ? "big.gz" : "big");
    std::vector<uint8_t> bytes = idx_bytes(0x08, {65536, 65536}, {1, 2, 3});
    gz ? write_gz(p, bytes) : write_plain(p, bytes);
    auto t0 = std::chrono::steady_clock::now();
    expect_error([&] { datasets::read_idx(p.string()); }, "claims 4294967296 bytes of data but the file has only");
    EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 0.5) << "gz " << gz;
  }
}

TEST(NNDatasets, CorruptOrTruncatedGzip) {
  TempDir dir;
  std::vector<uint8_t> data(5000);
  for (size_t i = 0; i < data.size(); i++) data[i] = uint8_t(i * 7 % 251);
  fs::path p = dir.path / "f.gz";
  write_gz(p, idx_bytes(0x08, {50, 100}, data));
  EXPECT_EQ(datasets::read_idx(p.string()).data, data);
  std::vector<uint8_t> gz = read_all(p);

  // Cut in the middle of the compressed stream.
  write_plain(p, std::vector<uint8_t>(gz.begin(), gz.begin() + ptrdiff_t(gz.size() / 2)));
  EXPECT_THROW(datasets::read_idx(p.string()), tg::Error);
  // Garbage in the deflate data: an error, never a crash (bad data or a bad checksum).
  for (size_t at : {size_t(12), gz.size() / 2, gz.size() - 6}) {
    std::vector<uint8_t> bad = gz;
    for (size_t i = at; i < std::min(at + 4, bad.size()); i++) bad[i] ^= 0xA5;
    write_plain(p, bad);
    EXPECT_THROW(datasets::read_idx(p.string()), tg::Error) << "flipped bytes at " << at;
  }
  // A gzip header and nothing else.
  write_plain(p, std::vector<uint8_t>(gz.begin(), gz.begin() + 10));
  EXPECT_THROW(datasets::read_idx(p.string()), tg::Error);
}

TEST(NNDatasets, MnistRejectsInconsistentFiles) {
  TempDir dir;
  expect_error([&] { datasets::mnist(dir.path.string()); }, "no train-images-idx3-ubyte");
  write_mnist(dir.path, false);
  write_plain(dir.path / "train-labels-idx1-ubyte", idx_bytes(0x08, {2}, {1, 2}));
  expect_error([&] { datasets::mnist(dir.path.string()); }, "2 labels for 3 images");
  write_mnist(dir.path, false);
  write_plain(dir.path / "t10k-images-idx3-ubyte", idx_bytes(0x08, {2, 6}, std::vector<uint8_t>(12)));
  expect_error([&] { datasets::mnist(dir.path.string()); }, "expected 3");
  write_mnist(dir.path, false);
  write_plain(dir.path / "t10k-labels-idx1-ubyte", idx_bytes(0x08, {2, 1}, {1, 2}));
  expect_error([&] { datasets::mnist(dir.path.string()); }, "expected 1");
}

TEST(NNDatasets, FashionMnistFromDebianWhenInstalled) {
  if (!fs::exists(fs::path(datasets::kFashionMnistDir) / "t10k-labels-idx1-ubyte.gz"))
    GTEST_SKIP() << "dataset-fashion-mnist is not installed";
  auto d = datasets::mnist();
  EXPECT_EQ(d.X_train.shape(), (Shape{60000, 1, 28, 28}));
  EXPECT_EQ(d.Y_train.shape(), (Shape{60000}));
  EXPECT_EQ(d.X_test.shape(), (Shape{10000, 1, 28, 28}));
  EXPECT_EQ(d.Y_test.max().item<int>(), 9);
}

// ---- progress bar ----

TEST(NNDatasetsProgress, RendersTinygradsLayout) {
  std::string out;
  tg::Progress bar(70, "train", {.tty = 1, .ncols = 80, .sink = [&](const std::string& s) { out += s; }});
  for (int i = 0; i < 28; i++) bar.update();
  bar.set_postfix("loss: 0.42 acc: 85.10%");
  std::string line = bar.render(14.2);
  EXPECT_EQ(line.rfind("train:  40%|", 0), 0u) << line;
  EXPECT_NE(line.find("| 28/70 [00:14<00:21,  1.97it/s, loss: 0.42 acc: 85.10%]"), std::string::npos) << line;
  // The line fills 80 columns: count code points (each bar cell is one).
  size_t cols = 0;
  for (unsigned char c : line) cols += (c & 0xC0) != 0x80;
  EXPECT_EQ(cols, 80u) << line;
  EXPECT_NE(line.find("█"), std::string::npos);
  EXPECT_EQ(bar.render(3725).find("train:  40%"), 0u);
  EXPECT_NE(bar.render(3725).find("[1:02:05<1:33:07"), std::string::npos) << bar.render(3725);
  bar.close();
  EXPECT_EQ(out.rfind("\r", 0), 0u);  // drawn in place
  EXPECT_EQ(out.back(), '\n');        // and ended with a newline
}

TEST(NNDatasetsProgress, LogsEveryTenthWhenNotATerminal) {
  std::vector<std::string> lines;
  {
    tg::Progress bar(35, "", {.tty = 0, .sink = [&](const std::string& s) { lines.push_back(s); }});
    for (int i = 0; i < 35; i++) bar.update();
  }
  ASSERT_EQ(lines.size(), 10u);
  for (const auto& l : lines) {
    EXPECT_EQ(l.find('\r'), std::string::npos);
    EXPECT_EQ(l.back(), '\n');
  }
  EXPECT_NE(lines[0].find(" 4/35 "), std::string::npos) << lines[0];  // the first tenth
  EXPECT_NE(lines.back().find("100%|"), std::string::npos) << lines.back();
  EXPECT_NE(lines.back().find(" 35/35 "), std::string::npos) << lines.back();

  // Stopped early: the last count is still logged at close; an unknown total shows the count only.
  lines.clear();
  {
    tg::Progress bar(100, "x", {.tty = 0, .sink = [&](const std::string& s) { lines.push_back(s); }});
    bar.update(5);
  }
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_NE(lines[0].find("x:   5%|"), std::string::npos) << lines[0];
  tg::Progress open_ended(0, "", {.tty = 0, .disable = true});
  open_ended.update(3);
  EXPECT_EQ(open_ended.render(1.5), "3it [00:01,  2.00it/s]");
  EXPECT_EQ(open_ended.render(132.3), "3it [02:12, 44.10s/it]");  // slower than 1 it/s: seconds per it
}
