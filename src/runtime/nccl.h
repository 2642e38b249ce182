#pragma once
// NCCL (NVIDIA's collective library), loaded at run time like the CUDA driver: libnccl.so.2 from NCCL_LIBRARY, else
// the loader's path (the system's, or PyPI's nvidia-nccl-cu13 with its lib folder on LD_LIBRARY_PATH). Without it the
// library works as before: sharded tensors all-reduce through copies. Only the entry points used are declared, with
// the ABI of NCCL's nccl.h (nothing of it is included or needed to build).
//
// NVLink multicast (NVLS) is switched off before NCCL starts (NCCL_NVLS_ENABLE=0): on shared multi-GPU machines it
// can take GPUs out of service.
#include <string>
#include <vector>

#include "tg/dtype.h"
#include "uop/ops.h"

namespace tg {

// Whether libnccl loads (the reason in *why when not). Never throws; found once per process.
bool nccl_available(std::string* why = nullptr);
// Whether NCCL reduces this dtype with this op (ADD, MUL, MAX): its int8/uint8/int32/uint32/int64/uint64/float16/
// bfloat16/float32/float64 types.
bool nccl_supports(DType dtype, Ops op);
// One all-reduce over the CUDA GPUs `ordinals` (a communicator per ordered set, made on first use and kept): recv[i]
// on GPU ordinals[i] gets the reduce of every send buffer, `count` elements each. Queued on each GPU's default stream
// after the work already queued there (one NCCL group, so a single thread drives every GPU). Throws tg::Error with
// NCCL's message on failure.
void nccl_all_reduce(const std::vector<int>& ordinals, const std::vector<const void*>& send,
                     const std::vector<void*>& recv, size_t count, DType dtype, Ops op);
// Several all-reduces in one NCCL group (NCCL launches them together: one rendezvous of the GPUs, not one each).
struct NcclAllReduce {
  std::vector<int> ordinals;
  std::vector<const void*> send;
  std::vector<void*> recv;
  size_t count = 0;
  DType dtype = dtypes::float32;
  Ops op = Ops::ADD;
};
void nccl_all_reduce(const std::vector<NcclAllReduce>& calls);

}  // namespace tg
