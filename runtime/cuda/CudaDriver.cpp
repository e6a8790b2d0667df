//===- CudaDriver.cpp - dlopen libcuda.so.1 and resolve the driver API -----===//
#include "runtime/cuda/CudaDriver.h"

#include <dlfcn.h>

#include <mutex>
#include <string>

namespace dsc::cuda {

runtime::Expected<const CudaDriver *> CudaDriver::get() {
  static CudaDriver driver;
  static runtime::Status status = runtime::unavailable("no CUDA driver");
  static std::once_flag once;
  std::call_once(once, [] {
    void *handle = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
      status = runtime::unavailable("no CUDA driver (libcuda.so.1 could not be loaded)");
      return;
    }
    using GetProc = CUresult (*)(const char *, void **, int, cuuint64_t,
                                 CUdriverProcAddressQueryResult *);
    auto getProc = reinterpret_cast<GetProc>(dlsym(handle, "cuGetProcAddress_v2"));
    if (!getProc) {
      status = runtime::unavailable("no CUDA driver (cuGetProcAddress_v2 missing)");
      return;
    }
    CUdriverProcAddressQueryResult query;
    // cuGetProcAddress returns the newest ABI of a name for the version asked
    // for. The function types above are the header's prototypes; where CUDA 13
    // added a new ABI without renaming the header's symbol (cuCtxSynchronize_v2
    // takes a context), ask for the 12.0 one so the types agree.
    auto versionFor = [](const char *name) {
      return std::string(name) == "cuCtxSynchronize" ? 12000 : CUDA_VERSION;
    };
#define DSC_LOAD(f)                                                                            \
  if (getProc(#f, reinterpret_cast<void **>(&driver.f), versionFor(#f),                        \
              CU_GET_PROC_ADDRESS_DEFAULT, &query) != CUDA_SUCCESS ||                          \
      !driver.f) {                                                                             \
    status = runtime::unavailable("CUDA driver lacks " #f);                                    \
    return;                                                                                    \
  }
    DSC_CUDA_DRIVER_FUNCTIONS(DSC_LOAD)
#undef DSC_LOAD
    if (CUresult r = driver.cuInit(0); r != CUDA_SUCCESS) {
      status = driver.check(r, "cuInit");
      return;
    }
    status = runtime::Status::ok();
  });
  if (!status)
    return status;
  return &driver;
}

runtime::Status CudaDriver::check(CUresult result, const std::string &what) const {
  if (result == CUDA_SUCCESS)
    return runtime::Status::ok();
  const char *name = nullptr, *message = nullptr;
  if (cuGetErrorName)
    cuGetErrorName(result, &name);
  if (cuGetErrorString)
    cuGetErrorString(result, &message);
  return runtime::internalError(what + ": " + (name ? name : "CUDA error " + std::to_string(int(result))) +
                                (message ? std::string(" (") + message + ")" : ""));
}

} // namespace dsc::cuda
