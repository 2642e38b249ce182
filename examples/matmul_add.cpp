// a @ b + c, the program to follow through the pipeline with VIZ=1 (the README's "Seeing the pipeline"):
//
//   VIZ=1 build/examples/matmul_add      (then open the printed address; VIZ=2 only writes the trace file)
//
// DEV picks the device (CPU by default, CUDA where a GPU is).
#include <cstdio>
#include <vector>

#include <tg/tg.h>

int main() {
  try {
    tg::Tensor a = tg::Tensor(std::vector<float>{1, 2, 3, 4, 5, 6}, {2, 3});
    tg::Tensor b = tg::Tensor(std::vector<float>{1, 0, 0, 1, 1, 1}, {3, 2});
    tg::Tensor c = tg::Tensor(std::vector<float>{10, 20}, {2});
    std::vector<float> out = (a.matmul(b) + c).tolist<float>();  // one kernel: the matmul with the add fused
    std::printf("a @ b + c = [[%g, %g], [%g, %g]]\n", out[0], out[1], out[2], out[3]);
  } catch (const tg::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
