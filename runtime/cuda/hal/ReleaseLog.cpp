//===- ReleaseLog.cpp - One stderr line for a failed release ----------------===//
#include "runtime/cuda/hal/ReleaseLog.h"

#include <atomic>
#include <cstdio>

namespace dsc::cuda::hal {

void logReleaseFailure(const CudaDriver &driver, CUresult result, const char *what) {
  static std::atomic<bool> logged{false};
  if (result == CUDA_SUCCESS || logged.exchange(true))
    return;
  const char *text = nullptr;
  if (driver.cuGetErrorString)
    driver.cuGetErrorString(result, &text);
  std::fprintf(stderr, "dsc: warning: %s failed while releasing CUDA resources: %s (%d)\n", what,
               text ? text : "unknown error", int(result));
}

} // namespace dsc::cuda::hal
