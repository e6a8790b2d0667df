//===- LaunchGraph.cpp - The launches of one call as a dependency graph ----===//
//
// See LaunchGraph.h. Each launch's reads and writes become accesses to
// "locations": a state buffer (however many slots name it), an unplanned
// or empty slot; a planned activation is the byte range [offset, offset +
// alignedBytes) of the arena (or, without arena aliasing, its own slot). A launch conflicts with
// the last writer of every location it touches and, for the locations it
// writes, with every reader since that writer. Cost: launches x (accesses
// x earlier accesses) in the worst case; programs have a few hundred launches.
//===----------------------------------------------------------------------===//
#include "dsc/runtime/LaunchGraph.h"

#include <algorithm>
#include <set>

namespace dsc::runtime {
namespace {

struct Access {
  int64_t launch = 0;
  bool write = false;
  int64_t slot = -1;           ///< unplanned slots (and planned ones without aliasing)
  uint64_t begin = 0, end = 0; ///< planned activations with aliasing: arena bytes
};

bool overlaps(const Access &a, const Access &b) {
  if (a.slot >= 0 || b.slot >= 0)
    return a.slot == b.slot;
  return a.begin < b.end && b.begin < a.end;
}

} // namespace

LaunchGraph launchGraph(const Program &program, const MemoryPlan &memory, bool arenaAliasing) {
  LaunchGraph g;
  const size_t n = program.launches.size();
  g.preds.resize(n);
  std::vector<Access> history; // every earlier access, in launch order
  std::vector<int64_t> chain(n, 0);
  for (size_t j = 0; j < n; ++j) {
    const Launch &l = program.launches[j];
    std::vector<Access> mine;
    auto add = [&](int64_t v, bool write) {
      if (v < 0 || size_t(v) >= program.values.size() ||
          program.values[size_t(v)].kind == ValueKind::Weight)
        return;
      Access a;
      a.launch = int64_t(j);
      a.write = write;
      const ValueSlot &slot = program.values[size_t(v)];
      const bool planned = size_t(v) < memory.values.size() && memory.values[size_t(v)].planned &&
                           memory.values[size_t(v)].alignedBytes > 0;
      if (planned && arenaAliasing) {
        a.begin = memory.values[size_t(v)].offset;
        a.end = a.begin + memory.values[size_t(v)].alignedBytes;
      } else if (slot.kind == ValueKind::State && slot.state >= 0) {
        // Slots naming one state buffer are one location (the buffer).
        a.slot = int64_t(program.values.size()) + slot.state;
      } else {
        a.slot = v;
      }
      mine.push_back(a);
    };
    for (int64_t v : l.inputs)
      add(v, false);
    for (int64_t v : l.outputs)
      add(v, true);
    std::set<int64_t> deps;
    for (const Access &a : mine) {
      // Walk back to the last writer of the location: it and (for a write)
      // every reader after it are predecessors.
      for (auto it = history.rbegin(); it != history.rend(); ++it) {
        if (!overlaps(a, *it))
          continue;
        if (it->write || a.write)
          deps.insert(it->launch);
        if (it->write && it->begin <= a.begin && a.end <= it->end && it->slot == a.slot)
          break; // a write covering the location: nothing earlier matters
      }
    }
    g.preds[j].assign(deps.begin(), deps.end());
    int64_t longest = 0;
    for (int64_t i : g.preds[j])
      longest = std::max(longest, chain[size_t(i)]);
    chain[j] = longest + 1;
    g.depth = std::max(g.depth, chain[j]);
    history.insert(history.end(), mine.begin(), mine.end());
  }
  return g;
}

} // namespace dsc::runtime
