#pragma once
// GlobalCounters, as in tinygrad: what the engine has run since the last reset(). Atomic: every thread that
// realizes adds to the same process-wide totals.
#include <atomic>
#include <cstdint>

namespace tg {

struct GlobalCounters {
  static inline std::atomic<int64_t> kernel_count{0};  // kernels (and copies) run
  static inline std::atomic<int64_t> global_ops{0};    // estimated FLOPs of the kernels run
  static inline std::atomic<int64_t> global_mem{0};    // estimated bytes moved by the kernels run
  static inline std::atomic<double> time_sum_s{0};     // summed kernel time, when timing was asked for (DEBUG>=2)
  static inline std::atomic<int64_t> mem_used{0};      // bytes currently allocated on all devices
  static inline std::atomic<int64_t> mem_peak{0};      // the most mem_used has been since the last reset()
  static void reset() {
    mem_peak = mem_used.load();
    kernel_count = 0;
    global_ops = 0;
    global_mem = 0;
    time_sum_s = 0;
  }
};

}  // namespace tg
