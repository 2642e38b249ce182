// Several threads building and realizing independent graphs at once: knobs are per thread, counters add up,
// and every thread gets its own right numbers while they share the intern table, the method cache, the
// compile cache, the allocators, the devices and the CPU thread pool. Also built alone as tg_thread_tests,
// which the tsan preset and CI's tsan stage run under ThreadSanitizer.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "tg/tg.h"

using tg::Tensor;

namespace {

constexpr int kThreads = 4;

// Runs body(t) on kThreads threads at once; a failed check or an exception in any is reported here.
void run_threads(const std::function<void(int)>& body) {
  std::vector<std::string> errors(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; t++)
    threads.emplace_back([&, t] {
      try {
        body(t);
      } catch (const std::exception& e) {
        errors[size_t(t)] = e.what();
      }
    });
  for (auto& th : threads) th.join();
  for (int t = 0; t < kThreads; t++) EXPECT_EQ(errors[size_t(t)], "") << "thread " << t;
}

std::vector<float> values(int seed, size_t n) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; i++) v[i] = float((seed * 31 + int(i) * 7) % 23) / 4.0f - 2.0f;
  return v;
}

// One round of a thread: graphs whose ASTs every thread shares, graphs of its own shape, a reduce big enough
// to be split across the CPU pool's workers, and a backward pass. Returns the first mismatch, or "".
std::string one_round(int t, int round) {
  const int seed = t * 1000 + round;
  auto mismatch = [&](const char* what, double got, double want) {
    return std::string(what) + ": thread " + std::to_string(t) + " round " + std::to_string(round) + " got " +
           std::to_string(got) + ", expected " + std::to_string(want);
  };
  // The same AST in every thread (16x16 inputs), different data.
  std::vector<float> a = values(seed, 256), b = values(seed + 1, 256);
  std::vector<float> rows = ((Tensor(a, {16, 16}) * Tensor(b, {16, 16})) + 1).sum(1).tolist<float>();
  for (size_t r = 0; r < 16; r++) {
    double want = 0;
    for (size_t c = 0; c < 16; c++) want += double(a[r * 16 + c]) * b[r * 16 + c] + 1;
    if (std::abs(rows[r] - want) > 1e-4) return mismatch("shared AST", rows[r], want);
  }
  // An AST of this thread only: its shape depends on t.
  const int64_t n = t + 2;
  std::vector<float> c = values(seed + 2, size_t(n * 5));
  std::vector<float> cols = ((Tensor(c, {n, 5}) - 0.5f).relu() * float(t + 1)).max(0).tolist<float>();
  for (int64_t j = 0; j < 5; j++) {
    double want = 0;
    for (int64_t i = 0; i < n; i++) want = std::max(want, std::max(0.0, double(c[size_t(i * 5 + j)]) - 0.5) * (t + 1));
    if (std::abs(cols[size_t(j)] - want) > 1e-5) return mismatch("own AST", cols[size_t(j)], want);
  }
  // 2^17 elements: the CPU backend splits this reduce across its worker threads. The seed comes in as data,
  // so every round and thread runs the same kernels (compiled once: CI runs this under TSan from a cold cache).
  int64_t total = ((Tensor::arange(1 << 17) + Tensor(std::vector<int>{seed}, {1})) % 7).sum().item<int64_t>();
  int64_t want_total = 0;
  for (int64_t i = 0; i < (1 << 17); i++) want_total += (i + seed) % 7;
  if (total != want_total) return mismatch("big reduce", double(total), double(want_total));
  // Autograd: the leaf search looks at every tensor that requires grad, other threads' too.
  Tensor w(values(seed + 3, 8), {8}, {.requires_grad = true});
  (w * w * float(t + 1)).sum().backward();
  std::vector<float> g = w.grad().tolist<float>(), wv = values(seed + 3, 8);
  for (size_t i = 0; i < 8; i++)
    if (std::abs(g[i] - 2 * wv[i] * (t + 1)) > 1e-5) return mismatch("gradient", g[i], 2 * wv[i] * (t + 1));
  return "";
}

}  // namespace

TEST(Threads, ContextIsPerThread) {
  const long noopt = tg::NOOPT.default_value(), training = tg::TRAINING.default_value();
  tg::Context outer({{"NOOPT", noopt + 7}});
  std::atomic<long> fresh{-1}, scoped{-1}, after{-1}, thread_training{-1};
  std::thread th([&] {
    fresh = tg::NOOPT.value();  // a new thread starts from the process default, not from the main thread
    {
      tg::Context inner({{"NOOPT", noopt + 3}});
      scoped = tg::NOOPT.value();
    }
    after = tg::NOOPT.value();
    Tensor::training = 1 - training;
    thread_training = Tensor::training.value();
  });
  th.join();
  EXPECT_EQ(fresh.load(), noopt);
  EXPECT_EQ(scoped.load(), noopt + 3);
  EXPECT_EQ(after.load(), noopt);
  EXPECT_EQ(thread_training.load(), 1 - training);
  EXPECT_EQ(tg::NOOPT.value(), noopt + 7);        // the other thread's Context did not touch this one
  EXPECT_EQ(Tensor::training.value(), training);  // nor did its assignment
}

