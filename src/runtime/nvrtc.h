#pragma once
// NVRTC, CUDA's run-time compiler, loaded with dlopen like the driver (cuda_driver.h): CUDA C++ source ->
// cubin for one GPU architecture. It needs no GPU, so machines with the toolkit but no GPU (CI) can check
// that rendered kernels compile. make_nvrtc_compiler (devices.h) gives the Compiler the CUDA device uses.
#include <string>
#include <vector>

namespace tg {

// Whether libnvrtc could be loaded; the reason in *why when not. Never throws.
bool nvrtc_available(std::string* why = nullptr);
// "13.0"; throws tg::Error when libnvrtc is not available.
std::string nvrtc_version();
// Architectures libnvrtc can emit cubin for (75, 80, 90 ...); empty when it cannot tell.
std::vector<int> nvrtc_supported_archs();

// The toolkit's include folders, found at run time, for the headers rendered kernels include (cuda_fp16.h,
// cuda_bf16.h): $CUDA_PATH/include, $CUDA_HOME/include, the include folder beside the loaded libnvrtc,
// /usr/local/cuda/include, /usr/local/cuda-*/include (newest first), /usr/include. Only folders that hold
// cuda_fp16.h count; the first one found is enough.
std::vector<std::string> cuda_include_dirs();

}  // namespace tg
