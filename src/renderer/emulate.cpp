// The GPU renderers INTERP and NULL can emulate (see emulate.h).
#include "renderer/emulate.h"

#include <cctype>

#include "renderer/cuda.h"
#include "renderer/llvmir.h"
#include "renderer/metal.h"
#include "renderer/opencl.h"
#include "tg/error.h"

namespace tg {

std::unique_ptr<Renderer> emulated_renderer(const std::string& emulate, const std::string& device) {
  std::string up;
  for (char c : emulate) up += char(std::toupper(static_cast<unsigned char>(c)));
  if (up.empty()) return nullptr;
  if (up == "CUDA") return std::make_unique<CUDARenderer>();
  // (an OpenCL GPU's usual limits: 256 work items a group, 32 KiB of local memory)
  if (up == "CL") return std::make_unique<OpenCLRenderer>(OpenCLRenderer::Limits{256, 32 * 1024});
  if (up == "METAL") return std::make_unique<MetalRenderer>();
  // (LLVM 14's typed pointers: the IR can be checked by Debian's llvm-as-14 where the JIT is absent)
  if (up == "LLVM") return std::make_unique<LLVMRenderer>(false);
  throw Error(device + ": EMULATE=" + emulate + " is not known (expected CUDA, CL, METAL, LLVM or nothing)");
}

}  // namespace tg
