// The foundation's seed examples, end to end: each line builds a lazy expression, realizes it through
// generated C, and prints the values. Run with DEBUG=2 to see one line per kernel, DEBUG=4 for the source.
#include <cstdio>
#include <string>
#include <vector>

#include <tg/tg.h>

using tg::Tensor;

template <class T> static std::string fmt(const std::vector<T>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); i++) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

int main() {
  try {
    Tensor a = Tensor::empty({4, 4}), b = Tensor::empty({4, 4});
    std::printf("empty(4,4) + empty(4,4): %zu values\n", (a + b).tolist<float>().size());
    std::printf("ones(4,4) + ones(4,4):   %s\n", fmt((Tensor::ones({4, 4}) + Tensor::ones({4, 4})).tolist<float>()).c_str());

    Tensor x(std::vector<int>{1, 2}), y(std::vector<int>{3, 4});
    x.realize();
    y.realize();
    int64_t k0 = tg::GlobalCounters::kernel_count;
    int dot = x.dot(y).item<int>();
    std::printf("[1,2] . [3,4] = %d  (%lld kernel)\n", dot, static_cast<long long>(tg::GlobalCounters::kernel_count - k0));

    Tensor m(std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, {3, 4});
    std::printf("m = arange(1,13).reshape(3,4)\n");
    std::printf("  m.sum(0)       = %s\n", fmt(m.sum(0).tolist<float>()).c_str());
    std::printf("  m.sum(1, true) = %s\n", fmt(m.sum(1, true).tolist<float>()).c_str());
    std::printf("  m.max()        = %g\n", m.max().item<float>());
    std::printf("  m.mean()       = %g\n", m.mean().item<float>());

    Tensor p = Tensor::ones({8, 8}), q = Tensor::full({8, 8}, 0.5f);
    p.realize();
    q.realize();
    k0 = tg::GlobalCounters::kernel_count;
    float s = ((p + q) * 2).sum().item<float>();
    std::printf("((p + q) * 2).sum() = %g  (%lld kernel)\n", s, static_cast<long long>(tg::GlobalCounters::kernel_count - k0));

    Tensor w = Tensor::arange(16).reshape({4, 4}).cast(tg::dtypes::float32);
    std::printf("arange(16).reshape(4,4) @ eye(4) = %s\n", fmt(w.matmul(Tensor::eye(4)).tolist<float>()).c_str());
    std::printf("chain permute/pad/shrink/flip/expand then sum: %s\n",
                fmt(w.permute({1, 0}).pad({{1, 0}, {0, 1}}).shrink({{0, 4}, {1, 5}}).flip(0).reshape({1, 4, 4})
                        .expand({2, 4, 4}).sum({0, 2}).tolist<float>()).c_str());
    try {
      (void)(Tensor::ones({2, 3}) + Tensor::ones({4, 5}));
    } catch (const tg::Error& e) {
      std::printf("bad input: %s\n", e.what());
    }
    std::printf("kernels run: %lld\n", static_cast<long long>(tg::GlobalCounters::kernel_count));
  } catch (const tg::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
