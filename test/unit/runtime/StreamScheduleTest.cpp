//===- StreamScheduleTest.cpp - Launches spread over streams ---------------===//
//
// scheduleStreams (StreamSchedule.h) on graphs worked out by hand (a chain,
// a diamond, one stream only), and on random graphs and the tiny6 decode
// program's: every dependency is ordered by stream order and waits (the
// happens-before closure built here from the schedule alone), at most
// maxStreams streams, and independent chains really do land on different
// streams. scheduleSteps (a call's steps as the nodes) on a hand-worked
// call, a row-tiled call, and tiny6 decode with every fusion as one step:
// every launch dependency becomes a step dependency (or stays inside a step).
//===----------------------------------------------------------------------===//
#include "dsc/runtime/StreamSchedule.h"
#include "dsc/runtime/PlanFile.h"
#include "test/unit/support/Tiny6Plan.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

using namespace dsc::runtime;

namespace {

LaunchGraph graphOf(std::vector<std::vector<int64_t>> preds) {
  LaunchGraph g;
  g.preds = std::move(preds);
  return g;
}

CallStep stepOf(size_t first, size_t end, CallStep::Kind kind = CallStep::Kind::Launch) {
  CallStep s;
  s.kind = kind;
  s.first = first;
  s.end = end;
  return s;
}

/// Checks that every edge of g is ordered by s: launch i happens before j
/// when i is earlier on j's stream, or j waits for a launch that i happens
/// before (or is), transitively; and that the joins cover every stream.
void expectOrdered(const LaunchGraph &g, const StreamSchedule &s, int maxStreams) {
  const size_t n = g.preds.size();
  ASSERT_EQ(s.stream.size(), n);
  ASSERT_LE(s.streams, std::max(1, maxStreams));
  // before[j][i]: i happens before j (i < j).
  std::vector<std::vector<bool>> before(n, std::vector<bool>(n, false));
  std::vector<int64_t> lastOn(size_t(s.streams), -1);
  for (size_t j = 0; j < n; ++j) {
    ASSERT_LT(s.stream[j], s.streams);
    auto absorb = [&](int64_t i) {
      before[j][size_t(i)] = true;
      for (size_t k = 0; k < n; ++k)
        if (before[size_t(i)][k])
          before[j][k] = true;
    };
    if (lastOn[size_t(s.stream[j])] >= 0)
      absorb(lastOn[size_t(s.stream[j])]);
    for (int64_t i : s.waits[j]) {
      ASSERT_LT(size_t(i), j);
      EXPECT_NE(s.stream[size_t(i)], s.stream[j]) << "a wait on the launch's own stream";
      absorb(i);
    }
    lastOn[size_t(s.stream[j])] = int64_t(j);
    for (int64_t i : g.preds[j])
      EXPECT_TRUE(before[j][size_t(i)]) << "edge " << i << " -> " << j << " not ordered";
  }
  // After the joins, stream 0 has every stream's last launch behind it.
  std::vector<bool> joined(n, false);
  const int64_t tail0 = lastOn[0];
  for (size_t k = 0; k < n; ++k)
    joined[k] = tail0 >= 0 && (size_t(tail0) == k || before[size_t(tail0)][k]);
  for (int64_t i : s.joins) {
    joined[size_t(i)] = true;
    for (size_t k = 0; k < n; ++k)
      if (before[size_t(i)][k])
        joined[k] = true;
  }
  for (int t = 1; t < s.streams; ++t)
    EXPECT_TRUE(joined[size_t(lastOn[size_t(t)])]) << "stream " << t << " not joined";
}

/// Checks StreamSchedule::order: a permutation in which each stream's
/// launches keep their order and every wait follows the launch it waits for
/// (so capturing in it builds the graph program order builds), and in which
/// a launch's stream successor follows it at once when its waits are issued.
void expectIssueOrder(const StreamSchedule &s) {
  const size_t n = s.stream.size();
  ASSERT_EQ(s.order.size(), n);
  std::vector<int64_t> at(n, -1), lastOn(size_t(s.streams), -1);
  for (size_t p = 0; p < n; ++p) {
    const int64_t j = s.order[p];
    ASSERT_GE(j, 0);
    ASSERT_LT(size_t(j), n);
    ASSERT_EQ(at[size_t(j)], -1) << "launch " << j << " issued twice";
    at[size_t(j)] = int64_t(p);
    const int t = s.stream[size_t(j)];
    EXPECT_LT(lastOn[size_t(t)], j) << "stream " << t << " out of order at " << j;
    lastOn[size_t(t)] = j;
  }
  for (size_t j = 0; j < n; ++j)
    for (int64_t i : s.waits[j])
      EXPECT_LT(at[size_t(i)], at[j]) << j << " issued before " << i << ", which it waits for";
  for (size_t p = 0; p + 1 < n; ++p) { // the stream continues where it can
    const int64_t j = s.order[p];
    int64_t next = -1;
    for (size_t k = size_t(j) + 1; k < n && next < 0; ++k)
      if (s.stream[k] == s.stream[size_t(j)])
        next = int64_t(k);
    if (next < 0)
      continue;
    const bool ready = std::all_of(s.waits[size_t(next)].begin(), s.waits[size_t(next)].end(),
                                   [&](int64_t i) { return at[size_t(i)] <= int64_t(p); });
    if (ready) {
      EXPECT_EQ(s.order[p + 1], next) << "launch " << j << "'s stream successor waits";
    }
  }
}

TEST(StreamSchedule, AChainStaysOnOneStream) {
  const LaunchGraph g = graphOf({{}, {0}, {1}, {2}});
  const StreamSchedule s = scheduleStreams(g, 4);
  EXPECT_EQ(s.streams, 1);
  EXPECT_EQ(s.stream, (std::vector<int>{0, 0, 0, 0}));
  EXPECT_EQ(s.waits, (std::vector<std::vector<int64_t>>{{}, {}, {}, {}}));
  EXPECT_TRUE(s.joins.empty());
}

TEST(StreamSchedule, ADiamondForksAndJoins) {
  // 0 -> 1, 0 -> 2, {1, 2} -> 3: 1 continues stream 0, 2 forks onto stream 1
  // (waiting for 0), 3 continues 2's stream and waits for 1.
  const LaunchGraph g = graphOf({{}, {0}, {0}, {1, 2}});
  const StreamSchedule s = scheduleStreams(g, 4);
  EXPECT_EQ(s.streams, 2);
  EXPECT_EQ(s.stream, (std::vector<int>{0, 0, 1, 1}));
  EXPECT_EQ(s.waits, (std::vector<std::vector<int64_t>>{{}, {}, {0}, {1}}));
  EXPECT_EQ(s.joins, (std::vector<int64_t>{3}));
  expectOrdered(g, s, 4);
  EXPECT_EQ(s.order, (std::vector<int64_t>{0, 1, 2, 3})); // program order already is
  expectIssueOrder(s);
}

TEST(StreamSchedule, TheLongestChainKeepsTheStreamWhenABranchIsIssuedFirst) {
  // 0 -> 1 -> 5 (a branch of two, issued first) and 0 -> 2 -> 3 -> 4 -> 5:
  // 0's heir is 2 (four launches to the end through it, two through 1), so
  // the chain 0 2 3 4 5 stays on stream 0 and 1 forks onto stream 1; 5
  // continues 4 (its heir) and waits for 1. (The first-come rule put 1 on
  // stream 0 and sent the long chain across a fork.)
  const LaunchGraph g = graphOf({{}, {0}, {0}, {2}, {3}, {1, 4}});
  const StreamSchedule s = scheduleStreams(g, 4);
  EXPECT_EQ(s.stream, (std::vector<int>{0, 1, 0, 0, 0, 0}));
  EXPECT_EQ(s.waits, (std::vector<std::vector<int64_t>>{{}, {0}, {}, {}, {}, {1}}));
  EXPECT_TRUE(s.joins.empty());
  expectOrdered(g, s, 4);
  // Captured heir first: 0's chain 2 3 4 follows it, the branch 1 goes
  // when 5 needs it (the FFN entry's gate before its mixes).
  EXPECT_EQ(s.order, (std::vector<int64_t>{0, 2, 3, 4, 1, 5}));
  expectIssueOrder(s);
}

TEST(StreamSchedule, AForkTakesAStreamNoChainWaitsFor) {
  // Roots 0, 1, 2 and 0 -> 3, two streams: 0 on stream 0, 1 forks onto
  // stream 1; 2 forks too, and stream 0 is the least recently used, but 0's
  // heir (3) is still to come there, so 2 takes stream 1 and 3 continues 0
  // with no wait. (Least recently used alone put 2 on stream 0 and sent 3
  // across a fork.)
  const LaunchGraph g = graphOf({{}, {}, {}, {0}});
  const StreamSchedule s = scheduleStreams(g, 2);
  EXPECT_EQ(s.stream, (std::vector<int>{0, 1, 1, 0}));
  EXPECT_EQ(s.waits, (std::vector<std::vector<int64_t>>{{}, {}, {}, {}}));
  EXPECT_EQ(s.joins, (std::vector<int64_t>{2}));
  expectOrdered(g, s, 2);
}

TEST(StreamSchedule, OneStreamNeedsNoWaits) {
  const LaunchGraph g = graphOf({{}, {0}, {0}, {1, 2}, {}, {4, 3}});
  const StreamSchedule s = scheduleStreams(g, 1);
  EXPECT_EQ(s.streams, 1);
  for (size_t j = 0; j < g.preds.size(); ++j) {
    EXPECT_EQ(s.stream[j], 0);
    EXPECT_TRUE(s.waits[j].empty());
  }
}

TEST(StreamSchedule, RandomGraphsAreOrdered) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    const size_t n = 1 + rng() % 40;
    std::vector<std::vector<int64_t>> preds(n);
    for (size_t j = 1; j < n; ++j)
      for (size_t i = 0; i < j; ++i)
        if (rng() % 5 == 0)
          preds[j].push_back(int64_t(i));
    const LaunchGraph g = graphOf(preds);
    for (int streams : {1, 2, 3, 8}) {
      SCOPED_TRACE("trial " + std::to_string(trial) + " streams " + std::to_string(streams));
      const StreamSchedule s = scheduleStreams(g, streams);
      expectOrdered(g, s, streams);
      expectIssueOrder(s);
    }
  }
}

