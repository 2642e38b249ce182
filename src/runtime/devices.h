#pragma once
// Factories for the devices the registry in device.cpp knows. Each lives in its own ops_<name>.cpp; the
// registry calls them once, on first use of the name.
#include <memory>
#include <string>

#include "runtime/device.h"

namespace tg {

std::unique_ptr<Device> make_cpu_device();     // ops_cpu.cpp: C source -> clang/gcc -> dlopen
std::unique_ptr<Device> make_null_device();    // ops_null.cpp: compiles nothing, runs nothing
std::unique_ptr<Device> make_host_device();    // ops_host.cpp: plain host memory, no kernels
std::unique_ptr<Device> make_interp_device();  // ops_interp.cpp: executes linearized UOps directly

// The CPU device's compiler, on its own: `cc` names the C compiler ("gcc", "clang-14", "ccache gcc");
// empty picks the default (env CC, else clang on PATH, else gcc). Tests use it to check both compilers.
std::unique_ptr<Compiler> make_cpu_compiler(const std::string& cc = "");
// Plain host memory, 64-byte aligned (CPU and HOST devices; wrap it in an LRUAllocator).
std::unique_ptr<Allocator> make_malloc_allocator();

}  // namespace tg
