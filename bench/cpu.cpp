// CPU kernels against numpy (OpenBLAS) and torch on the same machine, in one run: sgemm 1024^3 and 2048^3,
// conv2d 3x3 (batch 8, 32 -> 32 channels, 56x56, padding 1), softmax 4096^2 along rows, and a sum of 2^24
// floats. Every figure is the median wall time of `reps` runs on random data (ours: realize(), the kernels
// compiled in a warm-up run first); the peers' come from bench/cpu_peers.py, run by this program first.
//
//   bench/cpu [reps] [filter]      THREADS=n: our threads and the peers' (default: the machine's cores);
//                                  PYTHON=path: the python that runs the peers (default python3); PEERS=0 skips
//                                  them; TINYGRAD=1 adds upstream tinygrad with BEAM=2 (TINYGRAD_BEAM=n; its
//                                  search takes minutes the first time). For numpy with OpenBLAS, give a python
//                                  whose numpy bundles it (a pip wheel); Debian's links the reference BLAS.
//                                  BENCH_MIN=1: our fastest run
//                                  instead of the median (comparing builds on a busy machine). Never fails on time.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "engine/beam.h"
#include "schedule/schedule.h"
#include "tg/tg.h"

using tg::Tensor;

namespace {

struct Row {
  std::string name;
  double flops;  // 0 for memory-bound rows (GB/s from `bytes` instead)
  double bytes;
  std::function<std::function<Tensor()>()> setup;  // makes the inputs, returns the op to time
};

double median_seconds(int reps, const std::function<Tensor()>& f) {
  f().realize();  // compiles
  std::vector<double> t;
  for (int i = 0; i < reps; i++) {
    auto t0 = std::chrono::steady_clock::now();
    f().realize();
    t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(t.begin(), t.end());
  if (std::getenv("BENCH_MIN")) return t[0];  // the fastest run: for comparing builds on a busy machine
  return t[t.size() / 2];
}

std::shared_ptr<Tensor> rand_tensor(const tg::Shape& s) {
  auto t = std::make_shared<Tensor>(Tensor::randn(s));
  t->realize();
  return t;
}

std::vector<Row> rows() {
  auto mm = [](int64_t n) {
    return Row{"sgemm " + std::to_string(n), 2.0 * double(n) * double(n) * double(n), 0, [n] {
                 auto a = rand_tensor({n, n}), b = rand_tensor({n, n});
                 return std::function<Tensor()>([a, b] { return a->matmul(*b); });
               }};
  };
  return {
      mm(1024),
      mm(2048),
      Row{"conv2d 3x3", 2.0 * 8 * 32 * 56 * 56 * 32 * 9, 0,
          [] {
            auto x = rand_tensor({8, 32, 56, 56}), w = rand_tensor({32, 32, 3, 3});
            return std::function<Tensor()>([x, w] { return x->conv2d(*w, std::nullopt, 1, {1}, {1}, {1}); });
          }},
      Row{"softmax 4096", 0, 2.0 * 4 * 4096 * 4096,
          [] {
            auto x = rand_tensor({4096, 4096});
            return std::function<Tensor()>([x] { return x->softmax(-1); });
          }},
      Row{"sum 16M", 0, 4.0 * (1 << 24),
          [] {
            auto x = rand_tensor({int64_t(1) << 24});
            return std::function<Tensor()>([x] { return x->sum(); });
          }},
  };
}

// The peers' figures: "peer name<TAB>seconds" lines from bench/cpu_peers.py; "info" lines are printed.
std::map<std::string, double> peer_seconds(int reps, int threads) {
  std::map<std::string, double> out;
  const char* off = std::getenv("PEERS");
  if (off && std::string(off) == "0") return out;
  const char* py = std::getenv("PYTHON");
  std::string cmd = std::string(py && *py ? py : "python3") + " " + TG_SOURCE_DIR + "/bench/cpu_peers.py " +
                    std::to_string(reps) + " " + std::to_string(threads) + " 2>/dev/null";
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return out;
  char line[512];
  while (std::fgets(line, sizeof(line), p)) {
    std::string s(line);
    auto tab = s.find('\t');
    if (tab == std::string::npos) continue;
    if (s.rfind("info", 0) == 0)
      std::printf("peer: %s", s.c_str() + tab + 1);
    else
      out[s.substr(0, tab)] = std::atof(s.c_str() + tab + 1);
  }
  pclose(p);
  return out;
}

// The BEAM row: sgemm 1024^3 with BEAM=2, its cold search (an empty cache folder: BEAM_CACHE_DIR, default a
// fresh folder under /tmp) and the time a cached winner adds to compiling the kernel (the cache lookup and the
// check that its opts still apply). Returns the median seconds of the BEAM=2 matmul.
double beam_row(int reps) {
  std::string dir = std::getenv("BEAM_CACHE_DIR") ? std::getenv("BEAM_CACHE_DIR") : "";
  if (dir.empty()) {
    char tmpl[] = "/tmp/tg_bench_beam_XXXXXX";
    if (!mkdtemp(tmpl)) return 0;
    dir = tmpl;
  }
  setenv("CACHEDB_DIR", dir.c_str(), 1);
  tg::Context ctx({{"BEAM", 2}});
  // The kernel's AST from tensors of its own: create_schedule marks what it schedules as realized.
  const tg::UOpPtr ast =
      tg::create_schedule({Tensor::empty({1024, 1024}).matmul(Tensor::empty({1024, 1024})).uop()}).items.back().ast;
  const std::string dev = tg::default_device();
  auto t0 = std::chrono::steady_clock::now();
  const auto cold = tg::beam_opts(dev, ast, 2);
  const double cold_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const int64_t searches = tg::beam_searches();
  t0 = std::chrono::steady_clock::now();
  const auto warm = tg::beam_opts(dev, ast, 2);
  const double warm_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("BEAM=2 sgemm 1024: cold search %.2f s, warm (cached) %.2f ms added, %s, winner:", cold_s, warm_s * 1e3,
              tg::beam_searches() == searches ? "no search when warm" : "searched again when warm (cache not used)");
  for (const tg::Opt& o : cold.value_or(std::vector<tg::Opt>{})) std::printf(" %s", o.repr().c_str());
  std::printf("%s\n", warm == cold ? "" : " (warm opts differ!)");
  auto a = rand_tensor({1024, 1024}), b = rand_tensor({1024, 1024});
  return median_seconds(reps, [a, b] { return a->matmul(*b); });
}

}  // namespace

int main(int argc, char** argv) {
  int reps = argc > 1 ? std::max(1, std::atoi(argv[1])) : 10;
  std::string filter = argc > 2 ? argv[2] : "";
  const char* th = std::getenv("THREADS");
  int threads = th && std::atoi(th) > 0 ? std::atoi(th) : int(std::max(1u, std::thread::hardware_concurrency()));
  std::printf("CPU, %d threads, %d reps, median wall time, CPU_ISA %s\n", threads, reps,
              tg::cpu_isa_description().c_str());
  // The peers run before and after ours, and keep the faster of their two medians: a load that comes or
  // goes in the middle of the run (another build on a shared machine) does not favour us.
  std::map<std::string, double> peers = peer_seconds(reps, threads);
  std::vector<std::pair<const Row*, double>> ours;
  const std::vector<Row> all = rows();
  for (const Row& r : all)
    if (filter.empty() || r.name.find(filter) != std::string::npos)
      ours.push_back({&r, median_seconds(reps, r.setup())});
  double beam_s = 0;
  if (filter.empty() || filter == "beam") beam_s = beam_row(reps);
  for (auto& [name, s] : peer_seconds(reps, threads)) peers[name] = peers.count(name) ? std::min(peers[name], s) : s;
  std::printf("%-14s %10s %10s %10s %8s %10s %8s %10s %10s %8s\n", "work", "unit", "tg.cpp", "numpy", "tg/np", "torch",
              "tg/torch", "tg ms", "tinygrad", "tg/tiny");
  for (auto& row_time : ours) {  // (not a structured binding: the lambdas capture r, which clang accepts from 16 on)
    const auto r = row_time.first;
    const double t = row_time.second;
    auto rate = [&](double s) { return s > 0 ? (r->flops > 0 ? r->flops : r->bytes) / s / 1e9 : 0.0; };
    auto peer = [&](const std::string& p) { return peers.count(p + " " + r->name) ? peers[p + " " + r->name] : 0.0; };
    const double np = peer("numpy"), tc = peer("torch"), ti = peer("tinygrad");
    std::printf("%-14s %10s %10.1f %10.1f %7.2fx %10.1f %7.2fx %10.3f %10.1f %7.2fx\n", r->name.c_str(),
                r->flops > 0 ? "GFLOPS" : "GB/s", rate(t), rate(np), np > 0 ? np / t : 0.0, rate(tc),
                tc > 0 ? tc / t : 0.0, t * 1e3, rate(ti), ti > 0 ? ti / t : 0.0);
  }
  if (beam_s > 0) {
    const double np = peers.count("numpy sgemm 1024") ? peers["numpy sgemm 1024"] : 0;
    const double flops = 2.0 * 1024 * 1024 * 1024;
    std::printf("%-14s %10s %10.1f %10.1f %7.2fx %10s %8s %10.3f\n", "sgemm BEAM=2", "GFLOPS", flops / beam_s / 1e9,
                np > 0 ? flops / np / 1e9 : 0.0, np > 0 ? np / beam_s : 0.0, "", "", beam_s * 1e3);
  }
  return 0;
}
