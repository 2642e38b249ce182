// BEAM in the engine (engine/beam.h): kernels searched with BEAM=2 compute what the plain loops (NOOPT) compute,
// on the CPU and on the interpreter; the knobs (BEAM, JITBEAM) and their errors. Odd sizes keep the action space
// (and the test time) small.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <functional>

#include "../common/random_data.h"
#include "../common/scoped_cache_dir.h"
#include "codegen/kernel.h"
#include "codegen/opt/heuristic.h"
#include "engine/beam.h"
#include "engine/beam_timer.h"
#include "runtime/device.h"
#include "schedule/schedule.h"
#include "tg/context.h"
#include "tg/jit.h"
#include "tg/tg.h"

using tg::Tensor;

namespace {

using tgtest::ScopedCacheDir;

Tensor input(const tg::Shape& shape, uint32_t seed, const std::string& dev) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  Tensor t(tgtest::random_floats(size_t(n), seed), shape, {.device = dev});
  t.realize();
  return t;
}

using Graph = std::function<Tensor(const std::string& dev)>;

void expect_beam_matches_noopt(const Graph& g, const std::string& dev) {
  try {
    tg::get_device(dev);
  } catch (const tg::Error& e) {
    GTEST_SKIP() << dev << " is not available here: " << e.what();
  }
  ScopedCacheDir cache;
  std::vector<float> plain, beamed;
  {
    tg::Context ctx({{"NOOPT", 1}});
    plain = g(dev).tolist<float>();
  }
  const int64_t searches = tg::beam_searches();
  {
    tg::Context ctx({{"BEAM", 2}});
    beamed = g(dev).tolist<float>();
  }
  EXPECT_GT(tg::beam_searches(), searches) << "BEAM=2 searched nothing";
  ASSERT_EQ(plain.size(), beamed.size());
  for (size_t i = 0; i < plain.size(); i++)
    ASSERT_NEAR(plain[i], beamed[i], 1e-4 * (1 + std::abs(plain[i]))) << "element " << i << " on " << dev;
}

class BeamValues : public ::testing::TestWithParam<std::string> {};

}  // namespace

TEST_P(BeamValues, Matmul) {
  expect_beam_matches_noopt(
      [](const std::string& d) {
        return input({17, 33}, 1, d).matmul(input({33, 9}, 2, d));
      },
      GetParam());
}

TEST_P(BeamValues, Reduce) {
  expect_beam_matches_noopt([](const std::string& d) { return input({17, 33}, 3, d).sum(1); }, GetParam());
}

TEST_P(BeamValues, Elementwise) {
  expect_beam_matches_noopt(
      [](const std::string& d) {
        Tensor a = input({17, 33}, 4, d), b = input({17, 33}, 5, d);
        return (a * b + a).exp();
      },
      GetParam());
}

TEST_P(BeamValues, Conv) {
  expect_beam_matches_noopt(
      [](const std::string& d) {
        return input({1, 3, 7, 9}, 6, d).conv2d(input({4, 3, 3, 3}, 7, d), std::nullopt, 1, {1}, {1}, {1});
      },
      GetParam());
}

// (CUDA skips where no GPU opens: on a GPU machine it checks that candidates pass the bounds check and never fault.)
INSTANTIATE_TEST_SUITE_P(Devices, BeamValues, ::testing::Values("CPU", "INTERP", "CUDA"));

TEST(BeamKnobs, NegativeWidthIsAnErrorNamingTheKnob) {
  {
    tg::Context ctx({{"BEAM", -1}});
    try {
      tg::beam_level();
      FAIL() << "BEAM=-1 was accepted";
    } catch (const tg::Error& e) {
      EXPECT_NE(std::string(e.what()).find("BEAM=-1"), std::string::npos) << e.what();
    }
  }
  tg::Context ctx({{"JITBEAM", -3}});
  EXPECT_THROW(tg::beam_level(), tg::Error);
}

