// Running a schedule: kernels through the method cache, copies (direct between devices when they can, else
// through the host), DEBUG=2 lines.
#include "engine/realize.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>

#include "engine/buffers.h"
#include "engine/capture.h"
#include "engine/collective.h"
#include "engine/memory_planner.h"
#include "engine/method_cache.h"
#include "engine/schedule_graph.h"
#include "helpers/debug.h"
#include "schedule/liveness.h"
#include "schedule/multi.h"
#include "schedule/realized.h"
#include "tg/context.h"
#include "tg/counters.h"
#include "tg/error.h"
#include "uop/viz_trace.h"

namespace tg {

// PROFILE=1: time every kernel and copy (waiting for each), as DEBUG>=2 does but without printing; the times
// add up in GlobalCounters::time_sum_s (benchmarks read kernel time from it).
static ContextVar PROFILE("PROFILE", 0);
// NO_MEMORY_PLANNER=1 (tinygrad's knob): a plain schedule's intermediates keep their own memory.
static ContextVar NO_MEMORY_PLANNER("NO_MEMORY_PLANNER", 0);
// PLANNER_MIN_BYTES: the least a schedule must write for the planner to walk its graph (default 1 MiB; below, the
// walk costs more than the memory is worth, and the allocator's cache reuses small blocks).
static ContextVar PLANNER_MIN_BYTES("PLANNER_MIN_BYTES", 1 << 20);

namespace {

// tinygrad's per-kernel line: *** CPU      3 r_2      arg  3 mem  0.00 GB tm      5.62us/     0.06ms (...)
void print_line(const std::string& device, const std::string& name, size_t nargs, double et, int64_t ops,
                int64_t mem) {
  std::string head = "*** " + device.substr(0, 7);
  head.resize(std::max<size_t>(head.size(), 11), ' ');
  char count[16];
  std::snprintf(count, sizeof(count), " %4lld", static_cast<long long>(GlobalCounters::kernel_count));
  std::string pad(name.size() < 41 + (name.size() - ansilen(name)) ? 41 - ansilen(name) : 0, ' ');
  std::printf("%s %s arg %2zu mem %5.2f GB", colored(head + count, "green").c_str(), (name + pad).c_str(), nargs,
              double(GlobalCounters::mem_used) / 1e9);
  if (et > 0)  // devices that do not run (NULL) have no time to show
    std::printf(" tm %9.2fus/%9.2fms (%9.2f GFLOPS %6.1f|%-7.1f GB/s)", et * 1e6, GlobalCounters::time_sum_s * 1e3,
                double(ops) / (et * 1e9), double(mem) / (et * 1e9), double(mem) / (et * 1e9));
  std::printf("\n");
  std::fflush(stdout);
}

// tinygrad's copy names: "copy       16,    CUDA <- CPU    ", sizes of 1 MB and more as "copy    4.19M, ...";
// "xfer" when the devices copied directly (a device-to-device or GPU peer copy, no trip through the host).
std::string copy_name(const char* kind, size_t bytes, const std::string& dst, const std::string& src) {
  char buf[96];
  if (bytes >= 1000000)
    std::snprintf(buf, sizeof(buf), "%s %7.2fM, %7s <- %-7s", kind, double(bytes) / 1e6, dst.substr(0, 7).c_str(),
                  src.substr(0, 7).c_str());
  else
    std::snprintf(buf, sizeof(buf), "%s %8zu, %7s <- %-7s", kind, bytes, dst.substr(0, 7).c_str(),
                  src.substr(0, 7).c_str());
  return buf;
}

void run_copy(const ScheduleItem& item) {
  Buffer& dst = *buffer_of(item.bufs.at(0).get());
  Buffer& src = *buffer_of(item.bufs.at(1).get());
  Device& dst_dev = get_device(dst.device());
  Device& src_dev = get_device(src.device());
  bool wait = timing_each_item();
  bool xfer = false;
  dst.ensure_writable();
  auto t0 = std::chrono::steady_clock::now();
  if (dst_dev.executes() && src_dev.executes()) {
    xfer = copy_buffer(dst, src);
    if (wait) dst_dev.synchronize();  // a GPU copy may still be in flight: time all of it
  } else {
    dst.ensure_allocated();
  }
  double et = wait ? std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() : 0;
  GlobalCounters::kernel_count++;
  GlobalCounters::global_mem += int64_t(dst.nbytes());
  GlobalCounters::time_sum_s += et;
  if (DEBUG < 2 && !schedule_graph_enabled()) return;
  const std::string name = copy_name(xfer ? "xfer" : "copy", dst.nbytes(), dst.device(), src.device());
  if (DEBUG >= 2) print_line(dst.device(), name, 2, et, 0, int64_t(dst.nbytes()));
  if (schedule_graph_enabled()) schedule_graph_copy(name, item, GlobalCounters::kernel_count);
}

}  // namespace

bool timing_each_item() { return DEBUG >= 2 || PROFILE >= 1; }

bool copy_buffer(Buffer& dst, Buffer& src) {
  src.ensure_allocated();
  dst.ensure_allocated();
  // Directly between the devices when the destination's allocator can (same GPU, GPU to GPU), else through host
  // memory.
  if (dst.nbytes() > 0 &&
      get_device(dst.device()).allocator().transfer(dst.ptr(), src.ptr(), dst.nbytes(), get_device(src.device())))
    return true;
  std::vector<uint8_t> host(src.nbytes());
  src.copyout(host.data(), host.size());
  dst.copyin(host.data(), host.size());
  return false;
}

std::vector<int64_t> var_values(const ProgramSpec& spec, const std::vector<VarValue>& vars) {
  std::vector<int64_t> out;
  out.reserve(spec.vars.size());
  for (const UOpPtr& v : spec.vars) {
    const auto& r = v->get<NamedRange>();
    auto it = std::find_if(vars.begin(), vars.end(), [&](const VarValue& b) { return b.var.name == r.name; });
    if (it == vars.end()) throw Error("run " + spec.name + ": variable " + r.name + " has no value bound");
    if (it->value < r.min || it->value > r.max)
      throw Error("run " + spec.name + ": variable " + r.name + " = " + std::to_string(it->value) +
                  " outside its range [" + std::to_string(r.min) + ", " + std::to_string(r.max) + "]");
    out.push_back(it->value);
  }
  return out;
}

void run_schedule_item(const ScheduleItem& item, CompiledRunner* runner) {
  if (ScheduleCapture* c = ScheduleCapture::active()) c->items.push_back(item);  // TinyJit is recording
  if (item.ast->op == Ops::COPY) return run_copy(item);
  if (item.ast->op == Ops::ALLREDUCE) return run_collective(item);
  const std::string device = buffer_device(item.bufs.at(0).get());
  CompiledRunner& r = runner ? *runner : get_runner(device, item.ast);
  std::vector<void*> ptrs;
  int64_t mem = 0;
  for (auto& u : item.bufs) {  // bind the item's BUFFER nodes to memory
    std::shared_ptr<Buffer> b = buffer_of(u.get());
    ptrs.push_back(ptrs.size() < item.outputs ? b->ensure_writable() : b->ensure_allocated());
    mem += int64_t(b->nbytes());
  }
  bool wait = timing_each_item();
  const double start = r.viz_context >= 0 ? viz::now_s() : 0;
  double et = get_device(device).executes() ? r.program->run(ptrs, var_values(r.spec, item.vars), wait) : 0;
  if (r.viz_context >= 0) viz::record_run(r.viz_context, r.spec.name, device, start, et, mem);
  GlobalCounters::kernel_count++;
  GlobalCounters::global_ops += r.spec.estimated_ops;
  GlobalCounters::global_mem += mem;
  GlobalCounters::time_sum_s += et;
  if (DEBUG >= 2) print_line(device, r.spec.display_name, ptrs.size(), et, r.spec.estimated_ops, mem);
  if (schedule_graph_enabled()) schedule_graph_kernel(r.spec, device, item, GlobalCounters::kernel_count);
}

namespace {

// Bytes the items write outside the results (an upper bound on what a plan could share).
int64_t intermediate_bytes(const Schedule& sched) {
  std::vector<const UOp*> results;
  for (const UOpPtr& r : sched.roots) results.push_back(buffer_under(r.get()));
  int64_t bytes = 0;
  for (const ScheduleItem& item : sched.items)
    for (size_t j = 0; j < item.outputs && j < item.bufs.size(); j++)
      if (std::find(results.begin(), results.end(), item.bufs[j].get()) == results.end())
        bytes += item.bufs[j]->get<BufferArg>().size * item.bufs[j]->dtype.itemsize();
  return bytes;
}

// The memory planner for a plain schedule (engine/memory_planner.h). Not while TinyJit captures: its own plan
// spans the whole call. Fewer than three items cannot have two lifetimes apart, and below PLANNER_MIN_BYTES of
// intermediates the walk over the graph costs more than the memory is worth (a 35-kernel MLP step of 32 KB buffers:
// +0.11 ms of 1.4 on the CPU, nothing saved: its gradients hold the graph).
MemoryPlanStats plan_schedule(const std::vector<UOpPtr>& roots, const std::vector<int>& released,
                              const Schedule& sched) {
  if (sched.items.size() < 3 || released.empty() || intermediate_bytes(sched) < PLANNER_MIN_BYTES) return {};
  if (NO_MEMORY_PLANNER > 0 || ScheduleCapture::active()) return {};
  // A structure whose last walks shared nothing (a training step: the gradients hold its graph) is walked again
  // only every 64th time: skipping the planner is always safe.
  std::atomic<int>* fruitless = sched.fruitless_plans.get();
  if (fruitless && *fruitless >= 2 && fruitless->fetch_add(1) % 64 != 0) return {};
  MemoryPlanStats stats = plan_schedule_memory(sched.items, reachable_buffers(roots, released, sched));
  if (fruitless) {
    if (stats.buffers == 0) fruitless->fetch_add(1);
    else fruitless->store(0);
  }
  if (DEBUG >= 1 && stats.buffers > 0)
    std::printf("memory planner: %lld intermediate buffers, %.2f MB -> %.2f MB\n",
                static_cast<long long>(stats.buffers), double(stats.bytes) / 1e6, double(stats.arena_bytes) / 1e6);
  return stats;
}

UOpPtr sink_of(const std::vector<UOpPtr>& roots) { return UOp::make(Ops::SINK, dtypes::void_, roots); }

// (VIZ) each item's output buffers and why the scheduler realized them, a line each.
std::string realized_listing(const Schedule& sched) {
  std::string out;
  for (size_t i = 0; i < sched.items.size(); i++) {
    const ScheduleItem& item = sched.items[i];
    const char* kind = item.ast->op == Ops::COPY ? "copy" : item.ast->op == Ops::ALLREDUCE ? "all-reduce" : "kernel";
    for (size_t j = 0; j < item.outputs && j < item.bufs.size(); j++) {
      const UOp* buf = item.bufs[j].get();
      const uint32_t why = j == 0 ? item.why : item.why_hosted;
      const std::string words = why ? realize_why_text(why) : "(made after the scheduler)";
      out += std::to_string(i) + "  " + kind + "  " + buf->dtype.name() + "[" +
             std::to_string(buf->get<BufferArg>().size) + "] on " + buffer_device(buf) + ": " + words + "\n";
    }
  }
  return out;
}

// (VIZ) the schedule as a step: the tensor graph in, the kernels' ASTs (and copies) out.
void trace_kernels(viz::Context& trace, const std::vector<UOpPtr>& roots, const Schedule& sched,
                   std::chrono::steady_clock::duration took) {
  std::vector<UOpPtr> asts;
  for (const ScheduleItem& item : sched.items) asts.push_back(item.ast);
  viz::record_step("kernels", sink_of(roots), sink_of(asts), -1, std::chrono::duration<double>(took).count(), {});
  trace.text("realized", realized_listing(sched));
  trace.rename("schedule: " + std::to_string(sched.items.size()) + " items" + (sched.cached ? " (cached)" : ""));
}

}  // namespace

std::vector<UOpPtr> run_realize(const std::vector<UOpPtr>& roots, const std::vector<int>& released) {
  // Values spread over several devices: their graphs, one per device, are realized together (schedule/multi.h).
  if (std::any_of(roots.begin(), roots.end(), [](const UOpPtr& r) { return r->has_multi; })) {
    viz::Context trace("schedule", "sharded: one graph per device");  // (VIZ: the multi pass)
    const MultiLowered lowered = lower_multi(roots, has_collective);
    return lowered.rebuild(run_realize(lowered.flat));
  }
  auto t0 = std::chrono::steady_clock::now();
  viz::Context trace("schedule", "schedule");  // (VIZ: the tensor graph, the scheduler's passes, the kernels)
  if (trace.index() >= 0) viz::record_step("tensor graph", sink_of(roots), sink_of(roots), -1, 0, {});
  Schedule sched = create_schedule(roots);
  for (const ScheduleItem& item : sched.items)
    if (item.ast->op == Ops::ALLREDUCE) {  // (sharded tensors on GPUs with NCCL: one item per collective)
      sched.items = merge_collectives(std::move(sched.items));
      break;
    }
  if (trace.index() >= 0) trace_kernels(trace, roots, sched, std::chrono::steady_clock::now() - t0);
  if (DEBUG >= 1 && !sched.items.empty()) {
    double ms = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() * 1e3;
    std::printf("scheduled %zu kernels in %.2f ms%s\n", sched.items.size(), ms, sched.cached ? " (cached)" : "");
  }
  const MemoryPlanStats planned = plan_schedule(roots, released, sched);
  record_realized(sched);
  std::vector<std::pair<std::string, UOpPtr>> kernels(sched.items.size());  // (a COPY's stays empty)
  for (size_t i = 0; i < sched.items.size(); i++)
    if (sched.items[i].ast->op != Ops::COPY && sched.items[i].ast->op != Ops::ALLREDUCE)
      kernels[i] = {buffer_device(sched.items[i].bufs.at(0).get()), sched.items[i].ast};
  const std::vector<CompiledRunner*> runners = find_runners(kernels);  // (the new ones compiled several at once)
  for (size_t i = 0; i < sched.items.size(); i++) run_schedule_item(sched.items[i], runners[i]);
  poison_if_asked(planned);
  return sched.roots;
}

}  // namespace tg
