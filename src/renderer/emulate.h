#pragma once
// EMULATE=<GPU> (as tinygrad's EMULATE_CUDA): the renderer of a GPU backend that INTERP and NULL lower and render
// kernels for on machines without that GPU (runtime/ops_interp.cpp, runtime/ops_null.cpp).
#include <memory>
#include <string>

#include "renderer/renderer.h"

namespace tg {

// "CUDA", "CL", "METAL" or "LLVM" (any case); nullptr for ""; tg::Error naming `device` for anything else.
std::unique_ptr<Renderer> emulated_renderer(const std::string& emulate, const std::string& device);

}  // namespace tg