TEST(BeamKnobs, JitBeamSearchesOnlyWhatTheJitCaptures) {
  ScopedCacheDir cache;
  tg::Context ctx({{"JITBEAM", 1}});
  EXPECT_EQ(tg::beam_level(), 0) << "outside a TinyJit JITBEAM does not apply";
  tg::TinyJit jit([](const std::vector<Tensor>& in) { return std::vector<Tensor>{in[0] * 3 + 1}; });
  const int64_t before = tg::beam_searches();
  for (int i = 0; i < 4; i++) {
    Tensor x = input({13, 7}, uint32_t(10 + i), "INTERP");
    const std::vector<float> xs = x.tolist<float>();
    const std::vector<float> out = jit({x})[0].tolist<float>();
    for (size_t j = 0; j < xs.size(); j++) ASSERT_FLOAT_EQ(out[j], xs[j] * 3 + 1) << "call " << i;
  }
  EXPECT_TRUE(jit.captured());
  EXPECT_GT(tg::beam_searches(), before) << "the captured kernel was not searched";
}

// The hand-coded kernel is timed even where the bounds check cannot prove it: on Hopper (INTERP with
// EMULATE=CUDA in ctest's beam_interp_emulate_cuda) an fp16 matmul's default kernel reads shared memory through
// WGMMA descriptors, and BEAM must still be able to keep it. Elsewhere the default kernel is proved anyway.
TEST(BeamBench, TrustsTheHandCodedKernel) {
  Tensor a = Tensor::empty({64, 32}, {.dtype = tg::dtypes::float16, .device = "INTERP"});
  Tensor b = Tensor::empty({32, 64}, {.dtype = tg::dtypes::float16, .device = "INTERP"});
  tg::Schedule s = tg::create_schedule({a.matmul(b).uop()});
  const tg::UOpPtr& ast = s.items.back().ast;
  tg::Device& dev = tg::get_device("INTERP");
  tg::Kernel k(ast, dev.renderer());
  hand_coded_optimizations(k);
  const bool wgmma = dev.renderer().wgmma() && k.tensor_core().has_value();
  if (dev.renderer().wgmma()) {
    EXPECT_TRUE(wgmma) << "the default fp16 matmul on Hopper is a WGMMA kernel";
  }
  tg::CandidateBench untrusted(dev, ast);
  const double plain = untrusted.time({k}, 1e9).at(0);
  EXPECT_EQ(std::isinf(plain), wgmma) << "WGMMA kernels are the ones the bounds check cannot prove";
  tg::CandidateBench trusting(dev, ast);
  trusting.trust(k);
  EXPECT_TRUE(std::isfinite(trusting.time({k}, 1e9).at(0)));
  EXPECT_EQ(trusting.unproven(), 0u);
}

TEST(BeamBench, LargeGridsAreTimedOnAPartAndScaled) {
  tg::ProgramSpec spec;
  spec.global_size = {1024, 512, 3};  // 1572864 blocks
  double scale = 0;
  tg::ProgramSpec r = tg::reduced_grid(spec, scale);
  int64_t blocks = r.global_size[0] * r.global_size[1] * r.global_size[2];
  EXPECT_LE(blocks, 65536);
  EXPECT_GT(blocks, 65536 / 2);  // halved only as far as needed
  EXPECT_DOUBLE_EQ(scale, 1572864.0 / double(blocks));
  for (size_t i = 0; i < 3; i++) EXPECT_LE(r.global_size[i], spec.global_size[i]);  // a subset of the full grid
  // a small grid, and a spec without one (CPU), are timed as they are
  spec.global_size = {256, 128, 1};
  EXPECT_EQ(tg::reduced_grid(spec, scale).global_size, spec.global_size);
  EXPECT_EQ(scale, 1.0);
  spec.global_size.clear();
  EXPECT_TRUE(tg::reduced_grid(spec, scale).global_size.empty());
  EXPECT_EQ(scale, 1.0);
}
