#pragma once
// Knobs in tinygrad's style: each reads its environment variable once; tg::Context overrides them in scope.
//   tg::Context ctx({{"DEBUG", 2}, {"NOOPT", 1}});   // restored when ctx leaves scope
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

namespace tg {

// A knob's value is per thread, as torch's grad mode is: every thread starts from the process default (read
// from the environment once), and set() / `=` / tg::Context change it for the calling thread only. So
// threads that build and realize graphs at once never see each other's settings.
class ContextVar {
 public:
  ContextVar(const char* key, long dflt);
  long value() const;  // this thread's value
  operator long() const { return value(); }
  const char* key() const { return key_; }
  long default_value() const { return default_; }  // the process default every thread starts from
  void set(long v);                                  // for this thread
  ContextVar& operator=(long v) {
    set(v);
    return *this;
  }
  static ContextVar* find(const std::string& key);  // nullptr when no such knob

 private:
  const char* key_;
  long default_;
  size_t id_;  // slot in the per-thread table of values
};

// The knobs (README.md, "Environment"). Read them as plain numbers: `if (DEBUG >= 2) ...`.
// TRAINING (tinygrad's Tensor.training, and its TRAINING knob in newer versions): dropout drops, BatchNorm uses
// the batch's statistics, optimizers may step.
// BEAM=n: search each kernel's opts with a beam of width n (timed on the device, winners cached on disk);
// BEAM_DEBUG=1 prints each search step; IGNORE_BEAM_CACHE=1 searches even when the cache has a winner;
// JITBEAM=n: BEAM=n only for the kernels a TinyJit captures and replays.
extern ContextVar DEBUG, NOOPT, BEAM, CACHELEVEL, JIT, TRAINING, BEAM_DEBUG, IGNORE_BEAM_CACHE, JITBEAM;

// Overrides knobs for the calling thread until it leaves scope (other threads keep their values).
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
