// libFuzzer harness: safetensors bytes through safe_load (onto HOST, every buffer read back).
#include "fuzz_util.h"
#include "nn/state/loaders.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto f = tg::nn::state::FileBytes::copy_of(data, size, "fuzz.safetensors");
  try {
    fuzz::read_all_buffers(fuzz::values(tg::nn::state::safe_load_bytes(f, "HOST")), f.get());
  } catch (const tg::Error&) {
  }
  return 0;
}
