//===- LaunchGraphTest.cpp - Launch dependencies of one call ---------------===//
//
// launchGraph (LaunchGraph.h) on hand-built programs whose dependencies are
// worked out by hand (values, states, weights, and activations that share
// arena bytes, with arena offsets set by the test, not by planMemory), and
// on the tiny6 fixture plan's decode program: every edge joins two launches
// that touch a common location, one of them writing, and every such pair
// with no write between them is ordered by some path.
//===----------------------------------------------------------------------===//
#include "dsc/runtime/LaunchGraph.h"
#include "dsc/runtime/PlanFile.h"
#include "test/unit/support/ProgramBuilder.h"
#include "test/unit/support/Tiny6Plan.h"

#include <gtest/gtest.h>

#include <algorithm>

using namespace dsc::runtime;

namespace {

ValueSlot slot(ValueKind kind, std::string name) {
  ValueSlot v;
  v.kind = kind;
  v.dtype = DType::F32;
  v.shape = {4};
  v.name = std::move(name);
  return v;
}

using dsc::test::launchOf;

/// A memory plan placing every Activation slot at `offsets[slot]` with 64 bytes.
MemoryPlan placed(const Program &p, const std::vector<uint64_t> &offsets) {
  MemoryPlan m;
  m.values.resize(p.values.size());
  for (size_t i = 0; i < p.values.size(); ++i) {
    const bool act = p.values[i].kind == ValueKind::Activation || p.values[i].kind == ValueKind::Input;
    m.values[i].planned = act;
    m.values[i].alignedBytes = m.values[i].bytes = act ? 64 : 0;
    m.values[i].offset = i < offsets.size() ? offsets[i] : 0;
  }
  return m;
}

using Preds = std::vector<std::vector<int64_t>>;

TEST(LaunchGraph, IndependentBranchesJoin) {
  // L0: x -> a, L1: x -> b, L2: a, b -> c. Disjoint bytes.
  Program p;
  p.values = {slot(ValueKind::Input, "x"), slot(ValueKind::Activation, "a"),
              slot(ValueKind::Activation, "b"), slot(ValueKind::Activation, "c")};
  p.launches = {launchOf({0}, {1}), launchOf({0}, {2}), launchOf({1, 2}, {3})};
  const LaunchGraph g = launchGraph(p, placed(p, {0, 64, 128, 192}));
  EXPECT_EQ(g.preds, (Preds{{}, {}, {0, 1}}));
  EXPECT_EQ(g.depth, 2);
}

TEST(LaunchGraph, SharedArenaBytesOrderTheirUsers) {
  // L0: x -> a, L1: a -> b, L2: x -> c, L3: b, c -> d, with c in a's bytes
  // (a is dead after L1). Values alone: L2 waits for nothing, depth 3; with
  // the bytes: L2 writes over a, after L0 wrote and L1 read it, depth 4.
  Program p;
  p.values = {slot(ValueKind::Input, "x"), slot(ValueKind::Activation, "a"),
              slot(ValueKind::Activation, "b"), slot(ValueKind::Activation, "c"),
              slot(ValueKind::Activation, "d")};
  p.launches = {launchOf({0}, {1}), launchOf({1}, {2}), launchOf({0}, {3}), launchOf({2, 3}, {4})};
  const MemoryPlan m = placed(p, {0, 64, 128, 64, 192});
  const LaunchGraph values = launchGraph(p, m, /*arenaAliasing=*/false);
  EXPECT_EQ(values.preds, (Preds{{}, {0}, {}, {1, 2}}));
  EXPECT_EQ(values.depth, 3);
  const LaunchGraph bytes = launchGraph(p, m);
  EXPECT_EQ(bytes.preds, (Preds{{}, {0}, {0, 1}, {1, 2}}));
  EXPECT_EQ(bytes.depth, 4);
}

TEST(LaunchGraph, StatesOrderReadersAndWritersWeightsNothing) {
  // L0 writes state s (reading weight w), L1 reads s and w, L2 writes s, L3
  // reads only w. The state orders L1 after L0 and L2 after both; w orders
  // nothing.
  Program p;
  p.values = {slot(ValueKind::Weight, "w"), slot(ValueKind::State, "s"),
              slot(ValueKind::Activation, "y"), slot(ValueKind::Activation, "z")};
  p.launches = {launchOf({0}, {1}), launchOf({0, 1}, {2}), launchOf({0}, {1}), launchOf({0}, {3})};
  const LaunchGraph g = launchGraph(p, placed(p, {0, 0, 64, 128}));
  EXPECT_EQ(g.preds, (Preds{{}, {0}, {0, 1}, {}}));
  EXPECT_EQ(g.depth, 3);
}

TEST(LaunchGraph, SlotsOfOneStateBufferAreOneValue) {
  // Two slots name state 0 (as lowering may make for one buffer): L0 writes
  // through one, L1 through the other, L2 reads the first.
  Program p;
  p.values = {slot(ValueKind::State, "s"), slot(ValueKind::State, "s again"),
              slot(ValueKind::Input, "x")};
  p.values[0].state = p.values[1].state = 0;
  p.launches = {launchOf({2}, {0}), launchOf({2}, {1}), launchOf({0}, {})};
  const LaunchGraph g = launchGraph(p, placed(p, {0, 0, 0}));
  EXPECT_EQ(g.preds, (Preds{{}, {0}, {1}}));
  EXPECT_EQ(g.depth, 3);
}

TEST(LaunchGraph, Tiny6DecodeEdgesAreConflictsAndConflictsAreOrdered) {
  Expected<Plan> plan = readPlanFile(dsc::test::tiny6CpuPlan());
  ASSERT_TRUE(plan) << plan.status().message();
  const Program *decode = nullptr;
  for (const Program &p : plan->programs)
    if (p.name == "decode")
      decode = &p;
  ASSERT_NE(decode, nullptr);
  Expected<MemoryPlan> memory = planMemory(*plan, *decode, 1, 1, /*capacity=*/true);
  ASSERT_TRUE(memory) << memory.status().message();
  const LaunchGraph g = launchGraph(*decode, *memory);
  const LaunchGraph values = launchGraph(*decode, *memory, false);
  const size_t n = decode->launches.size();
  ASSERT_EQ(g.preds.size(), n);
  EXPECT_GT(g.depth, 0);
  EXPECT_LE(g.depth, int64_t(n));
  EXPECT_LE(values.depth, g.depth) << "byte sharing only adds order";
  // The bytes each launch reads and writes (weights left out).
  struct Range {
    uint64_t begin, end;
    int64_t slot;
    bool write;
  };
  auto touches = [&](size_t j) {
    std::vector<Range> r;
    auto add = [&](int64_t v, bool write) {
      const ValueSlot &s = decode->values[size_t(v)];
      if (s.kind == ValueKind::Weight)
        return;
      const ValueMemory &vm = memory->values[size_t(v)];
      if (vm.planned && vm.alignedBytes > 0)
        r.push_back({vm.offset, vm.offset + vm.alignedBytes, -1, write});
      else if (s.kind == ValueKind::State)
        r.push_back({0, 0, int64_t(decode->values.size()) + s.state, write});
      else
        r.push_back({0, 0, v, write});
    };
    for (int64_t v : decode->launches[j].inputs)
      add(v, false);
    for (int64_t v : decode->launches[j].outputs)
      add(v, true);
    return r;
  };
  auto conflict = [&](size_t i, size_t j) {
    for (const Range &a : touches(i))
      for (const Range &b : touches(j))
        if ((a.write || b.write) &&
            (a.slot >= 0 || b.slot >= 0 ? a.slot == b.slot
                                        : a.begin < b.end && b.begin < a.end))
          return true;
    return false;
  };
  // reach[j]: every launch some path leads from to j.
  std::vector<std::vector<bool>> reach(n, std::vector<bool>(n, false));
  for (size_t j = 0; j < n; ++j)
    for (int64_t i : g.preds[j]) {
      ASSERT_LT(size_t(i), j);
      EXPECT_TRUE(conflict(size_t(i), j)) << "edge " << i << " -> " << j;
      reach[j][size_t(i)] = true;
      for (size_t k = 0; k < n; ++k)
        if (reach[size_t(i)][k])
          reach[j][k] = true;
    }
  for (size_t j = 0; j < n; ++j)
    for (size_t i = 0; i < j; ++i)
      if (conflict(i, j))
        EXPECT_TRUE(reach[j][i]) << "conflict " << i << " -> " << j << " not ordered";
}

TEST(LaunchGraph, Tiny6DecodeOnPrivateBytesHasOnlyTheValuesOrder) {
  // planDeviceMemory gives a decode step's values bytes of their own: its
  // graph is the values' own dataflow (launchGraph without the arena's
  // sharing, computed on the shared layout), strictly shallower than the
  // shared layout's, and every pair of planned values is disjoint.
  Expected<Plan> plan = readPlanFile(dsc::test::tiny6CpuPlan());
  ASSERT_TRUE(plan) << plan.status().message();
  const Program *decode = plan->program("decode");
  ASSERT_NE(decode, nullptr);
  const Program &p = *decode;
  Expected<MemoryPlan> shared = planMemory(*plan, p, 1, 1, /*capacity=*/true);
  Expected<MemoryPlan> own = planDeviceMemory(*plan, p, 1, 1, kPrivateArenaBytes);
  ASSERT_TRUE(shared && own);
  EXPECT_LE(shared->sumBytes, kPrivateArenaBytes) << "a tiny6 decode step is small";
  EXPECT_EQ(own->peakBytes, own->sumBytes);
  EXPECT_EQ(own->sumBytes, shared->sumBytes);
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  for (const ValueMemory &m : own->values)
    if (m.planned && m.alignedBytes)
      ranges.push_back({m.offset, m.offset + m.alignedBytes});
  std::sort(ranges.begin(), ranges.end());
  for (size_t i = 1; i < ranges.size(); ++i)
    EXPECT_LE(ranges[i - 1].second, ranges[i].first) << "two values share bytes";
  const LaunchGraph onOwn = launchGraph(p, *own), valuesOnly = launchGraph(p, *shared, false),
                    onShared = launchGraph(p, *shared);
  EXPECT_EQ(onOwn.preds, valuesOnly.preds);
  EXPECT_LT(onOwn.depth, onShared.depth) << "sharing bytes adds order on tiny6";
  // A limit below the step's values keeps the sharing.
  Expected<MemoryPlan> capped = planDeviceMemory(*plan, p, 1, 1, shared->sumBytes - 1);
  ASSERT_TRUE(capped);
  EXPECT_EQ(capped->peakBytes, shared->peakBytes);
  Expected<MemoryPlan> never = planDeviceMemory(*plan, p, 1, 1, 0);
  ASSERT_TRUE(never);
  EXPECT_EQ(never->peakBytes, shared->peakBytes);
}

} // namespace
