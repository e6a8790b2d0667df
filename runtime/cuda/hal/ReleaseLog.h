//===- ReleaseLog.h - Reporting a driver call that failed while releasing ---===//
//
// What: logReleaseFailure prints "dsc: warning: <what> failed while releasing
// CUDA resources: <message> (<code>)" on stderr, once per process.
//
// Why: destructors (and other paths that free device resources) cannot
// return a Status and must never throw; a failed cuMemFree or
// cuModuleUnload is worth one line, not one per object, because the first
// failure (a lost context, a faulted device) usually makes every later one
// fail too.
//
// Invariants: a successful result prints nothing; the first failure prints
// one line and later ones nothing; it is safe from any thread.
//===----------------------------------------------------------------------===//
#ifndef DSC_RUNTIME_CUDA_HAL_RELEASELOG_H
#define DSC_RUNTIME_CUDA_HAL_RELEASELOG_H

#include "runtime/cuda/CudaDriver.h"

namespace dsc::cuda::hal {

void logReleaseFailure(const CudaDriver &driver, CUresult result, const char *what);

} // namespace dsc::cuda::hal

#endif // DSC_RUNTIME_CUDA_HAL_RELEASELOG_H
