//===- StreamSchedule.h - Launches spread over streams along their dependencies ===//
//
// What: given the launches' dependency graph (LaunchGraph.h), a stream for
// every launch and the cross-stream waits that keep every dependency: a
// backend issues launch j on stream[j] after waiting for the completion
// events of waits[j], and at the end stream 0 waits for the last launch of
// every other stream (joins). Launches on one stream run in issue order.
// Why: the decode step's latency-bound kernels hold a longest dependency
// chain of ~100 of 151 steps on rw6; independent chains on their own
// streams (in a CUDA graph: branches) run side by side.
// How: launches in order. Each launch i names one heir: the successor on
// its longest path to the end (most launches after it; ties: the earliest).
// Launch j continues the stream of its latest predecessor whose heir it is
// and that is still its stream's last launch (a chain), else takes the least
// recently used stream with no heir pending (a fork), at most `maxStreams`.
// So the longest dependent chain stays on one stream, where its edges are
// stream order (programmatic dependent launch in a graph), and the short
// branches fork off it: a cross-stream edge costs a full launch latency
// (8-12 us measured in a graph on the H100, docs/perf.md session 17), and
// the first rule (continue any predecessor that is its stream's last)
// put the MoE chain of every sublayer behind one, the mixes having taken
// the entry's stream first. Each stream keeps a vector clock (per stream, the latest
// launch known complete before its next one); a dependency that the clock
// already covers needs no wait, so waits are few (no transitive repeats).
// The issue order (`order`): a CUDA graph's nodes carry no stream, and the
// driver picks the hardware queue of each kernel node when the graph is
// instantiated; measured (docs/perf.md, session 17), a node's first captured
// child continued its queue, so where program order captured a fork before
// the heir (the FFN's mixes before its gate), the heir lost the programmatic
// overlap and started 7-13 us after its parent. `order` captures each
// launch's stream successor right after it whenever the successor's waits
// are already issued (the heir first), and otherwise the earliest launch in
// program order that can go; every stream's launches keep their order and
// every wait follows the launch it waits for, so the graph's nodes and
// edges are the same in any such order (only their creation order moves).
// Invariants: stream[j] < streams <= max(1, maxStreams); graph.preds[j]
// holds launches < j (LaunchGraph's invariant); waits[j] holds launches
// < j on other streams, ascending; every edge i -> j of the graph is
// ordered by stream order and waits (checked in StreamScheduleTest);
// maxStreams == 1 puts everything on stream 0 with no waits.
//
// scheduleSteps does the same for a call's steps (CallPlan::steps): a step
// (one launch, or a native fusion the backend runs as one unit) is one node,
// waiting for every step one of its launches depends on; this is what the
// CUDA backend's decode capture issues (docs/runtime.md, "Graph branches").
// A call with row-tiled or skipped steps stays on stream 0.
//===----------------------------------------------------------------------===//
#ifndef DSC_RUNTIME_STREAMSCHEDULE_H
#define DSC_RUNTIME_STREAMSCHEDULE_H

#include "dsc/runtime/CallPlan.h"
#include "dsc/runtime/LaunchGraph.h"

#include <span>

#include <cstdint>
#include <vector>

namespace dsc::runtime {

struct StreamSchedule {
  int streams = 1;                         ///< streams used (stream 0 is the origin)
  std::vector<int> stream;                 ///< per launch
  std::vector<std::vector<int64_t>> waits; ///< per launch: other streams' launches to wait for
  std::vector<int64_t> joins; ///< last launches of streams > 0 that stream 0 must wait for at the end
  /// The issue (capture) order: a permutation of the launches, each
  /// stream's in their order, every waited-for launch before its waiter.
  std::vector<int64_t> order;
};

StreamSchedule scheduleStreams(const LaunchGraph &graph, int maxStreams);

/// A call's steps over streams.
struct StepStreams {
  StreamSchedule schedule;      ///< over the steps (indices into CallPlan::steps)
  LaunchGraph graph;            ///< the steps' dependencies (preds by step)
  std::vector<size_t> stepOf;   ///< per launch: its step
  std::vector<uint8_t> signals; ///< per step: a later step or the final join waits for it
};

/// `launches` (launchGraph of the call's program and memory plan) grouped by
/// `steps` (in order, covering the launches exactly once), then scheduled.
StepStreams scheduleSteps(const LaunchGraph &launches, std::span<const CallStep> steps,
                          int maxStreams);

} // namespace dsc::runtime

#endif // DSC_RUNTIME_STREAMSCHEDULE_H
