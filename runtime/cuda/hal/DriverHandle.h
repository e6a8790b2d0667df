//===- DriverHandle.h - One owned CUDA driver handle -----------------------===//
//
// What: DriverHandle<Traits> owns one driver handle (Traits::Handle: a
// CUstream, CUevent, CUgraphExec, ...) together with the driver that made it,
// and destroys it through Traits::destroy when it is reset, reassigned or
// destroyed (a failed destroy is logged once, ReleaseLog.h). The hal classes
// that own a single handle (Stream, Event, Graph) hold one instead of
// writing their own move and release code.
//
// Invariants: move-only; a moved-from handle owns nothing; reset() of an
// empty handle does nothing.
//===----------------------------------------------------------------------===//
#ifndef DSC_RUNTIME_CUDA_HAL_DRIVERHANDLE_H
#define DSC_RUNTIME_CUDA_HAL_DRIVERHANDLE_H

#include "runtime/cuda/hal/ReleaseLog.h"

#include <utility>

namespace dsc::cuda::hal {

/// Traits: `using Handle = ...;`, `static CUresult destroy(const CudaDriver &,
/// Handle)` and `static constexpr const char *kDestroy` (the call's name).
template <typename Traits> class DriverHandle {
public:
  using Handle = typename Traits::Handle;
  DriverHandle() = default;
  DriverHandle(const CudaDriver &driver, Handle handle) : driver_(&driver), handle_(handle) {}
  DriverHandle(const DriverHandle &) = delete;
  DriverHandle &operator=(const DriverHandle &) = delete;
  DriverHandle(DriverHandle &&other) noexcept
      : driver_(other.driver_), handle_(std::exchange(other.handle_, Handle{})) {}
  DriverHandle &operator=(DriverHandle &&other) noexcept {
    if (this != &other) {
      reset();
      driver_ = other.driver_;
      handle_ = std::exchange(other.handle_, Handle{});
    }
    return *this;
  }
  ~DriverHandle() { reset(); }

  void reset() {
    if (handle_ && driver_)
      logReleaseFailure(*driver_, Traits::destroy(*driver_, handle_), Traits::kDestroy);
    handle_ = Handle{};
  }
  Handle get() const { return handle_; }
  const CudaDriver *driver() const { return driver_; }
  explicit operator bool() const { return handle_ != Handle{}; }

private:
  const CudaDriver *driver_ = nullptr;
  Handle handle_{};
};

/// A handle made by create(&handle) (a driver call named `what`), owned.
template <typename Traits, typename Create>
runtime::Expected<DriverHandle<Traits>> makeHandle(const CudaDriver &driver, const char *what,
                                                   Create create) {
  typename Traits::Handle handle{};
  if (runtime::Status s = driver.check(create(&handle), what); !s)
    return s;
  return DriverHandle<Traits>(driver, handle);
}

struct StreamTraits {
  using Handle = CUstream;
  static CUresult destroy(const CudaDriver &d, CUstream s) { return d.cuStreamDestroy(s); }
  static constexpr const char *kDestroy = "cuStreamDestroy";
};
struct EventTraits {
  using Handle = CUevent;
  static CUresult destroy(const CudaDriver &d, CUevent e) { return d.cuEventDestroy(e); }
  static constexpr const char *kDestroy = "cuEventDestroy";
};
struct GraphExecTraits {
  using Handle = CUgraphExec;
  static CUresult destroy(const CudaDriver &d, CUgraphExec g) { return d.cuGraphExecDestroy(g); }
  static constexpr const char *kDestroy = "cuGraphExecDestroy";
};

} // namespace dsc::cuda::hal

#endif // DSC_RUNTIME_CUDA_HAL_DRIVERHANDLE_H
