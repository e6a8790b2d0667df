//===- GraphCache.h - One Session's CUDA graphs, per (program, call shape) --===//
//
// What: the captured graphs of one CudaSession, one entry per (program
// index, call shape). A call shape is the CallPlan's (CallPlan.h), compared
// with sameCallClass, so every decode call of a sequence finds the same
// entry. Each entry walks eager -> capture -> replay: the first call runs
// eagerly (it sizes every buffer), the second is captured, every later one
// replays the graph (next()). A failed capture turns the entry eager for
// good. invalidate(program) drops the graphs of a program whose device
// addresses moved (a grown arena or scratch); its next call runs eagerly,
// the one after re-captures.
//
// Why: graphs used to live in a map keyed by the Session's token-input host
// tensor; keying by plan indices and call shape needs no host address and
// makes the Session (its CudaSession) the owner of its graphs.
//
// Invariants: at most kEntries entries, most recently used first (entry()
// moves the one it returns to the front; the least recently used one is
// dropped when a new one does not fit); references returned by entry() stay
// valid until that entry is dropped. No device is needed except to destroy
// a graph (hal::Graph). Not thread-safe: the owning session's calls are
// serialised (one call at a time per Session).
//===----------------------------------------------------------------------===//
#ifndef DSC_RUNTIME_CUDA_GRAPHCACHE_H
#define DSC_RUNTIME_CUDA_GRAPHCACHE_H

#include "dsc/runtime/CallPlan.h"
#include "runtime/cuda/hal/Graph.h"

#include <cstdint>
#include <list>

namespace dsc::cuda {

class GraphCache {
public:
  static constexpr size_t kEntries = 8;
  enum class Action { Eager, Capture, Replay };
  struct Entry {
    int64_t program = -1;
    runtime::CallShape shape;
    int calls = 0;         ///< calls run without a graph since it was made or invalidated
    bool disabled = false; ///< a capture failed: eager from now on
    hal::Graph graph;
    long long replays = 0; ///< graph launches, over the entry's lifetime
  };

  /// The entry of (program, shape), made on first use, moved to the front.
  Entry &entry(int64_t program, const runtime::CallShape &shape);
  /// What this call of `e` does (and counts it): Replay when it has a
  /// graph, Capture for the second call of a fresh or invalidated entry,
  /// else Eager.
  static Action next(Entry &e);
  /// Drops the graphs of `program` (every program when -1); an entry that
  /// had one starts over (one eager call, then a capture).
  void invalidate(int64_t program = -1);
  const std::list<Entry> &entries() const { return entries_; }

private:
  std::list<Entry> entries_;
};

} // namespace dsc::cuda

#endif // DSC_RUNTIME_CUDA_GRAPHCACHE_H
