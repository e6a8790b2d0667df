//===- StreamSchedule.cpp - Launches spread over streams along their dependencies ===//
//
// See StreamSchedule.h. clock[s][t]: the latest launch of stream t that is
// complete before stream s's next launch starts (-1: none); done[j]: stream
// s's clock right after launch j (what waiting for j's event brings).
//===----------------------------------------------------------------------===//
#include "dsc/runtime/StreamSchedule.h"

#include <algorithm>

namespace dsc::runtime {

StreamSchedule scheduleStreams(const LaunchGraph &graph, int maxStreams) {
  const size_t n = graph.preds.size();
  const int cap = std::max(1, maxStreams);
  StreamSchedule out;
  out.stream.assign(n, 0);
  out.waits.assign(n, {});
  std::vector<std::vector<int64_t>> clock(size_t(cap), std::vector<int64_t>(size_t(cap), -1));
  std::vector<std::vector<int64_t>> done(n);
  std::vector<int64_t> last(size_t(cap), -1), used(size_t(cap), -1); // last launch, last use order
  for (size_t j = 0; j < n; ++j) {
    const std::vector<int64_t> &preds = graph.preds[j];
    int s = 0;
    // Continue the chain of the latest predecessor that is still its
    // stream's last launch; else (a fork, or a root) the least recently used
    // stream.
    int chain = -1;
    for (auto it = preds.rbegin(); it != preds.rend() && chain < 0; ++it)
      if (last[size_t(out.stream[size_t(*it)])] == *it)
        chain = out.stream[size_t(*it)];
    if (chain >= 0 || cap == 1) {
      s = chain >= 0 ? chain : 0;
    } else if (j > 0) {
      for (int t = 0; t < cap; ++t)
        if (used[size_t(t)] < used[size_t(s)])
          s = t;
    }
    std::vector<int64_t> &c = clock[size_t(s)];
    for (auto it = preds.rbegin(); it != preds.rend(); ++it) { // latest first: fewer waits
      const int64_t i = *it;
      const int t = out.stream[size_t(i)];
      if (t == s || c[size_t(t)] >= i)
        continue; // stream order, or a wait already made it complete
      out.waits[j].push_back(i);
      for (int u = 0; u < cap; ++u)
        c[size_t(u)] = std::max(c[size_t(u)], done[size_t(i)][size_t(u)]);
    }
    std::sort(out.waits[j].begin(), out.waits[j].end());
    out.stream[j] = s;
    c[size_t(s)] = int64_t(j);
    done[j] = c;
    last[size_t(s)] = int64_t(j);
    used[size_t(s)] = int64_t(j);
    out.streams = std::max(out.streams, s + 1);
  }
  for (int t = 1; t < out.streams; ++t) // unless stream 0 already waited for it
    if (last[size_t(t)] >= 0 && clock[0][size_t(t)] < last[size_t(t)])
      out.joins.push_back(last[size_t(t)]);
  return out;
}

} // namespace dsc::runtime
