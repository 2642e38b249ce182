// CUDA graphs by stream capture (runtime/cuda_graph.h).
#include "runtime/cuda_graph.h"

#include <algorithm>
#include <cstring>

#include "tg/error.h"

namespace tg::cu {
namespace {

thread_local CUstream capturing = nullptr;
thread_local std::vector<KernelLaunch>* logging = nullptr;

// The launches `record` makes on this thread, written down instead of run.
std::vector<KernelLaunch> log_launches(const std::function<void()>& record) {
  if (logging || capturing) throw Error("CUDA: a graph is already being recorded on this thread");
  std::vector<KernelLaunch> log;
  logging = &log;
  try {
    record();
  } catch (...) {
    logging = nullptr;
    throw;
  }
  logging = nullptr;
  return log;
}

// The kernel nodes of a captured graph in launch order: one stream's capture is a chain from its root. Empty when
// the graph is not one (or the driver cannot say).
std::vector<CUgraphNode> chain_of(CUgraph graph) {
  const Driver& d = driver();
  size_t n = 1;
  CUgraphNode node = nullptr;
  if (d.cuGraphGetRootNodes(graph, nullptr, &n) != CUDA_SUCCESS || n != 1 ||
      d.cuGraphGetRootNodes(graph, &node, &n) != CUDA_SUCCESS)
    return {};
  std::vector<CUgraphNode> chain{node};
  while (true) {
    size_t next = 0;
    if (d.cuGraphNodeGetDependentNodes(node, nullptr, nullptr, &next) != CUDA_SUCCESS || next > 1) return {};
    if (next == 0) return chain;
    CUgraphEdgeData edge{};
    if (d.cuGraphNodeGetDependentNodes(node, &node, &edge, &next) != CUDA_SUCCESS) return {};
    chain.push_back(node);
  }
}

// The launches `record` makes on this thread, captured on a stream of their own as a graph (not instantiated).
CUgraph capture(const std::string& device, const std::function<void()>& record) {
  const Driver& d = driver();
  if (capturing) throw Error(device + ": a graph is already being recorded on this thread");
  CUstream stream = nullptr;
  check(d.cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), device + ": cuStreamCreate");
  auto finish = [&](CUgraph* graph) {
    capturing = nullptr;
    CUresult r = d.cuStreamEndCapture(stream, graph);
    d.cuStreamDestroy(stream);
    return r;
  };
  if (CUresult r = d.cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL); r != CUDA_SUCCESS) {
    d.cuStreamDestroy(stream);
    check(r, device + ": cuStreamBeginCapture");
  }
  capturing = stream;
  CUgraph graph = nullptr;
  try {
    record();
  } catch (...) {
    if (finish(&graph) == CUDA_SUCCESS && graph) d.cuGraphDestroy(graph);
    throw;
  }
  check(finish(&graph), device + ": cuStreamEndCapture");
  return graph;
}

// An instantiated graph of one stream's launches. New arguments (a variable's value) reach it node by node where
// the driver allows: the launches are written down again, not captured, and only the kernel nodes whose
// arguments changed are set (a decode step's ~300 kernels were captured again and compared with the old graph
// by cuGraphExecUpdate before every launch); else by capturing a new graph and cuGraphExecUpdate.
class CudaGraph : public LaunchGraph {
 public:
  CudaGraph(CUcontext ctx, std::string device, CUgraph graph, CUgraphExec exec, std::vector<KernelLaunch> launches)
      : ctx_(ctx), device_(std::move(device)), graph_(graph), exec_(exec), launches_(std::move(launches)) {
    if (driver().node_updates() && !launches_.empty()) nodes_ = chain_of(graph_);
    if (nodes_.size() != launches_.size()) nodes_.clear(), launches_.clear();
  }
  ~CudaGraph() override {
    const Driver& d = driver();
    if (d.cuCtxSetCurrent(ctx_) != CUDA_SUCCESS) return;
    d.cuGraphExecDestroy(exec_);
    d.cuGraphDestroy(graph_);
  }
  void launch() override {
    const Driver& d = driver();
    check(d.cuCtxSetCurrent(ctx_), device_ + ": cuCtxSetCurrent");
    // on the legacy default stream: after the copies and kernels queued before it, before those queued after
    check(d.cuGraphLaunch(exec_, nullptr), device_ + ": launch of a captured graph");
  }
  bool update(const std::function<void()>& record) override {
    const Driver& d = driver();
    check(d.cuCtxSetCurrent(ctx_), device_ + ": cuCtxSetCurrent");
    if (!nodes_.empty() && update_nodes(record)) return true;
    if (!d.cuGraphExecUpdate) return false;
    CUgraph graph = capture(device_, record);
    CUgraphExecUpdateResultInfo info{};
    if (d.cuGraphExecUpdate(exec_, graph, &info) != CUDA_SUCCESS) {  // (exec_ is left as it was)
      d.cuGraphDestroy(graph);
      return false;
    }
    d.cuGraphDestroy(graph_);
    graph_ = graph;
    nodes_.clear(), launches_.clear();  // (exec_ now follows the new graph's nodes)
    return true;
  }

