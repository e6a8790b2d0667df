//===- Device.cpp - Primary context and stream of one CUDA device ----------===//
#include "runtime/cuda/hal/Device.h"

#include "runtime/cuda/hal/ReleaseLog.h"

namespace dsc::cuda::hal {

runtime::Expected<Device> Device::open(const CudaDriver &driver, int ordinal) {
  int count = 0;
  if (runtime::Status s = driver.check(driver.cuDeviceGetCount(&count), "cuDeviceGetCount"); !s)
    return s;
  if (count <= ordinal)
    return runtime::unavailable(count == 0 ? std::string("no CUDA device")
                                           : "no CUDA device " + std::to_string(ordinal));
  Device device;
  device.driver_ = &driver;
  device.ordinal_ = ordinal;
  if (runtime::Status s = driver.check(driver.cuDeviceGet(&device.device_, ordinal), "cuDeviceGet");
      !s)
    return s;
  if (runtime::Status s = driver.check(driver.cuDevicePrimaryCtxRetain(&device.context_,
                                                                       device.device_),
                                       "cuDevicePrimaryCtxRetain");
      !s) {
    device.context_ = nullptr;
    return s;
  }
  if (runtime::Status s = device.makeCurrent(); !s)
    return s; // the destructor releases the context
  if (runtime::Status s = driver.check(driver.cuStreamCreate(&device.stream_, CU_STREAM_NON_BLOCKING),
                                       "cuStreamCreate");
      !s) {
    device.stream_ = nullptr;
    return s;
  }
  return device;
}

Device &Device::operator=(Device &&other) noexcept {
  if (this == &other)
    return *this;
  close();
  driver_ = other.driver_;
  ordinal_ = other.ordinal_;
  device_ = other.device_;
  context_ = other.context_;
  stream_ = other.stream_;
  other.context_ = nullptr;
  other.stream_ = nullptr;
  return *this;
}

void Device::close() {
  if (!driver_)
    return;
  if (context_)
    logReleaseFailure(*driver_, driver_->cuCtxSetCurrent(context_), "cuCtxSetCurrent");
  if (stream_) {
    logReleaseFailure(*driver_, driver_->cuStreamSynchronize(stream_), "cuStreamSynchronize");
    logReleaseFailure(*driver_, driver_->cuStreamDestroy(stream_), "cuStreamDestroy");
  }
  if (context_)
    logReleaseFailure(*driver_, driver_->cuDevicePrimaryCtxRelease(device_),
                      "cuDevicePrimaryCtxRelease");
  context_ = nullptr;
  stream_ = nullptr;
}

runtime::Status Device::makeCurrent() const {
  if (!context_)
    return runtime::failedPrecondition("the CUDA device has no context");
  return driver_->check(driver_->cuCtxSetCurrent(context_), "cuCtxSetCurrent");
}

runtime::Status Device::synchronize() const {
  if (!stream_)
    return runtime::failedPrecondition("the CUDA device has no stream");
  return driver_->check(driver_->cuStreamSynchronize(stream_), "cuStreamSynchronize");
}

std::string Device::name() const {
  char name[256] = {};
  if (!driver_ || driver_->cuDeviceGetName(name, sizeof(name) - 1, device_) != CUDA_SUCCESS)
    return "CUDA device " + std::to_string(ordinal_);
  return name;
}

} // namespace dsc::cuda::hal
