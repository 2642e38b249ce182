// GRAPH=1 / GRAPHUOPS=1: what ran, as graphviz graphs (engine/schedule_graph.h).
#include "engine/schedule_graph.h"

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <mutex>
#include <set>
#include <unordered_map>
#include <vector>

#include "engine/buffers.h"
#include "helpers/debug.h"
#include "helpers/env.h"
#include "runtime/buffer.h"
#include "tg/context.h"
#include "tg/error.h"
#include "uop/ops.h"

namespace tg {

static ContextVar GRAPH("GRAPH", 0), GRAPHUOPS("GRAPHUOPS", 0);

namespace {

std::string dot_quoted(const std::string& s) {
  std::string q = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') q += '\\';
    q += c == '\n' ? std::string("\\n") : std::string(1, c);
  }
  return q + "\"";
}

std::string graph_path() { return getenv_str("GRAPHPATH", "/tmp/net"); }

// `dot -Tsvg in -o out` where graphviz is installed; false (and no SVG) where it is not.
bool render_svg(const std::string& dot_file, const std::string& svg_file) {
  if (dot_file.find('\'') != std::string::npos) return false;  // (the paths go into a shell command in quotes)
  if (std::system("command -v dot >/dev/null 2>&1") != 0) return false;
  return std::system(("dot -Tsvg '" + dot_file + "' -o '" + svg_file + "'").c_str()) == 0;
}

// A buffer's size for an edge or an ellipse: "16 float", "4.19M half".
std::string buffer_label(const UOp* buffer) {
  const int64_t n = buffer->get<BufferArg>().size;
  char count[32];
  if (n >= 1000000)
    std::snprintf(count, sizeof(count), "%.2fM", double(n) / 1e6);
  else
    std::snprintf(count, sizeof(count), "%lld", static_cast<long long>(n));
  return std::string(count) + " " + buffer->dtype.name();
}

class Recorder {
 public:
  static Recorder& get() {
    static Recorder r;  // (its destructor writes the files when the process exits)
    return r;
  }

  // A node for a kernel or copy: its reads become edges from their last writers, its writes make it theirs.
  void add(const std::string& label, const ScheduleItem& item, bool copy) {
    std::lock_guard<std::mutex> lock(mu_);
    const int node = int(nodes_.size());
    nodes_.push_back("n" + std::to_string(node) + " [shape=box, label=" + dot_quoted(label) +
                     ", style=filled, fillcolor=" + (copy ? "\"#e8e8e8\"" : "\"#d8e8ff\"") + "]");
    for (size_t i = item.outputs; i < item.bufs.size(); i++) {
      const int from = writer_of(item.bufs[i].get());
      edges_.push_back("n" + std::to_string(from) + " -> n" + std::to_string(node) +
                       " [label=" + dot_quoted(buffer_label(item.bufs[i].get())) + "]");
    }
    for (size_t i = 0; i < item.outputs && i < item.bufs.size(); i++) {
      std::shared_ptr<Buffer> b = buffer_of(item.bufs[i].get());
      writers_[b.get()] = {b, node};
    }
  }

  // Once per kernel name: its linearized UOps, an edge from each source to its user.
  void add_uops(const ProgramSpec& spec) {
    std::string path;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!uop_graphs_.insert(spec.name).second) return;
      path = graph_path() + "." + spec.name;
    }
    std::ofstream out(path + ".dot");
    out << "digraph " << dot_quoted(spec.name) << " {\n  node [fontname=monospace, fontsize=10];\n";
    std::unordered_map<const UOp*, size_t> index;
    for (size_t i = 0; i < spec.uops.size(); i++) {
      const UOp* u = spec.uops[i].get();
      index[u] = i;
      std::string arg = u->arg_repr();
      if (arg.size() > 40) arg = arg.substr(0, 37) + "...";
      out << "  u" << i << " [shape=box, label="
          << dot_quoted(std::to_string(i) + " " + op_name(u->op) + "\n" + u->dtype.repr() + (arg.empty() ? "" : "\n" + arg))
          << "];\n";
      for (const UOpPtr& s : u->src)
        if (auto it = index.find(s.get()); it != index.end()) out << "  u" << it->second << " -> u" << i << ";\n";
    }
    out << "}\n";
    out.close();
    render_svg(path + ".dot", path + ".svg");
  }

  std::string write() {
    std::lock_guard<std::mutex> lock(mu_);
    const std::string base = graph_path(), dot_file = base + ".dot";
    std::ofstream out(dot_file);
    if (!out) throw Error("GRAPH: cannot write " + dot_file + " (GRAPHPATH=" + base + ")");
    out << "digraph schedule {\n  rankdir=TB;\n  node [fontname=monospace, fontsize=11];\n";
    for (const std::string& n : nodes_) out << "  " << n << ";\n";
    for (const std::string& e : edges_) out << "  " << e << ";\n";
    out << "}\n";
    out.close();
    const bool svg = render_svg(dot_file, base + ".svg");
    written_ = nodes_.size();
    std::fprintf(stderr, "GRAPH: %zu nodes in %s%s\n", nodes_.size(), dot_file.c_str(),
                 svg ? (", " + base + ".svg").c_str() : " (graphviz's dot not found: no SVG)");
    return dot_file;
  }

  ~Recorder() {
    if (!nodes_.empty() && written_ != nodes_.size()) {
      try {
        write();
      } catch (const Error& e) {
        std::fprintf(stderr, "%s\n", e.what());
      }
    }
  }

 private:
  // The node that last wrote `buffer` (the same Buffer object, still alive), else an ellipse for it.
  int writer_of(const UOp* buffer) {
    std::shared_ptr<Buffer> b = buffer_of(buffer);
    auto it = writers_.find(b.get());
    if (it != writers_.end() && it->second.first.lock() == b) return it->second.second;
    const int node = int(nodes_.size());
    nodes_.push_back("n" + std::to_string(node) + " [shape=ellipse, label=" +
                     dot_quoted("buffer " + std::to_string(buffer->get<BufferArg>().id) + "\n" + buffer_label(buffer) +
                            "\n" + b->device()) +
                     "]");
    writers_[b.get()] = {b, node};
    return node;
  }

  std::mutex mu_;
  std::vector<std::string> nodes_, edges_;
  std::unordered_map<const Buffer*, std::pair<std::weak_ptr<Buffer>, int>> writers_;
  std::set<std::string> uop_graphs_;
  size_t written_ = 0;
};

}  // namespace

bool schedule_graph_enabled() { return GRAPH > 0 || GRAPHUOPS > 0; }

void schedule_graph_kernel(const ProgramSpec& spec, const std::string& device, const ScheduleItem& item,
                           int64_t number) {
  if (GRAPH > 0) Recorder::get().add(spec.name + "\n#" + std::to_string(number) + " " + device, item, false);
  if (GRAPHUOPS > 0) Recorder::get().add_uops(spec);
}

void schedule_graph_copy(const std::string& name, const ScheduleItem& item, int64_t number) {
  // (DEBUG=2 pads the name into columns: "copy       16,    CUDA <- CPU    ")
  std::string label;
  for (char c : strip_ansi(name))
    if (c != ' ' || (!label.empty() && label.back() != ' ')) label += c;
  while (!label.empty() && label.back() == ' ') label.pop_back();
  if (GRAPH > 0) Recorder::get().add(label + "\n#" + std::to_string(number), item, true);
}

std::string schedule_graph_write() { return GRAPH > 0 ? Recorder::get().write() : ""; }

}  // namespace tg
