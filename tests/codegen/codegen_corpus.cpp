// The golden corpus of generated source: every kernel of a fixed set of tensor programs, through
// codegen::to_program for each renderer (C, LLVM IR, CUDA sm_80 and sm_90, OpenCL, Metal), with the default opts
// and with NOOPT=1, written one file per kernel to a folder. A change to codegen that should not change code
// leaves the folder byte-identical; scripts/codegen-corpus.sh writes it and compares two of them. Exits 1 when a
// kernel did not render (ctest runs it so: every renderer takes every kernel of the corpus).
//
//   tg_codegen_corpus <folder>      (CPU_ISA and THREADS fix what the C renderer targets: the script sets them)
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "codegen/to_program.h"
#include "renderer/c.h"
#include "renderer/cuda.h"
#include "renderer/llvmir.h"
#include "renderer/metal.h"
#include "renderer/opencl.h"
#include "schedule/schedule.h"
#include "tg/tg.h"

using tg::Tensor;

namespace {

Tensor E(std::vector<int64_t> shape, tg::DType dt = tg::dtypes::float32) {
  return Tensor::empty(tg::Shape(shape.begin(), shape.end()), {.dtype = dt});
}

// The programs: each kind of kernel the scheduler makes (elementwise, reduces, fused reduce chains, matmuls in
// float32 and float16, convolutions, indexing, casts), at sizes that take the heuristics' main paths.
std::vector<std::pair<std::string, std::function<Tensor()>>> programs() {
  using tg::dtypes::float16;
  return {
      {"add_mul", [] { return (E({64, 64}) + E({64, 64})) * E({64, 64}); }},
      {"unary_chain", [] { return (E({1024}).exp() + E({1024}).sin()).sqrt(); }},
      {"int_ops", [] { return (E({256}, tg::dtypes::int32) * 3 + 7) / 5; }},
      {"cast_half", [] { return E({512}).cast(float16) + E({512}, float16); }},
      {"broadcast", [] { return E({32, 1}) * E({1, 64}); }},
      {"sum_rows", [] { return E({128, 256}).sum(1); }},
      {"sum_all", [] { return E({1 << 16}).sum(); }},
      {"max_cols", [] { return E({256, 128}).max(0); }},
      {"softmax", [] { return E({64, 256}).softmax(-1); }},
      {"mean_var", [] { return E({32, 512}).var(1); }},
      {"matmul_f32", [] { return E({256, 256}).matmul(E({256, 256})); }},
      {"matmul_f32_big", [] { return E({1024, 1024}).matmul(E({1024, 1024})); }},
      {"matmul_f16", [] { return E({256, 256}, float16).matmul(E({256, 256}, float16)); }},
      {"matvec", [] { return E({1, 1024}).matmul(E({1024, 1024})); }},
      {"conv3x3", [] { return E({8, 32, 28, 28}).conv2d(E({32, 32, 3, 3}), std::nullopt, 1, {1}, {1}, {1}); }},
      {"conv5x5", [] { return E({4, 1, 28, 28}).conv2d(E({32, 1, 5, 5})); }},
      {"argmax", [] { return E({64, 100}).argmax(1); }},
      {"gather", [] { return E({100, 64}).gather(0, E({10, 64}, tg::dtypes::int32)); }},
      {"pad_shrink", [] { return E({30, 30}).pad({{1, 1}, {2, 2}}).shrink({{0, 16}, {4, 20}}) * 2; }},
  };
}

struct NamedRenderer {
  std::string name;
  std::unique_ptr<tg::Renderer> renderer;
};

std::vector<NamedRenderer> renderers() {
  std::vector<NamedRenderer> out;
  out.push_back({"c", std::make_unique<tg::ClangRenderer>()});
  out.push_back({"llvm", std::make_unique<tg::LLVMRenderer>(true)});
  out.push_back({"cuda_sm80", std::make_unique<tg::CUDARenderer>("sm_80")});
  out.push_back({"cuda_sm90", std::make_unique<tg::CUDARenderer>("sm_90")});
  out.push_back({"cl", std::make_unique<tg::OpenCLRenderer>(tg::OpenCLRenderer::Limits{256, 32768})});
  out.push_back({"metal", std::make_unique<tg::MetalRenderer>()});
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s <folder>\n", argv[0]);
    return 2;
  }
  const std::filesystem::path dir = argv[1];
  std::filesystem::create_directories(dir);
  int files = 0, failures = 0;
  for (auto& [name, make] : programs()) {
    tg::Schedule s = tg::create_schedule({make().uop()});
    for (size_t i = 0; i < s.items.size(); i++) {
      if (!s.items[i].ast || s.items[i].ast->op != tg::Ops::SINK) continue;  // (copies are not kernels)
      for (auto& r : renderers())
        for (int noopt : {0, 1}) {
          tg::Context ctx({{"NOOPT", noopt}});
          std::string text;
          try {
            text = tg::to_program(s.items[i].ast, *r.renderer).src;
          } catch (const std::exception& e) {
            text = std::string("error: ") + e.what() + "\n";
            failures++;
          }
          const std::string file = name + "." + std::to_string(i) + "." + r.name + (noopt ? ".noopt" : "") + ".txt";
          std::ofstream(dir / file) << text;
          files++;
        }
    }
  }
  std::printf("codegen corpus: %d files in %s, %d kernels that did not render (their error is the file)\n", files,
              dir.c_str(), failures);
  return failures == 0 ? 0 : 1;
}
