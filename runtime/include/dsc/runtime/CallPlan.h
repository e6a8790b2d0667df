//===- CallPlan.h - One call of a program, planned once and run many times -===//
//
// What: planCall turns (plan, program, call shape, backend traits) into a
// CallPlan: everything Session::run needs besides the token ids and the
// tensors — the call geometry, every value's resolved shape and host arena
// offset (planMemory), the device capacity plan, the zeroing schedule, the
// last uses behind the observed peak, the CED replay range, the row tiles
// and the list of steps (one launch, a native fused kernel, a row-tiled
// fusion, a skipped replayed launch). Session::run is a loop over the steps.
//
// Why: the Session used to redo all of this on every call. Calls repeat
// their shape (every decode, every prompt of a length), so the Session
// caches CallPlans per shape (docs/runtime.md, "Call plans").
//
// The cache key (sameCallClass): the program, the token count, prefill-like
// or not, run-replay, observer attached or not, and whether the call starts
// at position 0. The start position itself is not part of it:
//   - the device capacity plan depends on it only through startPos == 0
//     (planned at 0, else at max_seq_len - tokens; MemoryPlan.h);
//   - steps, tiles, zeroing schedule, last uses, boundaries, the replay row
//     count and the row-tile ranges do not depend on it at all;
//   - the host sizes (kCompressedTokens, kCompressedLength, kWindowRows) and
//     the geometry (startPos, ringRows, the replay's start) do: resolveStart
//     re-sizes those slots only (startSlots: a few per layer) for a new start. planMemory's offsets
//     depend on the call only through the aligned sizes (sizeValues), so the
//     host layout is kept while they stay the same, taken back from the
//     plan's last few layouts when they return to an earlier set (a
//     compressor's latent row comes and goes), and placed anew only for a
//     set not seen (a [1, T] score row growing by 64 bytes: every 32·ratio
//     decode steps for bf16). So all decode calls of a sequence share one
//     CallPlan, and its device layout.
//
// Invariants (CallPlanTest): for any start p, resolveStart(planCall(shape at
// p0), p) equals planCall(shape at p) field by field; `host` equals
// planMemory(tokens, startPos, capacity = false, traits.rowTiles) and
// `device` planDeviceMemory(tokens, 0 or max_seq_len - tokens,
// traits.privateArenaBytes): capacity, with reuse unless the call is small;
// zeroBefore[l] lists exactly the planned slots whose first writing launch
// (zeroingLaunch) is l, zeroAtStart those no launch writes; the tiles of a row-tiled step cover
// its call's rows exactly once, in order; replayRows = min(R, tokens) and
// the replay starts at startPos + tokens - replayRows; the steps cover every
// launch exactly once, in order. planCall is pure: it reads its arguments
// only (a backend's runsFusion through the traits) and returns a value.
//===----------------------------------------------------------------------===//
#ifndef DSC_RUNTIME_CALLPLAN_H
#define DSC_RUNTIME_CALLPLAN_H

#include "dsc/runtime/MemoryPlan.h"
#include "dsc/runtime/Plan.h"
#include "dsc/runtime/Status.h"

#include <cstdint>
#include <functional>
#include <vector>

