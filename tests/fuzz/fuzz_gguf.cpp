// libFuzzer harness: GGUF bytes through gguf_load (metadata and tensors, quantized ones dequantized lazily;
// every buffer read back).
#include "fuzz_util.h"
#include "nn/state/loaders.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto f = tg::nn::state::FileBytes::copy_of(data, size, "fuzz.gguf");
  try {
    fuzz::read_all_buffers(fuzz::values(tg::nn::state::gguf_load_bytes(f, "HOST").tensors), f.get());
  } catch (const tg::Error&) {
  }
  return 0;
}
