//===- Engine.h - Run a plan: Engine (weights) and Session (one sequence) -===//
//
//   auto engine = Engine::load("model.dscp", "checkpoint/");   // verifies both
//   auto session = (*engine)->newSession();
//   auto logits = session->prefill(promptIds);   // f32 [1, vocab] (last position)
//   logits = session->decode(nextId);            // f32 [1, vocab]
//
// An Engine owns the verified plan, the weights bound from the checkpoint and
// a backend (which owns the weights' device copies); a Session owns one
// sequence's state (window rings, per-source KV and index keys in their
// packed record layouts, compressor partial groups, Engram history), its
// BackendSession (the backend's state of the session: device copies of the
// states, device arenas, call states, captured graphs) and runs the plan's
// programs. Nothing throws; every failure is a Status naming what is wrong.
//
// Threading contract:
//   - one call at a time per Session (prefill, decode, reset, state reads);
//   - an Engine outlives its Sessions;
//   - Sessions of one Engine may run on different threads at the same time
//     (the backend serialises its own bookkeeping and makes its device
//     context current on the calling thread).
//
// Errors: a call rejected before it starts (bad ids, too long, bad plan
// shapes) leaves the session as it was. A call that fails partway (a launch,
// an observer, a device copy) may leave the states half-updated: the session
// is then "failed" and every later prefill/decode returns FailedPrecondition
// "the session failed at <program> launch N; call reset()" until reset().
// Engine::load/create report Unavailable only when the backend is (no CUDA
// driver or no GPU); file errors are NotFound, DataLoss or FailedPrecondition.
//
// Conformance: a SessionObserver sees every launch's outputs and, in plans
// compiled with --layer-boundaries, every block boundary, where it may
// replace the residual stream and mix (forced boundaries, golden/README.md).
//===----------------------------------------------------------------------===//
#ifndef DSC_RUNTIME_ENGINE_H
#define DSC_RUNTIME_ENGINE_H

#include "dsc/runtime/CallPlan.h"
#include "dsc/runtime/HostTensor.h"
#include "dsc/runtime/MemoryPlan.h"
#include "dsc/runtime/Plan.h"
#include "dsc/runtime/Status.h"

#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace dsc::runtime {

class Backend;
class BackendSession;
class Checkpoint;

/// Which call of a session a launch belongs to: its geometry (the call's
/// CallPlan resolves it: the call's own, the CED replay's for replayed
/// launches, a row tile's; CallPlan.h) and its names.
struct CallInfo : CallGeometry {
  std::string phase;       ///< "prefill" or "decode<i>" (the golden key prefix)
  std::string program;     ///< plan program name
  int64_t decodeStep = -1; ///< i of decode<i>, -1 in prefill
};

class SessionObserver {
public:
  virtual ~SessionObserver() = default;
  /// After every launch, with its output values (read-only).
  virtual void afterLaunch(const CallInfo &, const Program &, const Launch &,
                           const KernelSpec &, std::span<const HostTensor *const> outputs) {}
  /// After block `layer` (plans with layer boundaries only): the block's
  /// stream [S, hc, dim] bf16 and mix [S, hc] f32; may overwrite both.
  virtual Status atBoundary(const CallInfo &, int64_t layer, HostTensor &stream,
                            HostTensor &mix) {
    return Status::ok();
  }
};

