//===- Stream.h - An owned CUDA stream and an owned CUDA event --------------===//
//
// What: Stream::create makes a non-blocking stream (cuStreamCreate) and
// Event::create an event without timing (cuEventCreate,
// CU_EVENT_DISABLE_TIMING); their destructors destroy them (failures logged
// once, ReleaseLog.h). Event::record marks the work queued on a stream so
// far; Event::waitOn makes a stream's later work wait for that mark.
//
// Why: the decode capture spreads a call's steps over several streams
// (StreamSchedule.h); inside a capture an event recorded on one stream and
// waited on by another becomes a graph edge, and a stream that waits for an
// event of the capturing stream joins the capture (a graph branch).
//
// Invariants: move-only (DriverHandle.h); a moved-from object owns nothing. An event may be
// recorded again: a wait sees its latest record.
//===----------------------------------------------------------------------===//
#ifndef DSC_RUNTIME_CUDA_HAL_STREAM_H
#define DSC_RUNTIME_CUDA_HAL_STREAM_H

#include "runtime/cuda/hal/DriverHandle.h"

namespace dsc::cuda::hal {

class Stream {
public:
  static runtime::Expected<Stream> create(const CudaDriver &driver);
  explicit Stream(DriverHandle<StreamTraits> handle = {}) : handle_(std::move(handle)) {}
  void reset() { handle_.reset(); }
  CUstream get() const { return handle_.get(); }

private:
  DriverHandle<StreamTraits> handle_;
};

class Event {
public:
  static runtime::Expected<Event> create(const CudaDriver &driver);
  explicit Event(DriverHandle<EventTraits> handle = {}) : handle_(std::move(handle)) {}
  void reset() { handle_.reset(); }
  /// Marks the work queued on `stream` so far (cuEventRecord).
  runtime::Status record(CUstream stream) const;
  /// `stream`'s later work waits for the latest record (cuStreamWaitEvent).
  runtime::Status waitOn(CUstream stream) const;

private:
  DriverHandle<EventTraits> handle_;
};

} // namespace dsc::cuda::hal

#endif // DSC_RUNTIME_CUDA_HAL_STREAM_H