TEST(StreamSchedule, Tiny6DecodeIsOrderedBranchesAndItsStepsKeepEveryDependency) {
  Expected<Plan> plan = readPlanFile(dsc::test::tiny6CpuPlan());
  ASSERT_TRUE(plan) << plan.status().message();
  for (const Program &p : plan->programs) {
    if (p.name != "decode")
      continue;
    Expected<MemoryPlan> memory = planMemory(*plan, p, 1, 1, /*capacity=*/true);
    ASSERT_TRUE(memory) << memory.status().message();
    const LaunchGraph g = launchGraph(p, *memory);
    const StreamSchedule s = scheduleStreams(g, 4);
    expectOrdered(g, s, 4);
    expectIssueOrder(s);
    if (g.depth < int64_t(p.launches.size()))
      EXPECT_GT(s.streams, 1) << "independent steps exist (depth " << g.depth << " of "
                              << p.launches.size() << "), so some run on another stream";
    // Every fusion's contiguous launches as one native step.
    std::vector<CallStep> steps;
    size_t fused = 0;
    for (size_t k = 0; k < p.launches.size(); ++k) {
      const int64_t f = p.launches[k].fusion;
      if (f >= 0 && !steps.empty() && steps.back().kind == CallStep::Kind::NativeFusion &&
          p.launches[steps.back().first].fusion == f) {
        steps.back().end = k + 1;
        ++fused;
        continue;
      }
      steps.push_back(stepOf(k, k + 1, f >= 0 ? CallStep::Kind::NativeFusion
                                              : CallStep::Kind::Launch));
    }
    ASSERT_GT(fused, 0u) << "tiny6 decode has fusions";
    const StepStreams ss = scheduleSteps(g, steps, 4);
    for (size_t j = 0; j < g.preds.size(); ++j)
      for (int64_t i : g.preds[j]) {
        const size_t a = ss.stepOf[size_t(i)], b = ss.stepOf[j];
        ASSERT_LE(a, b);
        if (a != b)
          EXPECT_TRUE(std::binary_search(ss.graph.preds[b].begin(), ss.graph.preds[b].end(),
                                         int64_t(a)))
              << "launch edge " << i << " -> " << j << " lost between steps " << a << ", " << b;
      }
    expectOrdered(ss.graph, ss.schedule, 4);
    expectIssueOrder(ss.schedule);
    for (size_t t = 0; t < steps.size(); ++t) // a step signals iff someone waits for it
      EXPECT_EQ(ss.signals[t] != 0,
                std::any_of(ss.schedule.waits.begin(), ss.schedule.waits.end(),
                            [&](const std::vector<int64_t> &w) {
                              return std::find(w.begin(), w.end(), int64_t(t)) != w.end();
                            }) ||
                    std::find(ss.schedule.joins.begin(), ss.schedule.joins.end(), int64_t(t)) !=
                        ss.schedule.joins.end());
  }
}

