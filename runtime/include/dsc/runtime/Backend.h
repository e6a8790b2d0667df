//===- Backend.h - What executes a plan's launches --------------------------===//
//
// What: the interface between the Engine/Session and what runs launches. A
// backend runs one launch at a time on tensors the Session allocated (the
// CPU reference backend computes on them directly; a GPU backend keeps a
// device copy of each). Kernels are looked up by KernelSpec::name; an
// unknown kernel is an error naming it.
//
// Ownership: per-Session backend state is a BackendSession the Session owns
// (openSession); device copies are found by plan indices (TensorRef), never
// by host addresses, so nothing has to be "released" when a host tensor goes.
//===----------------------------------------------------------------------===//
#ifndef DSC_RUNTIME_BACKEND_H
#define DSC_RUNTIME_BACKEND_H

#include "dsc/runtime/Engine.h"
#include "dsc/runtime/MemoryPlan.h"

#include <cstring>
#include <memory>
#include <span>
#include <string>

namespace dsc::runtime {

class BackendSession;

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
  /// The calling Session's backend state (Backend::openSession); null only
  /// for a launch outside a Session (a host backend's unit tests).
  BackendSession *session = nullptr;

  /// The state buffer behind input/output i, or null.
  const StateBuffer *inputState(size_t i) const {
    return inputSlots[i]->state >= 0 ? &plan.states[inputSlots[i]->state] : nullptr;
  }
  const StateBuffer *outputState(size_t i) const {
    return outputSlots[i]->state >= 0 ? &plan.states[outputSlots[i]->state] : nullptr;
  }
};

/// Which plan tensor a host tensor stands for: a weight (tensor binding
/// index), a state (state index) or an Input/Activation slot of a program.
/// A device backend finds its device copy by these indices, never by the
/// host tensor's address.
struct TensorRef {
  enum class Kind : uint8_t { Weight, State, Value };
  Kind kind = Kind::Value;
  int64_t index = -1;   ///< binding (Weight), state (State) or slot (Value)
  int64_t program = -1; ///< Value: the program's index in Plan::programs

  static TensorRef weight(int64_t binding) { return {Kind::Weight, binding, -1}; }
  static TensorRef state(int64_t state) { return {Kind::State, state, -1}; }
  static TensorRef value(int64_t program, int64_t slot) { return {Kind::Value, slot, program}; }
  /// Slot `slot` of `program` (an index into plan.programs): its weight,
  /// its state, or the slot itself.
  static TensorRef ofSlot(const Plan &plan, size_t program, size_t slot) {
    const ValueSlot &v = plan.programs[program].values[slot];
    if (v.kind == ValueKind::Weight)
      return weight(v.tensor);
    if (v.kind == ValueKind::State)
      return state(v.state);
    return value(int64_t(program), int64_t(slot));
  }
};

/// A backend's state for one Session (Backend::openSession), owned by the
/// Session and destroyed with it: a device backend keeps the session's
/// device copies of its states, its activation arenas, its call states,
/// scratch and captured graphs here. The Engine (hence the backend)
/// outlives it. The host backend's is empty.
class BackendSession {
public:
  virtual ~BackendSession() = default;
};

