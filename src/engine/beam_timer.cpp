// Compiling and timing BEAM's candidates (engine/beam_timer.h).
#include "engine/beam_timer.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <thread>

#include "codegen/access_bounds.h"
#include "codegen/opt/search.h"
#include "codegen/to_program.h"
#include "engine/method_cache.h"
#include "helpers/env.h"
#include "tg/context.h"
#include "uop/exec_alu.h"

namespace tg {
namespace {

// Runs per candidate: at least kMinRuns, more (up to kMaxRuns) while they add up to less than kRunBudget seconds.
// Short kernels get more runs (their minimum is noisier), a 10 ms matmul 5, a slow one 3.
constexpr int kMinRuns = 3, kMaxRuns = 10;
constexpr double kRunBudget = 0.05;
// A GPU candidate with a launch grid of more blocks than this is timed on a smaller grid and its time scaled up
// (tinygrad's max_global_size): its first blocks do the same work per block, and a search that times full grids
// of a 4096^3 matmul spends seconds a step. 65536 blocks are still dozens of waves on any GPU.
constexpr int64_t kMaxTimedBlocks = 65536;

// Small finite values: floats in [-1, 1), integers in [1, 4] (never 0, so a kernel that divides by an input
// takes its normal path), bools true. Deterministic, so every candidate sees the same data.
void fill_host(std::vector<uint8_t>& host, DType dt, int64_t elements, uint32_t seed) {
  const size_t item = size_t(dt.itemsize());
  host.assign(size_t(elements) * item, 0);
  uint32_t x = seed * 2654435761u + 12345u;
  for (int64_t i = 0; i < elements; i++) {
    x = x * 1664525u + 1013904223u;
    Num v;
    if (dt.is_float())
      v.f = double(int((x >> 8) % 2048) - 1024) / 1024.0;
    else
      v.i = dt.is_bool() ? 1 : 1 + int64_t((x >> 8) % 4);
    const uint64_t bits = num_to_bits(truncate_num(v, dt), dt);
    std::memcpy(host.data() + size_t(i) * item, &bits, item);  // little-endian: the value's low bytes
  }
}

}  // namespace

ProgramSpec reduced_grid(const ProgramSpec& spec, double& scale) {
  ProgramSpec out = spec;
  scale = 1;
  if (out.global_size.empty()) return out;
  auto blocks = [&] {
    int64_t n = 1;
    for (int64_t g : out.global_size) n *= g;
    return n;
  };
  const int64_t full = blocks();
  while (blocks() > kMaxTimedBlocks) {
    auto largest = std::max_element(out.global_size.begin(), out.global_size.end());
    *largest = (*largest + 1) / 2;
  }
  scale = double(full) / double(blocks());
  return out;
}

std::vector<AstBuffer> ast_buffers(const UOpPtr& ast) {
  std::vector<AstBuffer> out;
  for (const UOp* u : toposort(ast)) {
    if (u->op != Ops::LOAD && u->op != Ops::STORE) continue;
    const UOp& buf = *u->src.at(0);
    const UOp& view = *u->src.at(1);
    if (buf.op != Ops::DEFINE_GLOBAL || view.op != Ops::VIEW) continue;
    const int64_t param = buf.get<int64_t>();
    if (param < 0 || param > 4096) throw Error("BEAM: kernel parameter " + std::to_string(param) + " out of range");
    if (size_t(param) >= out.size()) out.resize(size_t(param) + 1);
    out[size_t(param)].dtype = buf.dtype.base().scalar_type();
    out[size_t(param)].elements = std::max(out[size_t(param)].elements, view.get<ShapeTracker>().real_size());
  }
  return out;
}

CandidateBench::CandidateBench(Device& dev, const UOpPtr& ast) : dev_(dev) {
  const std::vector<AstBuffer> bufs = ast_buffers(ast);
  std::vector<uint8_t> host;
  try {
    for (size_t i = 0; i < bufs.size(); i++) {
      elements_.push_back(bufs[i].elements);
      bytes_.push_back(std::max<size_t>(1, size_t(bufs[i].elements) * size_t(bufs[i].dtype.itemsize())));
      void* p = dev_.allocator().alloc(bytes_.back());
      if (!p) throw Error("BEAM: cannot allocate " + std::to_string(bytes_.back()) + " bytes on " + dev_.name());
      bufs_.push_back(p);
      // Every buffer gets values, the outputs too: a kernel that reads its output (an accumulate) reads finite ones.
      fill_host(host, bufs[i].dtype, bufs[i].elements, uint32_t(i + 1));
      if (!host.empty()) dev_.allocator().copyin(p, host.data(), host.size());
    }
  } catch (...) {
    for (size_t i = 0; i < bufs_.size(); i++) dev_.allocator().free(bufs_[i], bytes_[i]);
    throw;
  }
}

CandidateBench::~CandidateBench() {
  dev_.synchronize();
  for (size_t i = 0; i < bufs_.size(); i++) dev_.allocator().free(bufs_[i], bytes_[i]);
}

void CandidateBench::trust(const Kernel& k) {
  Context quiet({{"DEBUG", std::min<long>(DEBUG, 3)}});
  try {
    trusted_.insert(to_program(k, k.name(), k.colored_name()).src);
  } catch (const Error&) {  // it does not lower: prepare() drops it as any other
  }
}

// Renders every candidate (on this thread: lowering reads this thread's knobs), keeping the ones with a new
// source whose memory accesses are proved in bounds and whose shared memory fits the device.
std::vector<CandidateBench::Prepared> CandidateBench::prepare(const std::vector<Kernel>& candidates) {
  // DEBUG>=4 would print the source and passes of every candidate: only the winner's, when it is compiled.
  Context quiet({{"DEBUG", std::min<long>(DEBUG, 3)}});
  std::vector<Prepared> out;
  for (size_t i = 0; i < candidates.size(); i++) {
    const Kernel& k = candidates[i];
    Prepared p{i, {}, {}, {}};
    try {
      p.spec = to_program(k, k.name(), k.colored_name());
    } catch (const Error&) {
      continue;  // an opt combination the lowering cannot take: not a candidate
    }
    if (!p.spec.vars.empty() || !seen_.insert(p.spec.src).second) continue;
    if (shared_bytes(p.spec.uops) > std::max<int64_t>(0, k.renderer().shared_memory())) continue;
    if (std::string why = trusted_.count(p.spec.src) ? "" : unproven_access(p.spec.uops, elements_); !why.empty()) {
      if (unproven_++ == 0) first_unproven_ = k.name() + ": " + why;
      continue;
    }
    out.push_back(std::move(p));
  }
  return out;
}

// Compiles on a pool of threads (the device compilers are thread-safe: the CPU's runs one compiler process per
// call in a private folder, NVRTC compiles independent programs). Not through the disk cache: most candidates
// are never used again.
void CandidateBench::compile_all(std::vector<Prepared>& programs) {
  std::atomic<size_t> next{0};
  Compiler& compiler = dev_.compiler();
  auto work = [&] {
    for (size_t i; (i = next.fetch_add(1)) < programs.size();) {
      try {
        programs[i].binary = compiler.compile(programs[i].spec.src);
      } catch (const std::exception& e) {
        programs[i].error = e.what();
      }
    }
  };
  const size_t n = std::min(programs.size(), size_t(compile_jobs()));
  std::vector<std::thread> pool;
  for (size_t t = 1; t < n; t++) pool.emplace_back(work);
  work();
  for (auto& t : pool) t.join();
}

double CandidateBench::time_one(const Prepared& p, double give_up_after) {
  if (!p.error.empty()) return kNotTimed;
  try {
    double scale = 1;
    const ProgramSpec spec = dev_.renderer().has_local() ? reduced_grid(p.spec, scale) : p.spec;
    std::unique_ptr<Program> prog = dev_.load(spec, p.binary);
    std::vector<void*> ptrs(bufs_.begin(), bufs_.begin() + std::min<size_t>(bufs_.size(), size_t(p.spec.n_bufs)));
    double best = kNotTimed, total = 0;
    for (int r = 0; r < kMaxRuns && (r < kMinRuns || total < kRunBudget); r++) {
      const double t = prog->run(ptrs, {}, true) * scale;
      best = std::min(best, t);
      total += t;
      if (best > give_up_after) break;  // much slower than the best so far: one run says enough
    }
    return best;
  } catch (const std::exception&) {  // tg::Error from the loader or the run (INTERP's bounds checks), bad_alloc
    return kNotTimed;
  }
}

std::vector<double> CandidateBench::time(const std::vector<Kernel>& candidates, double give_up_after) {
  std::vector<double> times(candidates.size(), kNotTimed);
  std::vector<Prepared> programs = prepare(candidates);
  compile_all(programs);
  for (const Prepared& p : programs) times[p.index] = time_one(p, give_up_after);
  return times;
}

}  // namespace tg