/// The CUDA kernel families that have a fast and a CPU-order set
/// (CudaOptions::cpuOrderFamilies). One definition: kKernelFamilyNames.
enum class KernelFamily : uint32_t {
  Linear = 1u << 0,        ///< linear (FP8, FP4, bf16 weights)
  Head = 1u << 1,          ///< the LM head
  GroupedOutput = 1u << 2, ///< grouped_output (wo_a, wo_b)
  Compressor = 1u << 3,    ///< compressor_linear's bf16 projections
  IndexQueries = 1u << 4,  ///< index_queries' projection
  IndexerScore = 1u << 5,  ///< indexer_score
  Attention = 1u << 6,     ///< sparse_attention
  Norm = 1u << 7,          ///< rms_norm and the fused mHC-pre + norm
  Mhc = 1u << 8,           ///< hc_mixes
  MoeGate = 1u << 9,       ///< moe_gate
  MoeExperts = 1u << 10,   ///< moe_experts
  IndexKeys = 1u << 11,    ///< index_keys' projection
};
inline constexpr uint32_t kAllKernelFamilies = (1u << 12) - 1;
struct KernelFamilyName {
  const char *name;
  KernelFamily family;
};
/// The names --cuda-kernels cpu-order=NAME,... takes.
inline constexpr KernelFamilyName kKernelFamilyNames[] = {
    {"linear", KernelFamily::Linear},         {"head", KernelFamily::Head},
    {"grouped-output", KernelFamily::GroupedOutput}, {"compressor", KernelFamily::Compressor},
    {"index-queries", KernelFamily::IndexQueries},   {"indexer-score", KernelFamily::IndexerScore},
    {"attention", KernelFamily::Attention},   {"norm", KernelFamily::Norm},
    {"mhc", KernelFamily::Mhc},               {"moe-gate", KernelFamily::MoeGate},
    {"moe-experts", KernelFamily::MoeExperts}, {"index-keys", KernelFamily::IndexKeys}};

/// The FP8/FP4 GEMV kernel families of the CUDA fast path (CudaOptions::gemv).
/// Rows: the row-lane tiles (codegen/kernels/row_gemv.cuh) where a step has
/// them (linear, grouped output, indexer queries, MoE up/down), the lanes
/// elsewhere (a quantizedGemv caller without a `_rows` entry).
enum class GemvKernels { Tiles, Lanes, Slots, Warpgroups, Rows };

/// The fast sparse attention's kernels (CudaOptions::attention).
enum class AttentionKernels { Single, Split, Mqa, TensorCore };