TEST(StreamSchedule, StepsGroupTheirLaunches) {
  // Launches 1 and 2 form one native fusion (2 also waits for 1: inside the
  // step). Steps: {0}, {1, 2}, {3}, {4}; step 2 needs step 1, step 3 nothing.
  const LaunchGraph g = graphOf({{}, {0}, {0, 1}, {1, 2}, {}});
  const std::vector<CallStep> steps = {stepOf(0, 1),
                                       stepOf(1, 3, CallStep::Kind::NativeFusion),
                                       stepOf(3, 4), stepOf(4, 5)};
  const StepStreams s = scheduleSteps(g, steps, 4);
  EXPECT_EQ(s.stepOf, (std::vector<size_t>{0, 1, 1, 2, 3}));
  EXPECT_EQ(s.graph.preds, (std::vector<std::vector<int64_t>>{{}, {0}, {1}, {}}));
  EXPECT_EQ(s.graph.depth, 3);
  // 0, 1, 2 chain on stream 0; the root 3 takes the least recently used
  // stream 1, which stream 0 joins at the end.
  EXPECT_EQ(s.schedule.stream, (std::vector<int>{0, 0, 0, 1}));
  EXPECT_EQ(s.schedule.joins, (std::vector<int64_t>{3}));
  EXPECT_EQ(s.signals, (std::vector<uint8_t>{0, 0, 0, 1}));
  expectOrdered(s.graph, s.schedule, 4);
}

TEST(StreamSchedule, RowTiledCallsStayOnOneStream) {
  const LaunchGraph g = graphOf({{}, {}, {}});
  const std::vector<CallStep> steps = {stepOf(0, 1), stepOf(1, 3, CallStep::Kind::RowTiles)};
  const StepStreams s = scheduleSteps(g, steps, 4);
  EXPECT_EQ(s.schedule.streams, 1);
  EXPECT_EQ(s.schedule.stream, (std::vector<int>{0, 0}));
  EXPECT_EQ(s.signals, (std::vector<uint8_t>{0, 0}));
}
} // namespace
