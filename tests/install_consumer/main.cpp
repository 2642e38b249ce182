// Built against an installed tg (find_package(tg) or pkg-config) by the install_consumer test: the README's
// example, a dtype promotion and a tg::Error, from outside the source tree. Exits 0 when all are right.
#include <tg/tg.h>

#include <cstdio>
#include <vector>

using tg::Tensor;

int main() {
  Tensor a = Tensor::ones({4, 4}), b = Tensor::arange(16).reshape({4, 4}).cast(tg::dtypes::float32);
  std::vector<float> v = ((a + b) * 2).sum(1).tolist<float>();
  std::printf("((ones + arange) * 2).sum(1) = [%g, %g, %g, %g]\n", v.at(0), v.at(1), v.at(2), v.at(3));

  tg::DType d = tg::dtypes::promote(tg::dtypes::int8, tg::dtypes::uint8);
  std::printf("promote(int8, uint8) = %s\n", d.repr().c_str());

  bool threw = false;
  try {
    tg::dtypes::from_name("not_a_dtype");
  } catch (const tg::Error& e) {
    threw = true;
    std::printf("tg::Error: %s\n", e.what());
  }
  return v == std::vector<float>{20, 52, 84, 116} && d == tg::dtypes::int16 && threw ? 0 : 1;
}