 private:
  // False (exec_ possibly half updated, which the capture path then overwrites whole) when the launches are not
  // the same kernels in the same order or the driver refuses a node's new arguments.
  bool update_nodes(const std::function<void()>& record) {
    std::vector<KernelLaunch> now = log_launches(record);
    if (now.size() != launches_.size()) return false;
    for (size_t i = 0; i < now.size(); i++) {
      if (now[i].fn != launches_[i].fn) return false;
      if (now[i].same_as(launches_[i])) continue;
      std::vector<void*> params = now[i].params();
      CUDA_KERNEL_NODE_PARAMS p{now[i].fn,       now[i].grid[0],  now[i].grid[1],  now[i].grid[2],
                                now[i].block[0], now[i].block[1], now[i].block[2], now[i].shared,
                                params.data(),   nullptr,         nullptr,         nullptr};
      if (driver().cuGraphExecKernelNodeSetParams(exec_, nodes_[i], &p) != CUDA_SUCCESS) return false;
    }
    launches_ = std::move(now);
    return true;
  }

 private:
  CUcontext ctx_;
  std::string device_;
  CUgraph graph_;
  CUgraphExec exec_;
  std::vector<KernelLaunch> launches_;  // what each node of nodes_ runs now
  std::vector<CUgraphNode> nodes_;      // graph_'s kernel nodes in launch order; empty: update by capture
};

}  // namespace

CUstream launch_stream() { return capturing; }

std::vector<KernelLaunch>* launch_log() { return logging; }

std::vector<void*> KernelLaunch::params() {
  std::vector<void*> p;
  p.reserve(ptrs.size() + ints.size() + maps.size());
  for (CUdeviceptr& x : ptrs) p.push_back(&x);
  for (int32_t& x : ints) p.push_back(&x);
  for (CUtensorMap& x : maps) p.push_back(&x);
  return p;
}

bool KernelLaunch::same_as(const KernelLaunch& o) const {
  return fn == o.fn && std::equal(grid, grid + 3, o.grid) && std::equal(block, block + 3, o.block) &&
         shared == o.shared && ptrs == o.ptrs && ints == o.ints && maps.size() == o.maps.size() &&
         std::memcmp(maps.data(), o.maps.data(), maps.size() * sizeof(CUtensorMap)) == 0;
}

std::unique_ptr<LaunchGraph> record_graph(CUcontext ctx, const std::string& device,
                                          const std::function<void()>& record) {
  const Driver& d = driver();
  if (!d.graphs()) return nullptr;
  CUgraph graph = capture(device, record);
  CUgraphExec exec = nullptr;
  if (CUresult r = d.cuGraphInstantiateWithFlags(&exec, graph, 0); r != CUDA_SUCCESS) {
    d.cuGraphDestroy(graph);
    check(r, device + ": cuGraphInstantiate");
  }
  std::vector<KernelLaunch> launches;
  if (d.node_updates()) {
    try {
      launches = log_launches(record);
    } catch (...) {
      d.cuGraphExecDestroy(exec);
      d.cuGraphDestroy(graph);
      throw;
    }
  }
  return std::make_unique<CudaGraph>(ctx, device, graph, exec, std::move(launches));
}

}  // namespace tg::cu
