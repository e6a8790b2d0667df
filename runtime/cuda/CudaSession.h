//===- CudaSession.h - The CUDA backend's state of one Session --------------===//
//
// What: a runtime::BackendSession that owns, for one Session:
//   - the device copies of its states (by state index);
//   - per program (by index in Plan::programs): the device activation arena
//     laid out by the call's capacity plan (bindArena: slot i at arena +
//     offset i), the zeroing schedule of the arena values (the inputs at the
//     call's first launch, the others right before their first writing
//     launch), the device call state {startPos, tokens, prefill-like ? 1 +
//     ring rows : 0} and the CED replay's, and the scratch of every launch
//     site (by launch index and the adapter's n-th request);
//   - its captured graphs, per (program, call shape) (GraphCache.h), and the
//     capture in progress with its branches: the call's steps spread over
//     the engine's branch streams (StreamSchedule.h scheduleSteps). A step
//     waits for the events of the steps it depends on (enterLaunch) and
//     records its own when a later step or the join needs it (leaveLaunch);
//     the branch streams join the capture after the call's leading zeroing
//     (forkBranches) and rejoin the origin stream before it ends.
// resolve() finds the device copy of a TensorRef: weights in the Engine's
// CudaEngineState, states and arena slots here.
//
// Why: the Session owns this object and destroys it with itself, so freeing
// a session's device memory and graphs needs no callback and no map keyed by
// host tensors (docs/runtime.md, "Who owns what").
//
// Invariants: the Engine's plan (given to the constructor) outlives the
// session; every method runs with engine.mutex held and the context
// current (the backend's entry points; the destructor takes them itself).
// Graphs of a program are dropped whenever a device address they hold moves
// (its arena or a scratch buffer grows, a slot's offset changes, a state is
// reallocated); weights and constants never move. Nothing is allocated
// during a capture. The Program states are sized once (openSession) and
// never move, so the host words of their call states may be copied from
// asynchronously.
//===----------------------------------------------------------------------===//
#ifndef DSC_RUNTIME_CUDA_CUDASESSION_H
#define DSC_RUNTIME_CUDA_CUDASESSION_H

#include "runtime/cuda/CudaEngineState.h"
#include "runtime/cuda/GraphCache.h"
#include "runtime/cuda/hal/Graph.h"

#include "dsc/runtime/StreamSchedule.h"

#include <span>
#include <vector>

namespace dsc::cuda {

/// A device range: what a slot's device copy is.
struct DeviceRange {
  CUdeviceptr ptr = 0;
  size_t bytes = 0;
};

class CudaSession final : public runtime::BackendSession {
public:
  CudaSession(CudaEngineState &engine, const runtime::Plan &plan);
  ~CudaSession() override;

  /// Per program of the plan.
  struct Program {
    std::string name;
    hal::DeviceBuffer arena;
    bool bound = false;
    /// By slot: the arena range of an Input/Activation slot (bindArena).
    std::vector<DeviceRange> slots;
    /// Per launch: arena ranges of the values it writes first (zeroed before it).
    std::vector<std::vector<DeviceRange>> bornAt;
    hal::DeviceBuffer callState;
    long long callWords[3] = {0, 0, 0};
    /// CED replayed launches: {S - R', R', 1}, written once per call.
    hal::DeviceBuffer replayState;
    long long replayWords[3] = {0, 0, 0};
    bool replayWritten = false;
    /// Between beginLaunches and endLaunches.
    bool inCall = false;
    /// By launch index, then by the adapter's n-th scratch request.
    std::vector<std::vector<hal::DeviceBuffer>> scratch;
  };

