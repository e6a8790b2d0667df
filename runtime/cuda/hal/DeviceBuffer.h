//===- DeviceBuffer.h - One owned device allocation (cuMemAlloc/cuMemFree) --===//
//
// What: a move-only owner of one device allocation and its size. allocate()
// makes one (Status on failure, naming what it was for); the destructor and
// reset() free it (a failed cuMemFree is logged once, ReleaseLog.h);
// growTo() replaces it with a larger, zero-filled one when it is too small.
//
// Why: the CUDA backend's arenas, states, scratch, constants and weights each
// have exactly one owner (docs/runtime.md, "Who owns what"); the owner's
// lifetime is the allocation's, so nothing has to be released by hand.
//
// Invariants: ptr() != 0 exactly when size() > 0 or an allocation of 0 bytes
// was asked for as 1; a moved-from buffer is empty and frees nothing. The
// device may still be using the memory when it is destroyed: its owner
// synchronises the stream first (growTo does so itself).
// growTo never shrinks, and keeps the address when the buffer is big enough
// (what a captured graph needs); when it moves, `moved` is set.
//===----------------------------------------------------------------------===//
#ifndef DSC_RUNTIME_CUDA_HAL_DEVICEBUFFER_H
#define DSC_RUNTIME_CUDA_HAL_DEVICEBUFFER_H

#include "runtime/cuda/CudaDriver.h"

#include <cstddef>
#include <string>

namespace dsc::cuda::hal {

class DeviceBuffer {
public:
  DeviceBuffer() = default;
  /// `bytes` bytes (at least 1) of device memory, not initialised; `what`
  /// names it in an error ("cuMemAlloc(<bytes>, <what>)").
  static runtime::Expected<DeviceBuffer> allocate(const CudaDriver &driver, size_t bytes,
                                                  const std::string &what);
  DeviceBuffer(const DeviceBuffer &) = delete;
  DeviceBuffer &operator=(const DeviceBuffer &) = delete;
  DeviceBuffer(DeviceBuffer &&other) noexcept { *this = std::move(other); }
  DeviceBuffer &operator=(DeviceBuffer &&other) noexcept;
  ~DeviceBuffer() { reset(); }

  /// Frees the allocation (logged once on failure); the buffer is then empty.
  void reset();
  /// Makes the buffer at least `bytes` bytes: nothing when it is already,
  /// else synchronises `stream` (the old memory may be in use), frees it and
  /// allocates `bytes` bytes zero-filled on `stream` (asynchronously).
  /// `moved` (if given) says whether a previous allocation went away.
  runtime::Status growTo(const CudaDriver &driver, size_t bytes, CUstream stream,
                         const std::string &what, bool *moved = nullptr);

  CUdeviceptr ptr() const { return ptr_; }
  size_t size() const { return size_; }
  explicit operator bool() const { return ptr_ != 0; }

private:
  const CudaDriver *driver_ = nullptr;
  CUdeviceptr ptr_ = 0;
  size_t size_ = 0;
};

} // namespace dsc::cuda::hal

#endif // DSC_RUNTIME_CUDA_HAL_DEVICEBUFFER_H
