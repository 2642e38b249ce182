#pragma once
// Renderer: a linearized kernel (see codegen/program.h) -> source text for one backend.
#include <string>
#include <vector>

#include "renderer/tensor_core.h"
#include "uop/uop.h"

namespace tg {

// Shared memory of a linearized kernel: its DEFINE_LOCALs one after another, each at a 16-byte aligned offset,
// 1024-byte aligned from 1 KiB on (operand tiles in 128-byte swizzled atoms need it: renderer/tensor_core.h)
// (renderers that place them in one block, and runtimes that size the launch, agree through these).
int64_t shared_offset(int64_t end_of_previous, int64_t bytes);  // the offset of the next local of `bytes`
int64_t shared_bytes(const std::vector<UOpPtr>& uops);

// Whether s can name a kernel, buffer or variable in every backend's source: letters, digits and '_', no digit first.
bool is_identifier(const std::string& s);

class Renderer {
 public:
  virtual ~Renderer() = default;
  // Source for a kernel called `name` whose body is `uops`; the function takes the DEFINE_GLOBALs in
  // order, then the DEFINE_VARs (int), then a CPU kernel's SPECIAL core_id (int), as parameters.
  virtual std::string render(const std::string& name, const std::vector<UOpPtr>& uops) const = 0;
  virtual bool has_local() const { return false; }   // GPU-style launch with SPECIAL indices
  virtual int64_t max_local_size() const { return 1; }  // most threads in one workgroup (has_local)
  virtual bool supports(Ops op) const { return true; }  // codegen decomposes ops a backend lacks
  // Whether values of dt's scalar type exist on the backend (Metal has no float64); render() throws for the rest.
  virtual bool supports_dtype(DType dt) const { return true; }
  // Whether `op` (an ALU op, LOAD, STORE or DEFINE_ACC) can take vectors of `scalar` (dtype.vec(n), n in
  // 2, 4, 8, 16). Codegen writes vector nodes only where this holds and lanes of scalars elsewhere; the
  // default is scalars everywhere.
  virtual bool vectorizes(Ops op, DType scalar) const { return false; }
  // Whether a CAST of a vector of `from` to a vector of `to` is one vector node (else lanes).
  virtual bool vectorizes_cast(DType from, DType to) const { return false; }
  // PREFETCH(buffer, index) statements (codegen/prefetch.h): a hint that never faults
  virtual bool prefetches() const { return false; }
  // Vector widths the backend has (CUDA: float2, float4), and whether a vector LOAD/STORE needs an index
  // that is a multiple of its width (GPUs fault on misaligned vector accesses; the CPU's do not).
  virtual bool vector_width_ok(int width, DType scalar) const { return true; }
  virtual bool aligned_vectors() const { return false; }
  // CPU threads a kernel may be split across (OptOps.THREAD, SPECIAL core_id); 1 means no threading.
  virtual int threads() const { return 1; }
  // The tensor cores codegen may use (OptOps.TC, WMMA nodes); none by default.
  virtual const std::vector<TensorCore>& tensor_cores() const {
    static const std::vector<TensorCore> none;
    return none;
  }
  // Shared memory (bytes) a workgroup may use, and whether tensor-core operands may be staged
  // through it with asynchronous copies (CP_ASYNC, ASYNC_COMMIT, ASYNC_WAIT) and LDMATRIX.
  virtual int64_t shared_memory() const { return 0; }
  virtual bool async_copies() const { return false; }
  // Hopper's warpgroup tensor cores (WGMMA nodes), reading staged operands straight from shared memory.
  virtual bool wgmma() const { return false; }
  // Bulk tensor copies (TMA_LOAD through TENSOR_MAPs, counted by MBAR_* barriers) of WGMMA operands.
  virtual bool tma() const { return false; }
  virtual std::string device() const = 0;
};

}  // namespace tg
