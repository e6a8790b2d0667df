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

} // namespace dsc::cuda::hal
