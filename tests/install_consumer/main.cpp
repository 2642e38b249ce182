// Built against an installed tg (find_package(tg) or pkg-config) by the install_consumer test: the README's
// example, a dtype promotion and a tg::Error, from outside the source tree, plus the parts of the library
// that need zlib (an idx dataset file through gzread, torch_load), so a link line without -lz fails here.
// Exits 0 when all are right.
#include <tg/state.h>
#include <tg/tg.h>

#include <cstdio>
#include <string>
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
  // zlib users: a 3-byte idx file read back, and torch_load of a missing file (a tg::Error).
  std::string idx_path = "consumer_test.idx1-ubyte";
  if (FILE* f = std::fopen(idx_path.c_str(), "wb")) {
    const unsigned char bytes[] = {0, 0, 8, 1, 0, 0, 0, 3, 7, 8, 9};
    std::fwrite(bytes, 1, sizeof bytes, f);
    std::fclose(f);
  }
  tg::nn::datasets::IdxFile idx = tg::nn::datasets::read_idx(idx_path);
  std::remove(idx_path.c_str());
  bool idx_ok = idx.dims == std::vector<int64_t>{3} && idx.data == std::vector<uint8_t>{7, 8, 9};
  std::printf("read_idx: %zu dims, %zu bytes\n", idx.dims.size(), idx.data.size());
  bool torch_threw = false;
  try {
    tg::nn::state::torch_load("no_such_checkpoint.pth");
  } catch (const tg::Error& e) {
    torch_threw = true;
    std::printf("torch_load: tg::Error: %s\n", e.what());
  }
  return v == std::vector<float>{20, 52, 84, 116} && d == tg::dtypes::int16 && threw && idx_ok && torch_threw ? 0 : 1;
}
