//===- Graph.cpp - Capture, instantiate and replay CUDA graphs --------------===//
#include "runtime/cuda/hal/Graph.h"

#include "runtime/cuda/hal/ReleaseLog.h"

namespace dsc::cuda::hal {

runtime::Status Graph::launch(CUstream stream) const {
  if (!exec_)
    return runtime::internalError("cuGraphLaunch: no instantiated graph");
  const CudaDriver &d = *exec_.driver();
  return d.check(d.cuGraphLaunch(exec_.get(), stream), "cuGraphLaunch");
}

runtime::Expected<GraphCapture> GraphCapture::begin(const CudaDriver &driver, CUstream stream) {
  if (runtime::Status s = driver.check(driver.cuStreamBeginCapture(stream,
                                                                   CU_STREAM_CAPTURE_MODE_RELAXED),
                                       "cuStreamBeginCapture");
      !s)
    return s;
  GraphCapture capture;
  capture.driver_ = &driver;
  capture.stream_ = stream;
  return capture;
}

GraphCapture &GraphCapture::operator=(GraphCapture &&other) noexcept {
  if (this == &other)
    return *this;
  abandon();
  driver_ = other.driver_;
  stream_ = other.stream_;
  other.stream_ = nullptr;
  return *this;
}

runtime::Expected<Graph> GraphCapture::end() {
  if (!stream_)
    return runtime::internalError("cuStreamEndCapture: no capture in progress");
  CUstream stream = stream_;
  stream_ = nullptr;
  CUgraph graph = nullptr;
  if (runtime::Status s = driver_->check(driver_->cuStreamEndCapture(stream, &graph),
                                         "cuStreamEndCapture");
      !s) {
    if (graph)
      logReleaseFailure(*driver_, driver_->cuGraphDestroy(graph), "cuGraphDestroy");
    return s;
  }
  CUgraphExec exec = nullptr;
  runtime::Status status = driver_->check(driver_->cuGraphInstantiateWithFlags(&exec, graph, 0),
                                          "cuGraphInstantiateWithFlags");
  logReleaseFailure(*driver_, driver_->cuGraphDestroy(graph), "cuGraphDestroy");
  if (!status)
    return status;
  Graph result;
  result.exec_ = DriverHandle<GraphExecTraits>(*driver_, exec);
  return result;
}

void GraphCapture::abandon() {
  if (!stream_ || !driver_)
    return;
  CUgraph graph = nullptr;
  // Ending an invalidated capture fails by design; only the graph matters.
  (void)driver_->cuStreamEndCapture(stream_, &graph);
  if (graph)
    logReleaseFailure(*driver_, driver_->cuGraphDestroy(graph), "cuGraphDestroy");
  stream_ = nullptr;
}

} // namespace dsc::cuda::hal
