//===- CpuAdapter.h - From a plan launch to a CPU kernel call --------------===//
//
// The CPU backend maps each kernel of the plan (docs/kernels.md) to an
// adapter: a function that receives the launch's typed parameters
// (dsc/abi/KernelParams.h) and tensors, checks what it relies on, and calls
// the math in kernels/. Adapters are registered per group (CpuAdapters*.cpp)
// in one table, keyed by the parameter struct's kernel name.
//===----------------------------------------------------------------------===//
#ifndef DSC_RUNTIME_CPU_CPUADAPTER_H
#define DSC_RUNTIME_CPU_CPUADAPTER_H

#include "dsc/runtime/Backend.h"
#include "dsc/runtime/EngramHashTables.h"
#include "dsc/runtime/TypedAdapter.h"

#include <functional>
#include <map>
#include <string>

namespace dsc::cpu {

using runtime::HostTensor;
using runtime::LaunchContext;
using runtime::Status;
namespace abi = dsc::abi;

using Adapter = std::function<Status(LaunchContext &)>;
using AdapterTable = std::map<std::string, Adapter>;

/// Registers `fn` as the adapter of kernel T (keyed by T::kName): it gets
/// the launch's typed parameters.
template <typename T>
void add(AdapterTable &table, Status (*fn)(LaunchContext &, const T &)) {
  table[T::kName] = runtime::typedAdapter(fn);
}
/// The same for a kernel without parameters.
template <typename T> void add(AdapterTable &table, Status (*fn)(LaunchContext &)) {
  table[T::kName] = fn;
}

/// Registers the adapters of each group.
void registerBasicAdapters(AdapterTable &table);     // embed, hc_*, concat, engram_hash, ...
void registerDenseAdapters(AdapterTable &table);     // linear, norms, MoE, Engram gate, head
void registerAttentionAdapters(AdapterTable &table); // RoPE, window, compressor, indexer, attention

} // namespace dsc::cpu

#endif // DSC_RUNTIME_CPU_CPUADAPTER_H