/// Switches of the CUDA backend (createCudaBackend). The runtime reads no
/// environment variable: the tools map DSC_CUDA_GRAPHS, DSC_CUDA_SYNC and
/// DSC_CUDA_TOPK_QUADRATIC onto these (docs/runtime.md).
struct CudaOptions {
  /// Decode runs as a CUDA graph when no observer is attached (captured at a
  /// session's second decode, replayed after). Bit-identical either way.
  bool graphs = true;
  /// With graphs: a line on stderr when a graph is captured, and how often it
  /// was replayed when its session goes.
  bool logGraphs = false;
  /// Synchronise the stream after every launch, so that a kernel fault names
  /// its launch; implies no graphs. Slow: never time with it.
  bool syncEachLaunch = false;
  /// The first-cut O(T^2) indexer top-k and serial candidate-block kernels
  /// instead of the O(T) radix selects (for comparisons; same sets).
  bool quadraticTopk = false;
  /// The kernel families (bits of KernelFamily) that launch the first-cut
  /// kernels summing in the CPU reference's order (one thread per output,
  /// double dots, torch's serial fp32 sums) instead of the fast ones
  /// (warp-per-row GEMVs, tensor-core tiles, block reductions:
  /// codegen/kernels/gemv.cuh). Both are deterministic; the CPU-order kernels
  /// are for CUDA-vs-CPU comparisons and, one family at a time, for finding
  /// which fast kernel moves a result (docs/cuda-kernels-dense.md).
  uint32_t cpuOrderFamilies = 0;
  bool cpuOrder(KernelFamily family) const { return cpuOrderFamilies & uint32_t(family); }
  /// The fast sparse attention (docs/cuda-kernels-attention.md). Single: one
  /// walk per (row, head) over the row's entries in 64-entry blocks. Split:
  /// the walk's blocks in parallel (split-KV: logits, per-block PV, an
  /// in-order merge), byte-identical to Single. Mqa: Split with the logits
  /// and PV by one block per (row, entry block, group of heads), each entry
  /// block's values read once for the group; byte-identical to Split.
  /// TensorCore (the default since session 11): logits and PV of every head
  /// of a row per 64-entry block on the bf16 tensor cores with the walk's
  /// roundings (bf16 probabilities against the running max), the logits
  /// summed in the tensor core's order; not byte-identical to the walk, but
  /// its rw6 logits move no more than another valid summation order's do
  /// (`--cuda-gemv lanes` vs `slots`, scripts/device-logits-diff.sh). Split,
  /// Mqa and TensorCore fall back to the next simpler kernels where their
  /// shapes do not fit (TensorCore: D % 16 == 0 and at most abi::kTcMaxHeads
  /// heads; Mqa: its D bounds), and every one to the single walk for rows of
  /// at most 64 entries.
  AttentionKernels attention = AttentionKernels::TensorCore;
  /// The fast MoE up/down kernels sum each 32-K block of (FP4 or FP8 weight
  /// x FP8 activation) products with one E4M3 mma (m16n8k32) instead of two
  /// f16 mmas after widening: fewer instructions per weight byte, but the
  /// FP8 tensor cores accumulate with fewer bits than fp32
  /// (docs/cuda-kernels-dense.md). Off unless shown inside the GPU gates.
  bool moeE4m3Mma = false;
  /// The FP8/FP4 GEMV kernels (linear, grouped output, indexer queries, the
  /// MoE up/down steps): Lanes, the lane-block tiles (codegen/kernels/
  /// lane_gemv.cuh: weights as the mma's B operand, 8 rows per warp); Slots,
  /// the block-slot tiles (codegen/kernels/slot_gemv.cuh: weights as the
  /// mma's A operand, 16 rows per warp, one B column per activation row and
  /// block); Tiles, gemv.cuh's 16-row tiles with warps splitting K (and with
  /// them moeE4m3Mma); Warpgroups, the warpgroup tiles (codegen/kernels/
  /// wg_gemv.cuh: Hopper's native FP8 wgmma, 64 weight rows per warpgroup
  /// as its register A operand, the activations staged in shared memory;
  /// the linear and MoE steps, the others run their lanes entries); Rows,
  /// the default, the row-lane tiles (codegen/kernels/row_gemv.cuh: each
  /// lane streams its own weight row as the f16 mma's A operand, the
  /// activations staged once per block as f16; docs/perf.md session 21).
  /// All stay inside the GPU gates; kept selectable for comparisons
  /// (`--cuda-gemv lanes|slots|tiles|wg|rows`).
  GemvKernels gemv = GemvKernels::Rows;
  /// Rows of at most abi::kMhcDecodeMaxRows (decode, M-row steps) run a fused
  /// `mhc_entry` group ([hc_post] hc_pre rms_norm) as one kernel,
  /// dsc_mhc_entry_decode_fast (codegen/kernels/mhc_entry.cu), instead of
  /// its three step kernels: the same bytes (`--cuda-mhc one|steps`).
  bool mhcOneLaunch = true;
  /// Every kernel is launched as a programmatic dependent launch (sm_90
  /// PDL): it may be scheduled while its predecessor still runs, and its
  /// prologue (codegen/kernels/common.cuh DSC_KERNEL_PROLOGUE) waits for the
  /// predecessor's completion before it reads or writes anything, so
  /// results do not change; what it saves is the launch gap between the
  /// many small kernels of a decode step. Only modules carrying the
  /// prologue's mark are launched so (older plans run serialised).
  bool dependentLaunch = true;
  /// A call whose activations sum to at most runtime::kPrivateArenaBytes
  /// (a decode step's) gives every value device bytes of its own instead of
  /// sharing them along live ranges (planDeviceMemory): a few MB more per
  /// session, and no launch of the captured graph waits for another only
  /// because their values shared bytes (rw6 decode: dependency depth 75
  /// steps instead of 81; tiny6 80 instead of 88). The same kernels and
  /// values, so the same results (`--cuda-arena private|shared`).
  bool privateSmallArenas = true;
  /// A branched decode capture issues its steps in the schedule's capture
  /// order (StreamSchedule::order: each step's stream successor right after
  /// it, the heir before the forks) instead of program order. The graph's
  /// nodes and edges are the same either way (so are the results); what
  /// moves is which child of a node the driver meets first, which decided
  /// in session 17's timeline which child kept its parent's hardware queue.
  /// Off until measured on the device (`--cuda-capture-order program|heir`).
  bool captureHeirFirst = false;
  /// Streams a captured decode call spreads its steps over (graph branches):
  /// steps that do not depend on each other (LaunchGraph.h) run side by side
  /// (StreamSchedule.h scheduleSteps); 1 keeps every step on the one stream.
  /// Every kernel is the same, so results are byte-identical for any count.
  /// Values below 1 mean 1, above 16 mean 16.
  int streams = 4;
};

