#pragma once
// ProgramSpec: what codegen hands to a renderer and a runtime. `uops` is the linearized kernel, a flat
// list in execution order where every node's sources appear before it. The node kinds, and how each
// is meant (renderers print them, the interpreter device executes them):
//
//   DEFINE_GLOBAL  dtype T.ptr(), arg int64 = parameter position (0 is the output). Pointer to a buffer.
//   DEFINE_VAR     int32, arg NamedRange{name, min, max}: an integer kernel argument (symbolic shapes).
//   SPECIAL        int32 (int64 where indices need it), arg SpecialArg{axis, dim, size}, value 0..size-1: a GPU
//                  launch index (GROUP: block id "gidxN", LOCAL: thread in the block "lidxN", GLOBAL: absolute
//                  thread id "idxN", N = dim); CORE ("core_id"): the CPU thread running this instance of a
//                  kernel split across threads (OptOps.THREAD); the launch is global_size[0] == size instances.
//   CONST          scalar value (bool, int64 or double arg).
//   RANGE          int32, src (start, end), arg int64 loop id: opens `for (ridxN = start; ridxN < end; ridxN++)`.
//   ENDRANGE       void, src (RANGE): closes the innermost open loop, which is that RANGE.
//   DEFINE_ACC     dtype T, src (init CONST, or VECTORIZE of CONSTs for a vector T), arg int64 acc id:
//                  declares `T accN = init;` where it stands.
//   ASSIGN         dtype T, src (DEFINE_ACC, value): `accN = value;`. Later users of this node read accN.
//   LOAD           dtype T, src (buf DEFINE_GLOBAL, idx int32) or (buf, idx, gate bool, alt T):
//                  `buf[idx]`, or `gate ? buf[idx] : alt` (no memory access when gate is false); of a
//                  DEFINE_LOCAL also (buf, idx, BARRIER or ASYNC_COMMIT), the node it must follow.
//   STORE          void, src (buf, idx, value) or (buf, idx, value, gate): `buf[idx] = value`, if gate.
//   ALU ops        ADD MUL SUB IDIV MOD MAX CMPLT CMPNE AND OR XOR SHL SHR FDIV WHERE MULACC DOT4
//                  EXP2 LOG2 SIN SQRT RECIP NEG TRUNC, CAST, BITCAST: C semantics in the node's dtype
//                  (IDIV/MOD truncate toward zero; ints wrap; bool is 0/1; comparisons give bool).
//   BARRIER        (GPU) workgroup barrier.  IF / ENDIF: src (gate) / (IF): a conditional block.
//   VECTORIZE      dtype T.vec(n), n scalar sources of T: a vector.  GEP: dtype T, src (vector), arg int64 i:
//                  its lane i. Vector dtypes appear only where the renderer says it takes them
//                  (Renderer::vectorizes): a vector LOAD reads n consecutive elements from buf+idx (any
//                  alignment), a vector STORE writes them, ALU ops act lane by lane. The interpreter takes
//                  none, and codegen gives it scalar lanes with the same arithmetic.
//
//   WMMA           dtype float.vec(4), src (A's 8, B's 4, C's 4 registers, scalars), arg string naming the tensor
//                  core ("WMMA_16_8_16_half_float", renderer/tensor_core.h): one warp-wide D = A·B + C; every
//                  thread of the workgroup reaches it together. Its lanes are read with GEP.
//
//   WGMMA          dtype float.vec(n / 2), src (A's DEFINE_LOCAL, A idx, B's DEFINE_LOCAL, B idx, after, C's n / 2
//                  lanes), arg WgmmaArg (renderer/tensor_core.h) packed as int64s: Hopper's warpgroup-wide
//                  D (64 x n) = A (64 x 16) · B (16 x n) + C, A and B read from shared memory at A idx, B idx (the
//                  same in every thread of a warpgroup, 16-byte aligned) in the core-matrix layout the arg
//                  gives. 128 consecutive threads form a warpgroup; every thread of the workgroup reaches it
//                  together. `after` orders it (the ASYNC_COMMIT of its step's copies).
//
//   Shared-memory staging of tensor-core operands (codegen/tc_staging.h), GPU only:
//   CP_ASYNC       void, src (dst DEFINE_LOCAL, dst idx, src DEFINE_GLOBAL, src idx, gate bool, valid bool,
//                  after...), arg int64 n: copy n elements (16 bytes) from src+idx to dst+idx, asynchronously, if
//                  gate; where not valid (a pad mask hides the source) write n zeros instead and read nothing.
//                  The sources after `valid` only order it (the BARRIER it must follow).
//   ASYNC_COMMIT   void, src (CP_ASYNCs, earlier ASYNC_COMMIT...): closes a group of the thread's copies.
//   ASYNC_WAIT     void, src (ordering: the ASYNC_COMMIT it follows, the RANGE it sits in), arg int64 n:
//                  waits until at most n % 256 of the thread's groups are still in flight; n >= 256: then
//                  makes the copies visible to the async proxy (WGMMA reads them). (The interpreter copies
//                  at once, so both are no-ops there.)
//   LDMATRIX       dtype T.vec(2 * count), src (DEFINE_LOCAL, row idx, after...), arg LdmatrixArg (renderer/tensor_core.h) packed as
//                  int64 (count | trans << 8): warp-wide load of `count` 8x8 matrices of 16-bit T; lane l gives
//                  the address of row l % 8 of matrix l / 8 (8 consecutive elements); lane 4g + t receives
//                  elements (g, 2t), (g, 2t + 1) of each matrix, or (2t, g), (2t + 1, g) with trans, as lanes
//                  2j, 2j + 1 of its value (read with GEP). Every thread of the workgroup reaches it together.
//
//   Bulk tensor copies (Hopper's TMA, renderer/tensor_map.h) of WGMMA operands, GPU only:
//   TENSOR_MAP     the DEFINE_GLOBAL's dtype, src (DEFINE_GLOBAL), arg TensorMapArg packed as int64s: the buffer
//                  as a matrix copied in boxes; a kernel parameter (after the DEFINE_VARs, by its number).
//   MBAR_INIT      void, src (bar DEFINE_LOCAL of uint64, idx, gate bool, after...), arg int64 n: if gate, sets
//                  up the barrier bar[idx] to complete a phase when n threads arrived and the bytes they
//                  announced landed (phases count from 0).
//   MBAR_EXPECT    void, src (bar, idx, gate, after...), arg int64 bytes: if gate, arrives on bar[idx] announcing
//                  `bytes` of TMA_LOAD writes its current phase waits for.
//   TMA_LOAD       void, src (dst DEFINE_LOCAL, dst idx, TENSOR_MAP, col, row, bar, bar idx, gate, after...): if
//                  gate, copies the map's box at (row, col) to dst + idx (renderer/tensor_map.h), asynchronously;
//                  its bytes count toward bar[bar idx]'s current phase.
//   MBAR_WAIT      void, src (bar, idx, parity, after...): waits until bar[idx]'s phase of that parity (0, 1)
//                  completed. (The interpreter copies at once and checks that the phase did complete.)
//   The sources after the named ones only order the node.
//
// No other op appears in a linearized program. Integer index math is int32 unless a node says otherwise.
// codegen/verify_program.h checks all of this; the engine runs it on every program before rendering.
#include <cstdint>
#include <string>
#include <vector>

#include "uop/uop.h"

namespace tg {

struct ProgramSpec {
  std::string name;             // kernel name, e.g. "r_2", "E_4_4" (plain, no color codes)
  std::string display_name;     // the name with ANSI colors for DEBUG output
  std::string src;              // rendered source (empty for the interpreter device)
  std::vector<UOpPtr> uops;     // the linearized kernel
  std::vector<int64_t> global_size{1, 1, 1};  // GPU launch grid (unused on CPU)
  std::vector<int64_t> local_size{1, 1, 1};
  int n_bufs = 0;               // DEFINE_GLOBALs, in parameter order 0..n_bufs-1
  std::vector<UOpPtr> vars;     // DEFINE_VARs, in parameter order after the buffers
  int64_t estimated_ops = 0;    // FLOPs of one run (for GFLOPS in DEBUG=2)
  int64_t estimated_mem = 0;    // bytes touched by one run
  std::vector<std::string> applied_opts;  // the opts that shaped the kernel, as tinygrad prints them
};

}  // namespace tg
