// libFuzzer harness: torch.save files (zip archive with a pickle, stored or deflated; or a bare legacy
// pickle) through torch_load, every buffer read back. Deflated storages are inflated into buffers of their
// own, outside the file, so the file-bounds check is left to ASan (the input is an exact-size heap copy).
#include "fuzz_util.h"
#include "nn/state/loaders.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto f = tg::nn::state::FileBytes::copy_of(data, size, "fuzz.pth");
  try {
    fuzz::read_all_buffers(fuzz::values(tg::nn::state::torch_load_bytes(f, "HOST")), nullptr);
  } catch (const tg::Error&) {
  }
  return 0;
}
