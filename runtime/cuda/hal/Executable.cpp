//===- Executable.cpp - One loaded CUDA module ------------------------------===//
#include "runtime/cuda/hal/Executable.h"

#include "runtime/cuda/hal/ReleaseLog.h"

namespace dsc::cuda::hal {

runtime::Expected<Executable> Executable::load(const CudaDriver &driver, const void *image,
                                               std::string name) {
  if (!image)
    return runtime::failedPrecondition("module '" + name + "' has no image");
  CUmodule module = nullptr;
  if (runtime::Status s = driver.check(driver.cuModuleLoadData(&module, image),
                                       "cuModuleLoadData(" + name + ")");
      !s)
    return s;
  Executable executable;
  executable.driver_ = &driver;
  executable.module_ = module;
  executable.name_ = std::move(name);
  CUdeviceptr mark = 0;
  size_t markBytes = 0; // absent in modules compiled before the prologue: not an error
  executable.waitsForPredecessor_ =
      driver.cuModuleGetGlobal(&mark, &markBytes, module, "dsc_kernel_prologue") == CUDA_SUCCESS;
  return executable;
}

Executable &Executable::operator=(Executable &&other) noexcept {
  if (this == &other)
    return *this;
  reset();
  driver_ = other.driver_;
  module_ = other.module_;
  name_ = std::move(other.name_);
  waitsForPredecessor_ = other.waitsForPredecessor_;
  functions_ = std::move(other.functions_);
  other.module_ = nullptr;
  other.functions_.clear();
  return *this;
}

void Executable::reset() {
  if (module_ && driver_)
    logReleaseFailure(*driver_, driver_->cuModuleUnload(module_), "cuModuleUnload");
  module_ = nullptr;
  functions_.clear();
}

runtime::Expected<CUfunction> Executable::function(const std::string &entry) {
  if (auto it = functions_.find(entry); it != functions_.end())
    return it->second;
  if (!module_)
    return runtime::failedPrecondition("entry '" + entry + "': the module is not loaded");
  CUfunction fn = nullptr;
  if (runtime::Status s = driver_->check(driver_->cuModuleGetFunction(&fn, module_, entry.c_str()),
                                         "cuModuleGetFunction(" + entry + ")");
      !s)
    return s;
  functions_.emplace(entry, fn);
  return fn;
}

runtime::Status launchKernel(const CudaDriver &d, CUfunction fn, const LaunchShape &shape,
                             CUstream stream, void **args, bool dependent,
                             const std::string &entry) {
  if (shape.sharedBytes > 48 * 1024) // beyond the default dynamic shared memory: opt in
    if (runtime::Status s = d.check(
            d.cuFuncSetAttribute(fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                 int(shape.sharedBytes)),
            "cuFuncSetAttribute(" + entry + ", dynamic shared memory)");
        !s)
      return s;
  CUlaunchAttribute programmatic{};
  programmatic.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
  programmatic.value.programmaticStreamSerializationAllowed = 1;
  CUlaunchConfig config{};
  config.gridDimX = shape.grid[0];
  config.gridDimY = shape.grid[1];
  config.gridDimZ = shape.grid[2];
  config.blockDimX = shape.block[0];
  config.blockDimY = shape.block[1];
  config.blockDimZ = shape.block[2];
  config.sharedMemBytes = unsigned(shape.sharedBytes);
  config.hStream = stream;
  config.attrs = dependent ? &programmatic : nullptr;
  config.numAttrs = dependent ? 1 : 0;
  return d.check(d.cuLaunchKernelEx(&config, fn, args, nullptr),
                 "cuLaunchKernelEx(" + entry + (dependent ? ", dependent launch)" : ")"));
}

} // namespace dsc::cuda::hal
