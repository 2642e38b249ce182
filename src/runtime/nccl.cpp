// NCCL through dlopen (nccl.h): the library, one communicator per set of GPUs, and the all-reduce call.
#include "runtime/nccl.h"

#include <cstdlib>
#include <map>
#include <mutex>
#include <optional>

#include "helpers/env.h"
#include "runtime/shared_library.h"
#include "tg/error.h"

namespace tg {
namespace {

// ---- the ABI (nccl.h) ----
using ncclResult_t = int;  // ncclSuccess = 0
using ncclComm_t = struct ncclComm*;
constexpr ncclResult_t kNcclSuccess = 0;
// ncclDataType_t
constexpr int ncclInt8 = 0, ncclUint8 = 1, ncclInt32 = 2, ncclUint32 = 3, ncclInt64 = 4, ncclUint64 = 5,
              ncclFloat16 = 6, ncclFloat32 = 7, ncclFloat64 = 8, ncclBfloat16 = 9;
// ncclRedOp_t
constexpr int ncclSum = 0, ncclProd = 1, ncclMax = 2;

struct Api {
  ncclResult_t (*CommInitAll)(ncclComm_t* comms, int ndev, const int* devlist);
  ncclResult_t (*AllReduce)(const void* send, void* recv, size_t count, int datatype, int op, ncclComm_t comm,
                            void* stream);
  ncclResult_t (*GroupStart)();
  ncclResult_t (*GroupEnd)();
  const char* (*GetErrorString)(ncclResult_t r);
};

struct Loaded {
  Api api{};
  std::string why;  // empty when loaded
};

const Loaded& loaded() {
  static const Loaded l = [] {
    Loaded out;
    // Before NCCL reads its environment (at its first communicator): no NVLink multicast (nccl.h's note).
    setenv("NCCL_NVLS_ENABLE", "0", 1);
    std::string path = getenv_str("NCCL_LIBRARY");
    if (path == "none") {
      out.why = "NCCL_LIBRARY=none";
      return out;
    }
    std::string why;
    const std::optional<SharedLibrary> lib = SharedLibrary::open({path.empty() ? "libnccl.so.2" : path}, &why);
    if (!lib) {
      out.why = "cannot load " + why;
      return out;
    }
    std::string missing;
    const bool all = lib->bind(out.api.CommInitAll, "ncclCommInitAll", &missing) &&
                     lib->bind(out.api.AllReduce, "ncclAllReduce", &missing) &&
                     lib->bind(out.api.GroupStart, "ncclGroupStart", &missing) &&
                     lib->bind(out.api.GroupEnd, "ncclGroupEnd", &missing) &&
                     lib->bind(out.api.GetErrorString, "ncclGetErrorString", &missing);
    if (!all) out.why = "libnccl has no " + missing;
    return out;
  }();
  return l;
}

const Api& api() {
  const Loaded& l = loaded();
  if (!l.why.empty()) throw Error("NCCL: " + l.why);
  return l.api;
}

void check(ncclResult_t r, const std::string& what) {
  if (r != kNcclSuccess) throw Error("NCCL: " + what + ": " + api().GetErrorString(r));
}

int nccl_type(DType dt) {
  if (dt == dtypes::int8) return ncclInt8;
  if (dt == dtypes::uint8) return ncclUint8;
  if (dt == dtypes::int32) return ncclInt32;
  if (dt == dtypes::uint32) return ncclUint32;
  if (dt == dtypes::int64) return ncclInt64;
  if (dt == dtypes::uint64) return ncclUint64;
  if (dt == dtypes::float16) return ncclFloat16;
  if (dt == dtypes::bfloat16) return ncclBfloat16;
  if (dt == dtypes::float32) return ncclFloat32;
  if (dt == dtypes::float64) return ncclFloat64;
  return -1;
}

int nccl_op(Ops op) { return op == Ops::ADD ? ncclSum : op == Ops::MUL ? ncclProd : op == Ops::MAX ? ncclMax : -1; }

// Communicators live until exit, as the devices do (destroying them at exit would race the driver's teardown).
std::vector<ncclComm_t>& comms_for(const std::vector<int>& ordinals) {
  static std::mutex mu;
  static auto* comms = new std::map<std::vector<int>, std::vector<ncclComm_t>>();
  std::lock_guard<std::mutex> lock(mu);
  auto it = comms->find(ordinals);
  if (it != comms->end()) return it->second;
  std::vector<ncclComm_t> c(ordinals.size());
  check(api().CommInitAll(c.data(), int(ordinals.size()), ordinals.data()), "ncclCommInitAll");
  return comms->emplace(ordinals, std::move(c)).first->second;
}

}  // namespace

bool nccl_available(std::string* why) {
  const Loaded& l = loaded();
  if (why) *why = l.why;
  return l.why.empty();
}

bool nccl_supports(DType dtype, Ops op) { return nccl_type(dtype) >= 0 && nccl_op(op) >= 0; }

void nccl_all_reduce(const std::vector<int>& ordinals, const std::vector<const void*>& send,
                     const std::vector<void*>& recv, size_t count, DType dtype, Ops op) {
  nccl_all_reduce(std::vector<NcclAllReduce>{{ordinals, send, recv, count, dtype, op}});
}

void nccl_all_reduce(const std::vector<NcclAllReduce>& calls) {
  for (const NcclAllReduce& c : calls) {
    if (!nccl_supports(c.dtype, c.op))
      throw Error(std::string("NCCL: no all-reduce of ") + c.dtype.name() + " by " + op_name(c.op));
    if (c.send.size() != c.ordinals.size() || c.recv.size() != c.ordinals.size())
      throw Error("NCCL: all-reduce over " + std::to_string(c.ordinals.size()) + " GPUs given " +
                  std::to_string(c.send.size()) + " send and " + std::to_string(c.recv.size()) + " receive buffers");
  }
  std::vector<std::vector<ncclComm_t>*> comms;
  for (const NcclAllReduce& c : calls) comms.push_back(&comms_for(c.ordinals));  // (made outside the group)
  const Api& a = api();
  check(a.GroupStart(), "ncclGroupStart");
  ncclResult_t first_error = kNcclSuccess;
  std::string failed;
  for (size_t k = 0; k < calls.size(); k++) {
    const NcclAllReduce& c = calls[k];
    for (size_t i = 0; i < c.ordinals.size(); i++) {
      ncclResult_t r =
          a.AllReduce(c.send[i], c.recv[i], c.count, nccl_type(c.dtype), nccl_op(c.op), (*comms[k])[i], nullptr);
      if (r != kNcclSuccess && first_error == kNcclSuccess) {
        first_error = r;
        failed = "ncclAllReduce of " + std::to_string(c.count) + " " + c.dtype.name();
      }
    }
  }
  check(a.GroupEnd(), "ncclGroupEnd");  // (ends the group even when a call failed)
  check(first_error, failed);
}

}  // namespace tg
