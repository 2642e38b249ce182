#pragma once
// The random-program differential fuzzer (tests/engine/test_program_fuzz.cpp): random tensor programs of
// movement, elementwise, cast, reduce and matmul ops on random shapes (0- and 1-sized dims, broadcasting)
// and dtypes, run on two devices and compared, forward values and gradients.
//
// A Program is plain data (ops, arguments, input values), so one program runs unchanged on any device and
// prints as the op sequence that replays it. Each node also carries what the generator knows about its
// values (a bound, the grid they lie on, an error estimate): two backends agree exactly where every step
// is exact, and within the estimate elsewhere. Ops whose result jumps (comparisons, casts to int, floor)
// are only applied to exact values, so a rounding difference can never flip them.
#include <cstdint>
#include <string>
#include <vector>

#include "tg/tg.h"

namespace program_fuzz {

enum class Kind {
  Input,
  Unary,
  Binary,
  Compare,
  Where,
  Cast,
  Reshape,
  Permute,
  Expand,
  Pad,
  Shrink,
  Flip,
  Reduce,
  Matmul,
  Contiguous
};

// What the generator knows about a node's values: |finite values| <= bound, finite values are multiples of
// 2^grid while exact, two backends differ by at most err, and whether inf / NaN may appear.
struct Values {
  double bound = 0;
  int grid = 0;
  double err = 0;
  bool inf = false, nan = false;
  bool exact() const { return err == 0; }
};

struct Node {
  Kind kind = Kind::Input;
  std::string op;        // "neg", "add", "lt", "sum", ... (Unary, Binary, Compare, Reduce); Input: "" (data),
                         // "full" (data[0] everywhere) or "arange" (0, 1, ... reshaped)
  std::vector<int> src;  // earlier node indices
  tg::Shape shape;       // the result's shape (checked against the library's)
  tg::DType dtype;       // the result's dtype (from the library)
  tg::Shape shape_arg;   // Reshape / Expand target; Permute order; Flip / Reduce axes
  tg::PadArg pads;       // Pad (before, after) / Shrink [begin, end)
  bool keepdim = false;
  tg::DType to;                // Cast target; Input dtype
  std::vector<double> data;    // Input values; Binary / Compare with one source: the C++ scalar data[0]
  bool scalar_left = false;    // the scalar is the left operand
  bool requires_grad = false;  // Input
  Values v;
};

struct Program {
  uint64_t seed = 0;
  std::vector<Node> nodes;
  std::vector<int> outputs;  // realized together
  bool backward = false;     // loss = sum(outputs[0] * loss_weight), gradients of the float inputs
  std::vector<double> loss_weight;
  std::vector<std::string> rejected;  // tg::Errors of ops the generator tried and dropped
  std::string describe() const;       // one line per node, C++-like, for replaying a failure by hand
};

// A random program from `seed` (the same seed gives the same program).
Program generate(uint64_t seed);

// The program's results on one device: each output's values (as double) and, when backward, each input's
// gradient (empty when that input got none). `error` holds a tg::Error's message instead when one was thrown.
struct Result {
  std::vector<std::vector<double>> outputs;
  std::vector<std::vector<double>> grads;
  std::vector<bool> has_grad;
  std::string error;
};
Result run(const Program& p, const std::string& device);

// "" when `b` agrees with `a` (the reference) within what the program's analysis allows, else where not.
std::string compare(const Program& p, const Result& a, const Result& b);

}  // namespace program_fuzz