struct EngineOptions {
  std::string backend = "cpu"; ///< "cpu" (reference backend) or "cuda"
  CudaOptions cuda;            ///< the CUDA backend's switches
  /// The CPU backend's worker threads (0: hardware concurrency; process-wide,
  /// see createCpuBackend). Results do not depend on it.
  int64_t cpuThreads = 0;
  /// Host activations of a call are views into one arena per program, laid
  /// out by planMemory (MemoryPlan.h); false: one allocation per value slot
  /// (every slot then keeps its value after the call, see Session::value).
  bool arena = true;
  /// The host bytes one session may need: its states at the plan's capacity
  /// (planStateBytes) plus the largest activation peak the plan records.
  /// A plan over it is refused when the engine is made, before anything is
  /// allocated (issue 15). 0: this machine's physical memory.
  uint64_t sessionMemoryLimit = 0;
};

/// Activation memory of a Session's last call of one program (host side).
struct SessionMemoryStats {
  bool arena = false;             ///< EngineOptions::arena
  uint64_t arenaBytes = 0;        ///< the program's host arena (grown, never shrunk; 0 without)
  uint64_t plannedPeakBytes = 0;  ///< planMemory's peakBytes for the call
  uint64_t plannedSumBytes = 0;   ///< planMemory's sumBytes for the call
  /// Highest total of exact bytes of Input/Activation slots live while the
  /// launches ran, counted independently of the planner: a slot is allocated
  /// at its first write (inputs: before launch 0) and freed after its last
  /// read or write (outputs: never; boundary stream/mix: not before the
  /// boundary when an observer sees boundaries).
  uint64_t observedPeakBytes = 0;
};

/// Deterministic synthetic weights (Engine::createSynthetic, for benchmarks).
/// Every byte follows from a counter-based hash of (seed, tensor index, byte
/// offset), so the weights do not depend on chunkBytes or threads. Values are
/// tame (docs/bench.md): FP8 E4M3 codes of magnitude 2^-2..2^1 (never NaN),
/// UE8M0 scales 2^-9..2^-6, any FP4 nibble, bf16 norms 1 + U(-1/16, 1/16),
/// other bf16 and f32 tensors U(-0.05, 0.05), integer tensors (hash routing
/// tables) in [0, the plan's routed expert count).
struct SyntheticWeightOptions {
  uint64_t seed = 1;
  size_t chunkBytes = size_t(256) << 20; ///< host buffer per upload
  unsigned threads = 0;                  ///< 0: hardware concurrency
  /// Called after each tensor: (tensor name, bytes done, total bytes).
  std::function<void(const std::string &, uint64_t, uint64_t)> progress;
};

/// How a Session's calls found their plans (Session::callPlanStats).
struct CallPlanStats {
  uint64_t plansMade = 0;      ///< planCall runs (a new call shape)
  uint64_t plansReused = 0;    ///< calls that found their shape's plan cached
  uint64_t startsResolved = 0; ///< reused plans moved to a new start (resolveStart)
  uint64_t hostPlacements = 0; ///< host arena placements (new plans and re-placements)
};

class Session;

class Engine {
public:
  /// Reads and verifies a plan file, opens the checkpoint and binds it.
  static Expected<std::unique_ptr<Engine>> load(const std::string &planPath,
                                                const std::string &checkpointPath,
                                                EngineOptions options = {});
  /// Same from a plan in memory (verified here).
  static Expected<std::unique_ptr<Engine>> create(Plan plan,
                                                  const std::string &checkpointPath,
                                                  EngineOptions options = {});
  /// A verified plan with synthetic weights instead of a checkpoint. Device
  /// backends get each weight streamed in bounded chunks without a host copy
  /// (HostTensor::describe + Backend::uploadChunk); the CPU backend keeps them
  /// on the host.
  static Expected<std::unique_ptr<Engine>> createSynthetic(Plan plan,
                                                           SyntheticWeightOptions synthetic,
                                                           EngineOptions options = {});
  /// The same on a backend the caller made (options.backend is then only
  /// its name; tests run the CUDA backend on a fake driver this way).
  static Expected<std::unique_ptr<Engine>> createSynthetic(Plan plan,
                                                           SyntheticWeightOptions synthetic,
                                                           std::unique_ptr<Backend> backend,
                                                           EngineOptions options = {});
  ~Engine();

