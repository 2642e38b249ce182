#pragma once
// Factories for the devices the registry in device.cpp knows. Each lives in its own ops_<name>.cpp; the
// registry calls them once, on first use of the name.
#include <memory>
#include <string>

#include "runtime/device.h"

namespace tg {

// ops_cpu.cpp: C source -> clang/gcc -> dlopen. CPU:n (n < kCpuInstances) are devices of their own over the same
// memory and compiler, so sharded programs (Tensor::shard) run and are tested without a GPU.
std::unique_ptr<Device> make_cpu_device(int index);
constexpr int kCpuInstances = 64;
std::unique_ptr<Device> make_null_device();    // ops_null.cpp: compiles nothing, runs nothing
std::unique_ptr<Device> make_host_device();    // ops_host.cpp: plain host memory, no kernels
std::unique_ptr<Device> make_interp_device();  // ops_interp.cpp: executes linearized UOps directly
// ops_cuda.cpp: NVIDIA GPU `ordinal` ("CUDA" is 0, "CUDA:1" is 1) through the driver API and NVRTC, both
// loaded at run time. Throws tg::Error saying why when it cannot open (no libcuda, no such GPU, no NVRTC).
std::unique_ptr<Device> make_cuda_device(int ordinal);
// CUDA GPUs usable here: 0 when there is no driver or no GPU, with the reason in *why. Never throws; the
// answer is found once per process.
int cuda_device_count(std::string* why = nullptr);
// ops_cl.cpp: OpenCL device `index` ("CL" is 0, "CL:1" is 1), counting every device of every platform in platform
// order, through the ICD loader (libOpenCL.so.1) loaded at run time. Throws tg::Error saying why when it cannot
// open (no loader, no platform, no such device).
std::unique_ptr<Device> make_cl_device(int index);
// OpenCL devices usable here: 0 when there is no loader or no platform, with the reason in *why. Never throws; the
// answer is found once per process.
int cl_device_count(std::string* why = nullptr);
// ops_llvm.cpp: LLVM IR compiled in-process by LLVM (libLLVM loaded at run time) and linked by its ORC JIT into this
// process; runs as the CPU device does. Throws tg::Error saying why when it cannot open (built without LLVM, no
// libLLVM, no target for this CPU).
std::unique_ptr<Device> make_llvm_device(int index);
// 1 when LLVM loads and has a target for this machine, else 0 with the reason in *why. Never throws; the answer is
// found once per process (and loads libLLVM: ~10 ms).
int llvm_device_count(std::string* why = nullptr);

// The CPU device's compiler, on its own: `cc` names the C compiler ("gcc", "clang-14", "ccache gcc");
// empty picks the default (env CC, else clang on PATH, else gcc). Tests use it to check both compilers.
std::unique_ptr<Compiler> make_cpu_compiler(const std::string& cc = "");
// NVRTC for GPUs of `arch` ("sm_90"): CUDA C++ -> cubin (nvrtc.cpp). Throws tg::Error when libnvrtc is absent.
std::unique_ptr<Compiler> make_nvrtc_compiler(const std::string& arch);
// Plain host memory, 64-byte aligned (CPU and HOST devices; wrap it in an LRUAllocator).
std::unique_ptr<Allocator> make_malloc_allocator();

}  // namespace tg
