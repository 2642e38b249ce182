// libFuzzer harness: compile cache entries (runtime/compile_cache_entry.h). An entry read from disk may be
// torn or corrupted: decoding must never read out of bounds, and may only return a binary for the exact key
// and source it was asked for. Each input is also split into (key, source, binary) to check that what is
// encoded decodes to itself and to nothing else.
#include <cstdlib>
#include <string>

#include "runtime/compile_cache_entry.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string file(reinterpret_cast<const char*>(data), size);
  // The seeds are entries for this key and source; mutations keep reaching the checks past the header.
  static const std::string key = "clang -O2 -march=native", src = "void E_4(float* a) { a[0] = 1.0f; }";
  std::string bin;
  if (tg::decode_cache_entry(file, key, src, &bin) && tg::encode_cache_entry(key, src, bin) != file) std::abort();
  size_t a = size ? data[0] % (size + 1) : 0, b = size > 1 ? a + data[1] % (size - a + 1) : a;
  std::string k = file.substr(0, a), s = file.substr(a, b - a), x = file.substr(b), out;
  std::string entry = tg::encode_cache_entry(k, s, x);
  if (!tg::decode_cache_entry(entry, k, s, &out) || out != x) std::abort();
  if (tg::decode_cache_entry(entry, k + "!", s, &out) || tg::decode_cache_entry(entry, k, s + "!", &out)) std::abort();
  return 0;
}
