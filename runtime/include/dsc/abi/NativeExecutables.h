//===- NativeExecutables.h - The native executables as a table -------------===//
//
// What: NativeExecutables.def as a constexpr table (name, group, codegen
// template, step pattern) for the compiler (ds-select-executables), codegen
// (the module an executable's fusion loads) and the runtime (plan checks).
// The CUDA host functions are bound in runtime/cuda/CudaBackend.cpp.
//===----------------------------------------------------------------------===//
#ifndef DSC_ABI_NATIVEEXECUTABLES_H
#define DSC_ABI_NATIVEEXECUTABLES_H

#include <string_view>

namespace dsc::abi {

struct NativeExecutableInfo {
  const char *name;         ///< Fusion::executable
  const char *group;        ///< the ds.fused `kernel` it runs
  const char *templateName; ///< codegen/kernels/<templateName>.cu
  const char *steps;        ///< step pattern (NativeExecutables.def)
};

inline constexpr NativeExecutableInfo kNativeExecutables[] = {
#define DSC_NATIVE_EXECUTABLE(Name, Group, Template, Steps, HostFn) {Name, Group, Template, Steps},
#include "dsc/abi/NativeExecutables.def"
};

/// The executable called `name`, or null.
inline const NativeExecutableInfo *findNativeExecutable(std::string_view name) {
  for (const NativeExecutableInfo &e : kNativeExecutables)
    if (name == e.name)
      return &e;
  return nullptr;
}

} // namespace dsc::abi

#endif // DSC_ABI_NATIVEEXECUTABLES_H
