//===- KernelCompiler.h - CUDA kernels through NVRTC, with a cache ---------===//
//
// Compiles the kernel template codegen/kernels/<name>.cu (embedded into the
// compiler at build time together with the headers it includes: the numerics
// library and codegen/kernels/*.cuh) with NVRTC for a GPU architecture
// (default sm_90a) into a cubin plus PTX. No GPU is needed.
//
// Results are cached on disk, keyed by everything that changes the binary:
// the full source with every embedded header, the options (defines, arch),
// the NVRTC version. Entries are published atomically (written to a temporary
// directory, then renamed into place), so concurrent dsc-compile runs share
// one cache safely. The cache directory is $DSC_KERNEL_CACHE, else
// $XDG_CACHE_HOME/dsc/kernels, else ~/.cache/dsc/kernels; an unusable cache is
// not an error (the kernel is compiled anyway).
// A compile error returns the NVRTC log in the Status message.
//===----------------------------------------------------------------------===//
#ifndef DSC_CODEGEN_KERNELCOMPILER_H
#define DSC_CODEGEN_KERNELCOMPILER_H

#include "dsc/runtime/Status.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace dsc::codegen {

struct KernelCompileOptions {
  std::string arch = "sm_90a";
  /// -D NAME=VALUE specialisation constants.
  std::vector<std::pair<std::string, std::string>> defines;
  /// Overrides the cache directory ("" = the default above).
  std::string cacheDir;
  bool useCache = true;
};

struct CompiledKernel {
  std::vector<uint8_t> cubin;
  std::string ptx;
  std::string log;        ///< NVRTC's log (warnings)
  bool fromCache = false;
  std::string cacheKey;   ///< hex digest of the key
};

/// True if codegen/kernels/<name>.cu exists (embedded).
bool hasKernelSource(const std::string &name);
/// Names of all embedded kernel templates.
std::vector<std::string> kernelSourceNames();

runtime::Expected<CompiledKernel> compileKernel(const std::string &name,
                                                const KernelCompileOptions &options = {});

/// NVRTC's version as "major.minor" ("" if NVRTC cannot be loaded).
std::string nvrtcVersion();

} // namespace dsc::codegen

#endif // DSC_CODEGEN_KERNELCOMPILER_H
