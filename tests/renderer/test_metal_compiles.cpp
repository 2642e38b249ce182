// The Metal Shading Language the renderer writes, type-checked by the C++ compiler (MSL is C++14 with address
// spaces and its own library; metal_shim/metal_stdlib stands in for Apple's header, which is not on these
// machines). A kernel that a C++ compiler rejects with that header would not build with Apple's either:
// undeclared names, wrong types and operand counts, bad casts, syntax. Address spaces themselves are not checked.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "../common/kernel_source.h"
#include "codegen/kernel.h"
#include "codegen/opt/heuristic.h"
#include "renderer/metal.h"
#include "tg/tg.h"

using tg::Tensor;
namespace dt = tg::dtypes;

namespace {

const std::filesystem::path kShim = std::filesystem::path(__FILE__).parent_path() / "metal_shim";

// Every kernel of t's schedule, GPU-optimized, rendered as MSL.
std::vector<std::string> metal_kernels(const Tensor& t) {
  tg::MetalRenderer metal;
  std::vector<std::string> out;
  for (const tg::ScheduleItem& item : tg::create_schedule({t.uop()}).items) {
    if (item.ast->op != tg::Ops::SINK) continue;  // copies
    tg::Kernel k(item.ast, metal);
    hand_coded_optimizations(k);
    out.push_back(tgtest::render(k, metal));
  }
  return out;
}

// "" when `c++ -fsyntax-only` accepts the source, else the compiler's complaint.
std::string cxx_complaint(const std::string& src, int n) {
  const auto dir = std::filesystem::temp_directory_path() / ("tg_metal_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto file = dir / ("k" + std::to_string(n) + ".metal"), log = dir / ("k" + std::to_string(n) + ".log");
  std::ofstream(file) << src;
  const std::string cmd = "c++ -std=c++17 -fsyntax-only -x c++ -Wno-attributes -Wno-unknown-pragmas -I" +
                          kShim.string() + " " + file.string() + " > " + log.string() + " 2>&1";
  if (std::system(cmd.c_str()) == 0) return "";
  std::ifstream in(log);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

}  // namespace

TEST(MetalCompiles, KernelsOfEveryKindTypeCheck) {
  if (std::system("command -v c++ > /dev/null 2>&1") != 0) GTEST_SKIP() << "no C++ compiler here";
  auto f = [](tg::Shape s, tg::DType d = dt::float32) { return Tensor::empty(s, {.dtype = d}); };
  tg::Variable n("n", 1, 64);
  const std::vector<std::pair<const char*, Tensor>> programs = {
      {"a @ b + c", f({64, 64}).matmul(f({64, 64})) + f({64})},
      {"half matmul", f({64, 64}, dt::float16).matmul(f({64, 64}, dt::float16))},
      {"grouped sum", f({4096}).sum()},
      {"softmax", f({32, 128}).softmax(-1)},
      {"bfloat16 exp", (f({256}, dt::bfloat16) * 3).exp()},
      {"int64 to bfloat16, float to int64",
       f({64}, dt::int64).cast(dt::bfloat16) + f({64}).cast(dt::int64).cast(dt::bfloat16)},
      {"int8 division and shifts", f({64}, dt::int8).idiv(f({64}, dt::int8)).lshift(2).rshift(1)},
      {"where, max, comparisons", (f({64}) < f({64})).where(f({64}).maximum(f({64})), 2.0f)},
      {"symbolic shrink", f({64}).shrink({{0, n.bind(8)}}) + 1},
      {"bitcasts", f({64}).bitcast(dt::int32) + f({64}, dt::float16).bitcast(dt::int16).cast(dt::int32)},
      {"random", Tensor::rand({256})},
      {"bool and uint8", (f({64}, dt::bool_) & (f({64}, dt::uint8) > 3)).cast(dt::uint8)},
  };
  int n_kernels = 0;
  for (const auto& [what, t] : programs)
    for (const std::string& src : metal_kernels(t)) {
      const std::string complaint = cxx_complaint(src, n_kernels++);
      EXPECT_EQ(complaint, "") << what << ":\n" << src;
    }
  EXPECT_GE(n_kernels, int(programs.size()));
}

// The check is not vacuous: a kernel with an undeclared name is refused.
TEST(MetalCompiles, TheShimRefusesBrokenSource) {
  if (std::system("command -v c++ > /dev/null 2>&1") != 0) GTEST_SKIP() << "no C++ compiler here";
  const std::string ok =
      "#include <metal_stdlib>\nusing namespace metal;\nkernel void k(device float* d [[buffer(0)]], "
      "uint3 g [[threadgroup_position_in_grid]]) { d[g.x] = precise::exp2(d[g.x]); }\n";
  EXPECT_EQ(cxx_complaint(ok, 1000), "");
  EXPECT_NE(cxx_complaint(ok.substr(0, ok.size() - 3) + " + undeclared; }\n", 1001), "");
}
