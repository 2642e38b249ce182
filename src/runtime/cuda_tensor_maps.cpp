#include "runtime/cuda_tensor_maps.h"

#include <algorithm>

#include "tg/error.h"

namespace tg {

CudaTensorMaps::CudaTensorMaps(const std::string& kernel, const std::vector<UOpPtr>& uops) : kernel_(kernel) {
  for (const UOpPtr& u : uops) {
    if (u->op != Ops::TENSOR_MAP) continue;
    Entry e;
    e.arg = TensorMapArg::of(*u);
    e.buf = size_t(u->src.at(0)->get<int64_t>());
    entries_.push_back(e);
  }
  std::sort(entries_.begin(), entries_.end(), [](const Entry& a, const Entry& b) { return a.arg.number < b.arg.number; });
  for (size_t i = 0; i < entries_.size(); i++)
    if (entries_[i].arg.number != int64_t(i))
      throw Error("CUDA: kernel " + kernel_ + ": its tensor maps are not numbered 0 .. " +
                  std::to_string(entries_.size() - 1));
}

void CudaTensorMaps::encode(const cu::Driver& d, const std::vector<cu::CUdeviceptr>& bufs,
                            std::vector<cu::CUtensorMap>& out) {
  std::lock_guard<std::mutex> lock(mu_);
  out.resize(entries_.size());
  for (size_t i = 0; i < entries_.size(); i++) {
    Entry& e = entries_[i];
    const cu::CUdeviceptr ptr = bufs.at(e.buf);
    if (e.encoded_for != ptr) {
      const TensorMapArg& a = e.arg;
      auto what = [&] {
        return "CUDA: kernel " + kernel_ + ": tensor map " + std::to_string(a.number) + " of buffer " +
               std::to_string(e.buf) + " (" + std::to_string(a.rows) + " x " + std::to_string(a.cols) + " elements of " +
               std::to_string(a.itemsize) + " bytes, boxes of " + std::to_string(a.box_rows) + " x " +
               std::to_string(a.width()) + ")";
      };
      if (!d.cuTensorMapEncodeTiled) throw Error(what() + ": this driver has no cuTensorMapEncodeTiled (CUDA 12+)");
      if (ptr % 16 != 0) throw Error(what() + ": the buffer's address is not 16-byte aligned");
      const int type = a.itemsize == 1   ? cu::CU_TENSOR_MAP_DATA_TYPE_UINT8
                       : a.itemsize == 2 ? cu::CU_TENSOR_MAP_DATA_TYPE_UINT16
                                         : cu::CU_TENSOR_MAP_DATA_TYPE_UINT32;
      const unsigned long long dims[2] = {(unsigned long long)a.cols, (unsigned long long)a.rows};
      const unsigned long long strides[1] = {(unsigned long long)(a.cols * a.itemsize)};
      const unsigned box[2] = {unsigned(a.width()), unsigned(a.box_rows)}, steps[2] = {1, 1};
      const cu::CUresult r = d.cuTensorMapEncodeTiled(
          &e.map, type, 2, reinterpret_cast<void*>(ptr), dims, strides, box, steps, cu::CU_TENSOR_MAP_INTERLEAVE_NONE,
          cu::CU_TENSOR_MAP_SWIZZLE_128B, cu::CU_TENSOR_MAP_L2_PROMOTION_L2_256B, cu::CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
      if (r != cu::CUDA_SUCCESS) throw Error(what() + ": cuTensorMapEncodeTiled failed: " + cu::error_text(r));
      e.encoded_for = ptr;
    }
    out[i] = e.map;
  }
}

}  // namespace tg
