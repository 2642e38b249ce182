// TinyJit's replays: engine/replay_plan.h.
#include "engine/replay_plan.h"

#include <algorithm>
#include <cstdio>
#include <iterator>
#include <optional>
#include <unordered_set>

#include "engine/buffers.h"
#include "engine/capture.h"
#include "schedule/realized.h"
#include "tg/context.h"
#include "tg/counters.h"
#include "tg/error.h"
#include "uop/viz_trace.h"

namespace tg {
namespace {

ContextVar JIT_PLAN("JIT_PLAN", 1);  // 0: captured intermediates keep their own memory (to compare)

}  // namespace

namespace {
// Whether `later` must stay after `earlier`: they share a buffer that either one writes.
bool must_follow(const ScheduleItem& later, const ScheduleItem& earlier) {
  for (size_t i = 0; i < later.bufs.size(); i++)
    for (size_t j = 0; j < earlier.bufs.size(); j++)
      if (later.bufs[i] == earlier.bufs[j] && (j < earlier.outputs || i < later.outputs)) return true;
  return false;
}

bool is_collective(const ScheduleItem& item) { return item.ast->op == Ops::ALLREDUCE; }

// A step's collectives made into few rendezvous. The schedule puts each optimizer update right after its gradient's
// all-reduce, so collectives and the kernels that read them alternate. Here every collective, and every item that
// must follow a held one, is held back to the end, where the held items run in rounds: the collectives that follow
// no held kernel (one NCCL group), then the kernels that follow them, then the collectives those let run, ... A
// data-parallel step's gradients (and BatchNorm's running statistics) become one group before the updates.
std::vector<ScheduleItem> defer_collectives(std::vector<ScheduleItem> items) {
  std::vector<ScheduleItem> out, held;
  for (ScheduleItem& item : items) {
    bool hold = is_collective(item);
    for (size_t k = 0; k < held.size() && !hold; k++) hold = must_follow(item, held[k]);
    (hold ? held : out).push_back(std::move(item));
  }
  // The round of each held item: a collective's is one past the kernels' it follows, a kernel's that of what it
  // follows (it runs after that round's collectives).
  std::vector<size_t> round(held.size(), 0);
  std::vector<char> collective(held.size());
  size_t rounds = 0;
  for (size_t j = 0; j < held.size(); j++) {
    collective[j] = is_collective(held[j]);
    for (size_t k = 0; k < j; k++)
      if (must_follow(held[j], held[k]))
        round[j] = std::max(round[j], round[k] + (collective[j] && !collective[k] ? 1 : 0));
    rounds = std::max(rounds, round[j] + 1);
  }
  for (size_t r = 0; r < rounds; r++)
    for (char collectives : {1, 0})
      for (size_t j = 0; j < held.size(); j++)
        if (round[j] == r && collective[j] == collectives) out.push_back(std::move(held[j]));
  return out;
}

// Copies that follow no earlier item (a host value refreshed each replay: a learning rate, a step count) moved to
// the front, so they do not cut the kernels into more graphs.
std::vector<ScheduleItem> copies_first(std::vector<ScheduleItem> items) {
  std::vector<ScheduleItem> copies, rest;
  for (ScheduleItem& item : items) {
    bool free = item.ast->op == Ops::COPY;
    for (size_t k = 0; k < rest.size() && free; k++) free = !must_follow(item, rest[k]);
    (free ? copies : rest).push_back(std::move(item));
  }
  std::move(rest.begin(), rest.end(), std::back_inserter(copies));
  return copies;
}

// Kernels between two copies or collectives grouped by device, each device's in their order: data crosses devices
// only through copies and collectives, so kernels of different devices in one such run never depend on each other,
// and each device's group can be one graph (a sharded step's devices interleave in the schedule).
std::vector<ScheduleItem> grouped_by_device(std::vector<ScheduleItem> items) {
  auto kernel = [](const ScheduleItem& i) { return i.ast->op != Ops::COPY && i.ast->op != Ops::ALLREDUCE; };
  for (size_t x = 0; x < items.size();) {
    size_t end = x;
    while (end < items.size() && kernel(items[end])) end++;
    std::vector<std::string> order;  // devices by first appearance in the run
    auto rank = [&](const ScheduleItem& i) {
      const std::string d = buffer_device(i.bufs.at(0).get());
      auto it = std::find(order.begin(), order.end(), d);
      if (it != order.end()) return size_t(it - order.begin());
      order.push_back(d);
      return order.size() - 1;
    };
    std::vector<std::pair<size_t, size_t>> keys;  // (device rank, position)
    for (size_t k = x; k < end; k++) keys.emplace_back(rank(items[k]), k);
    if (order.size() > 1) {
      std::stable_sort(keys.begin(), keys.end());
      std::vector<ScheduleItem> run;
      for (const auto& key : keys) run.push_back(std::move(items[key.second]));
      std::move(run.begin(), run.end(), items.begin() + long(x));
    }
    x = std::max(end, x + 1);
  }
  return items;
}
}  // namespace

ReplayPlan::ReplayPlan(std::vector<ScheduleItem> items, std::vector<UOpPtr> inputs, const std::vector<UOpPtr>& outputs,
                       std::vector<HostInput> host_inputs, std::vector<std::string> variables)
    : items_(grouped_by_device(copies_first(defer_collectives(std::move(items))))),
      inputs_(std::move(inputs)),
      host_inputs_(std::move(host_inputs)),
      variables_(std::move(variables)) {
  ReplayScope jit;  // the runners bound here are the ones a replay compiles (JITBEAM)
  if (JIT_PLAN > 0) {
    std::vector<UOpPtr> keep = inputs_;
    keep.insert(keep.end(), outputs.begin(), outputs.end());
    memory_ = plan_memory(items_, keep);
    if (DEBUG >= 1 && memory_.buffers > 0)
      std::printf("JIT memory: %lld intermediate buffers, %.2f MB -> %.2f MB\n",
                  static_cast<long long>(memory_.buffers), double(memory_.bytes) / 1e6,
                  double(memory_.arena_bytes) / 1e6);
  }
  for (const UOpPtr& in : inputs_) input_bufs_.push_back(buffer_of(in.get()));
  std::unordered_set<const UOp*> written;
  for (const HostInput& h : host_inputs_)
    if (written.insert(h.host.get()).second) written_.push_back(h.host);
  for (const ScheduleItem& item : items_)
    for (size_t j = 0; j < item.outputs && j < item.bufs.size(); j++)
      if (written.insert(item.bufs[j].get()).second) written_.push_back(item.bufs[j]);
  std::string device;
  for (const ScheduleItem& item : items_) {
    Exec e;
    for (const UOpPtr& u : item.bufs) {
      e.bufs.push_back(buffer_of(u.get()));
      const bool output = e.ptrs.size() < item.outputs;
      if (!output && e.bufs.back()->readonly()) movable_.push_back({execs_.size(), e.ptrs.size()});
      e.ptrs.push_back(output ? e.bufs.back()->ensure_writable() : e.bufs.back()->ensure_allocated());
    }
    if (item.ast->op != Ops::COPY && item.ast->op != Ops::ALLREDUCE) {  // (copies and collectives run between graphs)
      const std::string dev = buffer_device(item.bufs.at(0).get());
      e.runner = &get_runner(dev, item.ast);
      e.vars = var_values(e.runner->spec, item.vars);
      for (size_t p = 0; p < e.runner->spec.vars.size(); p++) {
        const auto& r = e.runner->spec.vars[p]->get<NamedRange>();
        for (size_t v = 0; v < variables_.size(); v++)
          if (variables_[v] == r.name) var_slots_.push_back({execs_.size(), p, v, r.min, r.max});
      }
      device = dev;
      ops_ += e.runner->spec.estimated_ops;
      kernels_++;
      for (const auto& b : e.bufs) mem_ += int64_t(b->nbytes());
      for (size_t j = 0; j < item.bufs.size(); j++)
        for (size_t i = 0; i < inputs_.size(); i++)
          if (item.bufs[j] == inputs_[i]) {
            slots_.push_back({execs_.size(), j, i});
            if (j < item.outputs) graphable_ = false;  // a kernel writes an input: its new memory, not a copy
          }
    }
    execs_.push_back(std::move(e));
  }
  if (device.empty()) graphable_ = false;
  if (DEBUG >= 2) {
    const ReplayShape r = shape();
    std::printf("JIT plan: %zu kernels in %zu runs, %zu copies, %zu all-reduces in %zu groups\n", r.kernels, r.runs,
                r.copies, r.collectives, r.groups);
  }
}

ReplayShape ReplayPlan::shape() const {
  ReplayShape r;
  for (size_t i = 0; i < items_.size(); i++) {
    const Ops op = items_[i].ast->op, before = i > 0 ? items_[i - 1].ast->op : Ops::NOOP;
    if (op == Ops::COPY) r.copies++;
    else if (op == Ops::ALLREDUCE) r.collectives++, r.groups += before != Ops::ALLREDUCE;
    else r.kernels++, r.runs += i == 0 || before == Ops::COPY || before == Ops::ALLREDUCE;
  }
  return r;
}

void ReplayPlan::run(const std::vector<UOpPtr>& inputs, const std::vector<int64_t>& variables) {
  if (inputs.size() != inputs_.size())
    throw Error("TinyJit: a replay got " + std::to_string(inputs.size()) + " inputs, the plan has " +
                std::to_string(inputs_.size()));
  set_variables(variables);
  refresh_host_inputs();
  refresh_moved_buffers();
  // Values realized from these buffers' earlier contents (an output read after the last call) are old now.
  buffers_overwritten(written_);
  if (timing_each_item() || viz::enabled()) {
    run_items(inputs);  // per kernel: lines and times (VIZ: each run in the trace's timeline)
  } else {
    if (graphable_ && JIT < 2 && !graph_tried_) record_graphs();
    if (graphed()) run_graphs(inputs);
    else run_bound(inputs);
  }
  poison_if_asked(memory_);  // (MEMORY_POISON=1: the intermediates are dead once a replay is done)
}

void ReplayPlan::launch_run(size_t begin, size_t end) {
  for (size_t k = begin; k < end; k++) execs_[k].runner->program->run(execs_[k].ptrs, execs_[k].vars, false);
}

void ReplayPlan::record_graphs() {
  graph_tried_ = true;
  std::vector<std::unique_ptr<LaunchGraph>> graphs(execs_.size());
  std::vector<size_t> ends(execs_.size());
  for (size_t x = 0; x < execs_.size();) {
    size_t end = x;  // a run of kernels of one device
    while (end < execs_.size() && execs_[end].runner && execs_[end].runner->device == execs_[x].runner->device) end++;
    if (end > x) {
      Device& dev = get_device(execs_[x].runner->device);
      graphs[x] = dev.record_graph([&] { launch_run(x, end); });
      if (!graphs[x]) return;  // the device has no graphs
      ends[x] = end;
    }
    x = std::max(end, x + 1);
  }
  graphs_ = std::move(graphs);
  graph_end_ = std::move(ends);
  graph_values_ = values_;
}

// The variables changed since the graphs were recorded: each graph takes the kernels' new arguments in place where
// the device can, else is recorded again.
void ReplayPlan::update_graphs() {
  for (size_t x = 0; x < graphs_.size(); x++) {
    if (!graphs_[x]) continue;
    const size_t end = graph_end_[x];
    if (!graphs_[x]->update([&] { launch_run(x, end); }))
      graphs_[x] = get_device(execs_[x].runner->device).record_graph([&] { launch_run(x, end); });
  }
  graph_values_ = values_;
}

std::unordered_map<const UOp*, UOpPtr> ReplayPlan::rebind(const std::vector<UOpPtr>& inputs) const {
  std::unordered_map<const UOp*, UOpPtr> map;
  for (size_t i = 0; i < inputs.size(); i++) map[inputs_[i].get()] = inputs[i];
  return map;
}

// Item by item through the engine, each BUFFER node of a captured input replaced by the new one.
void ReplayPlan::run_items(const std::vector<UOpPtr>& inputs) { replay(items_, rebind(inputs)); }

// One past the run of collectives starting at x (consecutive ones run as one NCCL group); x + 1 for a copy.
size_t ReplayPlan::non_kernels_end(size_t x) const {
  size_t end = x + 1;
  if (items_[x].ast->op == Ops::ALLREDUCE)
    while (end < items_.size() && items_[end].ast->op == Ops::ALLREDUCE) end++;
  return end;
}

void ReplayPlan::run_bound(const std::vector<UOpPtr>& inputs) {
  std::vector<void*> in;
  for (const UOpPtr& u : inputs) in.push_back(buffer_of(u.get())->ensure_allocated());
  std::optional<std::unordered_map<const UOp*, UOpPtr>> rebound;  // made at the first copy
  size_t s = 0;
  for (size_t x = 0; x < execs_.size(); x++) {
    Exec& e = execs_[x];
    if (!e.runner) {  // a copy or collectives: through the engine (which counts them), with the inputs rebound
      if (!rebound) rebound = rebind(inputs);
      const size_t end = non_kernels_end(x);
      replay({items_.begin() + long(x), items_.begin() + long(end)}, *rebound);
      x = end - 1;
      continue;
    }
    if (s == slots_.size() || slots_[s].exec != x) {  // (most kernels read no input: no copy of their pointers)
      e.runner->program->run(e.ptrs, e.vars, false);
      continue;
    }
    std::vector<void*> ptrs = e.ptrs;
    for (; s < slots_.size() && slots_[s].exec == x; s++) ptrs[slots_[s].buf] = in[slots_[s].input];
    e.runner->program->run(ptrs, e.vars, false);
  }
  count_kernels();
}

// The new inputs copied into the captured ones (on the device), then each run of kernels as its graph, the copies
// between them through the engine.
void ReplayPlan::run_graphs(const std::vector<UOpPtr>& inputs) {
  for (size_t i = 0; i < inputs.size(); i++) {
    if (inputs[i] == inputs_[i]) continue;
    std::shared_ptr<Buffer> src = buffer_of(inputs[i].get());
    if (src->nbytes() != input_bufs_[i]->nbytes())
      throw Error("TinyJit: input " + std::to_string(i) + " has " + std::to_string(src->nbytes()) +
                  " bytes, captured with " + std::to_string(input_bufs_[i]->nbytes()));
    copy_buffer(*input_bufs_[i], *src);
  }
  if (values_ != graph_values_) update_graphs();
  for (size_t x = 0; x < execs_.size(); x++) {
    if (graphs_[x]) graphs_[x]->launch();
    if (!execs_[x].runner) {  // a copy or collectives, on captured memory (inputs were copied in)
      const size_t end = non_kernels_end(x);
      replay({items_.begin() + long(x), items_.begin() + long(end)}, {});
      x = end - 1;
    }
  }
  count_kernels();
}

// Each kernel's variables given by this replay, checked against the ranges the kernel was compiled for; the items
// (the path that runs them through the engine) get the same values.
void ReplayPlan::set_variables(const std::vector<int64_t>& values) {
  if (values.size() != variables_.size())
    throw Error("TinyJit: a replay got " + std::to_string(values.size()) + " variables, the plan has " +
                std::to_string(variables_.size()));
  for (const VarSlot& v : var_slots_) {
    const int64_t x = values[v.variable];
    if (x < v.min || x > v.max)
      throw Error("TinyJit: variable " + variables_[v.variable] + " = " + std::to_string(x) + " outside its range [" +
                  std::to_string(v.min) + ", " + std::to_string(v.max) + "]");
    execs_[v.exec].vars[v.position] = x;
  }
  values_ = values;
  for (ScheduleItem& item : items_)
    for (VarValue& b : item.vars)
      for (size_t v = 0; v < variables_.size(); v++)
        if (b.var.name == variables_[v]) b.value = values[v];
}

// Host memory, written before any item runs: the items that copy it to the device see this replay's values.
void ReplayPlan::refresh_host_inputs() {
  for (const HostInput& h : host_inputs_) {
    std::vector<uint8_t> bytes = h.bytes();
    buffer_of(h.host.get())->copyin(bytes.data(), bytes.size());
  }
}

void ReplayPlan::refresh_moved_buffers() {
  bool moved = false;
  for (auto [x, j] : movable_) {
    void* now = execs_[x].bufs[j]->ptr();
    if (execs_[x].ptrs[j] != now) execs_[x].ptrs[j] = now, moved = true;
  }
  if (moved && !graphs_.empty()) graphs_.clear(), graph_tried_ = false;  // (graphs hold the old addresses)
}

void ReplayPlan::count_kernels() const {
  GlobalCounters::kernel_count += kernels_;
  GlobalCounters::global_ops += ops_;
  GlobalCounters::global_mem += mem_;
}

}  // namespace tg