namespace dsc::runtime {

class Backend;

/// Where a launch's tokens sit and where its attention window comes from:
/// the one call geometry both backends read. A CallPlan resolves it for the
/// call, for the CED replayed launches and for every row tile; kernels never
/// derive it themselves.
struct CallGeometry {
  int64_t startPos = 0; ///< absolute position of the first token
  int64_t tokens = 0;   ///< tokens of this call (of the tile, for a row tile)
  /// Prefill-like: the window source is the call's own KV rows (positions
  /// startPos .. startPos + tokens - 1, absolute), after `ringRows` ring rows
  /// in a continuation chunk. True in prefill and for CED replayed launches
  /// (startPos = S - R', tokens = R'); false in decode (the window source is
  /// the ring).
  bool prefillLike = false;
  /// A continuation chunk of a chunked prefill (PlanFacts::prefillChunk):
  /// the window also reads the min(W-1, startPos) positions before the chunk
  /// from the ring, ahead of the chunk's own rows (docs/runtime.md). 0 for a
  /// first chunk, a CED replay and decode.
  int64_t ringRows = 0;
  /// The window rows of the whole call, ahead of the compressed entries in
  /// attention's rows: ringRows + tokens when prefillLike, W in decode. A row
  /// tile (Fusion::tileRows) keeps its call's value, which offsets the
  /// compressed part of the top-k lists. -1: not resolved (a geometry built
  /// by hand; kernels then derive it from the others).
  int64_t windowRows = -1;
};

/// The geometry of a call of `tokens` tokens from `startPos`.
CallGeometry callGeometry(const PlanFacts &model, int64_t startPos, int64_t tokens,
                          bool prefillLike);
/// The geometry of a CED plan's replayed launches in that call: its last
/// `rows` rows, prefill-like, no ring rows.
CallGeometry replayGeometry(const CallGeometry &call, int64_t rows);

/// What determines a call's plan.
struct CallShape {
  int64_t tokens = 0;
  int64_t startPos = 0;
  bool prefillLike = false;
  /// false: CED replayed launches are skipped (the earlier chunks of a
  /// chunked prefill).
  bool runReplay = true;
  /// An observer is attached: every step runs on its own (an observer sees
  /// every step's output, which a native fused kernel never writes), and in
  /// a plan with layer boundaries their stream and mix live to the boundary.
  bool observed = false;
};

/// Whether a CallPlan made for `a` serves a call of shape `b` once
/// resolveStart moved it to b.startPos (the cache key; see the header).
bool sameCallClass(const CallShape &a, const CallShape &b);

/// What the planner needs to know of the backend that runs the call.
struct BackendTraits {
  bool rowTiles = true;        ///< Backend::runsRowTiles
  bool deviceResident = false; ///< Backend::deviceResident: a device capacity plan is made
  uint64_t privateArenaBytes = 0; ///< Backend::privateArenaBytes (planDeviceMemory)
  /// Backend::runsFusion (null: no native fused kernel).
  std::function<bool(const Plan &, const Program &, size_t first, size_t count)> runsFusion;
};
/// The traits of `backend` (its runsFusion is called by planCall).
BackendTraits traitsOf(const Backend &backend);

/// Rows [offset, offset + rows) of a row-tiled step's call.
struct RowTile {
  int64_t offset = 0, rows = 0;
  bool operator==(const RowTile &) const = default;
};

/// A step of the call: launches [first, end) of the program.
struct CallStep {
  enum class Kind : uint8_t {
    Launch,       ///< one launch (end = first + 1)
    NativeFusion, ///< a fusion the backend runs as one kernel (Backend::launchFusion)
    RowTiles,     ///< a row-tiled fusion: all its steps on each tile in turn
    SkipReplay,   ///< a CED replayed launch of an earlier chunk: not run
  };
  Kind kind = Kind::Launch;
  size_t first = 0, end = 0;
  bool replay = false;        ///< runs with CallPlan::replay (Launch::replay)
  std::vector<RowTile> tiles; ///< RowTiles: in order, covering the rows exactly once
};

struct CallPlan {
  CallShape shape;          ///< startPos: the start it is resolved for
  CallGeometry call;        ///< the call
  int64_t replayRows = 0;   ///< R' = min(R, tokens) in a CED plan, else 0
  CallGeometry replay;      ///< the replayed launches (replayGeometry(call, R'))
  MemoryPlan host;          ///< the host arena: shapes, bytes, live ranges, offsets
  bool hasDevicePlan = false;
  MemoryPlan device;        ///< the device capacity plan (device-resident backends)
  size_t tokenInput = 0;    ///< slot of the token ids (Program::inputs[0])
  size_t logitsOutput = 0;  ///< slot of output 0 (f32 rank 2)
  /// Per slot: the tileRows of an internal value of a row-tiled fusion held
  /// as one tile (rowTiledValues; all 0 when the backend runs no tiles).
  std::vector<int64_t> tileRows;
  /// The planned slots whose size depends on the start position
  /// (sizeDependsOnStart): the only ones resolveStart re-sizes.
  std::vector<size_t> startSlots;
  /// Arena zeroing: planned slots zeroed before the first launch (live from
  /// -1: inputs, untouched slots), and per launch those zeroed right before
  /// it (their first writing launch).
  std::vector<int64_t> zeroAtStart;
  std::vector<std::vector<int64_t>> zeroBefore;
  /// Observed-peak bookkeeping (SessionMemoryStats::observedPeakBytes):
  /// per slot its last use (-1: none; the launch count for outputs), widened
  /// over fusions and, when observed, to its layer boundary; per launch the
  /// slots whose last use it is.
  std::vector<int64_t> lastUse;
  std::vector<std::vector<int64_t>> dieAfter;
  /// Per launch: the Program::boundaries indices reached right after it.
  std::vector<std::vector<size_t>> boundariesAfter;
  std::vector<CallStep> steps;
  /// Host layouts this plan had at earlier starts, most recent first (at
  /// most kOtherHostLayouts): a decode's aligned sizes cycle (a compressor of
  /// ratio r emits a latent at one position in r), so resolveStart takes a
  /// layout back instead of placing it again.
  std::vector<MemoryPlan> otherLayouts;
  /// Host arena placements this plan went through (planMemory runs: 1 +
  /// resolveStart's placements of aligned sizes it had not seen).
  uint64_t hostPlacements = 0;
};
inline constexpr size_t kOtherHostLayouts = 4;

/// Plans one call of `program` (a program of `plan`). Errors, all before
/// anything runs: the program's own (no outputs, output 0 not f32 rank 2, no
/// token input, operand or boundary slots out of range, a weight or state
/// slot naming nothing, a replayed launch outside a CED prefill or a fusion
/// mixing replayed and full-prompt launches) and planMemory's (a bad shape,
/// named by program and slot).
/// The launch right before which an arena slot is zeroed: the first launch
/// writing it, per slot (-1: none writes it, e.g. an input; zeroed at the
/// call's start). Not the start of its live range: a fused group's values
/// are live from the group's first launch (MemoryPlan.h), but zeroing them
/// there would make that launch write values it does not touch, an order no
/// LaunchGraph edge carries (side-by-side launches would race with it).
std::vector<int64_t> zeroingLaunches(const Program &program);

Expected<CallPlan> planCall(const Plan &plan, const Program &program, const CallShape &shape,
                            const BackendTraits &traits);

/// Moves `callPlan` (made by planCall for `program` of `plan` with the same
/// traits) to a call starting at `startPos` of the same class
/// (sameCallClass); unchanged on error (a size that overflows there).
Status resolveStart(CallPlan &callPlan, const Plan &plan, const Program &program,
                    int64_t startPos, const BackendTraits &traits);

/// The geometry a step's launches run with.
inline const CallGeometry &stepGeometry(const CallPlan &plan, const CallStep &step) {
  return step.replay ? plan.replay : plan.call;
}
/// A row tile of a call: the tile's rows, the call's window.
CallGeometry tileGeometry(const CallGeometry &call, const RowTile &tile);

} // namespace dsc::runtime

#endif // DSC_RUNTIME_CALLPLAN_H
