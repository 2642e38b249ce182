// Reachability of a schedule's buffers after its realize: schedule/liveness.h.
#include "schedule/liveness.h"

#include <unordered_map>

#include "schedule/realized.h"

namespace tg {
namespace {

struct Holders {
  long accounted = 0;          // references the realized graph, the schedule and the caller hold
  bool realized_here = false;  // one of this schedule's `becomes`
  bool expanded = false;       // its sources are part of the walk
  bool held = false;           // something else holds it (or a held node above it)
};

// Every BUFFER node below `u`, into `out`.
void add_buffers(const UOpPtr& u, std::unordered_set<const UOp*>& out) {
  for (const UOp* n : toposort(u))
    if (n->op == Ops::BUFFER) out.insert(n);
}

}  // namespace

std::unordered_set<const UOp*> reachable_buffers(const std::vector<UOpPtr>& roots, const std::vector<int>& released,
                                                 const Schedule& sched) {
  std::unordered_map<const UOp*, Holders> graph;
  for (const auto& [node, view] : sched.becomes) {
    Holders& h = graph[node.get()];
    h.accounted++;
    h.realized_here = true;
  }
  // The realized graph, sources after users (reverse postorder), with an explicit stack (graphs of a million
  // nodes). A BUFFER, or a node realized by an earlier schedule, ends the walk: what lies below it is no more
  // this schedule's.
  std::vector<const UOp*> postorder;
  std::vector<std::pair<const UOp*, size_t>> stack;
  std::unordered_set<const UOp*> seen;
  for (size_t i = 0; i < roots.size(); i++) {
    Holders& h = graph[roots[i].get()];
    h.accounted += 1 + (i < released.size() ? released[i] : 0);
    if (!seen.insert(roots[i].get()).second) continue;
    stack.emplace_back(roots[i].get(), 0);
    while (!stack.empty()) {
      auto& [u, next] = stack.back();
      Holders& hu = graph[u];
      if (next == 0) hu.expanded = u->op != Ops::BUFFER && (hu.realized_here || !realized(u));
      if (hu.expanded && next < u->src.size()) {
        const UOp* s = u->src[next++].get();
        graph[s].accounted++;
        if (seen.insert(s).second) stack.emplace_back(s, 0);
        continue;
      }
      postorder.push_back(u);
      stack.pop_back();
    }
  }
  std::unordered_set<const UOp*> reachable;
  // Held from outside: more references than accounted for. Users come before their sources in reverse
  // postorder, so a held node marks everything below it before that is visited.
  for (auto it = postorder.rbegin(); it != postorder.rend(); ++it) {
    const UOp* u = *it;
    Holders& h = graph[u];
    h.held = h.held || u->weak_from_this().use_count() > h.accounted;
    if (u->op == Ops::BUFFER) reachable.insert(u);  // existed before this schedule: anyone may hold it
    if (h.held && h.expanded)
      for (const UOpPtr& s : u->src) graph[s.get()].held = true;
  }
  for (const UOpPtr& r : sched.roots) add_buffers(r, reachable);
  for (const auto& [node, view] : sched.becomes) {
    auto it = graph.find(node.get());
    if (it == graph.end() || it->second.held || !seen.count(node.get())) add_buffers(view, reachable);
  }
  return reachable;
}

}  // namespace tg
