#pragma once
// Scalar execution of ALU ops with C semantics in a given dtype: used by constant folding (symbolic) and
// by the interpreter device, so both agree with compiled code.
#include <cstdint>
#include <vector>

#include "tg/dtype.h"
#include "uop/ops.h"

namespace tg {

// One scalar. Integer and bool dtypes use `i` (wrapped to the dtype's width and signedness; bool is 0/1;
// uint64 holds its bit pattern, so values >= 2^63 read negative),
// float dtypes use `f` (rounded to the dtype's precision: float32 values are exact floats, float16 and
// bfloat16 round to nearest even).
struct Num {
  int64_t i = 0;
  double f = 0;
};

// Convert `v` of dtype `from` to dtype `to` (C cast semantics; float->int truncates; bool is v != 0).
Num cast_num(Num v, DType from, DType to);
// Reinterpret the bits of `v` (dtype `from`) as dtype `to` (same size).
Num bitcast_num(Num v, DType from, DType to);
// op applied to srcs. `dtype` is the result dtype; `src_dtype` the dtype of the (value) sources: for
// comparisons the result is bool and the operands are src_dtype; for WHERE src[0] is bool.
// IDIV/MOD truncate toward zero; division by zero gives 0 for ints (never traps); FDIV/RECIP follow IEEE.
Num exec_alu(Ops op, DType dtype, DType src_dtype, const std::vector<Num>& srcs);
// Round/wrap a value into dtype's domain (what storing it in that dtype would give).
Num truncate_num(Num v, DType dtype);

// The value as a double (uint64 is kept in `i` as its bit pattern, so it needs the dtype to read).
double num_as_double(Num v, DType dtype);
// Raw bits of a scalar of `dtype` (its itemsize, zero-extended), and back: how buffers store values.
uint64_t num_to_bits(Num v, DType dtype);
Num num_from_bits(uint64_t bits, DType dtype);
// IEEE binary16 and bfloat16 by hand: round to nearest even, with subnormals, inf and NaN.
uint16_t double_to_half_bits(double x);
double half_bits_to_double(uint16_t bits);
uint16_t double_to_bf16_bits(double x);
double bf16_bits_to_double(uint16_t bits);

}  // namespace tg