  const Plan &plan() const { return plan_; }
  const EngineOptions &options() const { return options_; }
  Backend &backend() { return *backend_; }
  const std::vector<HostTensor> &weights() const { return weights_; }
  std::unique_ptr<Session> newSession();

private:
  Engine() = default;
  static Expected<std::unique_ptr<Backend>> makeBackend(const EngineOptions &options);
  static Expected<std::unique_ptr<Engine>> bind(std::unique_ptr<Backend> backend, Plan plan,
                                                const std::string &checkpointPath,
                                                uint64_t sessionMemoryLimit);
  Plan plan_;
  EngineOptions options_;
  std::vector<HostTensor> weights_; ///< one per plan tensor binding
  std::unique_ptr<Backend> backend_;
};

/// A sequence's states after a prompt prefix, for exact prefix reuse
/// (issue 13's first tier: whole state copies in host memory; the paged,
/// shared KV pool comes later). Made by Session::prefillPrefix, used by
/// Session::prefillFrom on any Session of the same Engine.
struct SessionSnapshot {
  std::vector<int32_t> ids;       ///< the prefix's tokens: a continuation starts with them
  std::vector<HostTensor> states; ///< every state buffer, as the plan lays them out
  /// Host bytes the snapshot holds (its states).
  uint64_t bytes() const;
};

class Session {
public:
  explicit Session(Engine &engine);
  ~Session();

  /// Runs `prefill` on the prompt from position 0, in chunks when the plan
  /// says so (PlanFacts::prefillChunk); returns the program's logits
  /// output (f32 [1, vocab], or [S, vocab] in conformance plans).
  Expected<HostTensor> prefill(std::span<const int32_t> ids);
  /// Runs `decode` on one token at the next position.
  Expected<HostTensor> decode(int32_t id);
  /// Runs `prefill` on `ids` at the next positions, continuing the sequence
  /// as a continuation chunk of a chunked prefill does: several rows in one
  /// step (DSpark verification, the M-row decode benchmark). The result
  /// equals prefilling the whole sequence at once (bit for bit on the CPU
  /// backend). Needs a prefilled sequence, a backend that runs continuation
  /// chunks and a plan without CED replay (compile with --ced=full).
  Expected<HostTensor> extend(std::span<const int32_t> ids);
  /// Prefills `ids` from position 0 as the leading chunk(s) of a longer
  /// prompt (a CED plan's replayed launches do not run, no logits) and
  /// returns the states there; the session is reset afterwards. What a
  /// prefix cache stores for prefillFrom.
  Expected<SessionSnapshot> prefillPrefix(std::span<const int32_t> ids);
  /// prefill(ids) continued from `prefix` (ids must start with prefix.ids):
  /// the session takes the snapshot's states at position prefix.ids.size()
  /// and runs the rest as the prompt's last chunk(s), CED replay included.
  /// Logits, states and what follows equal prefill(ids) bit for bit on the
  /// CPU backend (chunked == one call). The rest must hold at least
  /// minPrefixTail() tokens; a call its checks reject leaves the session as
  /// it was (one that fails while running leaves it failed: reset()).
  Expected<HostTensor> prefillFrom(const SessionSnapshot &prefix, std::span<const int32_t> ids);
  /// prefill(ids) (from == null) or prefillFrom(*from, ids) that also leaves
  /// in `saved` the snapshot at position saveAt (after from's tokens, at
  /// least minPrefixTail() before the end) on the way: the same result as
  /// without, bit for bit on the CPU backend (saveAt is a chunk boundary).
  /// What a prefix cache calls to fill itself while it serves a prompt.
  Expected<HostTensor> prefillSaving(const SessionSnapshot *from, std::span<const int32_t> ids,
                                     int64_t saveAt, SessionSnapshot &saved);
  /// The fewest tokens prefillFrom takes after a prefix: the smallest last
  /// chunk a chunked prefill runs (2 x the CED replay rows, 2 x the window).
  int64_t minPrefixTail() const;
  /// Forgets the sequence (states zeroed, position 0) and clears a failure.
  void reset();

