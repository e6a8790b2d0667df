//===- NativeExecutables.cpp - Native executable name -> host function -----===//
//
// The CUDA backend's binding of NativeExecutables.def: each executable's name
// to its host function (runtime/cuda/executables/<Name>.cpp). The one place a
// native executable is bound; the backend looks fusions' executables up here.
//===----------------------------------------------------------------------===//
#include "runtime/cuda/CudaAdapter.h"

namespace dsc::cuda {

NativeHostFn findNativeHostFn(std::string_view name) {
#define DSC_NATIVE_EXECUTABLE(Name, Group, Template, Steps, HostFn)                             \
  if (name == Name)                                                                             \
    return &HostFn;
#include "dsc/abi/NativeExecutables.def"
  return nullptr;
}

} // namespace dsc::cuda
