//===- Backend.h - What executes a plan's launches --------------------------===//
//
// A backend runs one launch at a time on tensors the Session allocated (the
// CPU reference backend computes on them directly; a GPU backend mirrors them
// on the device). Kernels are looked up by KernelSpec::name; an unknown
// kernel is an error naming it.
//===----------------------------------------------------------------------===//
#ifndef DSC_RUNTIME_BACKEND_H
#define DSC_RUNTIME_BACKEND_H

#include "dsc/runtime/Engine.h"
#include "dsc/runtime/MemoryPlan.h"

#include <cstring>
#include <memory>
#include <string>

namespace dsc::runtime {

/// Everything one launch needs.
struct LaunchContext {
  const Plan &plan;
  const Program &program;
  const Launch &launch;
  const KernelSpec &kernel;
  const CallInfo &call;
  std::vector<HostTensor *> inputs, outputs; ///< in Launch order
  std::vector<const ValueSlot *> inputSlots, outputSlots;
  /// The program call this launch belongs to (the CallInfo given to
  /// beginLaunches); `call` differs from it for CED replayed launches.
  const CallInfo *programCall = nullptr;

  /// The state buffer behind input/output i, or null.
  const StateBuffer *inputState(size_t i) const {
    return inputSlots[i]->state >= 0 ? &plan.states[inputSlots[i]->state] : nullptr;
  }
  const StateBuffer *outputState(size_t i) const {
    return outputSlots[i]->state >= 0 ? &plan.states[outputSlots[i]->state] : nullptr;
  }
};

/// Tensors live on the host for the CPU backend and on a device for others.
/// The Session owns a host HostTensor per value (activations are views into
/// one host arena per program, MemoryPlan.h; the HostTensor addresses stay
/// distinct keys); a device backend mirrors each one and is told when one
/// side changed:
///   - toDevice(t): the host copy changed (inputs, reset states, injected
///     boundaries); the device copy must follow before the next launch;
///   - toHost(t): the caller is about to read t on the host (observers,
///     outputs, state dumps);
///   - bindArena(program, plan, values): before beginCall, the device layout
///     of the call's Input/Activation values (a capacity plan, MemoryPlan.h:
///     one per token count for the Session's lifetime, so decode's layout is
///     fixed); a device backend places them at `arena + offset` in one device
///     arena per Session and program instead of one buffer per value, and
///     zeroes each value right before its first writing launch (inputs at
///     the call's start);
///   - beginCall(activations): the call's activations were re-sized and zeroed;
///   - release(t): t is being destroyed; its device twin must be freed.
/// Threading: Sessions of one Engine may call a backend from different
/// threads at once; a device backend guards its bookkeeping and makes its
/// context current at each entry point.
class Backend {
public:
  virtual ~Backend() = default;
  virtual const char *name() const = 0;
  /// Checks that every kernel of the plan is available.
  virtual Status check(const Plan &plan) const = 0;
  virtual Status launch(LaunchContext &context) = 0;
  /// `values` by slot (null for none); `plan.values[i]` gives slot i's offset
  /// and device bytes (`alignedBytes`, at least the call's size).
  virtual Status bindArena(const Program &, const MemoryPlan &,
                           std::span<HostTensor *const> /*values by slot*/) {
    return Status::ok();
  }
  /// Device arena bytes currently held for `program` (all Sessions); 0 on the
  /// host backend.
  virtual uint64_t arenaBytes(const std::string & /*program*/) const { return 0; }
  virtual Status beginCall(std::span<HostTensor *const>) { return Status::ok(); }
  virtual Status toDevice(HostTensor &) { return Status::ok(); }
  virtual Status toHost(HostTensor &) { return Status::ok(); }
  /// The host tensor is going away (a Session's states and activations when
  /// it is destroyed, the Engine's weights): a device backend frees its twin
  /// so that a later tensor at the same address starts without one.
  virtual void release(const HostTensor &) {}
  /// Whether tensors live elsewhere than the host (observers then cost copies).
  virtual bool deviceResident() const { return false; }
  /// Whether the kernels run continuation chunks of a chunked prefill
  /// (CallInfo::ringRows, compressor groups across calls). Without, the
  /// Session runs a long prompt as one prefill call, as an unchunked plan.
  virtual bool runsPrefillChunks() const { return true; }
  /// Whether launches may run on row tiles (views of [rows, ...] slices,
  /// CallInfo::windowRows): row-tiled fusions (Fusion::tileRows) then hold
  /// one tile of their internal values. Without, they run whole.
  virtual bool runsRowTiles() const { return true; }
  /// Whether the backend runs the fused kernel made of launches [first,
  /// first + count) of `program` (one Program::fusions entry) as one kernel
  /// (a native template); then the Session calls launchFusion once with the
  /// steps' contexts instead of launch per step. The values must be those
  /// of the steps run one by one.
  virtual bool runsFusion(const Plan &, const Program &, size_t /*first*/,
                          size_t /*count*/) const {
    return false;
  }
  virtual Status launchFusion(std::span<LaunchContext> /*steps*/) {
    return internalError("launchFusion: this backend runs no fused kernel natively");
  }
  /// Writes `bytes` bytes at byte `offset` of t's backing store: the host
  /// storage here, the device twin in a device backend (where t may be a
  /// described tensor without host storage). Streams weights in bounded chunks
  /// (Engine::createSynthetic) without a full host copy.
  virtual Status uploadChunk(HostTensor &t, size_t offset, const void *data, size_t bytes) {
    if (offset > t.byteSize() || bytes > t.byteSize() - offset)
      return invalidArgument("uploadChunk: bytes [" + std::to_string(offset) + ", " +
                             std::to_string(offset + bytes) + ") outside a tensor of " +
                             std::to_string(t.byteSize()) + " bytes");
    if (!t.hasStorage())
      return failedPrecondition("uploadChunk: the tensor has no host storage");
    if (bytes)
      std::memcpy(t.bytes() + offset, data, bytes);
    return Status::ok();
  }
  /// Brackets the launch loop of one call (Session::run), observer or not.
  /// beginLaunches runs after beginCall and the token upload: a device
  /// backend writes the call's state (start position, tokens) for its
  /// kernels. `graphable` (no observer attached) lets it run the program as
  /// a CUDA graph (docs/runtime.md): it returns true when it already ran the
  /// whole program (a replay), and the Session then skips its launches.
  /// endLaunches follows the last launch (or the replay).
  virtual Expected<bool> beginLaunches(const Plan &, const CallInfo &, const Program &,
                                       std::span<HostTensor *const> /*values by slot*/,
                                       bool /*graphable*/) {
    return false;
  }
  virtual Status endLaunches(const CallInfo &, const Program &) { return Status::ok(); }
  /// Waits until everything queued on the device finished (timing); a no-op
  /// on the host.
  virtual Status synchronize() { return Status::ok(); }
  /// The device's name (cuDeviceGetName), or "host" for the CPU backend.
  virtual std::string deviceName() const { return "host"; }
};

/// Device-to-device copy bandwidth of CUDA device 0 for benchmarks
/// (tools/dsc-bench): copies `bytes` `iterations` times between two device
/// buffers (after one warm-up copy) and counts bytes read + written, like
/// /work/shared/device-ceilings.md. Unavailable without a driver or a GPU.
struct DeviceCopyBandwidth {
  std::string device;
  double gbps = 0;    ///< 2 * bytes * iterations / seconds / 1e9
  double seconds = 0; ///< all timed iterations
  size_t bytes = 0;
  int iterations = 0;
};
Expected<DeviceCopyBandwidth> measureDeviceCopyBandwidth(size_t bytes = size_t(1) << 30,
                                                         int iterations = 10);

/// The CPU reference backend (runtime/cpu/CpuBackend.cpp).
/// `threads`: the CPU kernels' worker threads (0: hardware concurrency). The
/// count is process-wide (the last backend created sets it); it never changes
/// results.
std::unique_ptr<Backend> createCpuBackend(int64_t threads = 0);
/// The CUDA backend (runtime/cuda/CudaBackend.cpp) with its switches
/// (EngineOptions::cuda); Unavailable without a driver or a GPU.
Expected<std::unique_ptr<Backend>> createCudaBackend(const CudaOptions &options = {});

} // namespace dsc::runtime

#endif // DSC_RUNTIME_BACKEND_H
