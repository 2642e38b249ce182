// The time to compile one CPU kernel: the C device (C source through clang or gcc, a process per kernel, then a
// shared object) beside the LLVM device (LLVM IR compiled in-process: parse, O2, machine code, and loading it into
// the JIT). The kernels are those of a small training step (a conv net's forward and backward, Adam), each
// rendered for its device; every compile misses the cache (the disk cache is not used). Prints the median and the
// 90th percentile per kernel for each, and the ratio.
//   build/bench/compile_time [rounds=3]
#include <tg/tg.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "codegen/kernel.h"
#include "codegen/opt/heuristic.h"
#include "codegen/linearize.h"
#include "codegen/lowerer.h"
#include "runtime/device.h"
#include "runtime/devices.h"
#include "schedule/schedule.h"

using tg::Tensor;

namespace {

// The ASTs of a small training step: conv, relu, pooling, a linear layer, cross entropy, their gradients, Adam.
std::vector<tg::UOpPtr> training_step_asts() {
  Tensor::manual_seed(7);
  Tensor x = Tensor::rand({8, 1, 14, 14}), w1 = Tensor::rand({4, 1, 3, 3}).requires_grad_(),
         w2 = Tensor::rand({4 * 6 * 6, 10}).requires_grad_();
  Tensor y = Tensor::arange(8).mod(10);
  Tensor h = x.conv2d(w1).relu().max_pool2d({2, 2}).flatten(1);
  Tensor loss = h.matmul(w2).sparse_categorical_crossentropy(y);
  loss.backward();
  std::vector<tg::UOpPtr> roots{loss.uop()};
  for (Tensor* p : {&w1, &w2}) {
    Tensor m = p->grad() * 0.1f, v = p->grad().square() * 0.001f;
    roots.push_back((*p - m / (v.sqrt() + 1e-8f) * 0.01f).uop());
  }
  std::vector<tg::UOpPtr> asts;
  for (const auto& item : tg::create_schedule(roots).items)
    if (item.ast->op == tg::Ops::SINK) asts.push_back(item.ast);
  return asts;
}

struct Source {
  std::string name, src;
  tg::ProgramSpec spec;
};

std::vector<Source> render_all(const std::vector<tg::UOpPtr>& asts, tg::Device& dev, int round) {
  std::vector<Source> out;
  for (const auto& ast : asts) {
    tg::Kernel k(ast, dev.renderer());
    hand_coded_optimizations(k);
    Source s;
    s.name = k.name();
    s.spec.name = s.name;
    s.spec.uops = tg::linearize_kernel(tg::lower_kernel(k), {});
    for (auto& u : s.spec.uops) {
      if (u->op == tg::Ops::DEFINE_GLOBAL) s.spec.n_bufs++;
      if (u->op == tg::Ops::DEFINE_VAR) s.spec.vars.push_back(u);
    }
    // a comment that differs per round, so no compiler or cache sees the same source twice
    const char* comment = dev.name() == "LLVM" ? "; round " : "// round ";
    s.src = comment + std::to_string(round) + "\n" + dev.renderer().render(s.name, s.spec.uops);
    s.spec.src = s.src;
    out.push_back(std::move(s));
  }
  return out;
}

// Milliseconds to compile (and load: the LLVM JIT links the object then) each kernel.
std::vector<double> time_compiles(tg::Device& dev, const std::vector<tg::UOpPtr>& asts, int rounds) {
  std::vector<double> ms;
  for (int r = 0; r < rounds; r++)
    for (Source& s : render_all(asts, dev, r)) {
      auto t0 = std::chrono::steady_clock::now();
      std::string bin = dev.compiler().compile(s.src);
      auto prog = dev.load(s.spec, bin);
      ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
  std::sort(ms.begin(), ms.end());
  return ms;
}

double at(const std::vector<double>& sorted, double q) { return sorted[size_t(q * double(sorted.size() - 1))]; }

}  // namespace

int main(int argc, char** argv) {
  try {
    const int rounds = argc > 1 ? std::max(1, std::atoi(argv[1])) : 3;
    const auto asts = training_step_asts();
    std::printf("%zu kernels of a small training step, %d rounds\n", asts.size(), rounds);
    std::vector<double> c = time_compiles(tg::get_device("CPU"), asts, rounds);
    std::printf("CPU  (C, compiler process)   median %7.2f ms  p90 %7.2f ms a kernel\n", at(c, 0.5), at(c, 0.9));
    std::string why;
    if (tg::llvm_device_count(&why) == 0) {
      std::printf("LLVM: absent (%s)\n", why.c_str());
      return 0;
    }
    std::vector<double> l = time_compiles(tg::get_device("LLVM"), asts, rounds);
    std::printf("LLVM (IR, in-process JIT)    median %7.2f ms  p90 %7.2f ms a kernel\n", at(l, 0.5), at(l, 0.9));
    std::printf("ratio C / LLVM (median)      %.1fx\n", at(c, 0.5) / at(l, 0.5));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "compile_time: %s\n", e.what());
    return 1;
  }
  return 0;
}
