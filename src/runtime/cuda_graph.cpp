// CUDA graphs by stream capture (runtime/cuda_graph.h).
#include "runtime/cuda_graph.h"

#include "tg/error.h"

namespace tg::cu {
namespace {

thread_local CUstream capturing = nullptr;

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

class CudaGraph : public LaunchGraph {
 public:
  CudaGraph(CUcontext ctx, std::string device, CUgraph graph, CUgraphExec exec)
      : ctx_(ctx), device_(std::move(device)), graph_(graph), exec_(exec) {}
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
    if (!d.cuGraphExecUpdate) return false;
    check(d.cuCtxSetCurrent(ctx_), device_ + ": cuCtxSetCurrent");
    CUgraph graph = capture(device_, record);
    CUgraphExecUpdateResultInfo info{};
    if (d.cuGraphExecUpdate(exec_, graph, &info) != CUDA_SUCCESS) {  // (exec_ is left as it was)
      d.cuGraphDestroy(graph);
      return false;
    }
    d.cuGraphDestroy(graph_);
    graph_ = graph;
    return true;
  }

 private:
  CUcontext ctx_;
  std::string device_;
  CUgraph graph_;
  CUgraphExec exec_;
};

}  // namespace

CUstream launch_stream() { return capturing; }

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
  return std::make_unique<CudaGraph>(ctx, device, graph, exec);
}

}  // namespace tg::cu
