//===- KernelCompiler.h - CUDA kernels through NVRTC, with a cache ---------===//
//
// Compiles the kernel template codegen/kernels/<name>.cu (embedded into the
// compiler at build time together with the headers it includes: the numerics
// library, the kernel ABI dsc/abi/*.h and codegen/kernels/*.cuh) with NVRTC
// for a GPU architecture (default sm_90a) into a cubin plus PTX. No GPU is
// needed.
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

#include <cstddef>
#include <cstdint>
#include <functional>
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

/// Resource usage of one entry function, from ptxas' -v lines in the log.
struct KernelEntryResources {
  std::string entry;
  int registers = 0;
  int spillStoreBytes = 0, spillLoadBytes = 0, stackFrameBytes = 0, sharedBytes = 0;
};

/// Parses the "ptxas info" lines of an NVRTC log compiled with
/// --ptxas-options=-v: one result per "Compiling entry function 'X'", in log
/// order. Non-entry (device) functions are skipped. Empty for a PTX-only
/// target (compute_XX: no ptxas run).
std::vector<KernelEntryResources> parsePtxasResources(const std::string &log);

struct CompiledKernel {
  std::vector<uint8_t> cubin;
  std::string ptx;
  std::string log;        ///< NVRTC's log (warnings, ptxas -v resource lines)
  std::vector<KernelEntryResources> entries; ///< parsed from `log` (cache hits too)
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

/// Compiles `source` (not an embedded template) as kernel `name`, with the
/// embedded headers available and the same options, cache and errors as
/// compileKernel. For tests and experiments.
runtime::Expected<CompiledKernel> compileSource(const std::string &name,
                                                const std::string &source,
                                                const KernelCompileOptions &options = {});

/// The cache directory compileKernel uses when options.cacheDir is empty:
/// $DSC_KERNEL_CACHE, $XDG_CACHE_HOME/dsc/kernels or ~/.cache/dsc/kernels
/// ("" if none can be formed; then nothing is cached).
std::string defaultKernelCacheDir();

/// Called after each kernel of compileKernels: (done, total, kernel name).
using CompileProgress = std::function<void(size_t, size_t, const std::string &)>;

/// A CompileProgress that redraws "compiling kernels: 12/30" on stderr,
/// ending with a newline after the last kernel. Prints only if stderr is a
/// TTY, unless `always`.
CompileProgress stderrCompileProgress(bool always = false);

/// Compiles several templates with the same options, in order; stops at the
/// first failure (whose message names the kernel).
runtime::Expected<std::vector<CompiledKernel>>
compileKernels(const std::vector<std::string> &names, const KernelCompileOptions &options = {},
               const CompileProgress &progress = {});

} // namespace dsc::codegen

#endif // DSC_CODEGEN_KERNELCOMPILER_H
