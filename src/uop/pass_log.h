#pragma once
// The passes a kernel goes through, with what each did: every named graph_rewrite (uop/pattern.h) and every
// stage wrapped in a ScopedPass records its name, rewrites (or nodes made) and time into the calling thread's
// open PassLog. Nothing is recorded, and nothing costs more than a check, while no log is open. The method
// cache opens one per kernel at DEBUG>=4 and prints it after the source.
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace tg {

struct PassRecord {
  std::string name;
  int64_t rewrites = 0;  // rules that fired (graph_rewrite), or -1 when the stage is not a rewrite
  int64_t nodes = 0;     // nodes in its result
  double seconds = 0;
  int depth = 0;  // passes open around it (a pass inside "lower" has depth 1)
};

class PassLog {
 public:
  PassLog();  // opens the calling thread's log (logs nest: the innermost one records)
  ~PassLog();
  PassLog(const PassLog&) = delete;
  PassLog& operator=(const PassLog&) = delete;
  const std::vector<PassRecord>& records() const { return records_; }
  // "  exact_products      1 rewrites     42 nodes     12 us" per pass, indented by depth.
  std::string str() const;
  static PassLog* current();  // nullptr when none is open on this thread

 private:
  friend class ScopedPass;
  std::vector<PassRecord> records_;
  PassLog* outer_ = nullptr;
  int depth_ = 0;
};

// Times one pass from construction to destruction; set what it did before it ends.
class ScopedPass {
 public:
  explicit ScopedPass(std::string name);
  ~ScopedPass();
  ScopedPass(const ScopedPass&) = delete;
  ScopedPass& operator=(const ScopedPass&) = delete;
  void set(int64_t rewrites, int64_t nodes) { rewrites_ = rewrites, nodes_ = nodes; }

 private:
  PassLog* log_;
  size_t slot_ = 0;
  int64_t rewrites_ = -1, nodes_ = 0;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace tg
