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

/// The constants of an engram_hash launch, checked against the plan's token
/// map (shared by the CPU and CUDA adapters).
struct EngramHashParams {
  std::vector<int64_t> layers, multipliers, primes, offsets;
  int64_t maxNgram = 0, heads = 0;
  int64_t padId = 0; ///< the pad token's compressed id
};
inline runtime::Expected<EngramHashParams>
readEngramHashParams(const runtime::KernelSpec &kernel, const runtime::PlanModelFacts &model) {
  Params p{kernel, Status::ok()};
  EngramHashParams e;
  e.layers = p.ints("layers");
  e.multipliers = p.ints("multipliers");
  e.primes = p.ints("primes");
  e.offsets = p.ints("offsets");
  e.maxNgram = p.i("max_ngram");
  e.heads = p.i("heads");
  int64_t padToken = p.i("pad_id");
  if (!p.error)
    return p.error;
  const std::vector<int64_t> &map = model.engramTokenMap;
  if (map.empty())
    return runtime::failedPrecondition("engram_hash: the plan carries no Engram token map");
  if (padToken < 0 || padToken >= int64_t(map.size()))
    return runtime::invalidArgument("engram_hash: pad token " + std::to_string(padToken) +
                                    " is outside the token map");
  int64_t nLayers = int64_t(e.layers.size()), cols = (e.maxNgram - 1) * e.heads;
  if (e.maxNgram < 1 || e.heads < 1 || int64_t(e.multipliers.size()) != nLayers * e.maxNgram ||
      int64_t(e.primes.size()) != nLayers * cols || int64_t(e.offsets.size()) != nLayers * cols)
    return runtime::invalidArgument("engram_hash: multipliers/primes/offsets do not match "
                                    "layers x max_ngram x heads");
  e.padId = map[padToken];
  return e;
}

/// Registers the adapters of each group.
void registerBasicAdapters(AdapterTable &table);     // embed, hc_*, concat, engram_hash, ...
void registerDenseAdapters(AdapterTable &table);     // linear, norms, MoE, Engram gate, head
void registerAttentionAdapters(AdapterTable &table); // RoPE, window, compressor, indexer, attention

} // namespace dsc::cpu

#endif // DSC_RUNTIME_CPU_CPUADAPTER_H
