#pragma once
// Knobs in tinygrad's style: each reads its environment variable once; tg::Context overrides them in scope.
//   tg::Context ctx({{"DEBUG", 2}, {"NOOPT", 1}});   // restored when ctx leaves scope
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

namespace tg {

class ContextVar {
 public:
  ContextVar(const char* key, long dflt);
  long value() const { return value_; }
  operator long() const { return value_; }
  const char* key() const { return key_; }
  void set(long v) { value_ = v; }
  ContextVar& operator=(long v) {
    value_ = v;
    return *this;
  }
  static ContextVar* find(const std::string& key);  // nullptr when no such knob

 private:
  const char* key_;
  long value_;
};

// The knobs (DESIGN.md section 4). Read them as plain numbers: `if (DEBUG >= 2) ...`.
// TRAINING (tinygrad's Tensor.training, and its TRAINING knob in newer versions): dropout drops, BatchNorm uses
// the batch's statistics, optimizers may step.
extern ContextVar DEBUG, NOOPT, BEAM, CACHELEVEL, JIT, TRAINING;

class Context {
 public:
  // Throws tg::Error for a key that is not a knob.
  Context(std::initializer_list<std::pair<std::string, long>> overrides);
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

 private:
  std::vector<std::pair<ContextVar*, long>> saved_;
};

}  // namespace tg
