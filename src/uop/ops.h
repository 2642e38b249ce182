#pragma once
// Ops: one enum for every stage of the pipeline (tensor graph, kernel AST, lowered code, ALU).
#include <cstdint>
#include <string>

namespace tg {

#define TG_OPS(X)                                                                                    \
  /* tensor graph */                                                                                 \
  X(BUFFER) X(DEVICE) X(COPY) X(CONTIGUOUS) X(ASSIGN) X(DETACH) X(BIND)                              \
  /* tensor graph: a value spread over devices (schedule/multi.h), one device's result of a collective */ \
  X(MULTI) X(ALLREDUCE)                                                                              \
  /* movement (only at the tensor level; the graph stores them folded into VIEW) */                  \
  X(RESHAPE) X(PERMUTE) X(EXPAND) X(PAD) X(SHRINK) X(FLIP)                                           \
  /* shared by the tensor graph and kernel ASTs */                                                   \
  X(VIEW) X(CONST) X(REDUCE_AXIS) X(SINK) X(STORE) X(LOAD) X(DEFINE_GLOBAL) X(DEFINE_VAR)            \
  /* lowered code */                                                                                 \
  X(RANGE) X(ENDRANGE) X(SPECIAL) X(DEFINE_ACC) X(DEFINE_LOCAL) X(REDUCE) X(BARRIER) X(IF) X(ENDIF)  \
  X(VECTORIZE) X(GEP) X(INDEX) X(NOOP) X(PREFETCH)                                                  \
  /* lowered code: asynchronous copies to shared memory and warp-wide fragment loads (tensor cores) */ \
  X(CP_ASYNC) X(ASYNC_COMMIT) X(ASYNC_WAIT) X(LDMATRIX)                                              \
  /* lowered code: bulk tensor copies (TMA) and the shared-memory barriers that count their bytes */  \
  X(TENSOR_MAP) X(TMA_LOAD) X(MBAR_INIT) X(MBAR_EXPECT) X(MBAR_WAIT)                                 \
  /* unary ALU */                                                                                    \
  X(CAST) X(BITCAST) X(EXP2) X(LOG2) X(SIN) X(SQRT) X(RECIP) X(NEG) X(TRUNC)                         \
  /* binary ALU */                                                                                   \
  X(ADD) X(MUL) X(SUB) X(IDIV) X(MOD) X(MAX) X(CMPLT) X(CMPNE) X(AND) X(OR) X(XOR) X(SHL) X(SHR)     \
  X(FDIV) X(THREEFRY) X(POW)                                                                         \
  /* ternary ALU (DOT4: int32 c + the 4 unsigned bytes of a times the 4 signed bytes of b) */       \
  X(WHERE) X(MULACC) X(DOT4) X(WMMA) X(WGMMA)                                                        \
  /* lowering only (codegen/lowerer.cpp): a value at each combination of the upcast values of the dims */ \
  /* in its arg (a bit mask); never reaches a linearized program */                                  \
  X(UNROLL)

enum class Ops : uint8_t {
#define TG_OP_ENUM(name) name,
  TG_OPS(TG_OP_ENUM)
#undef TG_OP_ENUM
      COUNT
};

constexpr int kNumOps = static_cast<int>(Ops::COUNT);

const char* op_name(Ops op);  // "ADD"

// Op groups, as in tinygrad's GroupOp.
bool is_unary(Ops op);        // EXP2 LOG2 SIN SQRT RECIP NEG TRUNC
bool is_binary(Ops op);       // ADD MUL SUB IDIV MOD MAX CMPLT CMPNE AND OR XOR SHL SHR FDIV THREEFRY POW
// (POW lives in the tensor graph only: uop/decompositions rewrites it into EXP2/LOG2 before lowering.)
bool is_ternary(Ops op);      // WHERE MULACC DOT4
bool is_alu(Ops op);          // unary, binary or ternary
bool is_commutative(Ops op);  // ADD MUL MAX CMPNE AND OR XOR
bool is_movement(Ops op);     // RESHAPE PERMUTE EXPAND PAD SHRINK FLIP
bool is_comparison(Ops op);   // CMPLT CMPNE: result is bool
// f(0, ..., 0) == 0: padding with zeros commutes with the op (tinygrad's "safe to pad").
bool is_zero_preserving(Ops op);

}  // namespace tg
