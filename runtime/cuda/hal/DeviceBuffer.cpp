//===- DeviceBuffer.cpp - One owned device allocation -----------------------===//
#include "runtime/cuda/hal/DeviceBuffer.h"

#include "runtime/cuda/hal/ReleaseLog.h"

#include <algorithm>

namespace dsc::cuda::hal {

runtime::Expected<DeviceBuffer> DeviceBuffer::allocate(const CudaDriver &driver, size_t bytes,
                                                       const std::string &what) {
  bytes = std::max<size_t>(bytes, 1);
  CUdeviceptr p = 0;
  if (runtime::Status s = driver.check(driver.cuMemAlloc(&p, bytes),
                                       "cuMemAlloc(" + std::to_string(bytes) + ", " + what + ")");
      !s)
    return s;
  DeviceBuffer buffer;
  buffer.driver_ = &driver;
  buffer.ptr_ = p;
  buffer.size_ = bytes;
  return buffer;
}

DeviceBuffer &DeviceBuffer::operator=(DeviceBuffer &&other) noexcept {
  if (this == &other)
    return *this;
  reset();
  driver_ = other.driver_;
  ptr_ = other.ptr_;
  size_ = other.size_;
  other.ptr_ = 0;
  other.size_ = 0;
  return *this;
}

void DeviceBuffer::reset() {
  if (ptr_ && driver_)
    logReleaseFailure(*driver_, driver_->cuMemFree(ptr_), "cuMemFree");
  ptr_ = 0;
  size_ = 0;
}

runtime::Status DeviceBuffer::growTo(const CudaDriver &driver, size_t bytes, CUstream stream,
                                     const std::string &what, bool *moved) {
  bytes = std::max<size_t>(bytes, 1);
  if (moved)
    *moved = false;
  if (ptr_ && size_ >= bytes)
    return runtime::Status::ok();
  const bool had = ptr_ != 0;
  if (had) // the stream may still read or write the old memory
    if (runtime::Status s = driver.check(driver.cuStreamSynchronize(stream), "cuStreamSynchronize");
        !s)
      return s;
  reset();
  runtime::Expected<DeviceBuffer> fresh = allocate(driver, bytes, what);
  if (!fresh)
    return fresh.status();
  *this = std::move(fresh.value());
  if (moved)
    *moved = had;
  return driver.check(driver.cuMemsetD8Async(ptr_, 0, size_, stream), "cuMemsetD8Async(" + what + ")");
}

} // namespace dsc::cuda::hal
