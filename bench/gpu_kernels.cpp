// GPU kernels against PyTorch on the same GPU, in one run: matmul (fp16, bf16, fp32 without and with tf32, fp16 with
// fp16 accumulation), add (fp32, fp16) and
// sum of 2^28 floats, softmax, log_softmax and layernorm 8192^2, conv2d 3x3 fp16, beautiful_mnist's fp32 convs and
// their weight gradients. Our figure is kernel time (CUDA events around each
// kernel, PROFILE=1, summed over the kernels of the op), the median of `reps` runs on random data; torch's
// comes from bench/gpu_kernels_torch.py (CUDA events too), run by this program when python3 has torch, and with
// TINYGRAD=1 upstream tinygrad's from bench/gpu_kernels_tinygrad.py (its own kernel timing; BEAM=n searches).
// Memory-bound rows also show the % of a device-to-device copy's bandwidth (torch's copy_, same run).
//
//   bench/gpu_kernels [reps] [filter]       DEV picks the device (default: the best, CUDA on a GPU machine);
//                                            TORCH=0 skips the torch column, TINYGRAD=1 adds upstream
//                                            tinygrad's. Never fails on time.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "tg/context.h"
#include "tg/counters.h"
#include "tg/tg.h"

using tg::Tensor;

namespace {

struct Row {
  std::string name;
  double work;      // FLOPs (compute rows) or bytes moved at least once (memory rows)
  bool memory;      // a memory-bound row: GB/s, else TFLOPS
  std::function<std::function<Tensor()>()> setup;  // makes the inputs, returns the op to time
};

// Median kernel time of f (every kernel it runs, summed), after one warm-up run that compiles.
double median_kernel_seconds(int reps, const std::function<Tensor()>& f) {
  tg::Context profile({{"PROFILE", 1}});
  f().realize();
  std::vector<double> t;
  for (int i = 0; i < reps; i++) {
    double before = tg::GlobalCounters::time_sum_s;
    f().realize();
    t.push_back(tg::GlobalCounters::time_sum_s - before);
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

Tensor randn(const tg::Shape& s, tg::DType dt) {
  Tensor x = Tensor::randn(s).cast(dt);
  x.realize();
  return x;
}

// The op that computes a conv's weight gradient for a given output gradient dy (a new graph each call).
std::function<Tensor()> weight_grad(int64_t n, int64_t cin, int64_t cout, int64_t k, int64_t hw) {
  auto x = std::make_shared<Tensor>(randn({n, cin, hw, hw}, tg::dtypes::float32));
  auto w = std::make_shared<Tensor>(randn({cout, cin, k, k}, tg::dtypes::float32).requires_grad_());
  auto dy = std::make_shared<Tensor>(randn({n, cout, hw - k + 1, hw - k + 1}, tg::dtypes::float32));
  return [x, w, dy] {
    w->set_grad(std::nullopt);
    (x->conv2d(*w) * *dy).sum().backward();
    return w->grad();
  };
}

std::vector<Row> rows() {
  // x @ W, x @ W.T (a linear layer's layout: both operands contiguous along K) or x.T @ W (a weight gradient's:
  // both contiguous along M and N)
  enum Layout { kPlain, kWT, kXT };
  auto mm = [](const char* name, int64_t n, tg::DType dt, Layout layout = kPlain) {
    return Row{name, 2.0 * double(n) * double(n) * double(n), false, [n, dt, layout] {
                 auto a = std::make_shared<Tensor>(randn({n, n}, dt)), b = std::make_shared<Tensor>(randn({n, n}, dt));
                 return std::function<Tensor()>([a, b, layout] {
                   return (layout == kXT ? a->T() : *a).matmul(layout == kWT ? b->T() : *b);
                 });
               }};
  };
  const int64_t big = int64_t(1) << 28;
  return {
      mm("matmul fp16 4096", 4096, tg::dtypes::float16),
      mm("matmul fp16 4096 x@W.T", 4096, tg::dtypes::float16, kWT),
      mm("matmul fp16 4096 x.T@W", 4096, tg::dtypes::float16, kXT),
      mm("matmul fp16 8192", 8192, tg::dtypes::float16),
      mm("matmul bf16 4096", 4096, tg::dtypes::bfloat16),
      mm("matmul bf16 8192", 8192, tg::dtypes::bfloat16),
      mm("matmul fp32 4096", 4096, tg::dtypes::float32),
      // tf32 tensor cores (ALLOW_TF32=1 while it compiles and runs; torch: allow_tf32), and fp16 accumulation
      // (matmul(w, float16); torch's peer is its fp16 matmul, cuBLAS accumulating in fp32)
      Row{"matmul tf32 4096", 2.0 * 4096.0 * 4096.0 * 4096.0, false,
          [] {
            auto a = std::make_shared<Tensor>(randn({4096, 4096}, tg::dtypes::float32));
            auto b = std::make_shared<Tensor>(randn({4096, 4096}, tg::dtypes::float32));
            return std::function<Tensor()>([a, b] {
              tg::Context tf32({{"ALLOW_TF32", 1}});
              Tensor r = a->matmul(*b);
              r.realize();
              return r;
            });
          }},
      Row{"matmul fp16 4096 fp16-acc", 2.0 * 4096.0 * 4096.0 * 4096.0, false,
          [] {
            auto a = std::make_shared<Tensor>(randn({4096, 4096}, tg::dtypes::float16));
            auto b = std::make_shared<Tensor>(randn({4096, 4096}, tg::dtypes::float16));
            return std::function<Tensor()>([a, b] { return a->matmul(*b, tg::dtypes::float16); });
          }},
      Row{"add 2^28 fp32", 3.0 * 4 * double(big), true,
          [big] {
            auto a = std::make_shared<Tensor>(randn({big}, tg::dtypes::float32));
            auto b = std::make_shared<Tensor>(randn({big}, tg::dtypes::float32));
            return std::function<Tensor()>([a, b] { return *a + *b; });
          }},
      Row{"add 2^28 fp16", 3.0 * 2 * double(big), true,
          [big] {
            auto a = std::make_shared<Tensor>(randn({big}, tg::dtypes::float16));
            auto b = std::make_shared<Tensor>(randn({big}, tg::dtypes::float16));
            return std::function<Tensor()>([a, b] { return *a + *b; });
          }},
      Row{"sum 2^28 fp32", 4.0 * double(big), true,
          [big] {
            auto a = std::make_shared<Tensor>(randn({big}, tg::dtypes::float32));
            return std::function<Tensor()>([a] { return a->sum(); });
          }},
      // LLM decode: one token through a linear layer, x @ W.T with W (out, in) row-major (memory-bound: W's bytes)
      Row{"gemv fp16 4096x4096", 2.0 * 4096 * 4096, true,
          [] {
            auto x = std::make_shared<Tensor>(randn({1, 4096}, tg::dtypes::float16));
            auto w = std::make_shared<Tensor>(randn({4096, 4096}, tg::dtypes::float16));
            return std::function<Tensor()>([x, w] { return x->matmul(w->T()); });
          }},
      Row{"softmax 8192x8192 fp32", 2.0 * 4 * 8192.0 * 8192.0, true,
          [] {
            auto a = std::make_shared<Tensor>(randn({8192, 8192}, tg::dtypes::float32));
            return std::function<Tensor()>([a] { return a->softmax(-1); });
          }},
      Row{"log_softmax 8192x8192 fp32", 2.0 * 4 * 8192.0 * 8192.0, true,
          [] {
            auto a = std::make_shared<Tensor>(randn({8192, 8192}, tg::dtypes::float32));
            return std::function<Tensor()>([a] { return a->log_softmax(-1); });
          }},
      Row{"layernorm 8192x8192 fp32", 2.0 * 4 * 8192.0 * 8192.0, true,
          [] {
            auto a = std::make_shared<Tensor>(randn({8192, 8192}, tg::dtypes::float32));
            return std::function<Tensor()>([a] { return a->layernorm(-1); });
          }},
      Row{"conv2d 3x3 fp16 32x64x56x56", 2.0 * 32 * 64 * 56 * 56 * 64 * 9, false,
          [] {
            auto x = std::make_shared<Tensor>(randn({32, 64, 56, 56}, tg::dtypes::float16));
            auto w = std::make_shared<Tensor>(randn({64, 64, 3, 3}, tg::dtypes::float16));
            return std::function<Tensor()>(
                [x, w] { return x->conv2d(*w, std::nullopt, 1, {1}, {1}, {1}); });
          }},
      // the layer as a model uses it: bias and relu, the output realized NCHW (ours: the epilogue reads the conv's
      // flat output back as a view)
      Row{"conv2d 3x3 fp16 + bias + relu", 2.0 * 32 * 64 * 56 * 56 * 64 * 9, false,
          [] {
            auto x = std::make_shared<Tensor>(randn({32, 64, 56, 56}, tg::dtypes::float16));
            auto w = std::make_shared<Tensor>(randn({64, 64, 3, 3}, tg::dtypes::float16));
            auto b = std::make_shared<Tensor>(randn({64}, tg::dtypes::float16));
            return std::function<Tensor()>([x, w, b] { return x->conv2d(*w, *b, 1, {1}, {1}, {1}).relu().contiguous(); });
          }},
      // beautiful_mnist's second conv (float32, no tf32: the default) at batch 512: forward, and the weight
      // gradient of it and of the 64x64x3x3 one (the kernels of a step's gradient, realized alone)
      Row{"conv2d 5x5 fp32 512x32x24x24", 2.0 * 512 * 32 * 32 * 25 * 20 * 20, false,
          [] {
            auto x = std::make_shared<Tensor>(randn({512, 32, 24, 24}, tg::dtypes::float32));
            auto w = std::make_shared<Tensor>(randn({32, 32, 5, 5}, tg::dtypes::float32));
            return std::function<Tensor()>([x, w] { return x->conv2d(*w); });
          }},
      Row{"conv2d 5x5 fp32 weight grad", 2.0 * 512 * 32 * 32 * 25 * 20 * 20, false,
          [] { return weight_grad(512, 32, 32, 5, 24); }},
      Row{"conv2d 3x3 fp32 weight grad 64", 2.0 * 512 * 64 * 64 * 9 * 8 * 8, false,
          [] { return weight_grad(512, 64, 64, 3, 10); }},
  };
}

// The sum of 2^28 floats against a float64 sum of the same data (the accuracy bar: 1e-5).
double sum_relative_error() {
  Tensor x = Tensor::rand({int64_t(1) << 28});
  x.realize();
  double want = 0;
  for (float f : x.tolist<float>()) want += f;
  return std::fabs(double(x.sum().item<float>()) - want) / want;
}

// A peer's figures: "name<TAB>seconds" lines printed by one of bench/'s scripts (torch's: gpu_kernels_torch.py,
// whose "copy" row is its D2D copy; upstream tinygrad's: gpu_kernels_tinygrad.py).
std::map<std::string, double> peer_seconds(const std::string& script, int reps, const std::string& filter) {
  std::map<std::string, double> out;
  std::string cmd = "python3 " + std::string(TG_SOURCE_DIR) + "/bench/" + script + " " + std::to_string(reps) + " '" +
                    filter + "' 2>/dev/null";
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return out;
  char line[512];
  while (std::fgets(line, sizeof(line), p)) {
    std::string s(line);
    auto tab = s.rfind('\t');
    if (tab == std::string::npos) continue;
    out[s.substr(0, tab)] = std::atof(s.c_str() + tab + 1);
  }
  pclose(p);
  return out;
}

bool env_on(const char* name, bool dflt) {
  const char* v = std::getenv(name);
  return v ? std::string(v) != "0" : dflt;
}

}  // namespace

int main(int argc, char** argv) {
  int reps = argc > 1 ? std::max(1, std::atoi(argv[1])) : 10;
  std::string filter = argc > 2 ? argv[2] : "";
  for (char c : filter)
    if (c == '\'') return std::fprintf(stderr, "gpu_kernels: a filter may not contain a quote\n"), 2;
  std::printf("device %s, %d reps, median kernel time\n", tg::default_device().c_str(), reps);
  std::map<std::string, double> torch, tinygrad;
  if (env_on("TORCH", true)) torch = peer_seconds("gpu_kernels_torch.py", reps, "");
  if (torch.empty()) std::printf("(no torch figures: python3 with torch and a GPU not found, or TORCH=0)\n");
  const bool with_tinygrad = env_on("TINYGRAD", false);
  if (with_tinygrad) {
    tinygrad = peer_seconds("gpu_kernels_tinygrad.py", reps, filter);
    if (tinygrad.empty()) std::printf("(no tinygrad figures: python3 with tinygrad and a GPU not found)\n");
  }
  const double copy_s = torch.count("copy") ? torch["copy"] : 0;
  const double copy_gbs = copy_s > 0 ? 2.0 * 4 * double(int64_t(1) << 28) / copy_s / 1e9 : 0;
  if (copy_gbs > 0) std::printf("torch device-to-device copy of 2^28 floats: %.0f GB/s\n", copy_gbs);
  std::printf("%-30s %12s %12s", "work", "tinygrad.cpp", "torch");
  if (with_tinygrad) std::printf(" %12s", "tinygrad");
  std::printf(" %8s %9s", "unit", "vs torch");
  if (with_tinygrad) std::printf(" %11s", "vs tinygrad");
  std::printf(" %8s\n", "% copy");
  for (const Row& r : rows()) {
    if (!filter.empty() && r.name.find(filter) == std::string::npos) continue;
    double ours = median_kernel_seconds(reps, r.setup());
    auto rate = [&](double s) { return s > 0 ? r.work / s / (r.memory ? 1e9 : 1e12) : 0.0; };
    auto ratio = [&](const std::map<std::string, double>& peer) {
      return peer.count(r.name) && peer.at(r.name) > 0 ? peer.at(r.name) / ours : 0.0;
    };
    const double theirs = torch.count(r.name) ? torch[r.name] : 0;
    std::printf("%-30s %12.1f %12.1f", r.name.c_str(), rate(ours), rate(theirs));
    if (with_tinygrad) std::printf(" %12.1f", rate(tinygrad.count(r.name) ? tinygrad[r.name] : 0));
    std::printf(" %8s %8.2fx", r.memory ? "GB/s" : "TFLOPS", ratio(torch));
    if (with_tinygrad) std::printf(" %10.2fx", ratio(tinygrad));
    if (r.memory && copy_gbs > 0) std::printf(" %7.1f%%", 100.0 * rate(ours) / copy_gbs);
    std::printf("\n");
    std::fflush(stdout);
  }
  if (filter.empty() || filter == "accuracy")
    std::printf("sum of 2^28 uniform floats: relative error %.2g against float64\n", sum_relative_error());
  return 0;
}
