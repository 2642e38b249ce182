#pragma once
// The tensor maps of a CUDA kernel (codegen/program.h TENSOR_MAP, renderer/tensor_map.h): which buffer each one
// maps, and the 128-byte descriptors a launch passes, encoded by the driver from the buffers' addresses. A map is
// encoded again only when its buffer's address changes from the previous launch.
#include <mutex>
#include <string>
#include <vector>

#include "renderer/tensor_map.h"
#include "runtime/cuda_driver.h"
#include "uop/uop.h"

namespace tg {

class CudaTensorMaps {
 public:
  // From the kernel's TENSOR_MAP nodes (numbered 0 .. n-1; throws tg::Error otherwise).
  CudaTensorMaps(const std::string& kernel, const std::vector<UOpPtr>& uops);
  size_t size() const { return entries_.size(); }
  // The maps for a launch on these buffers (in parameter order), into `out` (resized), in number order.
  void encode(const cu::Driver& d, const std::vector<cu::CUdeviceptr>& bufs, std::vector<cu::CUtensorMap>& out);

 private:
  struct Entry {
    TensorMapArg arg;
    size_t buf = 0;  // its buffer's parameter position
    cu::CUdeviceptr encoded_for = 0;
    cu::CUtensorMap map{};
  };
  std::string kernel_;
  std::vector<Entry> entries_;
  std::mutex mu_;  // launches from several host threads share the cache
};

}  // namespace tg
