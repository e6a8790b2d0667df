//===- DeviceBandwidth.cpp - Device-to-device copy bandwidth (dsc-bench) ----===//
//
// What: measureDeviceCopyBandwidth (Backend.h) on device 0 with its own
// hal::Device and two hal::DeviceBuffers: one warm-up copy, then
// `iterations` synchronous copies timed together; bytes read + written.
// Why: dsc-bench's roofline for the CUDA backend.
//===----------------------------------------------------------------------===//
#include "dsc/runtime/Backend.h"
#include "runtime/cuda/hal/Device.h"
#include "runtime/cuda/hal/DeviceBuffer.h"

#include <algorithm>
#include <chrono>

dsc::runtime::Expected<dsc::runtime::DeviceCopyBandwidth>
dsc::runtime::measureDeviceCopyBandwidth(size_t bytes, int iterations) {
  using dsc::cuda::CudaDriver;
  namespace hal = dsc::cuda::hal;
  Expected<const CudaDriver *> driver = CudaDriver::get();
  if (!driver)
    return driver.status();
  const CudaDriver &d = *driver.value();
  Expected<hal::Device> device = hal::Device::open(d, 0);
  if (!device)
    return device.status();
  DeviceCopyBandwidth result;
  result.bytes = bytes;
  result.iterations = std::max(1, iterations);
  result.device = device->name();
  Expected<hal::DeviceBuffer> src = hal::DeviceBuffer::allocate(d, bytes, "bandwidth source");
  if (!src)
    return src.status();
  Expected<hal::DeviceBuffer> dst = hal::DeviceBuffer::allocate(d, bytes, "bandwidth target");
  if (!dst)
    return dst.status();
  const CUdeviceptr a = src->ptr(), b = dst->ptr();
  Status status = d.check(d.cuMemsetD8(a, 1, bytes), "cuMemsetD8");
  if (status) // warm-up
    status = d.check(d.cuMemcpyDtoD(b, a, bytes), "cuMemcpyDtoD");
  if (status)
    status = d.check(d.cuCtxSynchronize(), "cuCtxSynchronize");
  if (status) {
    auto start = std::chrono::steady_clock::now();
    for (int i = 0; status && i < result.iterations; ++i)
      status = d.check(d.cuMemcpyDtoD(i % 2 ? a : b, i % 2 ? b : a, bytes), "cuMemcpyDtoD");
    if (status)
      status = d.check(d.cuCtxSynchronize(), "cuCtxSynchronize");
    result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  if (!status)
    return status;
  result.gbps = result.seconds > 0
                    ? 2.0 * double(bytes) * result.iterations / result.seconds / 1e9
                    : 0;
  return result;
}