  /// Lays out `program`'s arena by its capacity plan (grown when it needs
  /// more; a grown arena or a moved slot drops the program's graphs) and
  /// schedules the zeroing of its values.
  runtime::Status bindArena(size_t program, const runtime::Program &source,
                            const runtime::MemoryPlan &plan);
  /// The device copy of `ref` for a host tensor of `bytes` bytes: a weight
  /// (allocated on first use), a state (allocated or grown, zero-filled) or
  /// a bound arena slot (an error when unbound or too small).
  runtime::Expected<DeviceRange> resolve(runtime::TensorRef ref, size_t bytes);
  /// The device copy of `ref` if it exists (toHost of a tensor never
  /// uploaded copies nothing).
  const DeviceRange *find(runtime::TensorRef ref, DeviceRange &storage) const;
  /// The n-th scratch buffer of launch `launch` of `program`, at least
  /// `bytes` bytes (grown outside a capture; growing drops the program's graphs).
  runtime::Expected<CUdeviceptr> scratch(size_t program, size_t launch, size_t n, size_t bytes);
  /// Writes the call state of `program` for a call (beginLaunches, or a
  /// launch outside one) and returns it.
  runtime::Expected<CUdeviceptr> writeCallState(size_t program, const runtime::CallGeometry &call);
  /// The CED replay's call state of `program`, written when it changes
  /// (prefill only: never during a capture).
  runtime::Expected<CUdeviceptr> replayCallState(size_t program, const runtime::CallGeometry &call);
  /// Issues the pending zeroing (inputs of the bound call) on the stream.
  runtime::Status flushZeroing();
  /// Zeroing of arena values born at launch `launch` of `program`.
  runtime::Status zeroBornAt(size_t program, size_t launch);
  /// The token upload (or any full upload) replaces the zeroing of `range`.
  void dropZeroing(CUdeviceptr ptr);
  void clearZeroing() { pending_.clear(); }

  /// Starts capturing the stream for `entry`: a call of `program` whose
  /// steps go to the streams `branches` names (one stream: all on the
  /// origin stream, as without branches).
  runtime::Status beginCapture(GraphCache::Entry &entry, size_t program,
                               runtime::StepStreams branches);
  /// After the call's leading zeroing: the branch streams the capture uses
  /// wait for the origin stream (joining the capture).
  runtime::Status forkBranches();
  /// Before the launches of one step (`launch`: its first) of `program`: the
  /// stream they go to (launchStream) waits for the steps it needs from other
  /// streams. Outside a branched capture launchStream() stays the origin.
  runtime::Status enterLaunch(size_t program, size_t launch);
  /// After the step's launches (`launch`: its last): its event is recorded
  /// when needed, and launchStream() is the origin again.
  runtime::Status leaveLaunch(size_t program, size_t launch);
  /// The open branched capture's step order (StreamSchedule::order) with
  /// CudaOptions::captureHeirFirst, else empty (the steps' own order).
  std::span<const int64_t> captureOrder() const {
    return branched() && engine_.captureHeirFirst
               ? std::span<const int64_t>(branches_.schedule.order)
               : std::span<const int64_t>();
  }
  /// Where kernels, copies and per-launch zeroing go now.
  CUstream launchStream() const { return current_ ? current_ : engine_.stream(); }
  /// Ends the open capture (if any) into its entry's graph and launches it.
  /// `position` is only for CudaOptions::logGraphs.
  runtime::Status endCapture(long long position);
  /// Abandons the open capture (a failed launch); its entry stays eager.
  void abandonCapture();

  /// The index of `program` in the session's plan (programCount() when it
  /// is not one of its programs).
  size_t indexOf(const runtime::Program &program) const;
  Program &program(size_t index) { return programs_.at(index); }
  const Program *program(const std::string &name) const;
  size_t programCount() const { return programs_.size(); }
  GraphCache &graphs() { return graphs_; }
  CudaEngineState &engine() { return engine_; }

private:
  CudaEngineState &engine_;
  const runtime::Plan &plan_; ///< the Engine's: outlives the session
  std::vector<Program> programs_;       ///< by plan program index (never resized)
  std::vector<hal::DeviceBuffer> states_; ///< by plan state index
  std::vector<DeviceRange> pending_;    ///< input values to zero at the next launch
  GraphCache graphs_;
  hal::GraphCapture capture_;
  GraphCache::Entry *captureEntry_ = nullptr;
  size_t captureProgram_ = 0;
  runtime::StepStreams branches_; ///< of the open capture (schedule.streams > 1: branched)
  CUstream current_ = nullptr;    ///< the step's branch stream (null: the origin)
  bool branched() const { return capture_.active() && branches_.schedule.streams > 1; }
  CUstream branchStream(int stream) const;
};

} // namespace dsc::cuda

#endif // DSC_RUNTIME_CUDA_CUDASESSION_H
