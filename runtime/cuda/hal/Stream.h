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
// Invariants: move-only; a moved-from object owns nothing. An event may be
// recorded again: a wait sees its latest record.
//===----------------------------------------------------------------------===//
#ifndef DSC_RUNTIME_CUDA_HAL_STREAM_H
#define DSC_RUNTIME_CUDA_HAL_STREAM_H

#include "runtime/cuda/CudaDriver.h"

namespace dsc::cuda::hal {

class Stream {
public:
  Stream() = default;
  static runtime::Expected<Stream> create(const CudaDriver &driver);
  Stream(const Stream &) = delete;
  Stream &operator=(const Stream &) = delete;
  Stream(Stream &&other) noexcept { *this = std::move(other); }
  Stream &operator=(Stream &&other) noexcept;
  ~Stream() { reset(); }

  void reset();
  CUstream get() const { return stream_; }

private:
  const CudaDriver *driver_ = nullptr;
  CUstream stream_ = nullptr;
};

class Event {
public:
  Event() = default;
  static runtime::Expected<Event> create(const CudaDriver &driver);
  Event(const Event &) = delete;
  Event &operator=(const Event &) = delete;
  Event(Event &&other) noexcept { *this = std::move(other); }
  Event &operator=(Event &&other) noexcept;
  ~Event() { reset(); }

  void reset();
  /// Marks the work queued on `stream` so far (cuEventRecord).
  runtime::Status record(CUstream stream) const;
  /// `stream`'s later work waits for the latest record (cuStreamWaitEvent).
  runtime::Status waitOn(CUstream stream) const;

private:
  const CudaDriver *driver_ = nullptr;
  CUevent event_ = nullptr;
};

} // namespace dsc::cuda::hal

#endif // DSC_RUNTIME_CUDA_HAL_STREAM_H