/// Tensors live on the host for the CPU backend and on a device for others.
/// Ownership (docs/runtime.md, "Who owns what"): the Engine owns the host
/// weights and the backend, which owns the weights' device copies; a Session
/// owns its host states and activations and its BackendSession, which owns
/// their device copies. A device backend is told when one side changed:
///   - toDevice(session, ref, t): the host copy changed (weights at load,
///     inputs, reset states, injected boundaries); the device copy must
///     follow before the next launch (weights: `session` is null);
///   - toHost(session, ref, t): the caller is about to read t on the host
///     (observers, outputs, state dumps);
///   - bindArena(session, program, plan): before the call's launches, the
///     device layout of the call's Input/Activation values (a capacity plan,
///     MemoryPlan.h: one per token count for the Session's lifetime, so
///     decode's layout is fixed); a device backend places them at `arena +
///     offset` in one device arena per Session and program instead of one
///     buffer per value, and zeroes each value right before its first
///     writing launch (inputs at the call's start).
/// Threading: Sessions of one Engine may call a backend from different
/// threads at once; a device backend guards its shared bookkeeping and makes
/// its context current at each entry point.
class Backend {
public:
  virtual ~Backend() = default;
  virtual const char *name() const = 0;
  /// Checks that every kernel of the plan is available.
  virtual Status check(const Plan &plan) const = 0;
  /// The state of one Session of `plan` (the Session holds it for its
  /// lifetime and passes it to every call). The host backend's is empty.
  virtual Expected<std::unique_ptr<BackendSession>> openSession(const Plan &) {
    return std::make_unique<BackendSession>();
  }
  virtual Status launch(LaunchContext &context) = 0;
  /// `plan.values[i]` gives slot i's offset and device bytes (`alignedBytes`,
  /// at least the call's size).
  virtual Status bindArena(BackendSession &, const Program &, const MemoryPlan &) {
    return Status::ok();
  }
  /// Device arena bytes `session` holds for `program`; 0 on the host backend.
  virtual uint64_t arenaBytes(const BackendSession &, const std::string & /*program*/) const {
    return 0;
  }
  virtual Status toDevice(BackendSession *, TensorRef, HostTensor &) { return Status::ok(); }
  virtual Status toHost(BackendSession *, TensorRef, HostTensor &) { return Status::ok(); }
  /// Whether tensors live elsewhere than the host (observers then cost copies).
  virtual bool deviceResident() const { return false; }
  /// A device-resident backend's call layouts (CallPlan::device) give every
  /// value bytes of its own when the call's activations sum to at most this
  /// (planDeviceMemory; 0: they share bytes as the host arena does).
  virtual uint64_t privateArenaBytes() const { return 0; }
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
  /// Writes `bytes` bytes at byte `offset` of weight `ref`'s backing store
  /// (t is its host tensor): the host storage here, the device copy in a
  /// device backend (where t may be a described tensor without host
  /// storage, toDevice having allocated the copy). Streams weights in
  /// bounded chunks (Engine::createSynthetic) without a full host copy.
  virtual Status uploadChunk(TensorRef /*weight*/, HostTensor &t, size_t offset, const void *data,
                             size_t bytes) {
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
  /// beginLaunches runs after bindArena and the token upload: a device
  /// backend writes the call's state (start position, tokens) for its
  /// kernels. `graphable` (no observer attached) lets it run the program as
  /// a CUDA graph (docs/runtime.md), one per (program, call shape: the
  /// CallPlan's): it returns true when it already ran the whole program (a
  /// replay), and the Session then skips its launches. endLaunches follows
  /// the last launch (or the replay).
  virtual Expected<bool> beginLaunches(BackendSession &, const Plan &, const CallPlan &,
                                       const CallInfo &, const Program &,
                                       std::span<HostTensor *const> /*values by slot*/,
                                       bool /*graphable*/) {
    return false;
  }
  virtual Status endLaunches(BackendSession &, const CallInfo &, const Program &) {
    return Status::ok();
  }
  /// The order the Session issues the call's steps in after beginLaunches
  /// returned false: indices into CallPlan::steps, a permutation of them
  /// (empty: their own order). A backend capturing a CUDA graph on several
  /// streams returns its schedule's capture order (StreamSchedule::order:
  /// the same graph, its heirs captured before its forks). The span is the
  /// backend's and holds until endLaunches; the Session reads it at once.
  virtual std::span<const int64_t> issueOrder(const BackendSession &) const { return {}; }
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
/// The CUDA backend (runtime/cuda/CudaBackend.cpp, on runtime/cuda/hal/) with its switches
/// (EngineOptions::cuda); Unavailable without a driver or a GPU.
Expected<std::unique_ptr<Backend>> createCudaBackend(const CudaOptions &options = {});

} // namespace dsc::runtime

#endif // DSC_RUNTIME_BACKEND_H
