// CPU kernels against their peers: the median GFLOPS of an NxN float32 matmul through tg::Tensor (the
// kernel compiled before timing starts), with the default opts and with NOOPT=1 (plain loops), against a
// naive C++ triple loop and, when the build found it, OpenBLAS's cblas_sgemm. Then a conv2d of the shape
// of beautiful_mnist's second layer against im2col + sgemm. Prints numbers and ratios; never fails.
//
//   bench/cpu_matmul [reps]        THREADS=n limits our threads (OpenBLAS: OPENBLAS_NUM_THREADS)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <random>
#include <vector>

#include "tg/context.h"
#include "tg/tg.h"

#ifdef TG_HAVE_CBLAS
#include <cblas.h>
#endif

using tg::Tensor;

namespace {

double median_seconds(int reps, const std::function<void()>& f) {
  f();  // warm up (and compile)
  std::vector<double> t;
  for (int i = 0; i < reps; i++) {
    auto t0 = std::chrono::steady_clock::now();
    f();
    t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

std::vector<float> random_vec(size_t n, uint32_t seed) {
  std::mt19937 g(seed);
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = d(g);
  return v;
}

void naive_matmul(const float* a, const float* b, float* c, int n) {
  for (int i = 0; i < n; i++)
    for (int j = 0; j < n; j++) {
      float acc = 0;
      for (int k = 0; k < n; k++) acc += a[i * n + k] * b[k * n + j];
      c[i * n + j] = acc;
    }
}

void print_row(const char* what, double flops, double secs, double ours) {
  double gf = flops / secs / 1e9;
  if (ours > 0) std::printf("  %-28s %9.2f GFLOPS  %9.3f ms   (tg is %.2fx)\n", what, gf, secs * 1e3, secs / ours);
  else std::printf("  %-28s %9.2f GFLOPS  %9.3f ms\n", what, gf, secs * 1e3);
}

void bench_matmul(int n, int reps) {
  auto a = random_vec(size_t(n) * n, 1), b = random_vec(size_t(n) * n, 2);
  Tensor A(a, {n, n}), B(b, {n, n});
  A.realize();
  B.realize();
  const double flops = 2.0 * n * n * n;
  std::printf("matmul %dx%d float32 (%.2f GFLOP)\n", n, n, flops / 1e9);
  double ours = median_seconds(reps, [&] { A.matmul(B).realize(); });
  print_row("tg (default opts)", flops, ours, 0);
  double noopt;
  {
    tg::Context ctx({{"NOOPT", 1}});
    noopt = median_seconds(std::max(1, reps / 4), [&] { A.matmul(B).realize(); });
  }
  print_row("tg NOOPT=1 (before)", flops, noopt, ours);
  std::vector<float> c(size_t(n) * n);
  if (n <= 512) {
    double naive = median_seconds(1, [&] { naive_matmul(a.data(), b.data(), c.data(), n); });
    print_row("naive C++ loop", flops, naive, ours);
  } else {
    std::printf("  %-28s (skipped above N=512)\n", "naive C++ loop");
  }
#ifdef TG_HAVE_CBLAS
  double blas = median_seconds(reps, [&] {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a.data(), n, b.data(), n, 0.0f, c.data(), n);
  });
  print_row("OpenBLAS cblas_sgemm", flops, blas, ours);
#else
  std::printf("  %-28s (not found at build time)\n", "OpenBLAS cblas_sgemm");
#endif
}

// x (bs, cin, h, w) conv w (cout, cin, k, k), no padding, stride 1.
void bench_conv(int bs, int cin, int hw, int cout, int k, int reps) {
  const int oh = hw - k + 1;
  auto x = random_vec(size_t(bs) * cin * hw * hw, 3), w = random_vec(size_t(cout) * cin * k * k, 4);
  Tensor X(x, {bs, cin, hw, hw}), Wt(w, {cout, cin, k, k});
  X.realize();
  Wt.realize();
  const double flops = 2.0 * bs * cout * oh * oh * cin * k * k;
  std::printf("conv2d x(%d,%d,%d,%d) w(%d,%d,%d,%d) float32 (%.2f GFLOP)\n", bs, cin, hw, hw, cout, cin, k, k,
              flops / 1e9);
  double ours = median_seconds(reps, [&] { X.conv2d(Wt).realize(); });
  print_row("tg (default opts)", flops, ours, 0);
  {
    tg::Context ctx({{"NOOPT", 1}});
    double noopt = median_seconds(1, [&] { X.conv2d(Wt).realize(); });
    print_row("tg NOOPT=1 (before)", flops, noopt, ours);
  }
#ifdef TG_HAVE_CBLAS
  // im2col per image, then (cout, cin*k*k) @ (cin*k*k, oh*oh)
  const int K = cin * k * k, P = oh * oh;
  std::vector<float> col(size_t(K) * P), out(size_t(bs) * cout * P);
  double blas = median_seconds(reps, [&] {
    for (int b = 0; b < bs; b++) {
      const float* xb = x.data() + size_t(b) * cin * hw * hw;
      for (int c = 0; c < cin; c++)
        for (int ky = 0; ky < k; ky++)
          for (int kx = 0; kx < k; kx++) {
            float* row = col.data() + size_t((c * k + ky) * k + kx) * P;
            for (int y = 0; y < oh; y++)
              for (int xx = 0; xx < oh; xx++) row[y * oh + xx] = xb[(c * hw + y + ky) * hw + xx + kx];
          }
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, cout, P, K, 1.0f, w.data(), K, col.data(), P, 0.0f,
                  out.data() + size_t(b) * cout * P, P);
    }
  });
  print_row("im2col + OpenBLAS sgemm", flops, blas, ours);
#else
  std::printf("  %-28s (not found at build time)\n", "im2col + OpenBLAS sgemm");
#endif
}

}  // namespace

int main(int argc, char** argv) {
  int reps = argc > 1 ? std::max(1, std::atoi(argv[1])) : 9;
  for (int n : {256, 512, 1024}) bench_matmul(n, reps);
  bench_conv(64, 32, 24, 32, 5, std::max(1, reps / 3));
  return 0;
}
