// Rendered CUDA must compile: kernels of a wide set of tensor programs (every ALU op, every dtype, masked
// views, reduces plain and grouped, random numbers, convolutions), with the default GPU opts and with none,
// rendered by CUDARenderer and compiled by NVRTC for sm_90a. Runs wherever libnvrtc loads (the build
// machines have the toolkit but no GPU); skips with a message elsewhere. Running them is the job of the op
// suite under DEV=INTERP EMULATE=CUDA and, on a GPU, of `ctest -L cuda`.
#include <gtest/gtest.h>

#include <functional>
#include <set>
#include <string>
#include <vector>

#include "codegen/kernel.h"
#include "codegen/opt/heuristic.h"
#include "codegen/linearize.h"
#include "codegen/lowerer.h"
#include "renderer/cuda.h"
#include "runtime/devices.h"
#include "runtime/nvrtc.h"
#include "schedule/schedule.h"
#include "tg/tg.h"

using tg::Tensor;
namespace dt = tg::dtypes;

namespace {

std::vector<std::pair<std::string, std::function<Tensor()>>> programs() {
  auto f = [] { return Tensor::rand({4, 8, 16}); };
  auto i = [] { return Tensor::randint({64}, -100, 100); };
  return {
      {"float math", [&] { return ((f() + 1.5f) * f() / (f() - 3.0f)).exp().log().sqrt().sin().maximum(f()); }},
      {"float extras", [&] { return f().exp2().log2().reciprocal().trunc() + f().floor() + f().ceil() + f().round(); }},
      {"float idiv mod", [&] { return f().mod(0.3f) + (f() * 10.0f).cast(dt::int32).cast(dt::float32); }},
      {"int arith", [&] { return i() * 3 + i() / 7 - i().mod(5) + i().maximum(i()); }},
      {"int idiv by tensor", [&] { return i().idiv(i()) + i().mod(i()); }},
      {"int bits", [&] { return (i() & 12) | (i() ^ 5) | i().lshift(3) | i().rshift(2) | i().bitwise_not(); }},
      {"int64",
       [&] {
         return i().cast(dt::int64) * 1000000007LL +
                i().cast(dt::int64).idiv(Tensor::full({64}, 3, {.dtype = dt::int64}));
       }},
      {"uint8 wrap", [&] { return i().cast(dt::uint8) * 200 + i().cast(dt::uint8); }},
      {"compare where", [&] { return (f() < 0.5f).where(f(), -f()) + (f() != f()).cast(dt::float32); }},
      {"bool logic", [&] { return ((i() < 0) & (i() > -50)).logical_not().cast(dt::int32); }},
      {"half", [&] { return (f().half() * 2.5f + f().half()).exp().sum(-1); }},
      {"bfloat16", [&] { return (f().cast(dt::bfloat16) + f().cast(dt::bfloat16)).sqrt().max(1); }},
      {"float64", [&] { return (f().cast(dt::float64) * 1e-300).sum(); }},
      {"casts", [&] { return f().cast(dt::int8).cast(dt::uint16).cast(dt::half).cast(dt::int64).cast(dt::float32); }},
      {"bitcast", [&] { return f().bitcast(dt::int32) + i().cast(dt::half).bitcast(dt::int16).cast(dt::int32).sum(); }},
      {"isnan isinf", [&] { return (f() / (f() - 0.5f)).isinf().cast(dt::int32) + f().log().isnan().cast(dt::int32); }},
      {"masked views",
       [&] {
         return f().pad({{1, 2}, {0, 0}, {3, 1}}).flip(0).shrink({{1, 5}, {2, 6}, {0, 20}}) * 2.0f;
       }},
      {"sum all", [&] { return Tensor::rand({1 << 14}).sum(); }},
      {"max rows",
       [&] {
         return Tensor::rand({8, 4096}).max(1);
       }},
      {"prod", [&] { return f().prod(1); }},
      {"argmax",
       [&] {
         return Tensor::rand({16, 1000}).argmax(1);
       }},
      {"softmax",
       [&] {
         return Tensor::rand({32, 100}).softmax(-1);
       }},
      {"cumsum", [&] { return f().cumsum(2); }},
      {"matmul",
       [&] {
         return Tensor::rand({64, 96}).matmul(Tensor::rand({96, 48}));
       }},
      {"conv2d",
       [&] {
         return Tensor::rand({2, 3, 12, 12}).conv2d(Tensor::rand({8, 3, 3, 3})).relu().max_pool2d();
       }},
      {"tensor cores fp16",
       [&] {
         return Tensor::rand({64, 96}).half().matmul(Tensor::rand({96, 48}).half()).relu();
       }},
      {"tensor cores bf16",
       [&] {
         return Tensor::rand({2, 32, 64}).cast(dt::bfloat16).matmul(Tensor::rand({2, 64, 16}).cast(dt::bfloat16));
       }},
      {"staged tensor cores (ldmatrix, cp.async)",
       [&] {
         Tensor x = Tensor::rand({128, 64}).half(), w = Tensor::rand({128, 64}).half();
         Tensor xt = Tensor::rand({64, 128}).half(), v = Tensor::rand({64, 128}).half();
         return x.matmul(w.T()) + xt.T().matmul(v);  // B K-major; A M-major, B N-major (.trans)
       }},
      {"staged float32 matmul", [&] { return Tensor::rand({128, 32}).matmul(Tensor::rand({32, 256})).relu(); }},
      {"16-bit vectors",
       [&] { return (Tensor::rand({4096}).half() * 2 + 1).relu() + Tensor::rand({4096}).cast(dt::bfloat16).half(); }},
      {"randn threefry", [&] { return Tensor::randn({1000}); }},
      {"transcendental activations", [&] { return f().gelu() + f().tanh() + f().erf() + f().sigmoid(); }},
  };
}

// The CUDA source of every kernel of t's schedule, with the default GPU opts and with none.
void render_all(const Tensor& t, std::vector<std::pair<std::string, std::string>>& out) {
  tg::CUDARenderer cuda;
  tg::Schedule s = tg::create_schedule({t.uop()});
  for (auto& item : s.items) {
    if (item.ast->op != tg::Ops::SINK) continue;  // copies
    for (bool opt : {true, false}) {
      tg::Kernel k(item.ast, cuda);
      if (opt) hand_coded_optimizations(k);
      std::string name = k.name() + (opt ? "_opt" : "_noopt");
      out.emplace_back(name, cuda.render(name, tg::linearize_kernel(tg::lower_kernel(k))));
    }
  }
}

}  // namespace

