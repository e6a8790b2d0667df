//===- LaunchGraph.h - The launches of one call as a dependency graph ------===//
//
// What: for a program and its memory plan for one call (MemoryPlan.h), which
// earlier launches each launch must wait for: launch j depends on i < j when
// j reads a value i writes (read after write), or writes a value i reads or
// writes (write after read, write after write), where "a value" is a slot
// for inputs, a state buffer for states (slots naming the same buffer are
// one value), and an arena byte range for planned activations
// (two activations whose bytes the arena shares conflict like one value:
// the memory plan reuses bytes along the program's launch order). Weights
// are read-only and never order anything.
// Why: a backend may run launches that do not depend on each other side by
// side (CUDA graph branches): the decode step's kernels are latency-bound,
// and the longest dependency chain is shorter than the launch sequence
// (scripts/plan-critical-path.py, docs/perf.md session 11). This is the one
// definition of that order: the CUDA decode capture spreads its steps over
// streams by it (StreamSchedule.h scheduleSteps). It sees only what the plan
// declares, so a backend may touch no other activation memory: arena
// zeroing happens right before a value's first writer (zeroingLaunches,
// CallPlan.h), which is that launch's own write.
// Precondition: a verified program (verifyPlan, PlanFile.h: every launch's value ids
// index Program::values; an id outside them orders nothing).
// Invariants: preds[j] is sorted, every entry < j, and holds only direct
// conflicts (it is not transitively reduced); depth is the number of
// launches on the longest chain (0 for a program without launches).
//===----------------------------------------------------------------------===//
#ifndef DSC_RUNTIME_LAUNCHGRAPH_H
#define DSC_RUNTIME_LAUNCHGRAPH_H

#include "dsc/runtime/MemoryPlan.h"
#include "dsc/runtime/Plan.h"

#include <cstdint>
#include <vector>

namespace dsc::runtime {

struct LaunchGraph {
  std::vector<std::vector<int64_t>> preds; ///< per launch: the launches it waits for
  int64_t depth = 0;                       ///< launches on the longest chain
};

/// The dependency graph of `program`'s launches under `memory` (planMemory's
/// result for the call: the arena offsets that decide which activations
/// share bytes). `arenaAliasing` false leaves the byte sharing out (the
/// values' own dataflow only: what a schedule-aware memory plan would allow).
LaunchGraph launchGraph(const Program &program, const MemoryPlan &memory,
                        bool arenaAliasing = true);

} // namespace dsc::runtime

#endif // DSC_RUNTIME_LAUNCHGRAPH_H
