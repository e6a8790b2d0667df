//===- CpuAdapter.h - From a plan launch to a CPU kernel call --------------===//
//
// The CPU backend maps each kernel name of the plan (docs/kernels.md) to an
// adapter: a function that reads the launch's constant parameters and
// tensors, checks what it relies on, and calls the math in kernels/. Adapters
// are registered per group (CpuAdapters*.cpp) in one table.
//===----------------------------------------------------------------------===//
#ifndef DSC_RUNTIME_CPU_CPUADAPTER_H
#define DSC_RUNTIME_CPU_CPUADAPTER_H

#include "dsc/runtime/Backend.h"

#include <functional>
#include <map>
#include <string>

namespace dsc::cpu {

using runtime::HostTensor;
using runtime::LaunchContext;
using runtime::Status;

using Adapter = std::function<Status(LaunchContext &)>;
using AdapterTable = std::map<std::string, Adapter>;

/// Parameter access with errors naming the kernel and key.
struct Params {
  const runtime::KernelSpec &spec;
  Status error;

  int64_t i(const std::string &key) {
    if (const auto *v = spec.find(key))
      if (const auto *x = std::get_if<int64_t>(v))
        return *x;
    fail(key, "an integer");
    return 0;
  }
  int64_t i(const std::string &key, int64_t fallback) {
    return spec.find(key) ? i(key) : fallback;
  }
  double f(const std::string &key) {
    if (const auto *v = spec.find(key)) {
      if (const auto *x = std::get_if<double>(v))
        return *x;
      if (const auto *x = std::get_if<int64_t>(v))
        return double(*x);
    }
    fail(key, "a number");
    return 0;
  }
  double f(const std::string &key, double fallback) { return spec.find(key) ? f(key) : fallback; }
  std::vector<int64_t> ints(const std::string &key) {
    if (const auto *v = spec.find(key))
      if (const auto *x = std::get_if<std::vector<int64_t>>(v))
        return *x;
    fail(key, "an integer array");
    return {};
  }
  std::string s(const std::string &key) {
    if (const auto *v = spec.find(key))
      if (const auto *x = std::get_if<std::string>(v))
        return *x;
    fail(key, "a string");
    return {};
  }
  bool has(const std::string &key) const { return spec.find(key) != nullptr; }

private:
  void fail(const std::string &key, const char *what) {
    if (error)
      error = runtime::invalidArgument("kernel '" + spec.name + "': parameter '" + key +
                                       "' must be " + what);
  }
};

/// Registers the adapters of each group.
void registerBasicAdapters(AdapterTable &table);     // embed, hc_*, concat, engram_hash, ...
void registerDenseAdapters(AdapterTable &table);     // linear, norms, MoE, Engram gate, head
void registerAttentionAdapters(AdapterTable &table); // RoPE, window, compressor, indexer, attention

} // namespace dsc::cpu

#endif // DSC_RUNTIME_CPU_CPUADAPTER_H
