#pragma once
// The CUDA driver API, loaded at run time: libcuda.so.1 is opened with dlopen on first use, so tinygrad.cpp
// builds with no CUDA installed and runs on machines without a GPU (where the CUDA device is simply absent).
// Only the few types, constants and entry points the runtime uses are declared here, with the driver's ABI
// (see NVIDIA's cuda.h for the reference; nothing of it is copied or needed to build).
#include <cstddef>
#include <string>

namespace tg::cu {

// ---- the driver's types (ABI-compatible declarations) ----
using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
using CUcontext = struct CUctx_st*;
using CUmodule = struct CUmod_st*;
using CUfunction = struct CUfunc_st*;
using CUstream = struct CUstream_st*;
using CUevent = struct CUevent_st*;
using CUgraph = struct CUgraph_st*;
using CUgraphExec = struct CUgraphExec_st*;
using CUgraphNode = struct CUgraphNode_st*;
// cuGraphExecUpdate's report (CUDA 12+): result 0 is success; the nodes say where an update failed.
struct CUgraphExecUpdateResultInfo {
  int result;
  CUgraphNode errorNode;
  CUgraphNode errorFromNode;
};

// A kernel node's launch (CUDA_KERNEL_NODE_PARAMS_v2, CUDA 12+): the function (or a library kernel) with its
// context, sizes and argument pointers.
struct CUDA_KERNEL_NODE_PARAMS {
  CUfunction func;
  unsigned gridDimX, gridDimY, gridDimZ;
  unsigned blockDimX, blockDimY, blockDimZ;
  unsigned sharedMemBytes;
  void** kernelParams;
  void** extra;
  void* kern;  // CUkernel (unused: null)
  CUcontext ctx;
};

// cuGraphNodeGetDependentNodes_v2's per-edge data (CUDA 12.3+): a programmatic launch's edge has its own type.
struct CUgraphEdgeData {
  unsigned char from_port, to_port, type, reserved[5];
};
// cuLaunchKernelEx (CUDA 12+): a launch's sizes and stream with a list of attributes.
constexpr int CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION = 6;
struct CUlaunchAttribute {
  int id;
  char pad[4];
  union {
    char bytes[64];
    int programmatic_stream_serialization_allowed;
  } value;
};
struct CUlaunchConfig {
  unsigned gridDimX, gridDimY, gridDimZ;
  unsigned blockDimX, blockDimY, blockDimZ;
  unsigned sharedMemBytes;
  CUstream hStream;
  CUlaunchAttribute* attrs;
  unsigned numAttrs;
};

constexpr CUresult CUDA_SUCCESS = 0;
constexpr CUresult CUDA_ERROR_NOT_READY = 600;
constexpr CUresult CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED = 704;

// cuDeviceGetAttribute
constexpr int CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 1;
constexpr int CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X = 2;  // Y = 3, Z = 4
constexpr int CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X = 5;   // Y = 6, Z = 7
constexpr int CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16;
constexpr int CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75;
constexpr int CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76;
// cuFuncSetAttribute: shared memory a launch may ask for beyond the static 48 KiB
constexpr int CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8;
// cuEventCreate
constexpr unsigned CU_EVENT_DEFAULT = 0;
constexpr unsigned CU_EVENT_DISABLE_TIMING = 2;
// cuMemHostAlloc: pinned memory usable from every context (CUDA:0 and CUDA:1 share staging code paths).
constexpr unsigned CU_MEMHOSTALLOC_PORTABLE = 1;
// cuStreamCreate: no implicit order with the legacy default stream (a capture may not touch that stream)
constexpr unsigned CU_STREAM_NON_BLOCKING = 1;
// cuStreamBeginCapture: only this thread's calls are checked against the capture
constexpr int CU_STREAM_CAPTURE_MODE_THREAD_LOCAL = 1;

// cuTensorMapEncodeTiled (TMA): a 128-byte, 64-byte aligned descriptor, and the enums it takes
struct alignas(64) CUtensorMap {
  unsigned long long v[16];
};
constexpr int CU_TENSOR_MAP_DATA_TYPE_UINT8 = 0, CU_TENSOR_MAP_DATA_TYPE_UINT16 = 1, CU_TENSOR_MAP_DATA_TYPE_UINT32 = 2;
constexpr int CU_TENSOR_MAP_INTERLEAVE_NONE = 0;
constexpr int CU_TENSOR_MAP_SWIZZLE_128B = 3;
constexpr int CU_TENSOR_MAP_L2_PROMOTION_L2_256B = 3;
constexpr int CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE = 0;  // zeros

// ---- the entry points, resolved once by dlsym ----
struct Driver {
  CUresult (*cuGetErrorName)(CUresult, const char**);
  CUresult (*cuGetErrorString)(CUresult, const char**);
  CUresult (*cuInit)(unsigned);
  CUresult (*cuDriverGetVersion)(int*);
  CUresult (*cuDeviceGetCount)(int*);
  CUresult (*cuDeviceGet)(CUdevice*, int);
  CUresult (*cuDeviceGetName)(char*, int, CUdevice);
  CUresult (*cuDeviceGetAttribute)(int*, int, CUdevice);
  CUresult (*cuDeviceTotalMem)(size_t*, CUdevice);
  CUresult (*cuDeviceCanAccessPeer)(int*, CUdevice, CUdevice);
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext*, CUdevice);
  CUresult (*cuDevicePrimaryCtxRelease)(CUdevice);
  CUresult (*cuCtxSetCurrent)(CUcontext);
  CUresult (*cuCtxSynchronize)();
  CUresult (*cuCtxEnablePeerAccess)(CUcontext, unsigned);
  CUresult (*cuMemAlloc)(CUdeviceptr*, size_t);
  CUresult (*cuMemFree)(CUdeviceptr);
  CUresult (*cuMemHostAlloc)(void**, size_t, unsigned);
  CUresult (*cuMemFreeHost)(void*);
  CUresult (*cuMemcpyHtoD)(CUdeviceptr, const void*, size_t);
  CUresult (*cuMemcpyDtoH)(void*, CUdeviceptr, size_t);
  CUresult (*cuMemcpyHtoDAsync)(CUdeviceptr, const void*, size_t, CUstream);
  CUresult (*cuMemcpyDtoDAsync)(CUdeviceptr, CUdeviceptr, size_t, CUstream);
  CUresult (*cuMemcpyPeerAsync)(CUdeviceptr, CUcontext, CUdeviceptr, CUcontext, size_t, CUstream);
  CUresult (*cuModuleLoadData)(CUmodule*, const void*);
  CUresult (*cuModuleUnload)(CUmodule);
  CUresult (*cuModuleGetFunction)(CUfunction*, CUmodule, const char*);
  CUresult (*cuFuncSetAttribute)(CUfunction, int, int);
  CUresult (*cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream,
                             void**, void**);
  CUresult (*cuEventCreate)(CUevent*, unsigned);
  CUresult (*cuEventDestroy)(CUevent);
  CUresult (*cuEventRecord)(CUevent, CUstream);
  CUresult (*cuEventSynchronize)(CUevent);
  CUresult (*cuEventElapsedTime)(float*, CUevent, CUevent);
  CUresult (*cuStreamWaitEvent)(CUstream, CUevent, unsigned);
  CUresult (*cuStreamSynchronize)(CUstream);
  // CUDA graphs by stream capture (runtime/cuda_graph.h); null where the driver lacks them (then no graphs)
  CUresult (*cuStreamCreate)(CUstream*, unsigned);
  CUresult (*cuStreamDestroy)(CUstream);
  CUresult (*cuStreamBeginCapture)(CUstream, int);
  CUresult (*cuStreamEndCapture)(CUstream, CUgraph*);
  CUresult (*cuGraphInstantiateWithFlags)(CUgraphExec*, CUgraph, unsigned long long);
  CUresult (*cuGraphLaunch)(CUgraphExec, CUstream);
  CUresult (*cuGraphDestroy)(CUgraph);
  CUresult (*cuGraphExecDestroy)(CUgraphExec);
  // optional within the optional: new arguments for an instantiated graph's kernels (CUDA 12+)
  CUresult (*cuGraphExecUpdate)(CUgraphExec, CUgraph, CUgraphExecUpdateResultInfo*);
  // ... or for single kernel nodes, found by walking the captured chain (CUDA 12+)
  CUresult (*cuGraphGetRootNodes)(CUgraph, CUgraphNode*, size_t*);
  CUresult (*cuGraphNodeGetDependentNodes)(CUgraphNode, CUgraphNode*, CUgraphEdgeData*, size_t*);
  CUresult (*cuGraphExecKernelNodeSetParams)(CUgraphExec, CUgraphNode, const CUDA_KERNEL_NODE_PARAMS*);
  bool node_updates() const {
    return cuGraphGetRootNodes && cuGraphNodeGetDependentNodes && cuGraphExecKernelNodeSetParams;
  }
  // launches with attributes (CUDA 12+): programmatic dependent launch inside graphs; null: plain launches
  CUresult (*cuLaunchKernelEx)(const CUlaunchConfig*, CUfunction, void**, void**);
  // TMA descriptors (CUDA 12+); null where the driver lacks them (then kernels with tensor maps cannot launch)
  CUresult (*cuTensorMapEncodeTiled)(CUtensorMap*, int, unsigned, void*, const unsigned long long*,
                                     const unsigned long long*, const unsigned*, const unsigned*, int, int, int, int);
  bool graphs() const { return cuStreamCreate && cuStreamDestroy && cuStreamBeginCapture && cuStreamEndCapture &&
                               cuGraphInstantiateWithFlags && cuGraphLaunch && cuGraphDestroy && cuGraphExecDestroy; }
};

// The driver, loaded and initialized (cuInit) once per process. Throws tg::Error saying why when it cannot
// be used here: no libcuda.so.1 (no NVIDIA driver installed), a missing entry point (a driver too old), or
// cuInit failing (no GPU, driver/kernel module mismatch ...).
const Driver& driver();
// Number of CUDA GPUs; 0 when the driver is unusable, with the reason in *why (if given). Never throws.
int device_count(std::string* why = nullptr);

// "CUDA_ERROR_ILLEGAL_ADDRESS (an illegal memory access was encountered)", or the bare number when the
// driver is not loaded.
std::string error_text(CUresult r);
// Errors after which the driver keeps the context unusable (a kernel faulted); the process must restart to
// use the GPU again.
bool is_sticky(CUresult r);
// Throws tg::Error("<what>: <error_text>") unless r is CUDA_SUCCESS.
void check(CUresult r, const std::string& what);

}  // namespace tg::cu
