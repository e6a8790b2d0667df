//===- CudaEngineState.h - What the CUDA backend shares among an Engine's Sessions
//
// What: everything the CUDA backend owns for the one Engine that owns it:
// the device (primary context and its one stream, hal::Device), the plan's
// loaded modules (hal::Executable, by module index), the constants adapters
// upload once (by kernel specialisation and name), the weights' device
// copies (by tensor binding index), the adapter table, the CudaOptions, the
// mutex, the capture in progress on the stream and the branch streams and
// events a capture spreads its steps over (CudaSession.h).
//
// Why: one owner per resource with an explicit lifetime. The Engine owns the
// backend, the backend owns this; Sessions own their CudaSession, which
// refers to this and is gone before it (an Engine outlives its Sessions).
// Nothing here is keyed by a host address.
//
// Invariants: every member is guarded by `mutex` (taken by each backend
// entry point and by a CudaSession's destructor), and the context is made
// current on the calling thread after taking it. A weight's device copy is
// allocated once with its binding's size and never moves, nor does a
// constant or a loaded function, so a captured graph may hold their
// addresses. At most one capture is open on the stream (`capturing`);
// nothing is allocated or uploaded while it is, and only the capturing
// session's calls run (the others wait on captureEnded). Destruction: the members
// after `device` go first (declaration order), then the device's stream and
// context; the backend synchronises the stream before.
//===----------------------------------------------------------------------===//
#ifndef DSC_RUNTIME_CUDA_CUDAENGINESTATE_H
#define DSC_RUNTIME_CUDA_CUDAENGINESTATE_H

#include "runtime/cuda/CudaAdapter.h"
#include "runtime/cuda/hal/Device.h"
#include "runtime/cuda/hal/DeviceBuffer.h"
#include "runtime/cuda/hal/Executable.h"
#include "runtime/cuda/hal/Stream.h"

#include <condition_variable>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace dsc::cuda {

class CudaSession;

class CudaEngineState {
public:
  CudaEngineState(hal::Device device, const runtime::CudaOptions &options);

  const CudaDriver &driver() const { return device.driver(); }
  CUstream stream() const { return device.stream(); }

  /// Entry `entry` of plan module `module`, loading the module on first use.
  runtime::Expected<CUfunction> function(const runtime::Plan &plan, int64_t module,
                                         const std::string &entry);
  /// Whether launches of module `module`'s entries go out as programmatic
  /// dependent launches: CudaOptions::dependentLaunch and the module's
  /// prologue mark (hal::Executable::waitsForPredecessor). After function().
  bool dependentLaunch(int64_t module) const;
  /// Constant `name` of kernel specialisation `kernel`, uploaded on first
  /// use (never during a capture) and then cached.
  runtime::Expected<CUdeviceptr> constant(int64_t kernel, const char *name, const void *data,
                                          size_t bytes);
  /// The device copy of weight `binding` of `bytes` bytes, allocated
  /// (zero-filled) on first use; an existing copy of another size is an
  /// error (weights never move).
  runtime::Expected<CUdeviceptr> weight(int64_t binding, size_t bytes);
  /// The device copy of weight `binding`, or null when none was made.
  const hal::DeviceBuffer *findWeight(int64_t binding) const;
  /// At least `streams` branch streams and `events` events (never during a
  /// capture; they are made once and kept).
  runtime::Status reserveBranches(int streams, size_t events);

  hal::Device device;
  CudaAdapterTable table;
  bool syncEachLaunch = false; ///< CudaOptions::syncEachLaunch
  bool graphs = true;          ///< CudaOptions::graphs (off with syncEachLaunch)
  bool logGraphs = false;      ///< CudaOptions::logGraphs
  bool quadraticTopk = false;  ///< CudaOptions::quadraticTopk (CudaLaunchContext)
  uint32_t cpuOrderFamilies = 0; ///< CudaOptions::cpuOrderFamilies (CudaLaunchContext)
  /// CudaOptions::attention (CudaLaunchContext)
  runtime::AttentionKernels attention = runtime::AttentionKernels::TensorCore;
  bool moeE4m3Mma = false;       ///< CudaOptions::moeE4m3Mma (CudaLaunchContext)
  runtime::GemvKernels gemv = runtime::GemvKernels::Rows; ///< CudaOptions::gemv (CudaLaunchContext)
  bool mhcOneLaunch = true; ///< CudaOptions::mhcOneLaunch (CudaLaunchContext)
  bool dependentLaunches = true; ///< CudaOptions::dependentLaunch
  static constexpr int kMaxStreams = 16; ///< CudaOptions::streams beyond this count as 16
  int streams = 1;               ///< CudaOptions::streams, clamped to [1, kMaxStreams]
  bool captureHeirFirst = false; ///< CudaOptions::captureHeirFirst (CudaSession::captureOrder)
  bool privateSmallArenas = true; ///< CudaOptions::privateSmallArenas (Backend::privateArenaBytes)
  std::vector<hal::Stream> branchStreams; ///< streams 1.. of a branched capture (0: stream())
  std::vector<hal::Event> branchEvents;   ///< a branched capture's step events
  /// The session whose capture is open on the stream, or null.
  CudaSession *capturing = nullptr;
  mutable std::mutex mutex;
  /// Notified (mutex held) when `capturing` becomes null: other sessions'
  /// calls wait for it.
  std::condition_variable captureEnded;

private:
  std::vector<hal::Executable> executables_; ///< by plan module index (empty: not loaded)
  std::map<std::pair<int64_t, std::string>, hal::DeviceBuffer> constants_;
  std::vector<hal::DeviceBuffer> weights_; ///< by tensor binding index
};

} // namespace dsc::cuda

#endif // DSC_RUNTIME_CUDA_CUDAENGINESTATE_H
