// Host overhead of realize(): the time from building a small lazy expression to having its result, when
// the kernel is already compiled (schedule + method-cache lookup + launch), measured as a median over
// many repeats. Prints one line per case: `name median_us`. bench/host_overhead.py runs this next to
// upstream tinygrad doing the same work and prints the ratios.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <vector>

#include <tg/tg.h>

using tg::Tensor;

static double median_us(const std::function<void()>& f, int reps) {
  for (int i = 0; i < 5; i++) f();  // warm: compile once, fill caches
  std::vector<double> t;
  for (int i = 0; i < reps; i++) {
    auto t0 = std::chrono::steady_clock::now();
    f();
    t.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

int main(int argc, char** argv) {
  int reps = argc > 1 ? std::atoi(argv[1]) : 2000;
  Tensor a = Tensor::ones({1024}).contiguous().realize(), b = Tensor::ones({1024}).contiguous().realize();
  Tensor m = Tensor::ones({64, 64}).contiguous().realize();
  std::printf("elementwise_1k %.2f\n", median_us([&] { ((a + b) * 2.0f).realize(); }, reps));
  std::printf("chain10_1k %.2f\n", median_us([&] {
                Tensor x = a;
                for (int i = 0; i < 10; i++) x = (x + b) * 0.5f;
                x.realize();
              }, reps));
  std::printf("matmul_64 %.2f\n", median_us([&] { m.matmul(m).realize(); }, reps / 4));
  std::printf("sum_rows_64 %.2f\n", median_us([&] { (m.sum(1) * 2.0f).realize(); }, reps));
  return 0;
}
