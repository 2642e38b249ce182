#pragma once
// MatrixSyntax: how a C-like language spells a GPU's matrix units and the copies that feed them (tensor cores,
// asynchronous copies, LDMATRIX, warpgroup WGMMA, bulk tensor copies and their barriers: codegen/program.h). Only
// CUDA has them (renderer/cuda_matrix.cpp); a CStyleRenderer without one rejects such nodes.
#include <string>
#include <vector>

#include "renderer/cstyle.h"

namespace tg {

class MatrixSyntax {
 public:
  using Prelude = CStyleRenderer::Prelude;
  virtual ~MatrixSyntax() = default;

  // A tensor core op (renderer/tensor_core.h): operands are A's, B's, then C's registers; raw[k] says operand k
  // is a 16-bit value as loaded (else a float register holding one); packed[p], when not empty, is the 32-bit
  // register (from an LDMATRIX) that holds operands 2p and 2p + 1 together.
  virtual std::string wmma(const UOp& u, const std::vector<std::string>& operands, const std::vector<bool>& raw,
                           const std::vector<std::string>& packed, Prelude& pre) const = 0;
  // Lane i of a 16-bit float vector as the 16-bit value itself (a tensor core's operand: no widening).
  virtual std::string raw16_lane(const std::string& vec, int64_t i) const = 0;
  // An asynchronous copy of n elements of dt (only where `gate` holds, zeros where `valid` is false; either ""
  // when always true), a commit, a wait for at most n groups in flight.
  virtual std::string cp_async(const std::string& dst, const std::string& dst_idx, const std::string& src,
                               const std::string& src_idx, const std::string& gate, const std::string& valid, int64_t n,
                               DType dt) const = 0;
  virtual std::string async_commit() const = 0;
  virtual std::string async_wait(int64_t n) const = 0;
  // An LDMATRIX into a new variable `name` (declaration included); lane i of it as a float value, and its 32-bit
  // register q.
  virtual std::string ldmatrix(const std::string& name, const std::string& local, const std::string& idx,
                               const UOp& u) const = 0;
  virtual std::string ldmatrix_lane(const std::string& name, int64_t i, DType dt) const = 0;
  virtual std::string ldmatrix_reg(const std::string& name, int64_t q) const = 0;
  // A WGMMA into a new array `name` of its lanes (declaration included; operands: A's buffer, A idx, B's buffer,
  // B idx, the ordering source, C's lanes), or `in_place` on the array `name` that already holds C
  // (renderer/wgmma_arrays.h), as statements separated by newlines; and the wait after a loop whose WGMMAs were
  // left in flight (WgmmaArg::defer).
  virtual std::string wgmma_step(const UOp& u, const std::string& name, const std::vector<std::string>& operands,
                                 bool in_place, Prelude& pre) const = 0;
  virtual std::string wgmma_drain(const std::string& name, int lanes) const = 0;
  // Bulk tensor copies and their barriers (TMA_LOAD, MBAR_INIT, MBAR_EXPECT, MBAR_WAIT) on rendered operands, as
  // a statement.
  virtual std::string bulk_copy(const UOp& u, const std::vector<std::string>& operands, Prelude& pre) const = 0;
};

}  // namespace tg
