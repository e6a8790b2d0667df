//===- Plan.h - The deployable plan as plain C++ data ---------------------===//
//
// What a plan holds, independent of its file encoding (runtime/schema/
// plan.fbs, written and read by PlanFile.h). The compiler fills a Plan
// from the ds module (passes/LowerToPlan.cpp); the runtime executes it.
//
// A plan is:
//   - `model`: the facts the runtime needs without the config;
//   - `tensors`: checkpoint tensors the plan binds (name, dtype, shape, kind);
//   - `states`: buffers that live across calls of a session (window rings, the
//     compressed KV and index keys of each KV source, compressor partial
//     groups, Engram hash history), each with its record layout as data;
//   - `kernels`: distinct kernel specialisations (a kernel of the vocabulary
//     with its typed parameters, dsc/abi/KernelParams.h; a cubin/PTX);
//   - `programs`: `prefill`, `decode`, ... Each is a list of values (typed
//     slots: program inputs/outputs, activations, weights, states) and a list
//     of launches reading and writing values.
// Sizes are symbolic only in token dimensions: kTokens is the number of tokens
// of the call (S in prefill, 1 in decode); kCompressedTokens / kCompressedLength
// follow from it, the call's start position and the value's ratio.
//
// Fusions: Program::launches are kernel steps; consecutive steps naming the
// same Program::fusions entry form one fused kernel launch (launchesByLayer).
//
// Invariants (checked by verifyPlan in PlanFile.h): every index is in range;
// a fusion's steps are consecutive, of its layer, with one replay mark;
// a weight value names a tensor, a state value a state; launches only read
// values that are inputs, weights, states or written by an earlier launch;
// layer boundary marks name values written by that layer.
//===----------------------------------------------------------------------===//
#ifndef DSC_RUNTIME_PLAN_H
#define DSC_RUNTIME_PLAN_H

#include "dsc/abi/KernelParams.h"
#include "dsc/runtime/DType.h"

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <variant>
#include <vector>

