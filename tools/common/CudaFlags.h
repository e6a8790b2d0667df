//===- CudaFlags.h - The CUDA backend's switches on the tools' command lines ===//
//
// What: dsc-run and dsc-bench fill EngineOptions::cuda (CudaOptions) from
//   --cuda-graphs on|off|log   decode as a CUDA graph; log: say when one is
//                              captured and how often it was replayed
//   --cuda-sync                synchronise after every launch (no graphs)
//   --cuda-topk radix|quadratic  the top-k / candidate selection kernels
//   --cuda-kernels fast|cpu-order|cpu-order=FAMILY,...  the GEMV/reduction
//                              kernels (cpu-order: the first-cut kernels in the
//                              CPU's summation order, for every family or for
//                              the named ones: runtime::kKernelFamilyNames)
//   --cuda-attention single|split|mqa|tc  the fast sparse attention
//                              (CudaOptions::attention): one walk per (row,
//                              head), split-KV, split-KV with the MQA logits
//                              and PV kernels, or with the tensor-core kernels
//                              (the default)
//   --cuda-moe-mma f16|e4m3    the MoE up/down tiles' mma (CudaOptions::
//                              moeE4m3Mma; with --cuda-gemv tiles)
//   --cuda-gemv lanes|slots|tiles|wg|rows  the FP8/FP4 GEMV family:
//                              lane-block tiles, block-slot tiles, gemv.cuh's
//                              16-row tiles, the warpgroup (wgmma) tiles or the
//                              row-lane tiles (row_gemv.cuh, the default)
//                              (CudaOptions::gemv)
//   --cuda-pdl on|off          every kernel as a programmatic dependent launch
//                              (CudaOptions::dependentLaunch)
//   --cuda-streams 1..8        the streams a captured decode call's steps go
//                              to (graph branches; CudaOptions::streams)
//   --cuda-mhc one|steps       a decode row's mhc_entry group as one kernel
//                              or as its steps (CudaOptions::mhcOneLaunch)
//   --cuda-arena private|shared  a small call's (decode's) device values on
//                              bytes of their own or sharing them
//                              (CudaOptions::privateSmallArenas)
//   --cuda-capture-order program|heir  the order a branched decode capture
//                              issues its steps in (CudaOptions::
//                              captureHeirFirst)
// and, where a flag is not given, from the environment variables the
// runtime read before: DSC_CUDA_GRAPHS=0 (off) / =2 (log), DSC_CUDA_SYNC
// (anything but empty or 0), DSC_CUDA_TOPK_QUADRATIC=1; and
// EngineOptions::cpuThreads from --cpu-threads N, else DSC_CPU_THREADS.
// Why: the runtime library reads no environment variable (a service sets
// CudaOptions itself); the tools keep the old switches working.
// Invariants: a flag wins over its variable; an unknown flag value is a
// usage error naming the flag and the values it takes.
//===----------------------------------------------------------------------===//
#ifndef DSC_TOOLS_COMMON_CUDAFLAGS_H
#define DSC_TOOLS_COMMON_CUDAFLAGS_H

#include "dsc/runtime/Engine.h"
#include "tools/common/CommandLine.h"

#include <cstdlib>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

