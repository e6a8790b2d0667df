//===- StreamScheduleTest.cpp - Launches spread over streams ---------------===//
//
// scheduleStreams (StreamSchedule.h) on graphs worked out by hand (a chain,
// a diamond, one stream only), and on random graphs and the tiny6 decode
// program's: every dependency is ordered by stream order and waits (the
// happens-before closure built here from the schedule alone), at most
// maxStreams streams, and independent chains really do land on different
// streams.
//===----------------------------------------------------------------------===//
#include "dsc/runtime/StreamSchedule.h"
#include "dsc/runtime/PlanFile.h"
#include "test/unit/support/Tiny6Plan.h"

#include <gtest/gtest.h>

#include <random>

using namespace dsc::runtime;

namespace {

LaunchGraph graphOf(std::vector<std::vector<int64_t>> preds) {
  LaunchGraph g;
  g.preds = std::move(preds);
  return g;
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
      expectOrdered(g, scheduleStreams(g, streams), streams);
    }
  }
}

TEST(StreamSchedule, Tiny6DecodeIsOrderedAndBranches) {
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
    if (g.depth < int64_t(p.launches.size()))
      EXPECT_GT(s.streams, 1) << "independent steps exist (depth " << g.depth << " of "
                              << p.launches.size() << "), so some run on another stream";
  }
}

} // namespace
