#pragma once
// The OpenCL API, loaded at run time: libOpenCL.so.1 (the ICD loader, Debian's ocl-icd, which dispatches to the
// installed platforms: PoCL, a GPU vendor's driver ...) is opened with dlopen on first use, so tinygrad.cpp builds
// without OpenCL headers and runs where no OpenCL is installed (the CL device is then simply absent). Only the
// types, constants and entry points the runtime uses are declared here, with the ABI of Khronos' CL/cl.h (the
// reference for every value below; nothing of it is included or needed to build).
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace tg::cl {

// ---- the API's types (ABI-compatible declarations; the handles are opaque pointers) ----
using cl_int = int32_t;
using cl_uint = uint32_t;
using cl_ulong = uint64_t;
using cl_bool = cl_uint;
using cl_bitfield = cl_ulong;
using cl_context_properties = intptr_t;
using cl_platform_id = struct cl_platform_st*;
using cl_device_id = struct cl_device_st*;
using cl_context = struct cl_context_st*;
using cl_command_queue = struct cl_command_queue_st*;
using cl_mem = struct cl_mem_st*;
using cl_program = struct cl_program_st*;
using cl_kernel = struct cl_kernel_st*;
using cl_event = struct cl_event_st*;

constexpr cl_int CL_SUCCESS = 0;
constexpr cl_int CL_DEVICE_NOT_FOUND = -1;
constexpr cl_int CL_BUILD_PROGRAM_FAILURE = -11;
constexpr cl_int CL_PLATFORM_NOT_FOUND_KHR = -1001;  // cl_khr_icd: the loader found no platform
constexpr cl_bool CL_TRUE = 1;

// clGetPlatformInfo
constexpr cl_uint CL_PLATFORM_VERSION = 0x0901;
constexpr cl_uint CL_PLATFORM_NAME = 0x0902;
// clGetDeviceIDs
constexpr cl_bitfield CL_DEVICE_TYPE_GPU = 1 << 2;
constexpr cl_bitfield CL_DEVICE_TYPE_ALL = 0xFFFFFFFF;
// clGetDeviceInfo
constexpr cl_uint CL_DEVICE_TYPE = 0x1000;                       // cl_bitfield
constexpr cl_uint CL_DEVICE_MAX_WORK_ITEM_DIMENSIONS = 0x1003;  // cl_uint
constexpr cl_uint CL_DEVICE_MAX_WORK_GROUP_SIZE = 0x1004;       // size_t
constexpr cl_uint CL_DEVICE_MAX_WORK_ITEM_SIZES = 0x1005;       // size_t[dimensions]
constexpr cl_uint CL_DEVICE_MAX_MEM_ALLOC_SIZE = 0x1010;        // cl_ulong
constexpr cl_uint CL_DEVICE_LOCAL_MEM_SIZE = 0x1023;            // cl_ulong
constexpr cl_uint CL_DEVICE_NAME = 0x102B;
constexpr cl_uint CL_DRIVER_VERSION = 0x102D;
constexpr cl_uint CL_DEVICE_VERSION = 0x102F;
// clCreateContext's properties list
constexpr cl_context_properties CL_CONTEXT_PLATFORM = 0x1084;
// clCreateCommandQueue
constexpr cl_bitfield CL_QUEUE_PROFILING_ENABLE = 1 << 1;
// clCreateBuffer
constexpr cl_bitfield CL_MEM_READ_WRITE = 1 << 0;
// clGetProgramInfo, clGetProgramBuildInfo
constexpr cl_uint CL_PROGRAM_BINARY_SIZES = 0x1165;  // size_t[devices]
constexpr cl_uint CL_PROGRAM_BINARIES = 0x1166;      // unsigned char*[devices]
constexpr cl_uint CL_PROGRAM_BUILD_LOG = 0x1183;
// clGetEventProfilingInfo: cl_ulong nanoseconds
constexpr cl_uint CL_PROFILING_COMMAND_START = 0x1282;
constexpr cl_uint CL_PROFILING_COMMAND_END = 0x1283;

// ---- the entry points, resolved once by dlsym (OpenCL 1.2; CL_CALLBACK is empty on Linux) ----
struct Api {
  cl_int (*clGetPlatformIDs)(cl_uint, cl_platform_id*, cl_uint*);
  cl_int (*clGetPlatformInfo)(cl_platform_id, cl_uint, size_t, void*, size_t*);
  cl_int (*clGetDeviceIDs)(cl_platform_id, cl_bitfield, cl_uint, cl_device_id*, cl_uint*);
  cl_int (*clGetDeviceInfo)(cl_device_id, cl_uint, size_t, void*, size_t*);
  cl_context (*clCreateContext)(const cl_context_properties*, cl_uint, const cl_device_id*,
                                void (*)(const char*, const void*, size_t, void*), void*, cl_int*);
  cl_int (*clReleaseContext)(cl_context);
  cl_command_queue (*clCreateCommandQueue)(cl_context, cl_device_id, cl_bitfield, cl_int*);
  cl_int (*clReleaseCommandQueue)(cl_command_queue);
  cl_mem (*clCreateBuffer)(cl_context, cl_bitfield, size_t, void*, cl_int*);
  cl_int (*clReleaseMemObject)(cl_mem);
  cl_int (*clEnqueueWriteBuffer)(cl_command_queue, cl_mem, cl_bool, size_t, size_t, const void*, cl_uint,
                                 const cl_event*, cl_event*);
  cl_int (*clEnqueueReadBuffer)(cl_command_queue, cl_mem, cl_bool, size_t, size_t, void*, cl_uint, const cl_event*,
                                cl_event*);
  cl_int (*clEnqueueCopyBuffer)(cl_command_queue, cl_mem, cl_mem, size_t, size_t, size_t, cl_uint, const cl_event*,
                                cl_event*);
  cl_program (*clCreateProgramWithSource)(cl_context, cl_uint, const char**, const size_t*, cl_int*);
  cl_program (*clCreateProgramWithBinary)(cl_context, cl_uint, const cl_device_id*, const size_t*,
                                          const unsigned char**, cl_int*, cl_int*);
  cl_int (*clBuildProgram)(cl_program, cl_uint, const cl_device_id*, const char*, void (*)(cl_program, void*), void*);
  cl_int (*clGetProgramBuildInfo)(cl_program, cl_device_id, cl_uint, size_t, void*, size_t*);
  cl_int (*clGetProgramInfo)(cl_program, cl_uint, size_t, void*, size_t*);
  cl_int (*clReleaseProgram)(cl_program);
  cl_kernel (*clCreateKernel)(cl_program, const char*, cl_int*);
  cl_int (*clReleaseKernel)(cl_kernel);
  cl_int (*clSetKernelArg)(cl_kernel, cl_uint, size_t, const void*);
  cl_int (*clEnqueueNDRangeKernel)(cl_command_queue, cl_kernel, cl_uint, const size_t*, const size_t*, const size_t*,
                                   cl_uint, const cl_event*, cl_event*);
  cl_int (*clFinish)(cl_command_queue);
  cl_int (*clWaitForEvents)(cl_uint, const cl_event*);
  cl_int (*clGetEventProfilingInfo)(cl_event, cl_uint, size_t, void*, size_t*);
  cl_int (*clReleaseEvent)(cl_event);
};

// The API, loaded once per process. Throws tg::Error("CL: ...") saying why when it cannot be used here: no
// libOpenCL.so.1 (no ICD loader installed) or a missing entry point (a loader older than OpenCL 1.2).
const Api& api();

// One OpenCL device and the platform it belongs to.
struct DeviceRef {
  cl_platform_id platform = nullptr;
  cl_device_id device = nullptr;
};
// Every device of every platform (CL_DEVICE_TYPE_ALL): the GPUs first, then the others (PoCL's CPU ...), each in
// platform order: "CL" is the first, "CL:1" the second. A GPU machine that also has PoCL gets its GPU as CL.
// Found once per process; empty when the loader or the platforms are absent, with the reason in *why (if given).
// Never throws.
const std::vector<DeviceRef>& devices(std::string* why = nullptr);

// "CL_OUT_OF_RESOURCES" for the codes the API documents, else "OpenCL error <n>".
std::string error_name(cl_int r);

}  // namespace tg::cl
