// The VIZ trace (uop/viz_trace.h): what a realize records, in the JSON format the viewer reads.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <map>
#include <set>

#include "nn/state/json.h"
#include "tg/context.h"
#include "tg/tg.h"
#include "uop/viz_trace.h"

namespace tg {
namespace {

using nn::state::Json;

// VIZ=2 on this thread (record, write only) with an empty trace; both restored after.
struct Tracing {
  explicit Tracing(long v = 2) : var(*ContextVar::find("VIZ")), old(var.value()) {
    setenv("VIZ_PATH", (testing::TempDir() + "tg_viz_test_exit.json").c_str(), 0);  // (what the exit handler writes)
    viz::reset_trace();
    var.set(v);
  }
  ~Tracing() {
    var.set(old);
    viz::reset_trace();
  }
  ContextVar& var;
  long old;
};

Json trace() { return nn::state::parse_json(viz::trace_json(), "VIZ trace", 16); }
uint64_t num(const Json& j, const char* key) { return j.find(key)->as_uint().value(); }
std::string str(const Json& j, const char* key) { return j.find(key)->text; }

TEST(VizTrace, ARealizeRecordsItsScheduleKernelsPassesAndRuns) {
  Tensor a = Tensor(std::vector<float>(16, 1.0f), {4, 4}).realize(), b = Tensor(std::vector<float>(16, 2.0f), {4, 4});
  Tensor c = Tensor(std::vector<float>(4, 3.0f), {4});
  b.realize(), c.realize();
  Tracing on;  // (the inputs are buffers already: one kernel)
  (a.matmul(b) + c).realize();
  const Json t = trace();
  EXPECT_EQ(num(t, "version"), 1u);
  const Json& nodes = *t.find("nodes");
  ASSERT_GT(nodes.items.size(), 10u);
  for (size_t i = 0; i < nodes.items.size(); i++) {  // [op, dtype, arg, [src ids]]: sources stored first
    const Json& n = nodes.items[i];
    ASSERT_EQ(n.items.size(), 4u);
    EXPECT_FALSE(n.items[0].text.empty());
    for (const Json& s : n.items[3].items) EXPECT_LT(s.as_uint().value(), i) << "node " << i;
  }
  std::set<std::string> kinds, kernels, passes;
  for (const Json& c : t.find("contexts")->items) {
    kinds.insert(str(c, "kind"));
    for (const Json& s : c.find("steps")->items) {
      passes.insert(str(s, "pass"));
      EXPECT_LT(num(s, "in"), nodes.items.size());
      EXPECT_LT(num(s, "out"), nodes.items.size());
      const Json& matches = *s.find("matches");  // each rewrite: [rule, from, to], the first kMaxMatches
      if (s.find("rewrites")->as_uint())
        EXPECT_EQ(matches.items.size(), std::min<uint64_t>(num(s, "rewrites"), viz::kMaxMatches)) << str(s, "pass");
      for (const Json& m : matches.items) {
        EXPECT_LT(m.items.at(0).as_uint().value(), s.find("rules")->items.size());
        EXPECT_LT(m.items.at(1).as_uint().value(), nodes.items.size());
        EXPECT_LT(m.items.at(2).as_uint().value(), nodes.items.size());
        EXPECT_NE(m.items[1].as_uint(), m.items[2].as_uint()) << "a rewrite changes its node";
      }
      for (const Json& r : s.find("rules")->items) {  // "src/codegen/lowerer.cpp:167 #3 LOAD:x(...)"
        EXPECT_NE(str(r, "loc").find(".cpp:"), std::string::npos) << str(r, "loc");
        EXPECT_NE(str(r, "loc").find(" #"), std::string::npos) << str(r, "loc");
        EXPECT_GT(num(r, "count"), 0u);
      }
    }
    if (str(c, "kind") != "kernel") continue;
    kernels.insert(str(c, "name"));
    EXPECT_NE(c.find("text")->find("source")->text.find(str(c, "name")), std::string::npos) << "its source";
    EXPECT_FALSE(c.find("text")->find("program")->text.empty());
    EXPECT_FALSE(c.find("text")->find("opts")->text.empty());
  }
  EXPECT_TRUE(kinds.count("schedule"));
  bool listed = false;  // the schedule says why its one buffer was realized
  for (const Json& c : t.find("contexts")->items)
    if (str(c, "kind") == "schedule" && c.find("text")->find("realized")) {
      EXPECT_EQ(c.find("text")->find("realized")->text, "0  kernel  float[16] on CPU: a tensor the realize asked for\n");
      listed = true;
    }
  EXPECT_TRUE(listed);
  EXPECT_EQ(kernels.size(), 1u) << "a @ b + c is one kernel";
  for (const char* p : {"tensor graph", "kernels", "ast", "expand", "symbolic"}) EXPECT_TRUE(passes.count(p)) << p;
  const Json& runs = *t.find("runs");
  ASSERT_EQ(runs.items.size(), 1u);
  const Json& ctx = t.find("contexts")->items.at(num(runs.items[0], "context"));
  EXPECT_EQ(str(ctx, "kind"), "kernel");
  EXPECT_EQ(str(runs.items[0], "name"), str(ctx, "name"));
  EXPECT_EQ(num(runs.items[0], "bytes"), 4u * (16 + 16 + 16 + 4)) << "the output, a, b and c";
}

TEST(VizTrace, TinyJitReplaysRecordTheirRuns) {
  Tracing on;
  tg::TinyJit jit([](const std::vector<Tensor>& in) { return std::vector<Tensor>{(in[0] * 3.0f + 1.0f).sum()}; });
  for (int i = 0; i < 4; i++) {  // (calls 1 and 2 run eagerly and capture, 3 and 4 replay)
    Tensor x = Tensor(std::vector<float>(8, float(i)), {8}).realize();
    EXPECT_FLOAT_EQ(jit({x})[0].item<float>(), 8.0f * (3.0f * float(i) + 1.0f));
  }
  const Json t = trace();
  std::map<std::string, size_t> runs;
  for (const Json& r : t.find("runs")->items) runs[str(r, "name")]++;
  ASSERT_EQ(runs.size(), 1u) << "one kernel";
  EXPECT_EQ(runs.begin()->second, 4u) << "each call ran it once";
}

TEST(VizTrace, NodesAreStoredOnceAndStepsChainTheirGraphs) {
  Tracing on;
  (Tensor::ones({8}) * 3.0f).sum().realize();
  const Json t = trace();
  for (const Json& c : t.find("contexts")->items) {
    if (str(c, "kind") != "kernel") continue;
    const auto& steps = c.find("steps")->items;
    ASSERT_GE(steps.size(), 3u);
    EXPECT_EQ(num(steps[0], "in"), num(steps[0], "out")) << "the AST as it came";
    std::vector<const Json*> top;  // each pass starts from the graph the one before it made (nested ones aside)
    for (const Json& s : steps)
      if (num(s, "depth") == 0) top.push_back(&s);
    for (size_t i = 1; i < top.size(); i++)
      EXPECT_EQ(num(*top[i], "in"), num(*top[i - 1], "out")) << str(*top[i], "pass");
    for (const char* stage : {"linearize", "render"})
      EXPECT_EQ(std::count_if(top.begin(), top.end(), [&](const Json* s) { return str(*s, "pass") == stage; }), 1)
          << stage;
  }
  // the same graph recorded twice is the same ids
  UOpPtr u = (Tensor::ones({3}) + 1.0f).uop();
  const size_t before = trace().find("nodes")->items.size();
  viz::record_step("again", u, u, -1, 0, {});
  const size_t once = trace().find("nodes")->items.size();
  viz::record_step("again", u, u, -1, 0, {});
  EXPECT_GT(once, before);
  EXPECT_EQ(trace().find("nodes")->items.size(), once);
}

TEST(VizTrace, NothingIsRecordedWhenOff) {
  Tracing off(0);
  EXPECT_FALSE(viz::enabled());
  (Tensor::ones({5}) * 2.0f).realize();
  const Json t = trace();
  EXPECT_TRUE(t.find("nodes")->items.empty());
  EXPECT_TRUE(t.find("contexts")->items.empty());
  EXPECT_TRUE(t.find("runs")->items.empty());
}

TEST(VizTrace, DeepGraphsAreStoredWithoutRecursion) {
  Tracing on;
  UOpPtr x = UOp::make(Ops::CONST, dtypes::int32, {}, int64_t(1));
  for (int i = 0; i < 200000; i++) x = UOp::make(Ops::ADD, dtypes::int32, {x, x});
  viz::record_step("deep", x, x, -1, 0, {});
  EXPECT_EQ(trace().find("nodes")->items.size(), 200001u);
}

TEST(VizTrace, TheFileIsTheJson) {
  Tracing on;
  (Tensor::ones({2}) + 1.0f).realize();
  const std::string path = testing::TempDir() + "tg_viz_trace.json";
  viz::write_trace(path);
  std::ifstream f(path);
  std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, viz::trace_json());
  EXPECT_THROW(viz::write_trace("/nonexistent-dir/x.json"), Error);
}

}  // namespace
}  // namespace tg
