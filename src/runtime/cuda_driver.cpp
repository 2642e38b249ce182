// Loading the CUDA driver (libcuda.so.1) at run time and turning its error codes into tg::Error.
#include "runtime/cuda_driver.h"

#include <initializer_list>
#include <mutex>
#include <optional>

#include "runtime/shared_library.h"
#include "tg/error.h"

namespace tg::cu {
namespace {

// The outcome of the one attempt per process to load and initialize the driver.
struct Loaded {
  Driver d{};
  bool ok = false;
  std::string why;  // set when !ok
  int count = 0;
};

// Entry points the runtime works without: CUDA graphs (TinyJit replays one launch per batch where the driver has
// them), launches with attributes and tensor maps (Hopper's TMA).
void bind_optional(const SharedLibrary& lib, Driver& d) {
  std::string missing;
  lib.bind(d.cuStreamCreate, {"cuStreamCreate"}, &missing);
  lib.bind(d.cuStreamDestroy, {"cuStreamDestroy_v2", "cuStreamDestroy"}, &missing);
  lib.bind(d.cuStreamBeginCapture, {"cuStreamBeginCapture_v2"}, &missing);
  lib.bind(d.cuStreamEndCapture, {"cuStreamEndCapture"}, &missing);
  lib.bind(d.cuGraphInstantiateWithFlags, {"cuGraphInstantiateWithFlags"}, &missing);
  lib.bind(d.cuGraphLaunch, {"cuGraphLaunch"}, &missing);
  lib.bind(d.cuGraphDestroy, {"cuGraphDestroy"}, &missing);
  lib.bind(d.cuGraphExecDestroy, {"cuGraphExecDestroy"}, &missing);
  lib.bind(d.cuGraphExecUpdate, {"cuGraphExecUpdate_v2"}, &missing);
  lib.bind(d.cuGraphGetRootNodes, {"cuGraphGetRootNodes"}, &missing);
  lib.bind(d.cuGraphNodeGetDependentNodes, {"cuGraphNodeGetDependentNodes_v2"}, &missing);
  lib.bind(d.cuLaunchKernelEx, {"cuLaunchKernelEx"}, &missing);
  lib.bind(d.cuGraphExecKernelNodeSetParams, {"cuGraphExecKernelNodeSetParams_v2"}, &missing);
  lib.bind(d.cuTensorMapEncodeTiled, {"cuTensorMapEncodeTiled"}, &missing);
}

// Fills L in place: error_text() reads L.d while this runs (to name cuInit's error).
void load(Loaded& L) {
  // libcuda.so.1 is the driver's own soname (installed with the kernel driver, not the toolkit); the
  // unversioned name only exists where the toolkit's stubs are installed, and those stubs always fail.
  std::string why;
  const std::optional<SharedLibrary> lib = SharedLibrary::open({"libcuda.so.1"}, &why);
  if (!lib) {
    L.why = "cannot load the NVIDIA driver library (is an NVIDIA driver installed?): " + why;
    return;
  }
  Driver& d = L.d;
  // Several entry points were revised and exported under a versioned name (cuMemAlloc_v2 ...) while the plain name
  // kept the old ABI: the versioned one is bound, the plain name only as a fallback where the revision is recent
  // (cuEventElapsedTime_v2 is CUDA 12.8+).
  std::string missing;
  bool all = lib->bind(d.cuGetErrorName, {"cuGetErrorName"}, &missing) &&
             lib->bind(d.cuGetErrorString, {"cuGetErrorString"}, &missing) &&
             lib->bind(d.cuInit, {"cuInit"}, &missing) &&
             lib->bind(d.cuDriverGetVersion, {"cuDriverGetVersion"}, &missing) &&
             lib->bind(d.cuDeviceGetCount, {"cuDeviceGetCount"}, &missing) &&
             lib->bind(d.cuDeviceGet, {"cuDeviceGet"}, &missing) &&
             lib->bind(d.cuDeviceGetName, {"cuDeviceGetName"}, &missing) &&
             lib->bind(d.cuDeviceGetAttribute, {"cuDeviceGetAttribute"}, &missing) &&
             lib->bind(d.cuDeviceTotalMem, {"cuDeviceTotalMem_v2"}, &missing) &&
             lib->bind(d.cuDeviceCanAccessPeer, {"cuDeviceCanAccessPeer"}, &missing) &&
             lib->bind(d.cuDevicePrimaryCtxRetain, {"cuDevicePrimaryCtxRetain"}, &missing) &&
             lib->bind(d.cuDevicePrimaryCtxRelease, {"cuDevicePrimaryCtxRelease_v2"}, &missing) &&
             lib->bind(d.cuCtxSetCurrent, {"cuCtxSetCurrent"}, &missing) &&
             lib->bind(d.cuCtxSynchronize, {"cuCtxSynchronize"}, &missing) &&
             lib->bind(d.cuCtxEnablePeerAccess, {"cuCtxEnablePeerAccess"}, &missing) &&
             lib->bind(d.cuMemAlloc, {"cuMemAlloc_v2"}, &missing) &&
             lib->bind(d.cuMemFree, {"cuMemFree_v2"}, &missing) &&
             lib->bind(d.cuMemHostAlloc, {"cuMemHostAlloc"}, &missing) &&
             lib->bind(d.cuMemFreeHost, {"cuMemFreeHost"}, &missing) &&
             lib->bind(d.cuMemcpyHtoD, {"cuMemcpyHtoD_v2"}, &missing) &&
             lib->bind(d.cuMemcpyDtoH, {"cuMemcpyDtoH_v2"}, &missing) &&
             lib->bind(d.cuMemcpyHtoDAsync, {"cuMemcpyHtoDAsync_v2"}, &missing) &&
             lib->bind(d.cuMemcpyDtoDAsync, {"cuMemcpyDtoDAsync_v2"}, &missing) &&
             lib->bind(d.cuMemcpyPeerAsync, {"cuMemcpyPeerAsync"}, &missing) &&
             lib->bind(d.cuModuleLoadData, {"cuModuleLoadData"}, &missing) &&
             lib->bind(d.cuModuleUnload, {"cuModuleUnload"}, &missing) &&
             lib->bind(d.cuModuleGetFunction, {"cuModuleGetFunction"}, &missing) &&
             lib->bind(d.cuFuncSetAttribute, {"cuFuncSetAttribute"}, &missing) &&
             lib->bind(d.cuLaunchKernel, {"cuLaunchKernel"}, &missing) &&
             lib->bind(d.cuEventCreate, {"cuEventCreate"}, &missing) &&
             lib->bind(d.cuEventDestroy, {"cuEventDestroy_v2", "cuEventDestroy"}, &missing) &&
             lib->bind(d.cuEventRecord, {"cuEventRecord"}, &missing) &&
             lib->bind(d.cuEventSynchronize, {"cuEventSynchronize"}, &missing) &&
             lib->bind(d.cuEventElapsedTime, {"cuEventElapsedTime_v2", "cuEventElapsedTime"}, &missing) &&
             lib->bind(d.cuStreamWaitEvent, {"cuStreamWaitEvent"}, &missing) &&
             lib->bind(d.cuStreamSynchronize, {"cuStreamSynchronize"}, &missing);
  if (!all) {
    L.why = "libcuda.so.1 has no " + missing + " (the NVIDIA driver is too old for this runtime)";
    return;  // the library stays loaded: unloading a driver library mid-process is never worth the risk
  }
  bind_optional(*lib, d);
  L.ok = true;  // error_text works from here on
  if (CUresult r = d.cuInit(0); r != CUDA_SUCCESS) {
    L.ok = false;
    L.why = "cuInit failed: " + error_text(r) + " (no usable NVIDIA GPU?)";
    return;
  }
  if (CUresult r = d.cuDeviceGetCount(&L.count); r != CUDA_SUCCESS) {
    L.ok = false;
    L.why = "cuDeviceGetCount failed: " + error_text(r);
    return;
  }
  if (L.count == 0) L.why = "the NVIDIA driver sees no GPU";
}

// error_text needs the driver while load() is still running, so the pointer is published before the
// struct is filled; going through loaded() there would deadlock on the call_once.
const Loaded* g_loaded = nullptr;
std::once_flag g_once;

const Loaded& loaded() {
  std::call_once(g_once, [] {
    static Loaded storage;
    g_loaded = &storage;
    load(storage);
  });
  return *g_loaded;
}

}  // namespace

const Driver& driver() {
  const Loaded& L = loaded();
  if (!L.ok) throw Error("CUDA: " + L.why);
  return L.d;
}

int device_count(std::string* why) {
  const Loaded& L = loaded();
  if (why) *why = L.why;
  return L.ok ? L.count : 0;
}

std::string error_text(CUresult r) {
  // During load() the call_once is still running: reading g_loaded directly avoids waiting on ourselves.
  const Loaded* L = g_loaded;
  const char *name = nullptr, *desc = nullptr;
  if (L && L->d.cuGetErrorName && L->d.cuGetErrorName(r, &name) == CUDA_SUCCESS && name) {
    std::string s = name;
    if (L->d.cuGetErrorString && L->d.cuGetErrorString(r, &desc) == CUDA_SUCCESS && desc)
      s += std::string(" (") + desc + ")";
    return s;
  }
  return "CUDA error " + std::to_string(r);
}

bool is_sticky(CUresult r) {
  switch (r) {
    case 214:  // ECC_UNCORRECTABLE
    case 700:  // ILLEGAL_ADDRESS
    case 702:  // LAUNCH_TIMEOUT
    case 710:  // ASSERT
    case 714:  // HARDWARE_STACK_ERROR
    case 715:  // ILLEGAL_INSTRUCTION
    case 716:  // MISALIGNED_ADDRESS
    case 717:  // INVALID_ADDRESS_SPACE
    case 718:  // INVALID_PC
    case 719:  // LAUNCH_FAILED
      return true;
    default:
      return false;
  }
}

void check(CUresult r, const std::string& what) {
  if (r != CUDA_SUCCESS) throw Error(what + ": " + error_text(r));
}

}  // namespace tg::cu
