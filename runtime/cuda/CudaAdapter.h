//===- CudaAdapter.h - From a plan launch to a CUDA kernel launch ----------===//
//
// The CUDA backend keeps every value of a program on the device and maps each
// kernel of the plan (docs/kernels.md) to an adapter, the host side of the
// kernel: it gets the launch's typed parameters and device tensors, picks the
// grid, and launches entries of the kernel's module (compiled by
// codegen/ from codegen/kernels/<name>.cu into the plan's cubin). Entry points
// are `extern "C" __global__` functions named `dsc_<name>` (plus
// `dsc_<name>_<step>` for kernels launched in several steps).
//===----------------------------------------------------------------------===//
#ifndef DSC_RUNTIME_CUDA_CUDAADAPTER_H
#define DSC_RUNTIME_CUDA_CUDAADAPTER_H

#include "dsc/runtime/Backend.h"
#include "dsc/runtime/MemoryPlan.h"
#include "dsc/runtime/EngramHashTables.h"
#include "dsc/runtime/TypedAdapter.h"
#include "runtime/cuda/CudaDriver.h"

#include <functional>
#include <map>
#include <string>
#include <vector>

namespace dsc::cuda {

using runtime::Status;
namespace abi = dsc::abi;

/// A value on the device: row-major contiguous, sized for this call.
struct CudaTensor {
  CUdeviceptr ptr = 0;
  runtime::DType dtype = runtime::DType::U8;
  std::vector<int64_t> shape;
  int64_t numElements() const {
    int64_t n = 1;
    for (int64_t d : shape)
      n *= d;
    return n;
  }
  int64_t dim(size_t i) const { return shape.at(i); }
};

struct Dim3 {
  unsigned x = 1, y = 1, z = 1;
};

/// Threads per block of the element-wise kernels.
inline constexpr unsigned kBlock = 256;
/// Blocks for n elements at kBlock threads (capped at 2^20; kernels loop).
inline Dim3 gridFor(long long n) {
  long long b = (n + kBlock - 1) / kBlock;
  return Dim3{unsigned(b < 0 ? 0 : b > (1 << 20) ? (1 << 20) : b), 1, 1};
}
/// One block per row (capped at 2^20; kernels loop over further rows).
inline Dim3 gridRows(long long rows) {
  return Dim3{unsigned(rows < 0 ? 0 : rows > (1 << 20) ? (1 << 20) : rows), 1, 1};
}
inline Dim3 block1(unsigned n = kBlock) { return Dim3{n, 1, 1}; }

/// cuLaunchKernel's argument array: pointers to the kernel's parameters.
template <typename... T> std::vector<void *> args(T &...a) {
  return {const_cast<void *>(static_cast<const void *>(&a))...};
}

class CudaLaunchContext {
public:
  const runtime::Plan &plan;
  const runtime::Program &program;
  const runtime::Launch &launch;
  const runtime::KernelSpec &kernel;
  const runtime::CallInfo &call;
  std::vector<CudaTensor *> inputs, outputs; ///< in Launch order
  std::vector<const runtime::ValueSlot *> inputSlots, outputSlots;
  /// The call state on the device: long long[3] = {start position, tokens,
  /// prefill-like ? 1 + ring rows : 0} (CallGeometry), written by the
  /// backend before each call and each graph replay; CED replayed launches get their own ({S - R', R', 1}). Every
  /// position-dependent kernel reads p (and T = (p + S) / ratio, the ring
  /// slot, RoPE positions, emission, visibility, ...) from here, never from a
  /// kernel argument, so that a captured decode graph replays at any p.
  CUdeviceptr callState = 0;
  /// CudaOptions::quadraticTopk: the first-cut O(T^2) top-k and serial
  /// candidate kernels instead of the radix selects.
  bool quadraticTopk = false;
  /// CudaOptions::cpuOrderFamilies: the families that launch the CPU-order
  /// entries instead of the fast (`_fast`, gemv.cuh) ones.
  uint32_t cpuOrderFamilies = 0;
  bool cpuOrder(runtime::KernelFamily family) const {
    return cpuOrderFamilies & uint32_t(family);
  }
  /// CudaOptions::attention: the fast sparse attention's kernels.
  runtime::AttentionKernels attention = runtime::AttentionKernels::TensorCore;
  /// CudaOptions::moeE4m3Mma: the MoE up/down tiles on the FP8 tensor cores.
  bool moeE4m3Mma = false;
  /// CudaOptions::gemv: the FP8/FP4 GEMV family (GemvLaunch.h gemvEntry).
  runtime::GemvKernels gemv = runtime::GemvKernels::Rows;
  /// CudaOptions::mhcOneLaunch: the native mhc_entry's decode kernel.
  bool mhcOneLaunch = true;

  CudaLaunchContext(const runtime::Plan &plan, const runtime::Program &program,
                    const runtime::Launch &launch, const runtime::KernelSpec &kernel,
                    const runtime::CallInfo &call)
      : plan(plan), program(program), launch(launch), kernel(kernel), call(call) {}
  virtual ~CudaLaunchContext() = default;

