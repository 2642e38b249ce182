// Loading the OpenCL ICD loader (libOpenCL.so.1) at run time, finding its devices, and naming its error codes.
#include "runtime/opencl_api.h"

#include <mutex>
#include <optional>

#include "runtime/shared_library.h"
#include "tg/error.h"

namespace tg::cl {
namespace {

// The outcome of the one attempt per process to load the API and list the devices.
struct Loaded {
  Api api{};
  bool ok = false;  // the library and every entry point are there
  std::string why;  // why api() throws (!ok), or why there is no device
  std::vector<DeviceRef> devices;
};

bool resolve_all(const SharedLibrary& lib, Api& a, std::string* missing) {
  return lib.bind(a.clGetPlatformIDs, "clGetPlatformIDs", missing) &&
         lib.bind(a.clGetPlatformInfo, "clGetPlatformInfo", missing) &&
         lib.bind(a.clGetDeviceIDs, "clGetDeviceIDs", missing) &&
         lib.bind(a.clGetDeviceInfo, "clGetDeviceInfo", missing) &&
         lib.bind(a.clCreateContext, "clCreateContext", missing) &&
         lib.bind(a.clReleaseContext, "clReleaseContext", missing) &&
         lib.bind(a.clCreateCommandQueue, "clCreateCommandQueue", missing) &&
         lib.bind(a.clReleaseCommandQueue, "clReleaseCommandQueue", missing) &&
         lib.bind(a.clCreateBuffer, "clCreateBuffer", missing) &&
         lib.bind(a.clReleaseMemObject, "clReleaseMemObject", missing) &&
         lib.bind(a.clEnqueueWriteBuffer, "clEnqueueWriteBuffer", missing) &&
         lib.bind(a.clEnqueueReadBuffer, "clEnqueueReadBuffer", missing) &&
         lib.bind(a.clEnqueueCopyBuffer, "clEnqueueCopyBuffer", missing) &&
         lib.bind(a.clCreateProgramWithSource, "clCreateProgramWithSource", missing) &&
         lib.bind(a.clCreateProgramWithBinary, "clCreateProgramWithBinary", missing) &&
         lib.bind(a.clBuildProgram, "clBuildProgram", missing) &&
         lib.bind(a.clGetProgramBuildInfo, "clGetProgramBuildInfo", missing) &&
         lib.bind(a.clGetProgramInfo, "clGetProgramInfo", missing) &&
         lib.bind(a.clReleaseProgram, "clReleaseProgram", missing) &&
         lib.bind(a.clCreateKernel, "clCreateKernel", missing) &&
         lib.bind(a.clReleaseKernel, "clReleaseKernel", missing) &&
         lib.bind(a.clSetKernelArg, "clSetKernelArg", missing) &&
         lib.bind(a.clEnqueueNDRangeKernel, "clEnqueueNDRangeKernel", missing) &&
         lib.bind(a.clFinish, "clFinish", missing) && lib.bind(a.clWaitForEvents, "clWaitForEvents", missing) &&
         lib.bind(a.clGetEventProfilingInfo, "clGetEventProfilingInfo", missing) &&
         lib.bind(a.clReleaseEvent, "clReleaseEvent", missing);
}

// Every device of every platform, in platform order. A platform without devices (CL_DEVICE_NOT_FOUND) or one
// that fails to list them is skipped; the reason is kept for when no device is found at all.
void list_devices(Loaded& L) {
  const Api& a = L.api;
  cl_uint n_platforms = 0;
  if (cl_int r = a.clGetPlatformIDs(0, nullptr, &n_platforms); r != CL_SUCCESS || n_platforms == 0) {
    L.why = "no OpenCL platform (clGetPlatformIDs: " + (r == CL_SUCCESS ? std::string("0 platforms") : error_name(r)) +
            "; is an ICD such as pocl-opencl-icd installed under /etc/OpenCL/vendors?)";
    return;
  }
  std::vector<cl_platform_id> platforms(n_platforms);
  if (cl_int r = a.clGetPlatformIDs(n_platforms, platforms.data(), nullptr); r != CL_SUCCESS) {
    L.why = "clGetPlatformIDs: " + error_name(r);
    return;
  }
  std::string skipped;
  std::vector<DeviceRef> others;  // (after the GPUs)
  for (cl_platform_id p : platforms) {
    cl_uint n = 0;
    cl_int r = a.clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, 0, nullptr, &n);
    std::vector<cl_device_id> devs(n);
    if (r == CL_SUCCESS && n > 0) r = a.clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, n, devs.data(), nullptr);
    if (r != CL_SUCCESS || n == 0) {
      skipped += (skipped.empty() ? "" : ", ") + (r == CL_SUCCESS ? std::string("no devices") : error_name(r));
      continue;
    }
    for (cl_device_id d : devs) {
      cl_bitfield type = 0;
      const bool gpu = a.clGetDeviceInfo(d, CL_DEVICE_TYPE, sizeof(type), &type, nullptr) == CL_SUCCESS &&
                       (type & CL_DEVICE_TYPE_GPU);
      (gpu ? L.devices : others).push_back({p, d});
    }
  }
  L.devices.insert(L.devices.end(), others.begin(), others.end());
  if (L.devices.empty())
    L.why = std::to_string(n_platforms) + " OpenCL platform" + (n_platforms == 1 ? "" : "s") +
            " but no device (clGetDeviceIDs: " + skipped + ")";
}

