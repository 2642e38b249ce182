// The VIZ trace (uop/viz_trace.h): recorded under one lock (codegen may run on several threads), written at exit.
#include "uop/viz_trace.h"

#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "helpers/env.h"
#include "tg/context.h"
#include "tg/error.h"

#ifndef TG_VIZ_SERVER
#define TG_VIZ_SERVER ""
#endif

namespace tg::viz {
namespace {

// 1: record, write at exit and serve the viewer; 2: record and write only
ContextVar VIZ("VIZ", 0);

struct Step {
  std::string pass;
  int depth;
  int64_t in, out, rewrites;
  double seconds;
  std::vector<FiredRule> rules;
  std::vector<std::array<int64_t, 3>> matches;  // rule, from, to
};

struct Ctx {
  std::string kind, name, device;
  std::vector<Step> steps;
  std::map<std::string, std::string> text;
};

struct Run {
  int context;
  std::string name, device;
  double start_s, seconds;
  int64_t bytes;
};

// Nodes are stored once, by address; the weak pointer tells a node from a later one at a reused address.
struct NodeEntry {
  std::weak_ptr<const UOp> node;
  int64_t id;
};

struct Trace {
  std::mutex mu;
  std::vector<std::string> nodes;  // each node's JSON array
  std::unordered_map<const UOp*, NodeEntry> ids;
  std::vector<Ctx> contexts;
  int other = -1;  // the context of steps recorded outside any
  std::vector<Run> runs;
  std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
};

Trace& trace() {
  static Trace* t = new Trace();  // (lives until exit: the exit handler writes it)
  return *t;
}

thread_local int t_context = -1;
thread_local int t_depth = 0;

std::string json_quoted(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\')
      out += '\\', out += char(c);
    else if (c == '\n')
      out += "\\n";
    else if (c == '\t')
      out += "\\t";
    else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else
      out += char(c);
  }
  return out + "\"";
}

// The id of `root`, after storing every node below it not stored yet (sources first; an explicit stack: graphs of
// a million nodes do not recurse).
int64_t node_id(Trace& t, const UOp* root) {
  auto known = [&](const UOp* u) {
    auto it = t.ids.find(u);
    return it != t.ids.end() && !it->second.node.expired() ? it->second.id : int64_t(-1);
  };
  std::vector<std::pair<const UOp*, size_t>> stack{{root, 0}};
  while (!stack.empty()) {
    auto& [u, next] = stack.back();
    if (known(u) >= 0) {
      stack.pop_back();
      continue;
    }
    if (next < u->src.size()) {
      const UOp* s = u->src[next++].get();
      if (known(s) < 0) stack.push_back({s, 0});
      continue;
    }
    std::string srcs;
    for (const UOpPtr& s : u->src) srcs += (srcs.empty() ? "" : ",") + std::to_string(known(s.get()));
    t.nodes.push_back("[" + json_quoted(op_name(u->op)) + "," + json_quoted(u->dtype.name()) + "," + json_quoted(u->arg_repr()) +
                      ",[" + srcs + "]]");
    t.ids[u] = {u->ptr(), int64_t(t.nodes.size()) - 1};
    stack.pop_back();
  }
  return known(root);
}

std::string trace_path() {
  return getenv_str("VIZ_PATH", "/tmp/tinygrad_cpp_viz_" + std::to_string(getpid()) + ".json");
}

// At exit: the trace to its file, then (VIZ=1) the viewer on it, until it is stopped.
void write_and_serve() {
  {
    Trace& t = trace();
    std::lock_guard<std::mutex> lock(t.mu);
    if (t.contexts.empty()) return;  // (VIZ was on for a while, or only in tests that reset it)
  }
  const std::string path = trace_path();
  try {
    write_trace(path);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "VIZ: %s\n", e.what());
    return;
  }
  std::fprintf(stderr, "VIZ: trace written to %s\n", path.c_str());
  const std::string server = getenv_str("VIZ_SERVER", TG_VIZ_SERVER);
  const std::string view =
      "python3 '" + server + "' '" + path + "' --port " + std::to_string(getenv_int("VIZ_PORT", 8000));
  if (VIZ.default_value() != 1 || server.empty() || access(server.c_str(), R_OK) != 0 ||
      path.find('\'') != std::string::npos || server.find('\'') != std::string::npos) {
    std::fprintf(stderr, "VIZ: view it with: %s\n", view.c_str());
    return;
  }
  std::fflush(nullptr);
  if (std::system(view.c_str()) != 0) std::fprintf(stderr, "VIZ: the viewer stopped: %s\n", view.c_str());
}

int current_context(Trace& t) {
  if (t_context >= 0) return t_context;
  if (t.other < 0) {
    t.contexts.push_back({"other", "rewrites outside a kernel", "", {}, {}});
    t.other = int(t.contexts.size()) - 1;
  }
  return t.other;
}

}  // namespace

bool enabled() {
  if (VIZ.value() < 1) return false;
  static std::once_flag at_exit;
  std::call_once(at_exit, [] {
    trace();
    std::atexit(write_and_serve);
  });
  return true;
}

double now_s() { return std::chrono::duration<double>(std::chrono::steady_clock::now() - trace().start).count(); }

