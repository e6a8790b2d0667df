//===- Device.h - A CUDA device: its primary context and one stream --------===//
//
// What: open() retains device `ordinal`'s primary context, makes it current
// and creates one non-blocking stream; the destructor synchronises and
// destroys the stream and releases the context (failures logged once,
// ReleaseLog.h). makeCurrent() makes the context current on the calling
// thread.
//
// Why: every copy, memset, launch and graph of the CUDA backend goes to this
// one stream, so work is ordered without events; the primary context is the
// one the driver shares with any other user of the device in the process.
//
// Invariants: move-only; a moved-from Device owns nothing. Objects holding
// device memory or modules of this context are destroyed before it (their
// owners say so: CudaBackend destroys its Sessions' state through the
// Engine, which outlives them, and its own members before the Device).
// Thread-safe to call from any thread once made current there; callers
// serialise their own bookkeeping.
//===----------------------------------------------------------------------===//
#ifndef DSC_RUNTIME_CUDA_HAL_DEVICE_H
#define DSC_RUNTIME_CUDA_HAL_DEVICE_H

#include "runtime/cuda/CudaDriver.h"

#include <string>

namespace dsc::cuda::hal {

class Device {
public:
  /// Unavailable when there is no device `ordinal`.
  static runtime::Expected<Device> open(const CudaDriver &driver, int ordinal = 0);
  Device(const Device &) = delete;
  Device &operator=(const Device &) = delete;
  Device(Device &&other) noexcept { *this = std::move(other); }
  Device &operator=(Device &&other) noexcept;
  ~Device() { close(); }

  /// Makes the primary context current on the calling thread.
  runtime::Status makeCurrent() const;
  /// Waits for everything queued on the stream.
  runtime::Status synchronize() const;
  /// cuDeviceGetName, or "CUDA device <ordinal>".
  std::string name() const;

  const CudaDriver &driver() const { return *driver_; }
  CUstream stream() const { return stream_; }

private:
  Device() = default;
  void close();
  const CudaDriver *driver_ = nullptr;
  int ordinal_ = 0;
  CUdevice device_ = 0;
  CUcontext context_ = nullptr;
  CUstream stream_ = nullptr;
};

} // namespace dsc::cuda::hal

#endif // DSC_RUNTIME_CUDA_HAL_DEVICE_H
