//===- Graph.h - A captured CUDA graph: capture, instantiate, launch -------===//
//
// What: GraphCapture::begin starts capturing a stream
// (cuStreamBeginCapture, relaxed mode); end() stops it, instantiates the
// captured CUgraph into a Graph (cuGraphInstantiateWithFlags) and destroys
// the CUgraph; a capture destroyed (or abandon()ed) before end() stops
// capturing and discards what it recorded. A Graph owns one CUgraphExec:
// launch() replays it on a stream, the destructor destroys it (failures
// logged once, ReleaseLog.h).
//
// Why: the CUDA backend captures a decode call once and replays it for
// every later call of the same (program, call shape) (GraphCache.h); the
// capture must never be left open on the stream when a call fails partway.
//
// Invariants: move-only; a moved-from object owns nothing. A capture holds
// its stream: no other work may be issued to that stream meanwhile except
// what belongs in the graph. A Graph's device addresses are fixed at
// capture: its owner drops it when one of them moves.
//===----------------------------------------------------------------------===//
#ifndef DSC_RUNTIME_CUDA_HAL_GRAPH_H
#define DSC_RUNTIME_CUDA_HAL_GRAPH_H

#include "runtime/cuda/hal/DriverHandle.h"

namespace dsc::cuda::hal {

class Graph {
public:
  runtime::Status launch(CUstream stream) const;
  void reset() { exec_.reset(); }
  explicit operator bool() const { return bool(exec_); }

private:
  friend class GraphCapture;
  DriverHandle<GraphExecTraits> exec_;
};

class GraphCapture {
public:
  GraphCapture() = default;
  static runtime::Expected<GraphCapture> begin(const CudaDriver &driver, CUstream stream);
  GraphCapture(const GraphCapture &) = delete;
  GraphCapture &operator=(const GraphCapture &) = delete;
  GraphCapture(GraphCapture &&other) noexcept { *this = std::move(other); }
  GraphCapture &operator=(GraphCapture &&other) noexcept;
  ~GraphCapture() { abandon(); }

  /// Ends the capture and instantiates what it recorded. The capture is
  /// over afterwards, whether it succeeded or not.
  runtime::Expected<Graph> end();
  /// Ends the capture and discards it (no-op when none is open).
  void abandon();
  bool active() const { return stream_ != nullptr; }

private:
  const CudaDriver *driver_ = nullptr;
  CUstream stream_ = nullptr;
};

} // namespace dsc::cuda::hal

#endif // DSC_RUNTIME_CUDA_HAL_GRAPH_H