  int64_t position() const { return position_; }
  void setObserver(SessionObserver *observer) { observer_ = observer; }
  /// A state buffer's current contents (packed records, as the plan lays out).
  /// With a device backend call syncStates() first.
  const HostTensor &state(int64_t index) const { return states_.at(index); }
  /// Copies every state from the device to its host tensor.
  Status syncStates();
  /// The last call's value of `slot` in program `program` (after the call).
  /// With the arena (EngineOptions::arena) only the program outputs keep
  /// their contents; other slots' bytes were reused by later values.
  const HostTensor *value(const std::string &program, int64_t slot) const;
  /// The last call's activation memory of `program`, or null before any call.
  const SessionMemoryStats *memoryStats(const std::string &program) const;
  /// How this Session's calls found their plans (CallPlan.h), since it was made.
  const CallPlanStats &callPlanStats() const { return planStats_; }
  /// The plan the last call of `program` ran (null before any call): valid
  /// until the next call of that program.
  const CallPlan *lastCallPlan(const std::string &program) const;
  /// Device arena bytes this Session holds for `program` (Backend::
  /// arenaBytes; 0 on the host backend).
  uint64_t deviceArenaBytes(const std::string &program) const;

private:
  /// One call of `programName`; `runReplay` false skips CED replayed
  /// launches (the earlier chunks of a chunked prefill).
  Expected<HostTensor> run(const std::string &programName, std::span<const int32_t> ids,
                           CallInfo call, bool runReplay = true);
  /// prefillFrom's checks of a continuation (the session is not touched).
  Status checkContinuation(const SessionSnapshot &prefix, std::span<const int32_t> ids) const;
  /// InvalidArgument naming `who` when ids holds more tokens than the plan's
  /// max_seq_len: every entry taking ids checks it first, as size_t, before
  /// any signed arithmetic on the count (a SIZE_MAX count from the C API once
  /// turned negative and passed).
  Status checkTokenCount(std::span<const int32_t> ids, const char *who) const;
  /// Resets the session and takes the snapshot's states and position.
  Status restoreSnapshot(const SessionSnapshot &prefix);
  /// Prefill chunks over ids[from, end) at positions from.. (prefillChunks of
  /// the span), the last one with CED replay when `finish`.
  Expected<HostTensor> prefillSpan(std::span<const int32_t> ids, int64_t from, bool finish);

  Engine &engine_;
  /// The backend's state of this Session (Backend::openSession), opened by
  /// reset() (an open that failed is retried by the next reset); destroyed
  /// with the Session, before the Engine and its backend.
  std::unique_ptr<BackendSession> backendSession_;
  SessionObserver *observer_ = nullptr;
  int64_t position_ = 0;
  int64_t decodeSteps_ = 0;
  std::vector<HostTensor> states_;
  Status stateError_; ///< the first failure sizing or uploading the reset states
  std::string failure_; ///< non-empty after a call failed partway (until reset())
  std::vector<std::vector<HostTensor>> activations_; ///< per program, per slot
  struct ProgramMemory {
    HostTensor arena; ///< U8 [capacity]; activations_ are views into it
    SessionMemoryStats stats;
    bool called = false;
    /// Call plans made for this program (CallPlan.h), most recently used
    /// first, at most kCallPlansPerProgram: every decode call shares one,
    /// each prompt length (chunk) has its own.
    std::vector<std::unique_ptr<CallPlan>> plans;
    /// Whether the program has CED replayed launches: without, a call that
    /// skips them is the same shape as one that runs them.
    bool replays = false;
  };
  static constexpr size_t kCallPlansPerProgram = 8;
  /// The cached plan of `programIndex` for `shape` (made, or moved to its
  /// start position), first in the program's list.
  Expected<const CallPlan *> callPlanFor(size_t programIndex, const CallShape &shape);
  BackendTraits traits_;
  CallPlanStats planStats_;
  std::vector<ProgramMemory> memory_; ///< per program
};

/// Resolves a symbolic dimension for a call (kTokens, kCompressed*,
/// kWindowRows); `param` is the slot's ratio / window.
int64_t resolveDim(int64_t dim, int64_t param, int64_t startPos, int64_t tokens);
/// The same; kReplayTokens is min(replayTokens, tokens) (tokens when
/// replayTokens is 0: a plan without replay).
int64_t resolveDim(int64_t dim, int64_t param, int64_t startPos, int64_t tokens,
                   int64_t replayTokens);

} // namespace dsc::runtime

#endif // DSC_RUNTIME_ENGINE_H
