//===- MemoryPlan.h - Static activation arena with liveness ----------------===//
//
// For one program and one call (token count S, start position), planMemory
// gives every Input / Activation value slot its byte size, its live range
// and an offset in one arena; the arena's size is the call's activation peak.
// The Session allocates its activations as views into such an arena
// (Engine.cpp); dsc-compile --report prints the peaks by phase
// (summarizePlanMemory).
//
// Sizes: symbolic dimensions resolved by resolveDim (kTokens = S,
// kCompressed* from the start position and the slot's ratio, kWindowRows);
// every size is rounded up to kArenaAlignment.
//
// Live ranges are inclusive intervals of launch indices [first, last],
// widened to cover each fusion (one fused kernel launch) they touch:
//   - first: the first launch writing the value; -1 for program inputs (and
//     for a value no launch touches, which is then live only at -1);
//   - last: the last launch reading or writing it; the program's launch count
//     for program outputs (they are read after the call); at least the
//     `afterLaunch` of a layer boundary naming it as stream or mix (an
//     observer reads and may overwrite them there).
// Two values conflict when their ranges intersect: both exist while one
// launch runs (its inputs dying at launch l and its outputs born at l do).
//
// Placement: greedy best fit. Values are taken by aligned size, largest
// first (ties: earlier first, then lower slot). Each one looks at the values
// already placed that conflict with it, sorted by offset, and takes the
// smallest gap between them (or below the first) that fits; when none fits
// it goes right above the highest of them. Zero-byte values sit at offset 0.
//
// Invariant (checked by the tests on random programs): for any two values
// whose live ranges intersect, [offset, offset + alignedBytes) are disjoint;
// every offset is a multiple of kArenaAlignment; peakBytes = max(offset +
// alignedBytes) >= the largest total of aligned bytes live at one launch (a
// lower bound no placement can beat); sumBytes = the sum of aligned bytes
// (what one allocation per slot costs).
//
// A prefill call is one chunk (prefillChunks): its indexer scores are
// [tokens, kCompressedLength], so a chunked prefill's peak grows with C·S,
// not S² (docs/runtime.md, "Memory planning"); summarizePlanMemory takes
// the largest chunk peak. Transient scratch a backend allocates inside a
// launch (CUDA scratch buffers) is not counted.
//===----------------------------------------------------------------------===//
#ifndef DSC_RUNTIME_MEMORYPLAN_H
#define DSC_RUNTIME_MEMORYPLAN_H

#include "dsc/runtime/Plan.h"
#include "dsc/runtime/Status.h"

#include <cstdint>
#include <string>
#include <vector>

