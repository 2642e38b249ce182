// Running CPU kernels in this process (see cpu_launch.h): the argument checks, and the pool of threads that runs a
// kernel split across threads.
#include "runtime/cpu_launch.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>
#include <utility>

#include "tg/error.h"

namespace tg {
namespace {

// Persistent workers for kernels split across threads (SPECIAL core_id). run(n, f) calls f(0..n-1), spread
// over the workers and the calling thread, and returns when all calls are done. Workers spin briefly after
// a job (kernels come back to back while a model runs), then sleep on a condition variable.
class ThreadPool {
 public:
  static ThreadPool& get() {
    static ThreadPool pool;
    return pool;
  }

  // Publishing a job takes no lock: the job's fields, then next_ (a worker that claims a task reads them through
  // it), then the generation that spinning workers watch. The mutex is only for workers that went to sleep.
  void run(int n, const std::function<void(int)>& f) {
    std::lock_guard<std::mutex> one_job(job_mu_);
    ensure_workers(n - 1);
    job_.store(&f, std::memory_order_relaxed);
    n_.store(n, std::memory_order_relaxed);
    pending_.store(n, std::memory_order_relaxed);
    next_.store(0, std::memory_order_release);  // last: a worker still leaving the previous job takes nothing before
    generation_.fetch_add(1);                   // (seq_cst, as sleepers_ below: see loop())
    if (sleepers_.load() > 0) {
      std::lock_guard<std::mutex> lock(mu_);
      cv_.notify_all();
    }
    work();
    // The calling thread ran out of tasks: wait for the ones still running elsewhere.
    for (int spins = 0; pending_.load(std::memory_order_acquire) != 0; spins++) {
      if (spins < 4096) {
        pause();
      } else {
        std::unique_lock<std::mutex> lock(mu_);
        done_cv_.wait(lock, [&] { return pending_.load() == 0; });
      }
    }
    next_.store(kNoTasks);
    job_.store(nullptr);
  }

  ~ThreadPool() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
      generation_.fetch_add(1);
    }
    cv_.notify_all();
    for (auto& t : workers_) t.join();
  }

 private:
  std::mutex job_mu_, mu_;
  std::condition_variable cv_, done_cv_;
  std::atomic<const std::function<void(int)>*> job_{nullptr};
  static constexpr int kNoTasks = 1 << 30;
  std::atomic<int> n_{0}, next_{kNoTasks}, pending_{0}, sleepers_{0};
  std::atomic<uint64_t> generation_{0};
  std::atomic<bool> stop_{false};
  std::vector<std::thread> workers_;

  static void pause() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
  }

  // A new worker starts from the generation before the coming job. Reading it inside the thread instead
  // would race: a thread scheduled late could read a later generation (even the destructor's) and sleep
  // through it forever.
  void ensure_workers(int n) {
    while (int(workers_.size()) < n) workers_.emplace_back([this, g = generation_.load()] { loop(g); });
  }

  // Take tasks until none are left (a claim below n_ synchronizes with the job's publication through next_).
  void work() {
    for (int i; (i = next_.fetch_add(1, std::memory_order_acq_rel)) < n_.load(std::memory_order_relaxed);) {
      (*job_.load(std::memory_order_relaxed))(i);
      if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
        std::lock_guard<std::mutex> lock(mu_);
        done_cv_.notify_all();
      }
    }
  }

  void loop(uint64_t seen) {
    for (;;) {
      // Spin for a new job for a little while (about 100us), then sleep. A sleeper counts itself in sleepers_
      // before it looks at the generation a last time (both seq_cst): run() either sees the count and wakes it
      // under the mutex, or the sleeper sees the new generation and does not sleep.
      auto t0 = std::chrono::steady_clock::now();
      bool woke = false;
      for (int spins = 0; !woke; spins++) {
        if (generation_.load(std::memory_order_acquire) != seen)
          woke = true;
        else if ((spins & 255) == 255 && std::chrono::steady_clock::now() - t0 > std::chrono::microseconds(100))
          break;
        else
          pause();
      }
      if (!woke) {
        std::unique_lock<std::mutex> lock(mu_);
        sleepers_.fetch_add(1);
        cv_.wait(lock, [&] { return stop_ || generation_.load() != seen; });
        sleepers_.fetch_sub(1);
      }
      seen = generation_.load(std::memory_order_acquire);
      if (stop_.load()) return;
      if (job_.load()) work();
    }
  }
};

}  // namespace

CpuEntryRunner::CpuEntryRunner(std::string device, const ProgramSpec& spec)
    : device_(std::move(device)), name_(spec.name), n_bufs_(size_t(spec.n_bufs)), n_vars_(spec.vars.size()) {
  for (auto& u : spec.uops)
    if (u->op == Ops::SPECIAL && u->get<SpecialArg>().axis == LaunchAxis::CORE)
      threads_ = int(u->get<SpecialArg>().size);
}

double CpuEntryRunner::run(const std::vector<void*>& bufs, const std::vector<int64_t>& vars, bool wait) const {
  // The trampoline reads exactly n_bufs pointers and n_vars values: a wrong count would read past them.
  if (bufs.size() != n_bufs_ || vars.size() != n_vars_)
    throw Error(device_ + ": kernel " + name_ + " takes " + std::to_string(n_bufs_) + " buffers and " +
                std::to_string(n_vars_) + " vars, got " + std::to_string(bufs.size()) + " and " +
                std::to_string(vars.size()));
  for (size_t i = 0; i < bufs.size(); i++)
    if (!bufs[i]) throw Error(device_ + ": kernel " + name_ + ": buffer " + std::to_string(i) + " is not allocated");
  // vars[n_vars] is the thread index of a kernel split across threads (its core_id parameter).
  // (thread-local copies keep their capacity: a decode step runs ~750 kernels, no allocation each)
  thread_local std::vector<long long> v;
  v.assign(vars.begin(), vars.end());
  v.push_back(0);
  void** b = const_cast<void**>(bufs.data());
  auto t0 = std::chrono::steady_clock::now();
  if (threads_ <= 1) {
    entry_(b, v.data());
  } else {
    CpuEntryFn entry = entry_;
    const std::vector<long long>& shared = v;
    ThreadPool::get().run(threads_, [&](int t) {
      thread_local std::vector<long long> vt;
      vt.assign(shared.begin(), shared.end());
      vt.back() = t;
      entry(b, vt.data());
    });
  }
  auto t1 = std::chrono::steady_clock::now();
  return wait ? std::chrono::duration<double>(t1 - t0).count() : 0.0;
}

}  // namespace tg
