// Loading the CUDA driver (libcuda.so.1) at run time and turning its error codes into tg::Error.
#include "runtime/cuda_driver.h"

#include <dlfcn.h>

#include <initializer_list>
#include <mutex>

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

// Resolve the first of `names` the library exports. Several entry points were revised and exported under a
// versioned name (cuMemAlloc_v2 ...) while the plain name kept the old ABI, so the new names come first; the
// plain name is the fallback for drivers older than the revision (cuEventElapsedTime_v2 is CUDA 12.8+).
template <typename Fn>
bool resolve(void* lib, Fn& fn, std::initializer_list<const char*> names, std::string* missing) {
  for (const char* n : names)
    if (void* p = dlsym(lib, n)) {
      fn = reinterpret_cast<Fn>(p);
      return true;
    }
  *missing = *names.begin();
  return false;
}

// Fills L in place: error_text() reads L.d while this runs (to name cuInit's error).
void load(Loaded& L) {
  // libcuda.so.1 is the driver's own soname (installed with the kernel driver, not the toolkit); the
  // unversioned name only exists where the toolkit's stubs are installed, and those stubs always fail.
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char* e = dlerror();
    L.why = std::string("cannot load libcuda.so.1, the NVIDIA driver library (is an NVIDIA driver installed?): ") +
            (e ? e : "unknown dlopen error");
    return;
  }
  Driver& d = L.d;
  std::string missing;
  bool all = resolve(lib, d.cuGetErrorName, {"cuGetErrorName"}, &missing) &&
             resolve(lib, d.cuGetErrorString, {"cuGetErrorString"}, &missing) &&
             resolve(lib, d.cuInit, {"cuInit"}, &missing) &&
             resolve(lib, d.cuDriverGetVersion, {"cuDriverGetVersion"}, &missing) &&
             resolve(lib, d.cuDeviceGetCount, {"cuDeviceGetCount"}, &missing) &&
             resolve(lib, d.cuDeviceGet, {"cuDeviceGet"}, &missing) &&
             resolve(lib, d.cuDeviceGetName, {"cuDeviceGetName"}, &missing) &&
             resolve(lib, d.cuDeviceGetAttribute, {"cuDeviceGetAttribute"}, &missing) &&
             resolve(lib, d.cuDeviceTotalMem, {"cuDeviceTotalMem_v2"}, &missing) &&
             resolve(lib, d.cuDeviceCanAccessPeer, {"cuDeviceCanAccessPeer"}, &missing) &&
             resolve(lib, d.cuDevicePrimaryCtxRetain, {"cuDevicePrimaryCtxRetain"}, &missing) &&
             resolve(lib, d.cuDevicePrimaryCtxRelease, {"cuDevicePrimaryCtxRelease_v2"}, &missing) &&
             resolve(lib, d.cuCtxSetCurrent, {"cuCtxSetCurrent"}, &missing) &&
             resolve(lib, d.cuCtxSynchronize, {"cuCtxSynchronize"}, &missing) &&
             resolve(lib, d.cuCtxEnablePeerAccess, {"cuCtxEnablePeerAccess"}, &missing) &&
             resolve(lib, d.cuMemAlloc, {"cuMemAlloc_v2"}, &missing) &&
             resolve(lib, d.cuMemFree, {"cuMemFree_v2"}, &missing) &&
             resolve(lib, d.cuMemHostAlloc, {"cuMemHostAlloc"}, &missing) &&
             resolve(lib, d.cuMemFreeHost, {"cuMemFreeHost"}, &missing) &&
             resolve(lib, d.cuMemcpyHtoD, {"cuMemcpyHtoD_v2"}, &missing) &&
             resolve(lib, d.cuMemcpyDtoH, {"cuMemcpyDtoH_v2"}, &missing) &&
             resolve(lib, d.cuMemcpyHtoDAsync, {"cuMemcpyHtoDAsync_v2"}, &missing) &&
             resolve(lib, d.cuMemcpyDtoDAsync, {"cuMemcpyDtoDAsync_v2"}, &missing) &&
             resolve(lib, d.cuMemcpyPeerAsync, {"cuMemcpyPeerAsync"}, &missing) &&
             resolve(lib, d.cuModuleLoadData, {"cuModuleLoadData"}, &missing) &&
             resolve(lib, d.cuModuleUnload, {"cuModuleUnload"}, &missing) &&
             resolve(lib, d.cuModuleGetFunction, {"cuModuleGetFunction"}, &missing) &&
             resolve(lib, d.cuFuncSetAttribute, {"cuFuncSetAttribute"}, &missing) &&
             resolve(lib, d.cuLaunchKernel, {"cuLaunchKernel"}, &missing) &&
             resolve(lib, d.cuEventCreate, {"cuEventCreate"}, &missing) &&
             resolve(lib, d.cuEventDestroy, {"cuEventDestroy_v2", "cuEventDestroy"}, &missing) &&
             resolve(lib, d.cuEventRecord, {"cuEventRecord"}, &missing) &&
             resolve(lib, d.cuEventSynchronize, {"cuEventSynchronize"}, &missing) &&
             resolve(lib, d.cuEventElapsedTime, {"cuEventElapsedTime_v2", "cuEventElapsedTime"}, &missing) &&
             resolve(lib, d.cuStreamWaitEvent, {"cuStreamWaitEvent"}, &missing) &&
             resolve(lib, d.cuStreamSynchronize, {"cuStreamSynchronize"}, &missing);
  if (!all) {
    L.why = "libcuda.so.1 has no " + missing + " (the NVIDIA driver is too old for this runtime)";
    return;  // the library stays loaded: unloading a driver library mid-process is never worth the risk
  }
  // optional: CUDA graphs (TinyJit replays one launch per batch where the driver has them)
  resolve(lib, d.cuStreamCreate, {"cuStreamCreate"}, &missing);
  resolve(lib, d.cuStreamDestroy, {"cuStreamDestroy_v2", "cuStreamDestroy"}, &missing);
  resolve(lib, d.cuStreamBeginCapture, {"cuStreamBeginCapture_v2"}, &missing);
  resolve(lib, d.cuStreamEndCapture, {"cuStreamEndCapture"}, &missing);
  resolve(lib, d.cuGraphInstantiateWithFlags, {"cuGraphInstantiateWithFlags"}, &missing);
  resolve(lib, d.cuGraphLaunch, {"cuGraphLaunch"}, &missing);
  resolve(lib, d.cuGraphDestroy, {"cuGraphDestroy"}, &missing);
  resolve(lib, d.cuGraphExecDestroy, {"cuGraphExecDestroy"}, &missing);
  resolve(lib, d.cuGraphExecUpdate, {"cuGraphExecUpdate_v2"}, &missing);
  resolve(lib, d.cuGraphGetRootNodes, {"cuGraphGetRootNodes"}, &missing);
  resolve(lib, d.cuGraphNodeGetDependentNodes, {"cuGraphNodeGetDependentNodes_v2"}, &missing);
  resolve(lib, d.cuLaunchKernelEx, {"cuLaunchKernelEx"}, &missing);
  resolve(lib, d.cuGraphExecKernelNodeSetParams, {"cuGraphExecKernelNodeSetParams_v2"}, &missing);
  resolve(lib, d.cuTensorMapEncodeTiled, {"cuTensorMapEncodeTiled"}, &missing);
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
