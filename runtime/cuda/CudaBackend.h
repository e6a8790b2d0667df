//===- CudaBackend.h - Making the CUDA backend on a given driver table ------===//
//
// What: createCudaBackendOn makes the CUDA backend (CudaBackend.cpp) on a
// driver table the caller provides; runtime::createCudaBackend is the same
// on the process's libcuda (CudaDriver::get()).
// Why: GPU-free tests run the backend's bookkeeping (sessions, arenas,
// graphs, ownership) on a fake driver table (test/unit/cuda/backend).
// Invariants: `driver` outlives the backend and every object it made.
//===----------------------------------------------------------------------===//
#ifndef DSC_RUNTIME_CUDA_CUDABACKEND_H
#define DSC_RUNTIME_CUDA_CUDABACKEND_H

#include "dsc/runtime/Backend.h"
#include "runtime/cuda/CudaDriver.h"

#include <memory>

namespace dsc::cuda {

runtime::Expected<std::unique_ptr<runtime::Backend>>
createCudaBackendOn(const CudaDriver &driver, const runtime::CudaOptions &options = {});

} // namespace dsc::cuda

#endif // DSC_RUNTIME_CUDA_CUDABACKEND_H
