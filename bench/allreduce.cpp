// All-reduce of a sharded tensor's sum over its sharded axis: x of shape (n, count) split over n devices, x.sum(0)
// gives every device the whole sum. Prints per size the median time and the bus bandwidth (NCCL's busbw:
// 2 (n - 1) / n x bytes / time), checking the result once: as an eager call (the graph lowered, scheduled and run
// each time, as torch.distributed's all_reduce is one call of its own) and replayed by TinyJit (the collective alone).
// bench/allreduce_torch.py runs torch.distributed's on the same GPUs.
//
//   build/bench/allreduce [n_devices (2)] [max MiB (256)]     devices of DEV's kind: CUDA, CUDA:1, ...
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include <tg/tg.h>

#include "runtime/device.h"

int main(int argc, char** argv) {
  try {
    const int n = argc > 1 ? std::atoi(argv[1]) : 2;
    const int64_t max_mib = argc > 2 ? std::atoll(argv[2]) : 256;
    std::string kind = tg::default_device();
    kind = kind.substr(0, kind.find(':'));
    std::vector<std::string> devs;
    for (int i = 0; i < n; i++) devs.push_back(i == 0 ? kind : kind + ":" + std::to_string(i));
    auto sync = [&] {
      for (const std::string& d : devs) tg::get_device(d).synchronize();
    };
    std::printf("# all-reduce (sum, float32) over %s\n# %10s %12s %12s %12s %12s\n",
                tg::Tensor::zeros({1}).shard(devs).device().c_str(), "bytes", "eager_us", "busbw_GB/s", "jit_us",
                "busbw_GB/s");
    // The median seconds of `call` over reps calls, each waited for on every device.
    auto median_time = [&](int reps, const std::function<void()>& call) {
      std::vector<double> times;
      for (int r = 0; r < reps; r++) {
        sync();
        auto t0 = std::chrono::steady_clock::now();
        call();
        sync();
        times.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
      }
      std::sort(times.begin(), times.end());
      return times[times.size() / 2];
    };
    for (int64_t bytes = int64_t(1) << 20; bytes <= max_mib << 20; bytes *= 4) {
      const int64_t count = bytes / 4;
      tg::Tensor x = (tg::Tensor::ones({n, count}, {.device = devs[0]}) * 1.5f).shard(devs, 0).contiguous().realize();
      tg::Tensor y = x.sum(0).realize();
      const std::vector<float> got = y.shrink({{0, 4}}).tolist<float>();
      for (float v : got)
        if (v != 1.5f * float(n)) throw tg::Error("all-reduce gave " + std::to_string(v));
      const int reps = bytes >= (int64_t(64) << 20) ? 20 : 50;
      const double eager = median_time(reps, [&] { x.sum(0).realize(); });
      tg::TinyJit jit([](const std::vector<tg::Tensor>& in) { return std::vector<tg::Tensor>{in[0].sum(0)}; });
      for (int warm = 0; warm < 3; warm++)  // (runs, captures, replays)
        if (jit({x})[0].shrink({{0, 4}}).tolist<float>() != got) throw tg::Error("the replayed all-reduce differs");
      const double replayed = median_time(reps, [&] { jit({x}); });
      auto busbw = [&](double t) { return 2.0 * (n - 1) / n * double(bytes) / t / 1e9; };
      std::printf("  %10lld %12.1f %12.1f %12.1f %12.1f\n", static_cast<long long>(bytes), eager * 1e6, busbw(eager),
                  replayed * 1e6, busbw(replayed));
      std::fflush(stdout);
    }
  } catch (const tg::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
