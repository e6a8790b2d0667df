//===- Stream.cpp - Owned CUDA streams and events ---------------------------===//
#include "runtime/cuda/hal/Stream.h"

#include "runtime/cuda/hal/ReleaseLog.h"

namespace dsc::cuda::hal {

runtime::Expected<Stream> Stream::create(const CudaDriver &driver) {
  Stream s;
  if (runtime::Status st = driver.check(driver.cuStreamCreate(&s.stream_, CU_STREAM_NON_BLOCKING),
                                        "cuStreamCreate");
      !st)
    return st;
  s.driver_ = &driver;
  return s;
}

Stream &Stream::operator=(Stream &&other) noexcept {
  if (this == &other)
    return *this;
  reset();
  driver_ = other.driver_;
  stream_ = other.stream_;
  other.stream_ = nullptr;
  return *this;
}

void Stream::reset() {
  if (stream_ && driver_)
    logReleaseFailure(*driver_, driver_->cuStreamDestroy(stream_), "cuStreamDestroy");
  stream_ = nullptr;
}

runtime::Expected<Event> Event::create(const CudaDriver &driver) {
  Event e;
  if (runtime::Status st =
          driver.check(driver.cuEventCreate(&e.event_, CU_EVENT_DISABLE_TIMING), "cuEventCreate");
      !st)
    return st;
  e.driver_ = &driver;
  return e;
}

Event &Event::operator=(Event &&other) noexcept {
  if (this == &other)
    return *this;
  reset();
  driver_ = other.driver_;
  event_ = other.event_;
  other.event_ = nullptr;
  return *this;
}

void Event::reset() {
  if (event_ && driver_)
    logReleaseFailure(*driver_, driver_->cuEventDestroy(event_), "cuEventDestroy");
  event_ = nullptr;
}

runtime::Status Event::record(CUstream stream) const {
  if (!event_)
    return runtime::internalError("cuEventRecord: no event");
  return driver_->check(driver_->cuEventRecord(event_, stream), "cuEventRecord");
}

runtime::Status Event::waitOn(CUstream stream) const {
  if (!event_)
    return runtime::internalError("cuStreamWaitEvent: no event");
  return driver_->check(driver_->cuStreamWaitEvent(stream, event_, 0), "cuStreamWaitEvent");
}

} // namespace dsc::cuda::hal
