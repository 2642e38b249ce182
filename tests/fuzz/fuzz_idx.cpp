// libFuzzer harness: idx files (MNIST's format, plain or gzip-compressed) through datasets::read_idx. It
// reads a path, so each input goes to one scratch file of this process first.
#include <unistd.h>

#include <cstdio>
#include <string>

#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string path = "/tmp/tg_fuzz_idx_" + std::to_string(::getpid());
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) std::abort();
  if (size && std::fwrite(data, 1, size, f) != size) std::abort();
  std::fclose(f);
  try {
    tg::nn::datasets::IdxFile idx = tg::nn::datasets::read_idx(path);
    size_t n = 1;
    for (int64_t d : idx.dims) n *= size_t(d);
    if (n != idx.data.size()) std::abort();  // the dims must describe exactly the data returned
  } catch (const tg::Error&) {
  }
  return 0;
}