TEST(Threads, ContextOverridesDoNotLeakAcrossThreads) {
  // Each thread holds its own NOOPT for a while and keeps seeing it while the others change theirs.
  std::atomic<int> ready{0};
  run_threads([&](int t) {
    tg::Context ctx({{"NOOPT", 100 + t}});
    ready++;
    while (ready < kThreads) std::this_thread::yield();
    for (int i = 0; i < 1000; i++)
      if (tg::NOOPT.value() != 100 + t) throw std::runtime_error("NOOPT changed under thread " + std::to_string(t));
  });
}

TEST(Threads, CountersAddUpAcrossThreads) {
  auto work = [](int seed) { return (Tensor(values(seed, 64), {64}) * 3 + 1).tolist<float>(); };
  work(0);  // compile once
  int64_t k0 = tg::GlobalCounters::kernel_count;
  work(1);
  const int64_t per_call = tg::GlobalCounters::kernel_count - k0;
  ASSERT_GT(per_call, 0);
  constexpr int kCalls = 25;
  int64_t before = tg::GlobalCounters::kernel_count, mem_before = tg::GlobalCounters::global_mem;
  run_threads([&](int t) {
    for (int i = 0; i < kCalls; i++) work(t * kCalls + i);
  });
  EXPECT_EQ(tg::GlobalCounters::kernel_count - before, kThreads * kCalls * per_call);
  EXPECT_GT(tg::GlobalCounters::global_mem - mem_before, 0);
}

TEST(Threads, IndependentGraphsRealizeAtOnce) {
  constexpr int kRounds = 12;
  run_threads([&](int t) {
    // Thread 1 lowers without optimizations: per-thread knobs change its kernels, not its numbers.
    tg::Context ctx({{"NOOPT", t == 1 ? 1 : tg::NOOPT.default_value()}});
    for (int r = 0; r < kRounds; r++)
      if (std::string err = one_round(t, r); !err.empty()) throw std::runtime_error(err);
  });
}

TEST(Threads, RandomNumbersFromSeveralThreads) {
  // Each draw reserves its own range of the generator's counter, so drawing at once from several threads
  // gives the numbers one thread would draw, in some order.
  constexpr int kDraws = 4;
  auto draw = [] {
    std::vector<float> v = Tensor::rand({256}).tolist<float>();
    for (float x : v)
      if (!(x >= 0 && x < 1)) throw std::runtime_error("rand gave " + std::to_string(x));
    return v;
  };
  Tensor::manual_seed(1234);
  std::vector<float> serial;
  for (int i = 0; i < kThreads * kDraws; i++) {
    std::vector<float> v = draw();
    serial.insert(serial.end(), v.begin(), v.end());
  }
  Tensor::manual_seed(1234);
  std::vector<std::vector<float>> draws(kThreads);
  run_threads([&](int t) {
    for (int i = 0; i < kDraws; i++) {
      std::vector<float> v = draw();
      draws[size_t(t)].insert(draws[size_t(t)].end(), v.begin(), v.end());
    }
  });
  std::vector<float> parallel;
  for (auto& d : draws) parallel.insert(parallel.end(), d.begin(), d.end());
  std::sort(serial.begin(), serial.end());
  std::sort(parallel.begin(), parallel.end());
  EXPECT_EQ(parallel, serial);
}

TEST(Threads, PoolWorkersWakeAfterSleeping) {
  // A kernel split across 2 threads, with pauses between runs long enough (> 100 us) that the pool's worker stops
  // spinning and sleeps: each run must wake it (or run without it) and still give every row's sum.
  tg::Context ctx({{"THREADS", 2}});
  for (int r = 0; r < 6; r++) {
    Tensor x = Tensor::full({512, 1024}, float(r + 1)).contiguous().realize();
    std::this_thread::sleep_for(std::chrono::milliseconds(r % 2 ? 3 : 0));
    std::vector<float> s = x.sum(1).tolist<float>();
    ASSERT_EQ(s.size(), 512u);
    for (float v : s) ASSERT_EQ(v, 1024.0f * float(r + 1)) << "round " << r;
  }
}