namespace dsc::tools {

/// The valued options and the flags to add to parseCommandLine's lists.
inline const std::vector<std::string> kCudaValuedOptions = {"--cuda-graphs", "--cuda-topk",
                                                            "--cuda-kernels", "--cuda-attention",
                                                            "--cuda-moe-mma", "--cuda-gemv",
                                                            "--cuda-pdl", "--cuda-streams",
                                                            "--cuda-mhc",
                                                            "--cuda-capture-order",
                                                            "--cuda-arena",
                                                            "--cpu-threads"};
inline const std::vector<std::string> kCudaFlags = {"--cuda-sync"};
/// One line for a usage text.
inline constexpr const char *kCudaUsage =
    "[--cuda-graphs on|off|log] [--cuda-sync] [--cuda-topk radix|quadratic]\n"
    "                 [--cuda-kernels fast|cpu-order[=FAMILY,...]]\n"
    "                 [--cuda-attention single|split|mqa|tc] [--cuda-moe-mma f16|e4m3]\n"
    "                 [--cuda-gemv lanes|slots|tiles|wg|rows] [--cuda-pdl on|off] [--cuda-streams 1..8]\n"
    "                 [--cuda-mhc one|steps] [--cuda-capture-order program|heir]\n"
    "                 [--cuda-arena private|shared] [--cpu-threads N]";

/// The DSC_CUDA_* variables, as the runtime used to read them.
inline void applyCudaEnvironment(runtime::CudaOptions &options) {
  if (const char *sync = std::getenv("DSC_CUDA_SYNC"); sync && *sync && *sync != '0')
    options.syncEachLaunch = true;
  if (const char *graphs = std::getenv("DSC_CUDA_GRAPHS"); graphs && *graphs == '0')
    options.graphs = false;
  else if (graphs && *graphs == '2')
    options.logGraphs = true;
  if (const char *topk = std::getenv("DSC_CUDA_TOPK_QUADRATIC"); topk && std::string(topk) == "1")
    options.quadraticTopk = true;
}

/// --cuda-kernels' value as CudaOptions::cpuOrderFamilies: fast (none),
/// cpu-order (all) or cpu-order=NAME,NAME (kKernelFamilyNames); sets `error`.
inline uint32_t parseKernelFamilies(const std::string &value, std::string &error) {
  if (value == "fast")
    return 0;
  if (value == "cpu-order")
    return runtime::kAllKernelFamilies;
  const std::string prefix = "cpu-order=";
  std::string names;
  for (const runtime::KernelFamilyName &f : runtime::kKernelFamilyNames)
    names += std::string(names.empty() ? "" : ", ") + f.name;
  if (value.rfind(prefix, 0) != 0) {
    error = "--cuda-kernels takes fast, cpu-order or cpu-order=FAMILY,... (" + names + "), got '" +
            value + "'";
    return 0;
  }
  uint32_t mask = 0;
  size_t at = prefix.size();
  while (true) {
    const size_t comma = value.find(',', at);
    const std::string name = value.substr(at, comma == std::string::npos ? comma : comma - at);
    bool known = false;
    for (const runtime::KernelFamilyName &f : runtime::kKernelFamilyNames)
      if (name == f.name) {
        mask |= uint32_t(f.family);
        known = true;
      }
    if (!known) {
      error = "--cuda-kernels: unknown kernel family '" + name + "' (families: " + names + ")";
      return 0;
    }
    if (comma == std::string::npos)
      return mask;
    at = comma + 1;
  }
}

/// `flag`'s value as one of `choices` into `out` (unchanged when the flag is
/// absent); returns the usage error naming the flag, the values it takes
/// and the one given ("" if none). The one mapping of every enumerated flag.
template <typename T>
std::string applyChoice(const CommandLine &cl, const char *flag,
                        std::initializer_list<std::pair<const char *, T>> choices, T &out) {
  auto it = cl.options.find(flag);
  if (it == cl.options.end())
    return "";
  std::string names;
  size_t i = 0;
  for (const auto &[name, value] : choices) {
    if (it->second == name) {
      out = value;
      return "";
    }
    names += (i == 0 ? "" : i + 1 == choices.size() ? " or " : ", ") + std::string(name);
    ++i;
  }
  return std::string(flag) + " takes " + names + ", got '" + it->second + "'";
}

/// The environment, then the flags of `cl`; returns a usage error ("" if none).
inline std::string applyCudaFlags(const CommandLine &cl, runtime::CudaOptions &options) {
  applyCudaEnvironment(options);
  if (cl.flags.count("--cuda-sync"))
    options.syncEachLaunch = true;
  if (auto it = cl.options.find("--cuda-graphs"); it != cl.options.end()) {
    if (it->second == "on") {
      options.graphs = true;
      options.logGraphs = false;
    } else if (it->second == "off") {
      options.graphs = false;
      options.logGraphs = false;
    } else if (it->second == "log") {
      options.graphs = true;
      options.logGraphs = true;
    } else {
      return "--cuda-graphs takes on, off or log, got '" + it->second + "'";
    }
  }
  if (auto it = cl.options.find("--cuda-kernels"); it != cl.options.end()) {
    std::string error;
    options.cpuOrderFamilies = parseKernelFamilies(it->second, error);
    if (!error.empty())
      return error;
  }
  using dsc::runtime::AttentionKernels;
  using dsc::runtime::GemvKernels;
  for (const std::string &error :
       {applyChoice<AttentionKernels>(cl, "--cuda-attention",
                                      {{"single", AttentionKernels::Single},
                                       {"split", AttentionKernels::Split},
                                       {"mqa", AttentionKernels::Mqa},
                                       {"tc", AttentionKernels::TensorCore}},
                                      options.attention),
        applyChoice<bool>(cl, "--cuda-moe-mma", {{"f16", false}, {"e4m3", true}},
                          options.moeE4m3Mma),
        applyChoice<GemvKernels>(cl, "--cuda-gemv",
                                 {{"lanes", GemvKernels::Lanes},
                                  {"slots", GemvKernels::Slots},
                                  {"tiles", GemvKernels::Tiles},
                                  {"wg", GemvKernels::Warpgroups},
                                  {"rows", GemvKernels::Rows}},
                                 options.gemv),
        applyChoice<bool>(cl, "--cuda-pdl", {{"on", true}, {"off", false}},
                          options.dependentLaunch),
        applyChoice<bool>(cl, "--cuda-mhc", {{"one", true}, {"steps", false}},
                          options.mhcOneLaunch),
        applyChoice<bool>(cl, "--cuda-capture-order", {{"program", false}, {"heir", true}},
                          options.captureHeirFirst),
        applyChoice<bool>(cl, "--cuda-arena", {{"private", true}, {"shared", false}},
                          options.privateSmallArenas),
        applyChoice<int>(cl, "--cuda-streams",
                         {{"1", 1}, {"2", 2}, {"3", 3}, {"4", 4}, {"5", 5}, {"6", 6}, {"7", 7}, {"8", 8}},
                         options.streams),
        applyChoice<bool>(cl, "--cuda-topk", {{"radix", false}, {"quadratic", true}},
                          options.quadraticTopk)})
    if (!error.empty())
      return error;
  return "";
}

/// EngineOptions::cpuThreads: --cpu-threads N (N >= 1), else DSC_CPU_THREADS;
/// returns a usage error ("" if none).
inline std::string applyCpuFlags(const CommandLine &cl, runtime::EngineOptions &options) {
  std::string text, from;
  if (auto it = cl.options.find("--cpu-threads"); it != cl.options.end()) {
    text = it->second;
    from = "--cpu-threads";
  } else if (const char *env = std::getenv("DSC_CPU_THREADS"); env && *env) {
    text = env;
    from = "DSC_CPU_THREADS";
  } else {
    return "";
  }
  char *end = nullptr;
  const long long n = std::strtoll(text.c_str(), &end, 10);
  if (end == text.c_str() || *end != '\0' || n < 1 || n > 4096)
    return from + " takes a thread count in [1, 4096], got '" + text + "'";
  options.cpuThreads = n;
  return "";
}

/// `base` followed by `extra` (option lists for parseCommandLine).
inline std::vector<std::string> withOptions(std::vector<std::string> base,
                                            const std::vector<std::string> &extra) {
  base.insert(base.end(), extra.begin(), extra.end());
  return base;
}

} // namespace dsc::tools

#endif // DSC_TOOLS_COMMON_CUDAFLAGS_H
