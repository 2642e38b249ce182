#pragma once
// VIZ=1: a trace of the pipeline for the browser viewer (python/tinygrad_cpp/viz): every named graph_rewrite's
// input and output graphs (each node stored once), the rules that fired (where the matcher is written, the rule's
// number in it and its pattern) and its time, grouped in contexts (a realize's schedule, a kernel's codegen) with
// their texts (source, linearized program, opts), and the kernels' runs. Written as one JSON file when the process
// exits (VIZ_PATH, default /tmp/tinygrad_cpp_viz_<pid>.json), so a run on a headless machine is viewed later; with
// VIZ=1 the viewer then serves it on 127.0.0.1:VIZ_PORT (default 8000) until Ctrl-C, VIZ=2 only writes it.
// Nothing is recorded, and nothing costs more than a check, while VIZ is 0.
//
// The format (version 1): {"version", "program", "nodes": [[op, dtype, arg, [src ids]], ...] (id = index),
// "contexts": [{kind, name, device, steps: [{pass, depth, in, out, rewrites, us, rules: [{loc, count}],
// matches: [[rule, from, to], ...]}],
// text: {source, program, opts}}], "runs": [{context, name, device, start_us, us, bytes}]}.
#include <cstdint>
#include <string>
#include <vector>

#include "uop/uop.h"

namespace tg::viz {

bool enabled();  // VIZ >= 1 on this thread

// While alive, the steps this thread records belong to a new context of the trace (contexts nest: the innermost
// one records). Costs nothing when VIZ is 0.
class Context {
 public:
  Context(const std::string& kind, const std::string& name, const std::string& device = "");
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;
  void rename(const std::string& name);
  void text(const std::string& key, const std::string& value);  // "source", "program", "opts"
  int index() const { return index_; }

 private:
  int index_ = -1, outer_ = -1;
};

struct FiredRule {
  std::string rule;  // "src/uop/symbolic.cpp:131 #4 ADD(x, CONST)"
  int64_t count = 0;
};

// One rewrite inside a pass: rule (an index into the step's rules) turned `from` into `to`.
struct RewriteMatch {
  size_t rule = 0;
  UOpPtr from, to;
};
constexpr size_t kMaxMatches = 2000;  // a step keeps its first ones (the rules' counts stay whole)

// One pass over a graph (a named graph_rewrite, or a stage that makes a new graph): recorded in this thread's
// context (or the trace's "other" one).
void record_step(const std::string& pass, const UOpPtr& in, const UOpPtr& out, int64_t rewrites, double seconds,
                 const std::vector<FiredRule>& rules, const std::vector<RewriteMatch>& matches = {});
// A kernel run: started `start_s` seconds after the trace began, took `seconds` (0 when not waited for).
void record_run(int context, const std::string& name, const std::string& device, double start_s, double seconds,
                int64_t bytes);
double now_s();  // seconds since the trace began (the runs' clock)

// Steps open around this thread's current one (a rewrite inside a rule of another rewrite has depth 1).
class StepDepth {
 public:
  StepDepth();
  ~StepDepth();
  static int current();
};

std::string trace_json();  // the trace so far
void write_trace(const std::string& path);
void reset_trace();  // (tests) forget everything recorded

}  // namespace tg::viz
