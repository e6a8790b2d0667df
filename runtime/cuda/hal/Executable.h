//===- Executable.h - One loaded CUDA module and its entry points ----------===//
//
// What: load() loads one module image (a plan module's cubin,
// cuModuleLoadData); function(entry) looks an entry point up by name once
// and caches it; the destructor unloads the module (a failure is logged
// once, ReleaseLog.h). waitsForPredecessor() says whether the module holds
// codegen/kernels/common.cuh's `dsc_kernel_prologue` mark: its entries then
// begin with DSC_KERNEL_PROLOGUE and may be launched as programmatic
// dependent launches (CudaOptions::dependentLaunch).
//
// Why: a plan has one module per kernel template (Plan::modules); the
// backend loads each on its first launch and keeps it for the Engine's
// lifetime, indexed by the module's index in the plan.
//
// launchKernel: one launch of an entry (the one place that opts a kernel
// into more than 48 KiB of dynamic shared memory and into a programmatic
// dependent launch), for the backend and the kernel tools alike.
//
// Invariants: move-only; the CUfunctions returned stay valid while the
// Executable lives; an unknown entry is an error naming it and the module.
// Not thread-safe: the owner guards it.
//===----------------------------------------------------------------------===//
#ifndef DSC_RUNTIME_CUDA_HAL_EXECUTABLE_H
#define DSC_RUNTIME_CUDA_HAL_EXECUTABLE_H

#include "runtime/cuda/CudaDriver.h"

#include <map>
#include <string>

namespace dsc::cuda::hal {

class Executable {
public:
  Executable() = default;
  /// `name` names the module in errors (the plan's template name).
  static runtime::Expected<Executable> load(const CudaDriver &driver, const void *image,
                                            std::string name);
  Executable(const Executable &) = delete;
  Executable &operator=(const Executable &) = delete;
  Executable(Executable &&other) noexcept { *this = std::move(other); }
  Executable &operator=(Executable &&other) noexcept;
  ~Executable() { reset(); }

  /// Entry point `entry` (looked up on first use, then cached).
  runtime::Expected<CUfunction> function(const std::string &entry);

  const std::string &name() const { return name_; }
  /// The module's entries wait for the preceding grid (see the header).
  bool waitsForPredecessor() const { return waitsForPredecessor_; }
  explicit operator bool() const { return module_ != nullptr; }

private:
  void reset();
  const CudaDriver *driver_ = nullptr;
  CUmodule module_ = nullptr;
  std::string name_;
  bool waitsForPredecessor_ = false;
  std::map<std::string, CUfunction, std::less<>> functions_;
};

/// Grid and block of a launch (x, y, z).
struct LaunchShape {
  unsigned grid[3] = {1, 1, 1}, block[3] = {1, 1, 1};
  size_t sharedBytes = 0;
};
/// Launches `fn` on `stream` with `args`: dynamic shared memory above the
/// default 48 KiB is opted into first; `dependent`: a programmatic dependent
/// launch (sm_90 PDL: the kernel may be scheduled while its predecessor
/// still runs, and common.cuh's DSC_KERNEL_PROLOGUE waits for it; in a
/// capture, a programmatic graph edge). Errors name `entry`.
runtime::Status launchKernel(const CudaDriver &driver, CUfunction fn, const LaunchShape &shape,
                             CUstream stream, void **args, bool dependent,
                             const std::string &entry);

} // namespace dsc::cuda::hal

#endif // DSC_RUNTIME_CUDA_HAL_EXECUTABLE_H
