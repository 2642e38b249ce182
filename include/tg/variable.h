#pragma once
// tg::Variable: a symbolic integer, tinygrad's Variable("start_pos", 1, 1024). bind(n) gives it a value for one
// call; a tensor made from the bound variable (tg::Tensor(v.bind(n))) is a 0-d int32 whose value reaches each
// kernel that reads it as an integer argument, so the kernel compiles once for the whole range and a TinyJit
// replays it with the value of each call (a variable given as a TinyJit input).
#include <cstdint>
#include <string>

namespace tg {

struct BoundVariable;

struct Variable {
  std::string name;
  int64_t min = 0, max = 0;  // the inclusive range of its values

  // Throws tg::Error for an empty name or an empty range (min > max) or one past int32 (a kernel argument).
  Variable(std::string name, int64_t min, int64_t max);
  // The variable with a value; throws tg::Error naming the variable when the value is outside [min, max].
  BoundVariable bind(int64_t value) const;
  bool operator==(const Variable&) const = default;
};

struct BoundVariable {
  Variable var;
  int64_t value;
};

}  // namespace tg