Context::Context(const std::string& kind, const std::string& name, const std::string& device) {
  if (!enabled()) return;
  Trace& t = trace();
  std::lock_guard<std::mutex> lock(t.mu);
  t.contexts.push_back({kind, name, device, {}, {}});
  index_ = int(t.contexts.size()) - 1;
  outer_ = t_context;
  t_context = index_;
}

Context::~Context() {
  if (index_ >= 0) t_context = outer_;
}

void Context::rename(const std::string& name) {
  if (index_ < 0) return;
  Trace& t = trace();
  std::lock_guard<std::mutex> lock(t.mu);
  t.contexts[size_t(index_)].name = name;
}

void Context::text(const std::string& key, const std::string& value) {
  if (index_ < 0) return;
  Trace& t = trace();
  std::lock_guard<std::mutex> lock(t.mu);
  t.contexts[size_t(index_)].text[key] = value;
}

StepDepth::StepDepth() { t_depth++; }
StepDepth::~StepDepth() { t_depth--; }
int StepDepth::current() { return t_depth; }

void record_step(const std::string& pass, const UOpPtr& in, const UOpPtr& out, int64_t rewrites, double seconds,
                 const std::vector<FiredRule>& rules, const std::vector<RewriteMatch>& matches) {
  Trace& t = trace();
  std::lock_guard<std::mutex> lock(t.mu);
  const int64_t a = node_id(t, in.get()), b = node_id(t, out.get());
  std::vector<std::array<int64_t, 3>> m;
  for (size_t i = 0; i < matches.size() && i < kMaxMatches; i++)
    m.push_back({int64_t(matches[i].rule), node_id(t, matches[i].from.get()), node_id(t, matches[i].to.get())});
  t.contexts[size_t(current_context(t))].steps.push_back({pass, t_depth, a, b, rewrites, seconds, rules, m});
}

void record_run(int context, const std::string& name, const std::string& device, double start_s, double seconds,
                int64_t bytes) {
  Trace& t = trace();
  std::lock_guard<std::mutex> lock(t.mu);
  t.runs.push_back({context, name, device, start_s, seconds, bytes});
}

std::string trace_json() {
  Trace& t = trace();
  std::lock_guard<std::mutex> lock(t.mu);
  std::string program;
  std::getline(std::ifstream("/proc/self/comm"), program);
  std::string out = "{\"version\":1,\"program\":" + json_quoted(program) + ",\n\"nodes\":[";
  for (size_t i = 0; i < t.nodes.size(); i++) out += (i ? ",\n" : "\n") + t.nodes[i];
  out += "],\n\"contexts\":[";
  char num[96];
  for (size_t c = 0; c < t.contexts.size(); c++) {
    const Ctx& x = t.contexts[c];
    out += std::string(c ? ",\n" : "\n") + "{\"kind\":" + json_quoted(x.kind) + ",\"name\":" + json_quoted(x.name) +
           ",\"device\":" + json_quoted(x.device) + ",\"steps\":[";
    for (size_t s = 0; s < x.steps.size(); s++) {
      const Step& st = x.steps[s];
      std::snprintf(num, sizeof num, ",\"depth\":%d,\"in\":%lld,\"out\":%lld,\"rewrites\":%lld,\"us\":%.3f", st.depth,
                    static_cast<long long>(st.in), static_cast<long long>(st.out), static_cast<long long>(st.rewrites),
                    st.seconds * 1e6);
      out += std::string(s ? "," : "") + "{\"pass\":" + json_quoted(st.pass) + num + ",\"rules\":[";
      for (size_t r = 0; r < st.rules.size(); r++)
        out += std::string(r ? "," : "") + "{\"loc\":" + json_quoted(st.rules[r].rule) +
               ",\"count\":" + std::to_string(st.rules[r].count) + "}";
      out += "],\"matches\":[";
      for (size_t m = 0; m < st.matches.size(); m++)
        out += std::string(m ? "," : "") + "[" + std::to_string(st.matches[m][0]) + "," +
               std::to_string(st.matches[m][1]) + "," + std::to_string(st.matches[m][2]) + "]";
      out += "]}";
    }
    out += "],\"text\":{";
    bool first = true;
    for (const auto& [k, v] : x.text) out += std::string(first ? "" : ",") + json_quoted(k) + ":" + json_quoted(v), first = false;
    out += "}}";
  }
  out += "],\n\"runs\":[";
  for (size_t r = 0; r < t.runs.size(); r++) {
    const Run& run = t.runs[r];
    std::snprintf(num, sizeof num, ",\"start_us\":%.3f,\"us\":%.3f,\"bytes\":%lld", run.start_s * 1e6,
                  run.seconds * 1e6, static_cast<long long>(run.bytes));
    out += std::string(r ? ",\n" : "\n") + "{\"context\":" + std::to_string(run.context) +
           ",\"name\":" + json_quoted(run.name) + ",\"device\":" + json_quoted(run.device) + num + "}";
  }
  return out + "]}\n";
}

void write_trace(const std::string& path) {
  const std::string json = trace_json();
  std::ofstream f(path, std::ios::binary);
  if (!f || !(f << json)) throw Error("VIZ: cannot write the trace to " + path + " (VIZ_PATH)");
}

void reset_trace() {
  Trace& t = trace();
  std::lock_guard<std::mutex> lock(t.mu);
  t.nodes.clear();
  t.ids.clear();
  t.contexts.clear();
  t.other = -1;
  t.runs.clear();
}

}  // namespace tg::viz
