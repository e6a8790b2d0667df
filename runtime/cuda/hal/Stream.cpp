//===- Stream.cpp - Owned CUDA streams and events ---------------------------===//
#include "runtime/cuda/hal/Stream.h"

namespace dsc::cuda::hal {

runtime::Expected<Stream> Stream::create(const CudaDriver &driver) {
  auto handle = makeHandle<StreamTraits>(driver, "cuStreamCreate", [&](CUstream *s) {
    return driver.cuStreamCreate(s, CU_STREAM_NON_BLOCKING);
  });
  return handle ? runtime::Expected<Stream>(Stream(std::move(*handle)))
                : runtime::Expected<Stream>(handle.status());
}

runtime::Expected<Event> Event::create(const CudaDriver &driver) {
  auto handle = makeHandle<EventTraits>(driver, "cuEventCreate", [&](CUevent *e) {
    return driver.cuEventCreate(e, CU_EVENT_DISABLE_TIMING);
  });
  return handle ? runtime::Expected<Event>(Event(std::move(*handle)))
                : runtime::Expected<Event>(handle.status());
}

runtime::Status Event::record(CUstream stream) const {
  if (!handle_)
    return runtime::internalError("cuEventRecord: no event");
  const CudaDriver &d = *handle_.driver();
  return d.check(d.cuEventRecord(handle_.get(), stream), "cuEventRecord");
}

runtime::Status Event::waitOn(CUstream stream) const {
  if (!handle_)
    return runtime::internalError("cuStreamWaitEvent: no event");
  const CudaDriver &d = *handle_.driver();
  return d.check(d.cuStreamWaitEvent(stream, handle_.get(), 0), "cuStreamWaitEvent");
}

} // namespace dsc::cuda::hal
