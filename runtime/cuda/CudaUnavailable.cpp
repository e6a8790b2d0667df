//===- CudaUnavailable.cpp - The CUDA backend in a build without CUDA headers ===//
#include "dsc/runtime/Backend.h"

dsc::runtime::Expected<std::unique_ptr<dsc::runtime::Backend>> dsc::runtime::createCudaBackend(const CudaOptions &) {
  return dsc::runtime::unavailable("this dsc was built without the CUDA toolkit's headers");
}

dsc::runtime::Expected<dsc::runtime::DeviceCopyBandwidth>
dsc::runtime::measureDeviceCopyBandwidth(size_t, int) {
  return dsc::runtime::unavailable("this dsc was built without the CUDA toolkit's headers");
}
