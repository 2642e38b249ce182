// PassLog and ScopedPass: see pass_log.h.
#include "uop/pass_log.h"

#include <cstdio>

namespace tg {
namespace {
thread_local PassLog* t_log = nullptr;
}  // namespace

PassLog::PassLog() : outer_(t_log) { t_log = this; }
PassLog::~PassLog() { t_log = outer_; }
PassLog* PassLog::current() { return t_log; }

std::string PassLog::str() const {
  std::string out;
  char line[160];
  for (const PassRecord& r : records_) {
    std::string name = std::string(size_t(2 * r.depth), ' ') + r.name;
    if (r.rewrites >= 0)
      std::snprintf(line, sizeof(line), "  %-24s %7lld rewrites %7lld nodes %9.1f us\n", name.c_str(),
                    static_cast<long long>(r.rewrites), static_cast<long long>(r.nodes), r.seconds * 1e6);
    else
      std::snprintf(line, sizeof(line), "  %-24s %16s %7lld nodes %9.1f us\n", name.c_str(), "",
                    static_cast<long long>(r.nodes), r.seconds * 1e6);
    out += line;
  }
  return out;
}

ScopedPass::ScopedPass(std::string name) : log_(t_log) {
  if (!log_) return;
  // recorded in the order passes start, so a pass is listed before the ones it runs
  slot_ = log_->records_.size();
  log_->records_.push_back(PassRecord{std::move(name), -1, 0, 0, log_->depth_++});
  start_ = std::chrono::steady_clock::now();
}

ScopedPass::~ScopedPass() {
  if (!log_) return;
  PassRecord& r = log_->records_[slot_];
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  r.rewrites = rewrites_;
  r.nodes = nodes_;
  log_->depth_--;
}

}  // namespace tg
