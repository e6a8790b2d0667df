//===- CudaDriver.h - The CUDA driver API, opened at run time --------------===//
//
// dsc links no CUDA library: the driver (libcuda.so.1) is dlopen'ed and every
// entry point is fetched with cuGetProcAddress, like IREE's dynamic symbols.
// A machine without a driver gets Status Unavailable ("no CUDA driver"), so
// one runtime binary runs with and without a GPU. Every call is checked;
// errors carry the driver's name and message for the failing call.
//===----------------------------------------------------------------------===//
#ifndef DSC_RUNTIME_CUDA_CUDADRIVER_H
#define DSC_RUNTIME_CUDA_CUDADRIVER_H

#include "dsc/runtime/Status.h"

#include <cuda.h>

#include <string>

namespace dsc::cuda {

#define DSC_CUDA_DRIVER_FUNCTIONS(X)                                                           \
  X(cuInit) X(cuDeviceGet) X(cuDeviceGetCount) X(cuDeviceGetName) X(cuDeviceGetAttribute)     \
  X(cuDevicePrimaryCtxRetain) X(cuDevicePrimaryCtxRelease) X(cuCtxSetCurrent)                \
  X(cuCtxSynchronize) X(cuModuleLoadData) X(cuModuleUnload) X(cuModuleGetFunction)           \
  X(cuMemAlloc) X(cuMemFree) X(cuMemcpyHtoD) X(cuMemcpyDtoH) X(cuMemcpyDtoD) X(cuMemsetD8)   \
  X(cuLaunchKernel) X(cuFuncSetAttribute) X(cuGetErrorName) X(cuGetErrorString)              \
  X(cuStreamCreate) X(cuStreamDestroy) X(cuStreamSynchronize) X(cuDriverGetVersion)            \
  X(cuMemcpyHtoDAsync) X(cuMemcpyDtoHAsync) X(cuMemcpyDtoDAsync) X(cuMemsetD8Async)          \
  X(cuStreamBeginCapture) X(cuStreamEndCapture) X(cuGraphInstantiateWithFlags)               \
  X(cuGraphLaunch) X(cuGraphExecDestroy) X(cuGraphDestroy) X(cuLaunchKernelEx) X(cuModuleGetGlobal) \
  X(cuEventCreate) X(cuEventDestroy) X(cuEventRecord) X(cuStreamWaitEvent)

/// The loaded driver: one per process (the driver itself is process-wide).
struct CudaDriver {
#define DSC_DECLARE(f) decltype(&::f) f = nullptr;
  DSC_CUDA_DRIVER_FUNCTIONS(DSC_DECLARE)
#undef DSC_DECLARE

  /// Loads libcuda.so.1 and cuInit(0) once; Unavailable if there is none.
  static runtime::Expected<const CudaDriver *> get();

  /// Ok, or an error "<what>: CUDA_ERROR_X (message)".
  runtime::Status check(CUresult result, const std::string &what) const;
};

} // namespace dsc::cuda

#endif // DSC_RUNTIME_CUDA_CUDADRIVER_H