TEST(CudaNvrtc, RenderedKernelsCompile) {
  std::string why;
  if (!tg::nvrtc_available(&why)) GTEST_SKIP() << "libnvrtc is not available here: " << why;
  Tensor::manual_seed(3);
  std::vector<std::pair<std::string, std::string>> kernels;
  for (auto& [what, make] : programs()) {
    SCOPED_TRACE(what);
    ASSERT_NO_THROW(render_all(make(), kernels)) << what;
  }
  ASSERT_GE(kernels.size(), 40u);
  auto nvrtc = tg::make_nvrtc_compiler("sm_90a");  // as the CUDA device builds for an H100 (wgmma)
  std::set<std::string> seen;
  int compiled = 0;
  for (auto& [name, src] : kernels) {
    if (!seen.insert(src.substr(src.find("__global__"))).second) continue;  // same body, other name
    try {
      std::string bin = nvrtc->compile(src);
      EXPECT_FALSE(bin.empty()) << name;
      compiled++;
    } catch (const tg::Error& e) {
      ADD_FAILURE() << name << " does not compile:\n" << e.what() << "\n" << src;
    }
  }
  std::printf("compiled %d rendered CUDA kernels with NVRTC %s\n", compiled, tg::nvrtc_version().c_str());
}

// Hopper's wgmma (WGMMA=1): kernels in every operand layout compile for sm_90a, the target the CUDA device
// builds for on an H100/H200.
TEST(CudaNvrtc, WgmmaKernelsCompile) {
  std::string why;
  if (!tg::nvrtc_available(&why)) GTEST_SKIP() << "libnvrtc is not available here: " << why;
  tg::Context on({{"WGMMA", 1}});
  Tensor x = Tensor::rand({128, 64}).half(), w = Tensor::rand({64, 128}).half();
  Tensor xb = Tensor::rand({128, 64}).cast(dt::bfloat16), wb = Tensor::rand({128, 64}).cast(dt::bfloat16);
  std::vector<std::pair<std::string, std::string>> kernels;
  render_all(x.matmul(w).relu() + x.T().T().matmul(w.T().T()), kernels);  // K-major A, N-major B
  render_all(w.T().matmul(x.T()), kernels);                               // M-major A, K-major B
  render_all(xb.matmul(wb.T()), kernels);
  auto nvrtc = tg::make_nvrtc_compiler("sm_90a");
  int with_wgmma = 0;
  for (auto& [name, src] : kernels) {
    if (src.find("wgmma.mma_async") == std::string::npos) continue;
    with_wgmma++;
    try {
      EXPECT_FALSE(nvrtc->compile(src).empty()) << name;
    } catch (const tg::Error& e) {
      ADD_FAILURE() << name << " does not compile:\n" << e.what() << "\n" << src;
    }
  }
  EXPECT_GE(with_wgmma, 3);
}
