// GRAPH=1 and GRAPHUOPS=1 (engine/schedule_graph.h): the graphviz files of what ran. The dot text is parsed back
// (nodes and edges), and the SVG that graphviz renders from it is checked for the kernels' names (scripts/
// install-deps.sh installs graphviz).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "engine/schedule_graph.h"
#include "tg/context.h"
#include "tg/tg.h"

using tg::Tensor;
namespace fs = std::filesystem;

namespace {

std::string read_file(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// A fresh GRAPHPATH for this test process.
std::string fresh_graph_path(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("tg_graph_" + std::to_string(getpid()));
  fs::create_directories(dir);
  const std::string base = (dir / name).string();
  setenv("GRAPHPATH", base.c_str(), 1);
  return base;
}

struct DotGraph {
  std::map<std::string, std::string> labels, shapes;                     // node -> label, shape
  std::vector<std::tuple<std::string, std::string, std::string>> edges;  // from, to, label
  std::string node_labeled(const std::string& prefix) const {
    for (auto& [n, l] : labels)
      if (l.rfind(prefix, 0) == 0) return n;
    return "";
  }
};

DotGraph parse_dot(const std::string& text) {
  DotGraph g;
  static const std::regex node(R"re(^\s*(n\d+) \[shape=(\w+), label="((?:[^"\\]|\\.)*)".*\];)re");
  static const std::regex edge(R"re(^\s*(n\d+) -> (n\d+) \[label="((?:[^"\\]|\\.)*)"\];)re");
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    std::smatch m;
    if (std::regex_search(line, m, node))
      g.labels[m[1]] = m[3], g.shapes[m[1]] = m[2];
    else if (std::regex_search(line, m, edge))
      g.edges.emplace_back(m[1], m[2], m[3]);
  }
  return g;
}

}  // namespace

TEST(ScheduleGraph, KernelsAreBoxesAndBuffersTheirEdges) {
  const std::string base = fresh_graph_path("net");
  Tensor a = Tensor::rand({4, 4}).realize(), b = Tensor::rand({4, 4}).realize();  // (before GRAPH: inputs)
  {
    tg::Context ctx({{"GRAPH", 1}, {"NOOPT", 1}});
    Tensor x = (a + b).contiguous();
    Tensor y = (x * 2.0f).sum();  // reads x: an edge from the add's kernel
    y.realize();
    EXPECT_EQ(tg::schedule_graph_write(), base + ".dot");
  }
  const DotGraph g = parse_dot(read_file(base + ".dot"));
  // (a name seen before in the process gets a suffix: E_16n1)
  const std::string add = g.node_labeled("E_16"), sum = g.node_labeled("r_16");
  ASSERT_FALSE(add.empty()) << read_file(base + ".dot");
  ASSERT_FALSE(sum.empty()) << read_file(base + ".dot");
  EXPECT_EQ(g.shapes.at(add), "box");
  EXPECT_NE(g.labels.at(add).find(" CPU"), std::string::npos);  // "E_16\n#<count> CPU", as DEBUG=2 names it
  // x: from the add to the sum; a and b: ellipses (no recorded kernel wrote them) into the add
  int into_add = 0, add_to_sum = 0;
  for (auto& [from, to, label] : g.edges) {
    if (to == add) {
      into_add++;
      EXPECT_EQ(g.shapes.at(from), "ellipse");
      EXPECT_NE(g.labels.at(from).find("16 float"), std::string::npos) << g.labels.at(from);
    }
    if (from == add && to == sum) {
      add_to_sum++;
      EXPECT_EQ(label, "16 float");
    }
  }
  EXPECT_EQ(into_add, 2);
  EXPECT_EQ(add_to_sum, 1);
  // graphviz draws it: the SVG names both kernels
  const std::string svg = read_file(base + ".svg");
  EXPECT_NE(svg.find("<svg"), std::string::npos);
  EXPECT_NE(svg.find("E_16"), std::string::npos);
  EXPECT_NE(svg.find("r_16"), std::string::npos);
}

TEST(ScheduleGraph, OffRecordsNothingAndWritesNothing) {
  const std::string base = fresh_graph_path("off");
  (Tensor::rand({3, 3}) + 1.0f).realize();
  EXPECT_FALSE(tg::schedule_graph_enabled());
  EXPECT_EQ(tg::schedule_graph_write(), "");
  EXPECT_FALSE(fs::exists(base + ".dot"));
}

TEST(ScheduleGraph, GraphUopsDrawsEachKernelsProgram) {
  const std::string base = fresh_graph_path("uops");
  Tensor a = Tensor::rand({3, 5}).realize();
  {
    tg::Context ctx({{"GRAPHUOPS", 1}, {"NOOPT", 1}});
    (a * 3.0f).realize();  // E_15
  }
  // uops.E_15.dot (uops.E_15n1.dot where an E_15 ran before in the process)
  fs::path file;
  for (const auto& f : fs::directory_iterator(fs::path(base).parent_path()))
    if (f.path().filename().string().rfind("uops.E_15", 0) == 0 && f.path().extension() == ".dot") file = f.path();
  ASSERT_FALSE(file.empty()) << "no " << base << ".E_15*.dot";
  const std::string dot = read_file(file);
  EXPECT_NE(dot.find("STORE"), std::string::npos) << dot;
  EXPECT_NE(dot.find("LOAD"), std::string::npos) << dot;
  EXPECT_NE(dot.find(" -> "), std::string::npos) << dot;
  EXPECT_NE(read_file(fs::path(file).replace_extension(".svg")).find("STORE"), std::string::npos);
}
