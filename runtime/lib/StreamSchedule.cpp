//===- StreamSchedule.cpp - Launches spread over streams along their dependencies ===//
//
// See StreamSchedule.h. clock[s][t]: the latest launch of stream t that is
// complete before stream s's next launch starts (-1: none); done[j]: stream
// s's clock right after launch j (what waiting for j's event brings).
//===----------------------------------------------------------------------===//
#include "dsc/runtime/StreamSchedule.h"

#include <algorithm>

namespace dsc::runtime {

namespace {
/// StreamSchedule::order of a schedule: the stream of the launch issued
/// last continues while its next launch's waits are issued, else the
/// earliest unissued launch goes (always possible: whatever it waits for
/// and its stream's earlier launches come before it in program order).
std::vector<int64_t> issueOrder(const StreamSchedule &s) {
  const size_t n = s.stream.size();
  std::vector<std::vector<int64_t>> queue(size_t(std::max(1, s.streams)));
  for (size_t j = 0; j < n; ++j)
    queue[size_t(s.stream[j])].push_back(int64_t(j));
  std::vector<size_t> head(queue.size(), 0);
  std::vector<uint8_t> issued(n, 0);
  std::vector<int64_t> order;
  order.reserve(n);
  auto ready = [&](int64_t j) {
    return std::all_of(s.waits[size_t(j)].begin(), s.waits[size_t(j)].end(),
                       [&](int64_t i) { return issued[size_t(i)] != 0; });
  };
  size_t earliest = 0; // every launch before it is issued
  int current = n ? s.stream[0] : 0;
  while (order.size() < n) {
    const std::vector<int64_t> &q = queue[size_t(current)];
    int64_t next = head[size_t(current)] < q.size() ? q[head[size_t(current)]] : -1;
    if (next < 0 || !ready(next)) {
      while (issued[earliest])
        ++earliest;
      next = int64_t(earliest);
      current = s.stream[earliest];
    }
    issued[size_t(next)] = 1;
    ++head[size_t(current)];
    order.push_back(next);
  }
  return order;
}
} // namespace

StreamSchedule scheduleStreams(const LaunchGraph &graph, int maxStreams) {
  const size_t n = graph.preds.size();
  const int cap = std::max(1, maxStreams);
  StreamSchedule out;
  out.stream.assign(n, 0);
  out.waits.assign(n, {});
  // heir[i]: the successor of i on the longest path from i to the end (the
  // most launches after it; ties: the earliest), the one launch that may
  // continue i's stream. Every other successor forks, so the dependent chain
  // that decides the step's time stays on one stream (its edges are stream
  // order: programmatic dependent launches) and the branches leave it.
  std::vector<int64_t> height(n, 1), heir(n, -1);
  for (size_t j = n; j-- > 0;)
    for (int64_t i : graph.preds[j]) {
      const size_t u = size_t(i);
      if (height[j] + 1 > height[u] || (height[j] + 1 == height[u] && int64_t(j) < heir[u])) {
        height[u] = height[j] + 1;
        heir[u] = int64_t(j);
      }
    }
  std::vector<std::vector<int64_t>> clock(size_t(cap), std::vector<int64_t>(size_t(cap), -1));
  std::vector<std::vector<int64_t>> done(n);
  std::vector<int64_t> last(size_t(cap), -1), used(size_t(cap), -1); // last launch, last use order
  for (size_t j = 0; j < n; ++j) {
    const std::vector<int64_t> &preds = graph.preds[j];
    int s = 0;
    // Continue the stream of the latest predecessor whose heir this launch is
    // and that is still its stream's last launch; else (a fork, or a root)
    // the least recently used stream whose last launch's heir is issued
    // (no chain waits to continue it), or the least recently used stream.
    int chain = -1;
    for (auto it = preds.rbegin(); it != preds.rend() && chain < 0; ++it)
      if (heir[size_t(*it)] == int64_t(j) && last[size_t(out.stream[size_t(*it)])] == *it)
        chain = out.stream[size_t(*it)];
    if (chain >= 0 || cap == 1) {
      s = chain >= 0 ? chain : 0;
    } else if (j > 0) {
      auto free = [&](int t) {
        return last[size_t(t)] < 0 || heir[size_t(last[size_t(t)])] < int64_t(j);
      };
      int best = -1;
      for (int t = 0; t < cap; ++t)
        if (free(t) && (best < 0 || used[size_t(t)] < used[size_t(best)]))
          best = t;
      if (best < 0)
        for (int t = 0; t < cap; ++t)
          if (best < 0 || used[size_t(t)] < used[size_t(best)])
            best = t;
      s = best;
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
  out.order = issueOrder(out);
  return out;
}

StepStreams scheduleSteps(const LaunchGraph &launches, std::span<const CallStep> steps,
                          int maxStreams) {
  StepStreams out;
  const size_t n = launches.preds.size();
  out.stepOf.assign(n, 0);
  bool plain = true; // every step one launch or one native fusion
  for (size_t s = 0; s < steps.size(); ++s) {
    plain = plain && (steps[s].kind == CallStep::Kind::Launch ||
                      steps[s].kind == CallStep::Kind::NativeFusion);
    for (size_t k = steps[s].first; k < steps[s].end && k < n; ++k)
      out.stepOf[k] = s;
  }
  out.graph.preds.assign(steps.size(), {});
  std::vector<int64_t> chain(steps.size(), 0);
  for (size_t s = 0; s < steps.size(); ++s) {
    std::vector<int64_t> &preds = out.graph.preds[s];
    for (size_t k = steps[s].first; k < steps[s].end && k < n; ++k)
      for (int64_t i : launches.preds[k])
        if (out.stepOf[size_t(i)] < s) // a launch of the same step: the step's own order
          preds.push_back(int64_t(out.stepOf[size_t(i)]));
    std::sort(preds.begin(), preds.end());
    preds.erase(std::unique(preds.begin(), preds.end()), preds.end());
    int64_t longest = 0;
    for (int64_t i : preds)
      longest = std::max(longest, chain[size_t(i)]);
    chain[s] = longest + 1;
    out.graph.depth = std::max(out.graph.depth, chain[s]);
  }
  out.schedule = scheduleStreams(out.graph, plain ? maxStreams : 1);
  out.signals.assign(steps.size(), 0);
  for (const std::vector<int64_t> &waits : out.schedule.waits)
    for (int64_t i : waits)
      out.signals[size_t(i)] = 1;
  for (int64_t i : out.schedule.joins)
    out.signals[size_t(i)] = 1;
  return out;
}

} // namespace dsc::runtime