  const runtime::StateBuffer *inputState(size_t i) const {
    return inputSlots[i]->state >= 0 ? &plan.states[inputSlots[i]->state] : nullptr;
  }
  const runtime::StateBuffer *outputState(size_t i) const {
    return outputSlots[i]->state >= 0 ? &plan.states[outputSlots[i]->state] : nullptr;
  }

  /// Launches entry `entry` of this kernel's module. `args` point to the
  /// kernel's parameters in order (as cuLaunchKernel takes them).
  Status launchEntry(const char *entry, Dim3 grid, Dim3 block, size_t sharedBytes,
                     std::vector<void *> args) {
    return launchEntryIn(kernel.module, entry, grid, block, sharedBytes, std::move(args));
  }
  /// The same in module `module` of the plan (a native executable's).
  virtual Status launchEntryIn(int64_t module, const char *entry, Dim3 grid, Dim3 block,
                               size_t sharedBytes, std::vector<void *> args) = 0;
  /// Device scratch memory, persistent per launch site: the n-th scratch()
  /// of an adapter at one launch of a program returns the same buffer on
  /// every call (grown, outside graph capture, when a call needs more).
  /// Size it by capacity (never by p) where a captured graph may replay it.
  virtual runtime::Expected<CUdeviceptr> scratch(size_t bytes) = 0;
  /// Constant device data (RoPE frequencies, Engram tables) uploaded once per
  /// kernel specialisation and `name`, then cached.
  virtual runtime::Expected<CUdeviceptr> constant(const char *name, const void *data,
                                                  size_t bytes) = 0;
  /// Device-to-device copy on the backend's stream.
  virtual Status copy(CUdeviceptr dst, CUdeviceptr src, size_t bytes) = 0;

  /// Capacities for grids and scratch (never the live p-dependent sizes):
  /// kCompressedLength entries at `ratio` for any position of the plan, and
  /// the most entries one call of `tokens` tokens can emit.
  int64_t compressedLengthCapacity(int64_t ratio) const {
    return ratio > 0 ? plan.model.maxSeqLen / ratio : 0;
  }
  static int64_t compressedTokensCapacity(int64_t tokens, int64_t ratio) {
    return runtime::compressedTokensCapacity(tokens, ratio);
  }
};

using CudaAdapter = std::function<Status(CudaLaunchContext &)>;
using CudaAdapterTable = std::map<std::string, CudaAdapter>;

/// Registers `fn` as the adapter of kernel T (keyed by T::kName): it gets
/// the launch's typed parameters.
template <typename T>
void add(CudaAdapterTable &table, Status (*fn)(CudaLaunchContext &, const T &)) {
  table[T::kName] = runtime::typedAdapter(fn);
}
/// The same for a kernel without parameters.
template <typename T> void add(CudaAdapterTable &table, Status (*fn)(CudaLaunchContext &)) {
  table[T::kName] = fn;
}

/// A native executable's launch (NativeExecutables.def): the contexts of
/// the fused group's steps, bound like step launches, and the executable's
/// module. `runStep(i)` runs step i through its ordinary adapter, so an
/// executable may fuse some steps and run the others as they are.
struct NativeLaunch {
  const runtime::Fusion &fusion;
  std::vector<CudaLaunchContext *> steps;
  std::function<Status(size_t)> runStep;
  /// The step computing kernel T (the first one), or null.
  template <typename T> CudaLaunchContext *step() const {
    for (CudaLaunchContext *c : steps)
      if (c->kernel.template as<T>())
        return c;
    return nullptr;
  }
};
using NativeHostFn = Status (*)(NativeLaunch &);

// The host functions of the native executables (runtime/cuda/executables/).
#define DSC_NATIVE_EXECUTABLE(Name, Group, Template, Steps, HostFn) Status HostFn(NativeLaunch &);
#include "dsc/abi/NativeExecutables.def"

/// The host function of native executable `name` (NativeExecutables.def), or
/// null for a name this backend does not know.
NativeHostFn findNativeHostFn(std::string_view name);

void registerCudaBasicAdapters(CudaAdapterTable &table);     // embed, hc_expand, concat, engram_hash, ...
void registerCudaDenseAdapters(CudaAdapterTable &table);     // linear, norms, mHC, MoE, Engram, head
void registerCudaAttentionAdapters(CudaAdapterTable &table); // RoPE, window, compressor, indexer, attention

/// The native fused `attention` kernel (ds-fuse-kernels): sparse attention
/// whose bf16 output is rotated by the `rope` step (inverse RoPE) in the same
/// kernel and written to that step's output `ropeOut`; `ropeKernel` is the
/// rope step's KernelSpec index (its frequencies' cache key).
Status attentionWithInverseRope(CudaLaunchContext &attention, const runtime::KernelSpec &rope,
                                int64_t ropeKernel, CudaTensor &ropeOut);

} // namespace dsc::cuda

#endif // DSC_RUNTIME_CUDA_CUDAADAPTER_H