namespace dsc::runtime {

/// Plan file format version; bumped on any incompatible schema change.
inline constexpr uint32_t kPlanSchemaVersion = 3;
/// A dimension equal to the call's token count.
inline constexpr int64_t kTokens = -1;
/// The largest sequence length and the largest count parameter a plan may
/// carry (2^24: the configs' limit on max_seq_len and the vocabulary,
/// docs/model-spec.md 3.1): verifyPlan holds maxSeqLen and every count
/// without a tighter bound to it, so a product of two fits int64.
inline constexpr int64_t kMaxCount = int64_t(1) << 24;
/// The largest static dimension a value slot may have (2^31; the largest a
/// real plan has is an Engram table's rows, 384M in the released model):
/// verifyPlan holds every positive dimension to it, so the launch checks'
/// products of two dimensions (heads * head dim, hc * D) fit int64.
inline constexpr int64_t kMaxDim = int64_t(1) << 31;
/// A dimension equal to the compressed entries a call emits at the value's
/// ratio: floor((start + S) / ratio) - floor(start / ratio).
inline constexpr int64_t kCompressedTokens = -2;
/// A dimension equal to the compressed entries visible after the call:
/// floor((start + S) / ratio) (the length of a source's KV buffer).
inline constexpr int64_t kCompressedLength = -3;
/// The window rows attention reads: S in prefill (the chunk's own KV), the
/// ring size W in decode. W is the value's `param`.
inline constexpr int64_t kWindowRows = -4;
/// A CED plan's replayed rows in prefill: R' = min(R, S), R =
/// PlanFacts::cedReplayTokens (docs/passes.md, ds-ced-split). Only
/// launches with Launch::replay use it.
inline constexpr int64_t kReplayTokens = -5;

/// Model facts the runtime needs (a subset of the compiler's ModelSpec).
struct PlanFacts {
  std::string name;  ///< config file the plan was compiled from
  int64_t nLayers = 0, nMtpLayers = 0, dim = 0, vocabSize = 0, hcMult = 0;
  int64_t headDim = 0, ropeHeadDim = 0, nHeads = 0, windowSize = 0;
  int64_t indexHeadDim = 0, indexNHeads = 0, indexTopk = 0;
  int64_t cedSplitLayer = 0;
  int64_t maxSeqLen = 0, maxBatch = 1;
  std::string cedMode = "full"; ///< prefill CED mode: full | bounded | exact
  /// R of a CED plan: prefill replays the last min(R, S) rows from layer
  /// cedSplitLayer on (launches with Launch::replay); 0 = no replay.
  int64_t cedReplayTokens = 0;
  bool layerBoundaries = false; ///< conformance plan (dsc-compile --layer-boundaries)
  /// Chunked prefill (dsc-compile --prefill-chunk): a prompt longer than C
  /// runs as ceil(S/C) calls of near-equal size, each at least C/2
  /// (prefillChunks in MemoryPlan.h), each continuing the states of the one
  /// before; 0: one call. C >= 2·windowSize (a continuation chunk covers a
  /// window) and >= 2·cedReplayTokens (the last chunk holds the replay),
  /// checked by verifyPlan.
  int64_t prefillChunk = 0;
  /// Engram token map (token id -> compressed id); empty without Engram.
  std::vector<int64_t> engramTokenMap;
  int64_t engramCompressedVocabSize = 0;
};

enum class TensorKind : uint8_t { Weight = 0, Scale = 1, Fp4Packed = 2 };

/// One checkpoint tensor. A stacked tensor (`experts > 0`) is the
/// concatenation along a new leading dimension of the checkpoint tensors named
/// by replacing "{e}" in `name` with 0..experts-1; `shape` includes that
/// leading dimension.
struct TensorBinding {
  std::string name;
  DType dtype = DType::BF16;
  std::vector<int64_t> shape;
  TensorKind kind = TensorKind::Weight;
  int64_t experts = 0;
  /// The loader also accepts this dtype (e.g. attn.wo_a as released: F8_E4M3
  /// with a `.scale` sibling, dequantised to bf16 on load).
  std::optional<DType> alternativeDType;
};

/// Record layout of a state buffer (numerics::KvRecordFormat as data).
struct RecordLayout {
  int32_t valuesPerEntry = 0, valuesPerTile = 0;
  uint8_t valueType = 0;  ///< numerics::KvValueType
  uint8_t scaleType = 0;  ///< numerics::KvScaleType
  int32_t dataBytes = 0, scaleBytes = 0, entryBytes = 0;
  int32_t tokensPerPage = 0;
  uint8_t pageOrder = 0;  ///< numerics::KvPageOrder
};

enum class StateKind : uint8_t {
  WindowRing = 0,      ///< FP8 records, `capacity` = window slots
  MainKv = 1,          ///< FP4 main KV records of a KV source, one per compressed entry
  IndexKeys = 2,       ///< FP4 index-key records of a KV source
  CompressorState = 3, ///< fp32 partial group [2, ratio, dim]: kv rows, then score rows
  EngramHistory = 4,   ///< int64 compressed ids of the sequence so far
  DSparkRing = 5,      ///< FP8 ring of a DSpark stage
};

struct StateBuffer {
  std::string name; ///< e.g. "layers.20.main_kv"
  StateKind kind = StateKind::WindowRing;
  int64_t layer = -1;
  int64_t ratio = 0;    ///< compress ratio (MainKv, IndexKeys, CompressorState)
  int64_t capacity = 0; ///< entries per sequence
  int64_t dim = 0;      ///< CompressorState: values per row (the head dim)
  RecordLayout layout;  ///< for record-based kinds
};

/// A kernel specialisation: a kernel of the vocabulary (docs/kernels.md) and
/// its typed parameters (dsc/abi/KernelParams.h, generated from the ds ODS:
/// one definition shared by lowering, verification and both backends).
/// `name` equals abi::kernelName(params) (verifyPlan checks it). Array
/// parameters (abi::KernelArray) index `constants`. `module` is the compiled
/// template holding its entry points (Plan::modules, filled by codegen).
struct KernelSpec {
  std::string name; ///< e.g. "rms_norm", "linear", "sparse_attention"
  abi::KernelParams params;
  std::vector<int64_t> constants; ///< out-of-line array parameters
  int64_t module = -1;            ///< index into Plan::modules (-1: none)

