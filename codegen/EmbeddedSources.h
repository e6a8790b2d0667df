//===- EmbeddedSources.h - Kernel sources compiled into the binary --------===//
//
// Generated at build time by EmbedSources.cmake from codegen/kernels/*.cu,
// codegen/kernels/*.cuh, runtime/include/dsc/abi/*.h and
// numerics/include/dsc/numerics/*.h. Each file is named as it is included
// ("codegen/kernels/common.cuh", "dsc/abi/KernelParams.h",
// "dsc/numerics/Quantize.h"); data is NUL-terminated, size excludes the NUL.
// Internal to dsc_codegen.
//===----------------------------------------------------------------------===//
#ifndef DSC_CODEGEN_EMBEDDEDSOURCES_H
#define DSC_CODEGEN_EMBEDDEDSOURCES_H

#include "codegen/EmbeddedFile.h"

DSC_DECLARE_EMBEDDED_FILES(dsc::codegen::embedded)

#endif // DSC_CODEGEN_EMBEDDEDSOURCES_H
