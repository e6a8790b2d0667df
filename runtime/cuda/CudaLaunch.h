//===- CudaLaunch.h - One plan launch bound to a CudaSession's device memory -===//
//
// What: BoundLaunch is the CudaLaunchContext the adapters see (CudaAdapter.h):
// prepare() binds a runtime::LaunchContext to the device — the call state
// (the program's, or the CED replay's for a replayed launch), the pending
// zeroing of the call's inputs and of the arena values the launch writes
// first, and every input and output as a CudaTensor at its device copy
// (found by TensorRef: the slot's weight, state or arena range). Its
// launchEntryIn, scratch, constant and copy go to the session and the
// Engine's CudaEngineState.
//
// Why: keeps the adapter-facing API unchanged while the ownership behind it
// moved from maps keyed by host tensors and launch addresses to the Session
// (scratch per program and launch index) and the Engine (modules,
// constants, weights).
//
// Invariants: lives for one launch (or one native executable's launch),
// with engine.mutex held and the context current; allocates only outside a
// capture.
//===----------------------------------------------------------------------===//
#ifndef DSC_RUNTIME_CUDA_CUDALAUNCH_H
#define DSC_RUNTIME_CUDA_CUDALAUNCH_H

#include "runtime/cuda/CudaSession.h"

namespace dsc::cuda {

class BoundLaunch final : public CudaLaunchContext {
public:
  BoundLaunch(CudaSession &session, runtime::LaunchContext &c);

  /// Call state, zeroing and tensors of the launch (see the header).
  Status prepare();

  Status launchEntryIn(int64_t module, const char *entry, Dim3 grid, Dim3 block,
                       size_t sharedBytes, std::vector<void *> args) override;
  runtime::Expected<CUdeviceptr> scratch(size_t bytes) override;
  runtime::Expected<CUdeviceptr> constant(const char *name, const void *data,
                                          size_t bytes) override;
  Status copy(CUdeviceptr dst, CUdeviceptr src, size_t bytes) override;

private:
  Status bind(const runtime::HostTensor &host, const runtime::ValueSlot *slot, CudaTensor &device);

  CudaSession &session_;
  CudaEngineState &engine_;
  runtime::LaunchContext &source_;
  size_t programIndex_, launchIndex_;
  std::vector<CudaTensor> inputTensors_, outputTensors_;
  size_t scratchCount_ = 0;
};

} // namespace dsc::cuda

#endif // DSC_RUNTIME_CUDA_CUDALAUNCH_H