  /// The parameters as kernel T's struct, or null for another kernel.
  template <typename T> const T *as() const { return std::get_if<T>(&params); }
  /// Whether `a` lies inside `constants` (verifyPlan's check).
  bool holds(const abi::KernelArray &a) const {
    return a.offset >= 0 && a.count >= 0 && a.offset <= int64_t(constants.size()) &&
           a.count <= int64_t(constants.size()) - a.offset;
  }
  /// The values of an array parameter (empty if out of range: verifyPlan
  /// rejects such plans).
  std::span<const int64_t> array(const abi::KernelArray &a) const {
    if (!holds(a))
      return {};
    return std::span<const int64_t>(constants.data() + a.offset, size_t(a.count));
  }
  /// A specialisation for kernel T with parameters `p`.
  template <typename T> static KernelSpec of(const T &p) {
    KernelSpec k;
    k.name = T::kName;
    k.params = p;
    return k;
  }
};

/// One compiled kernel template (codegen/kernels/<templateName>.cu) with all
/// its entry points: every specialisation of the template, and every native
/// executable built on it, loads this one module.
struct Module {
  std::string templateName;
  std::vector<uint8_t> cubin;
  std::string ptx;
};

enum class ValueKind : uint8_t {
  Input = 0,      ///< program argument
  Activation = 1, ///< written by a launch of this program
  Weight = 2,     ///< a tensor binding
  State = 3,      ///< a state buffer
};

struct ValueSlot {
  ValueKind kind = ValueKind::Activation;
  DType dtype = DType::BF16;
  std::vector<int64_t> shape; ///< kTokens / kCompressed* mark symbolic dims
  int64_t ratio = 0;          ///< parameter of symbolic dims: the ratio of
                              ///< kCompressed*, the window W of kWindowRows
  int64_t tensor = -1;        ///< Weight: index into Plan::tensors
  int64_t state = -1;         ///< State: index into Plan::states
  std::string name;           ///< for dumps and errors, e.g. "layers.3.out"
};

struct Launch {
  int64_t kernel = 0; ///< index into Plan::kernels
  std::vector<int64_t> inputs, outputs; ///< indices into Program::values
  int64_t layer = -1; ///< layer the launch belongs to (-1: outside layers)
  /// A CED replayed launch: runs on the last R' = min(R, S) rows of prefill
  /// (positions S - R' .. S - 1) in chunk mode; its token dims are
  /// kReplayTokens.
  bool replay = false;
  /// Index into Program::fusions: the fused kernel this launch is a step of
  /// (-1: a kernel launch of its own).
  int64_t fusion = -1;
};

/// A fused kernel (ds-fuse-kernels, docs/passes.md): the launches naming it
/// are consecutive, of one layer and one replay mark, and form one kernel
/// launch of the group `kernel` (e.g. "mhc_entry"); each of them is a step
/// computing one op. The plan names the executable that runs it: a native
/// one (`executable`) or, when empty, the steps in order (same values).
struct Fusion {
  std::string kernel; ///< the ds.fused group, e.g. "mhc_entry"
  int64_t layer = -1;
  /// > 0: a row-tiled fusion (the `indexer`): every step is row-independent
  /// (kRowTileableKernels), so a backend that runs row tiles
  /// (Backend::runsRowTiles) runs the steps on `tileRows` token rows at a
  /// time and the fusion's internal values (rowTiledValues) hold one tile:
  /// the indexer's [tokens, T] scores never exist whole.
  int64_t tileRows = 0;
  /// The native executable that runs the whole group
  /// (dsc/abi/NativeExecutables.def, chosen by ds-select-executables); ""
  /// runs the steps one by one. A backend without it runs the steps.
  std::string executable;
  int64_t module = -1; ///< index into Plan::modules: the executable's
  /// Values the steps write that nothing outside the group reads (the
  /// ds.fused body's values it does not yield): a native executable may
  /// never materialise them.
  std::vector<int64_t> internal;
};

/// Kernels whose rows are independent given the call's start position: the
/// steps a row-tiled fusion may hold.
inline constexpr const char *kRowTileableKernels[] = {"index_queries", "linear", "indexer_score",
                                                      "candidate_blocks", "indexer_topk"};

/// Marks the block boundary after layer `layer`: `stream` and `mix` are the
/// values a conformance run dumps and may replace (forced boundaries).
struct LayerBoundary {
  int64_t layer = 0;
  int64_t stream = -1, mix = -1;
  int64_t afterLaunch = -1; ///< index of the layer's last launch
};

struct Program {
  std::string name; ///< "prefill", "decode", "dspark_prefill", "dspark_draft"
  std::vector<ValueSlot> values;
  std::vector<int64_t> inputs, outputs; ///< indices into values
  std::vector<Launch> launches; ///< kernel steps in order (see Fusion)
  std::vector<LayerBoundary> boundaries;
  std::vector<Fusion> fusions;
  /// Activation arena peak of this program's largest call at the plan's
  /// limits (a max_seq_len prompt in chunks for prefill, the last position
  /// for decode), computed by dsc-compile (summarizePlanMemory) for a
  /// backend that runs row tiles and for one that does not; 0: not recorded.
  uint64_t peakBytes = 0, peakBytesUntiled = 0;
};

/// Kernel launches of a program by layer (-1: outside layers): one per
/// fusion, plus one per launch outside fusions. What the report's `launches`
/// prints and test/passes/fuse-kernels-released.test pins.
inline std::map<int64_t, int64_t> launchesByLayer(const Program &program) {
  std::map<int64_t, int64_t> counts;
  int64_t previousFusion = -1;
  for (const Launch &launch : program.launches) {
    if (launch.fusion < 0 || launch.fusion != previousFusion)
      ++counts[launch.layer];
    previousFusion = launch.fusion;
  }
  return counts;
}

struct Plan {
  uint32_t version = kPlanSchemaVersion;
  PlanFacts model;
  std::vector<TensorBinding> tensors;
  std::vector<StateBuffer> states;
  std::vector<KernelSpec> kernels;
  std::vector<Program> programs;
  std::vector<Module> modules; ///< compiled kernel templates (codegen)

  const Program *program(const std::string &name) const {
    for (const Program &p : programs)
      if (p.name == name)
        return &p;
    return nullptr;
  }
};

} // namespace dsc::runtime

#endif // DSC_RUNTIME_PLAN_H