namespace dsc::runtime {

/// Alignment of every value in the arena (and of the arena itself).
inline constexpr uint64_t kArenaAlignment = 64;

/// Resolves a symbolic dimension for a call (kTokens, kCompressed*,
/// kWindowRows); `param` is the slot's ratio / window. (Declared in Engine.h
/// too.)
int64_t resolveDim(int64_t dim, int64_t param, int64_t startPos, int64_t tokens);
/// The same; kReplayTokens is min(replayTokens, tokens) (tokens when
/// replayTokens is 0: a plan without replay).
int64_t resolveDim(int64_t dim, int64_t param, int64_t startPos, int64_t tokens,
                   int64_t replayTokens);

/// One call of a chunked prefill: tokens [startPos, startPos + tokens).
struct PrefillChunk {
  int64_t startPos = 0, tokens = 0;
};
/// The calls a prompt of `promptTokens` runs as with chunk size `chunk`
/// (PlanFacts::prefillChunk): one call when chunk <= 0 or the prompt
/// fits, else n = ceil(S/C) chunks of near-equal size (chunk i starts at
/// floor(i·S/n)), each at most C and at least C/2 tokens.
std::vector<PrefillChunk> prefillChunks(int64_t promptTokens, int64_t chunk);

/// One value slot of the program.
struct ValueMemory {
  bool planned = false;       ///< Input or Activation (weights and states are not)
  std::vector<int64_t> shape; ///< resolved for the call
  uint64_t bytes = 0;         ///< exact size
  uint64_t alignedBytes = 0;  ///< rounded up to kArenaAlignment
  int64_t first = 0, last = 0; ///< inclusive live range (launch indices)
  uint64_t offset = 0;        ///< in the arena
};

struct MemoryPlan {
  std::string program;
  int64_t tokens = 0, startPos = 0;
  int64_t launches = 0;
  std::vector<ValueMemory> values; ///< one per Program::values entry
  uint64_t peakBytes = 0;   ///< arena size (activations of this call)
  uint64_t sumBytes = 0;    ///< aligned activations without reuse
  uint64_t liveBound = 0;   ///< max over launches of aligned bytes live (<= peakBytes)
  uint64_t weightBytes = 0; ///< the plan's tensor bindings
  uint64_t stateBytes = 0;  ///< the plan's state buffers, one sequence
};

/// Upper bound of kCompressedTokens over start positions for a call of
/// `tokens` tokens (what device grids and twins are sized by).
inline int64_t compressedTokensCapacity(int64_t tokens, int64_t ratio) {
  return ratio > 1 ? tokens / ratio + 1 : tokens;
}

/// Plans the activations of `program` for a call of `tokens` tokens from
/// `startPos`. With `capacity` (device arenas, docs/runtime.md) every
/// kCompressed* dimension takes its largest value over start positions
/// (kCompressedTokens: compressedTokensCapacity, kCompressedLength:
/// max_seq_len / ratio), so one layout serves every call with the same
/// token count and the same startPos == 0 (kWindowRows). InvalidArgument names "<program>: value slot i ('name'): " for
/// a bad shape (negative, overflowing, above HostTensor::kMaxBytes) or a
/// compressed dimension without a positive ratio; also when the arena would
/// exceed HostTensor::kMaxBytes.
/// With `rowTiles` (a backend that runs row-tiled fusions, Backend::
/// runsRowTiles), the internal values of row-tiled fusions (rowTiledValues)
/// hold min(tileRows, rows) rows.
/// With `reuse` false every value gets bytes of its own (peakBytes ==
/// sumBytes): no two values share bytes, so no launch waits for another
/// only because they do (LaunchGraph.h's arena edges vanish); what a small
/// device call's layout takes (privateArenaLimit).
Expected<MemoryPlan> planMemory(const Plan &plan, const Program &program, int64_t tokens,
                                int64_t startPos, bool capacity = false, bool rowTiles = false,
                                bool reuse = true);
/// The largest activation sum (MemoryPlan::sumBytes) a device-resident
/// backend's call layout holds without reuse by default (CallPlan.h
/// `device`; BackendTraits::privateArenaBytes): a decode step's values are
/// a few MB at released widths (rw6: 5 MB) against a chunked prefill's GBs,
/// and sharing bytes made the decode graph's dependency depth 81 steps
/// instead of 75 (rw6) and 88 instead of 80 (tiny6).
inline constexpr uint64_t kPrivateArenaBytes = uint64_t(64) << 20;
/// A device call's layout (CallPlan::device): planMemory at capacity, with
/// reuse unless the values sum to at most `privateBytes` (0: always reuse).
Expected<MemoryPlan> planDeviceMemory(const Plan &plan, const Program &program, int64_t tokens,
                                      int64_t startPos, uint64_t privateBytes);

/// The sizes part of planMemory: every planned slot's `planned`, `shape`,
/// `bytes` and `alignedBytes` for the call (live ranges and offsets left
/// unset), with planMemory's errors. Offsets depend on the call only through
/// these aligned sizes (the live ranges are the program's), so two calls
/// whose sized values have equal `alignedBytes` get the same offsets: a
/// cached plan re-sizes with this and re-places only when one differs
/// (CallPlan.h, resolveStart).
Expected<std::vector<ValueMemory>> sizeValues(const Plan &plan, const Program &program,
                                              int64_t tokens, int64_t startPos,
                                              bool capacity = false, bool rowTiles = false);
/// Element `slot` of sizeValues; `tileRows` > 0 caps the rows (an internal
/// value of a row-tiled fusion, rowTiledValues).
Expected<ValueMemory> sizeValue(const Plan &plan, const Program &program, size_t slot,
                                int64_t tokens, int64_t startPos, bool capacity,
                                int64_t tileRows);
/// Whether a planned slot's size depends on the call's start position (a
/// kCompressedTokens, kCompressedLength or kWindowRows dim); the others
/// depend on the token count only.
bool sizeDependsOnStart(const ValueSlot &slot);

/// Per value slot of `program`: the fusion's tileRows for an internal value
/// of a row-tiled fusion (written by one of its steps, read and written only
/// by its steps, not a program output or boundary value, rows symbolic:
/// kTokens or kReplayTokens), else 0.
std::vector<int64_t> rowTiledValues(const Program &program);

/// The launch ranges [first, last] of the program's fusions (one fused
/// kernel launch each). Every value a range's launches touch is live over the
/// whole range: a native fused kernel reads and writes during all of it, a
/// row-tiled one reruns its steps per tile.
std::vector<std::pair<int64_t, int64_t>> fusionRanges(const Program &program);

/// Bytes of the plan's weights (tensor bindings) and of one sequence's states
/// as the plan allocates them (every state at its capacity, i.e. for
/// model.maxSeqLen tokens).
Expected<uint64_t> planWeightBytes(const Plan &plan);
Expected<uint64_t> planStateBytes(const Plan &plan);
/// The states a sequence of `contextTokens` tokens needs when its per-token
/// states are paged (issue 13's KV pool): main KV and index-key records,
/// ceil(tokens / ratio) entries (at most the capacity) in whole pages of
/// the state's page size (one page of the capacity when not paged), and one
/// Engram history id per token (at most the capacity); the window rings, the
/// compressor states and the DSpark rings are fixed. contextTokens beyond
/// model.maxSeqLen or negative is InvalidArgument.
Expected<uint64_t> pagedStateBytes(const Plan &plan, int64_t contextTokens);
/// Whether one session of `plan` fits `limit` host bytes (0: this machine's
/// physical memory): its states at capacity (planStateBytes) plus the
/// largest activation peak the plan records. The engines check it before
/// anything is allocated (EngineOptions::sessionMemoryLimit; issue 15).
Status checkSessionMemory(const Plan &plan, uint64_t limit);

/// The report's `memory` block: the activation peak of each phase.
struct PhaseMemory {
  std::string phase;   ///< "prefill", "decode"
  std::string program; ///< plan program
  int64_t tokens = 0, startPos = 0;
  uint64_t peakBytes = 0, sumBytes = 0;
  int64_t promptTokens = 0, chunks = 1; ///< prefill: the prompt and its calls
};
struct PlanMemorySummary {
  uint64_t weightBytes = 0, stateBytes = 0;
  std::vector<PhaseMemory> phases; ///< those of the plan's programs that exist
};
/// prefill: a prompt of `prefillTokens` (<= 0: model.maxSeqLen) in the plan's
/// chunks (the largest peak over its calls; `tokens`/`startPos` name that
/// call, `chunks` counts them); decode: 1 token at `decodePosition` (< 0:
/// model.maxSeqLen - 1, the largest compressed lengths).
/// `rowTiles`: plan as a backend that runs row tiles (the CPU backend) or
/// not (the CUDA backend today).
Expected<PlanMemorySummary> summarizePlanMemory(const Plan &plan, int64_t prefillTokens,
                                                int64_t decodePosition = -1,
                                                bool rowTiles = true);

} // namespace dsc::runtime

#endif // DSC_RUNTIME_MEMORYPLAN_H