void load(Loaded& L) {
  // libOpenCL.so.1 is the loader's soname; the unversioned name only exists where the -dev package is installed.
  std::string why;
  const std::optional<SharedLibrary> lib = SharedLibrary::open({"libOpenCL.so.1"}, &why);
  if (!lib) {
    L.why = "cannot load the OpenCL ICD loader (is ocl-icd-libopencl1 installed?): " + why;
    return;
  }
  std::string missing;
  if (!resolve_all(*lib, L.api, &missing)) {
    L.why = "libOpenCL.so.1 has no " + missing + " (the OpenCL loader is older than OpenCL 1.2)";
    return;  // the library stays loaded: unloading a driver's library mid-process is never worth the risk
  }
  L.ok = true;
  list_devices(L);
}

const Loaded& loaded() {
  static std::once_flag once;
  static Loaded storage;
  std::call_once(once, [] { load(storage); });
  return storage;
}

}  // namespace

const Api& api() {
  const Loaded& L = loaded();
  if (!L.ok) throw Error("CL: " + L.why);
  return L.api;
}

const std::vector<DeviceRef>& devices(std::string* why) {
  const Loaded& L = loaded();
  if (why) *why = L.why;
  return L.devices;
}

std::string error_name(cl_int r) {
  switch (r) {
    // clang-format off
    case 0: return "CL_SUCCESS";
    case -1: return "CL_DEVICE_NOT_FOUND";
    case -2: return "CL_DEVICE_NOT_AVAILABLE";
    case -3: return "CL_COMPILER_NOT_AVAILABLE";
    case -4: return "CL_MEM_OBJECT_ALLOCATION_FAILURE";
    case -5: return "CL_OUT_OF_RESOURCES";
    case -6: return "CL_OUT_OF_HOST_MEMORY";
    case -7: return "CL_PROFILING_INFO_NOT_AVAILABLE";
    case -8: return "CL_MEM_COPY_OVERLAP";
    case -9: return "CL_IMAGE_FORMAT_MISMATCH";
    case -10: return "CL_IMAGE_FORMAT_NOT_SUPPORTED";
    case -11: return "CL_BUILD_PROGRAM_FAILURE";
    case -12: return "CL_MAP_FAILURE";
    case -13: return "CL_MISALIGNED_SUB_BUFFER_OFFSET";
    case -14: return "CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST";
    case -15: return "CL_COMPILE_PROGRAM_FAILURE";
    case -16: return "CL_LINKER_NOT_AVAILABLE";
    case -17: return "CL_LINK_PROGRAM_FAILURE";
    case -18: return "CL_DEVICE_PARTITION_FAILED";
    case -19: return "CL_KERNEL_ARG_INFO_NOT_AVAILABLE";
    case -30: return "CL_INVALID_VALUE";
    case -31: return "CL_INVALID_DEVICE_TYPE";
    case -32: return "CL_INVALID_PLATFORM";
    case -33: return "CL_INVALID_DEVICE";
    case -34: return "CL_INVALID_CONTEXT";
    case -35: return "CL_INVALID_QUEUE_PROPERTIES";
    case -36: return "CL_INVALID_COMMAND_QUEUE";
    case -37: return "CL_INVALID_HOST_PTR";
    case -38: return "CL_INVALID_MEM_OBJECT";
    case -42: return "CL_INVALID_BINARY";
    case -43: return "CL_INVALID_BUILD_OPTIONS";
    case -44: return "CL_INVALID_PROGRAM";
    case -45: return "CL_INVALID_PROGRAM_EXECUTABLE";
    case -46: return "CL_INVALID_KERNEL_NAME";
    case -47: return "CL_INVALID_KERNEL_DEFINITION";
    case -48: return "CL_INVALID_KERNEL";
    case -49: return "CL_INVALID_ARG_INDEX";
    case -50: return "CL_INVALID_ARG_VALUE";
    case -51: return "CL_INVALID_ARG_SIZE";
    case -52: return "CL_INVALID_KERNEL_ARGS";
    case -53: return "CL_INVALID_WORK_DIMENSION";
    case -54: return "CL_INVALID_WORK_GROUP_SIZE";
    case -55: return "CL_INVALID_WORK_ITEM_SIZE";
    case -56: return "CL_INVALID_GLOBAL_OFFSET";
    case -57: return "CL_INVALID_EVENT_WAIT_LIST";
    case -58: return "CL_INVALID_EVENT";
    case -59: return "CL_INVALID_OPERATION";
    case -61: return "CL_INVALID_BUFFER_SIZE";
    case -63: return "CL_INVALID_GLOBAL_WORK_SIZE";
    case -64: return "CL_INVALID_PROPERTY";
    case -66: return "CL_INVALID_COMPILER_OPTIONS";
    case -67: return "CL_INVALID_LINKER_OPTIONS";
    case -1001: return "CL_PLATFORM_NOT_FOUND_KHR";
    // clang-format on
    default:
      return "OpenCL error " + std::to_string(r);
  }
}

}  // namespace tg::cl
