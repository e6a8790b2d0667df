//===- MemoryPlanTest.cpp - The static activation arena ----------------------===//
//
// planMemory (MemoryPlan.h) on hand-built programs with offsets worked out by
// hand, the no-overlap invariant on random programs, HostTensor views, and
// the tiny6 fixture plan: the planned peak against the live bytes the CPU
// Session observes, and logits bit-identical with and without the arena.
//===----------------------------------------------------------------------===//
#include "dsc/runtime/Engine.h"
#include "dsc/runtime/MemoryPlan.h"
#include "dsc/runtime/PlanFile.h"
#include "test/unit/support/SharedDir.h"
#include "test/unit/support/ProgramBuilder.h"
#include "test/unit/support/Tiny6Plan.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <random>

using namespace dsc::runtime;

namespace {

ValueSlot slot(ValueKind kind, DType dtype, std::vector<int64_t> shape, std::string name) {
  ValueSlot v;
  v.kind = kind;
  v.dtype = dtype;
  v.shape = std::move(shape);
  v.name = std::move(name);
  return v;
}

using dsc::test::launchOf;

// --- hand-built programs -------------------------------------------------------

TEST(MemoryPlan, ChainReusesDeadValues) {
  // x -> a -> b -> c: x [-1,0], a [0,1], b [1,2], c [2,3] (output).
  Plan plan;
  Program p;
  p.name = "prefill";
  p.values = {slot(ValueKind::Input, DType::I32, {kTokens}, "x"),         // 8 -> 64
              slot(ValueKind::Activation, DType::F32, {kTokens, 32}, "a"), // 256
              slot(ValueKind::Activation, DType::F32, {kTokens, 64}, "b"), // 512
              slot(ValueKind::Activation, DType::F32, {kTokens, 16}, "c")}; // 128
  p.inputs = {0};
  p.outputs = {3};
  p.launches = {launchOf({0}, {1}), launchOf({1}, {2}), launchOf({2}, {3})};
  Expected<MemoryPlan> m = planMemory(plan, p, /*tokens=*/2, /*startPos=*/0);
  ASSERT_TRUE(m) << m.status().message();
  ASSERT_EQ(m->values.size(), 4u);
  EXPECT_EQ(m->values[0].bytes, 8u);
  EXPECT_EQ(m->values[0].alignedBytes, 64u);
  EXPECT_EQ((std::pair{m->values[0].first, m->values[0].last}), (std::pair<int64_t, int64_t>{-1, 0}));
  EXPECT_EQ((std::pair{m->values[1].first, m->values[1].last}), (std::pair<int64_t, int64_t>{0, 1}));
  EXPECT_EQ((std::pair{m->values[2].first, m->values[2].last}), (std::pair<int64_t, int64_t>{1, 2}));
  EXPECT_EQ((std::pair{m->values[3].first, m->values[3].last}), (std::pair<int64_t, int64_t>{2, 3}));
  // b (largest) at 0; a conflicts with b: above it; c conflicts only with b:
  // a's old place; x conflicts only with a: the gap below it.
  EXPECT_EQ(m->values[2].offset, 0u);
  EXPECT_EQ(m->values[1].offset, 512u);
  EXPECT_EQ(m->values[3].offset, 512u);
  EXPECT_EQ(m->values[0].offset, 0u);
  EXPECT_EQ(m->peakBytes, 768u);
  EXPECT_EQ(m->liveBound, 768u);
  EXPECT_EQ(m->sumBytes, 64u + 256u + 512u + 128u);
}

TEST(MemoryPlan, BestFitTakesTheSmallestGap) {
  // X1 1024 [0,0], X2 512 [0,3], X3 256 [0,0], X4 128 [0,3] stack up to 1920
  // (all written by launch 0);
  // Y 128 [1,3] sees gaps [0,1024) and [1536,1792): best fit takes 1536.
  Plan plan;
  Program p;
  p.name = "prefill";
  p.values = {slot(ValueKind::Input, DType::U8, {kTokens}, "ids"),
              slot(ValueKind::Activation, DType::U8, {1024}, "X1"),
              slot(ValueKind::Activation, DType::U8, {512}, "X2"),
              slot(ValueKind::Activation, DType::U8, {256}, "X3"),
              slot(ValueKind::Activation, DType::U8, {128}, "X4"),
              slot(ValueKind::Activation, DType::U8, {100}, "Y"), // 128 aligned
              slot(ValueKind::Activation, DType::U8, {1}, "out")};
  p.inputs = {0};
  p.outputs = {6};
  p.launches = {launchOf({}, {1, 2, 3, 4}), launchOf({2}, {5}), launchOf({5}, {}),
                launchOf({2, 4, 5}, {6})};
  Expected<MemoryPlan> m = planMemory(plan, p, 1, 0);
  ASSERT_TRUE(m) << m.status().message();
  EXPECT_EQ(m->values[1].offset, 0u);
  EXPECT_EQ(m->values[2].offset, 1024u);
  EXPECT_EQ(m->values[3].offset, 1536u);
  EXPECT_EQ(m->values[4].offset, 1792u);
  EXPECT_EQ((std::pair{m->values[5].first, m->values[5].last}), (std::pair<int64_t, int64_t>{1, 3}));
  EXPECT_EQ(m->values[5].offset, 1536u);
  // out [3,4] meets X2, X4 and Y: gaps [0,1024) and [1664,1792); ids [-1,-1]
  // meets nothing.
  EXPECT_EQ(m->values[6].offset, 1664u);
  EXPECT_EQ(m->values[0].offset, 0u);
  EXPECT_EQ(m->peakBytes, 1920u);
}

TEST(MemoryPlan, OutputsBoundariesWeightsAndStates) {
  Plan plan;
  plan.tensors.push_back({"w", DType::BF16, {4, 8}});
  StateBuffer hist;
  hist.kind = StateKind::EngramHistory;
  hist.capacity = 10;
  hist.name = "engram";
  plan.states.push_back(hist);
  Program p;
  p.name = "decode";
  ValueSlot w = slot(ValueKind::Weight, DType::BF16, {4, 8}, "w");
  w.tensor = 0;
  ValueSlot s = slot(ValueKind::State, DType::I64, {10}, "engram");
  s.state = 0;
  ValueSlot kv = slot(ValueKind::Activation, DType::F32, {kCompressedLength, 16}, "kv");
  kv.ratio = 4;
  p.values = {slot(ValueKind::Input, DType::I32, {kTokens}, "ids"), w, s, kv,
              slot(ValueKind::Activation, DType::F32, {kTokens, 16}, "mix"),
              slot(ValueKind::Activation, DType::F32, {kTokens, 16}, "logits")};
  p.inputs = {0};
  p.outputs = {5};
  p.launches = {launchOf({0, 1, 2}, {3, 4}), launchOf({3}, {2}), launchOf({3}, {5})};
  p.boundaries.push_back({/*layer=*/0, /*stream=*/3, /*mix=*/4, /*afterLaunch=*/1});
  Expected<MemoryPlan> m = planMemory(plan, p, 1, /*startPos=*/11);
  ASSERT_TRUE(m) << m.status().message();
  EXPECT_FALSE(m->values[1].planned);
  EXPECT_FALSE(m->values[2].planned);
  EXPECT_EQ(m->values[3].shape, (std::vector<int64_t>{3, 16})); // floor(12 / 4)
  EXPECT_EQ(m->values[4].last, 1) << "mix lives until its boundary";
  EXPECT_EQ(m->values[5].last, 3) << "outputs live to the end";
  EXPECT_EQ(m->weightBytes, 64u);
  EXPECT_EQ(m->stateBytes, 80u);
}

TEST(MemoryPlan, CapacityPlanCoversEveryStartPosition) {
  // Device arenas (Backend::bindArena): kCompressed* dims at their largest over
  // start positions, so one layout serves every decode call.
  Plan plan;
  plan.model.maxSeqLen = 30;
  Program p;
  p.name = "decode";
  ValueSlot len = slot(ValueKind::Activation, DType::F32, {kCompressedLength, 16}, "kv");
  len.ratio = 4;
  ValueSlot tok = slot(ValueKind::Activation, DType::BF16, {kCompressedTokens, 8}, "new");
  tok.ratio = 4;
  p.values = {slot(ValueKind::Input, DType::I32, {kTokens}, "ids"), len, tok,
              slot(ValueKind::Activation, DType::F32, {kTokens, 16}, "logits")};
  p.inputs = {0};
  p.outputs = {3};
  p.launches = {launchOf({0}, {1, 2}), launchOf({1, 2}, {3})};
  Expected<MemoryPlan> cap = planMemory(plan, p, 1, 29, /*capacity=*/true);
  ASSERT_TRUE(cap) << cap.status().message();
  EXPECT_EQ(cap->values[1].shape, (std::vector<int64_t>{7, 16})); // 30 / 4
  EXPECT_EQ(cap->values[2].shape, (std::vector<int64_t>{1, 8}));  // 1 / 4 + 1
  for (int64_t pos = 1; pos < 30; ++pos) {
    Expected<MemoryPlan> call = planMemory(plan, p, 1, pos);
    ASSERT_TRUE(call) << call.status().message();
    Expected<MemoryPlan> same = planMemory(plan, p, 1, pos, /*capacity=*/true);
    ASSERT_TRUE(same) << same.status().message();
    EXPECT_EQ(same->peakBytes, cap->peakBytes) << "position " << pos;
    for (size_t i = 0; i < p.values.size(); ++i) {
      EXPECT_LE(call->values[i].bytes, cap->values[i].alignedBytes) << "position " << pos;
      EXPECT_EQ(same->values[i].offset, cap->values[i].offset) << "position " << pos;
    }
  }
  Expected<MemoryPlan> prefill = planMemory(plan, p, 9, 0, /*capacity=*/true);
  ASSERT_TRUE(prefill) << prefill.status().message();
  EXPECT_EQ(prefill->values[2].shape, (std::vector<int64_t>{3, 8})); // 9 / 4 + 1
}

/// pagedStateBytes, by hand: a paged main-KV source (ratio 4, 64 records of
/// 100 B per page, 1024 records), an unpaged index-key state (16 records of
/// 10 B: one page of its capacity, whatever the context), a window ring (16
/// records of 50 B, fixed) and the Engram history (one int64 per token).
TEST(MemoryPlan, PagedStateBytesCountWholePagesOfTheContext) {
  Plan plan;
  plan.model.maxSeqLen = 4096;
  auto state = [&](StateKind kind, int64_t ratio, int64_t capacity, int32_t perPage,
                   int32_t entryBytes) {
    StateBuffer s;
    s.name = "s" + std::to_string(plan.states.size());
    s.kind = kind;
    s.ratio = ratio;
    s.capacity = capacity;
    s.layout.tokensPerPage = perPage;
    s.layout.entryBytes = entryBytes;
    plan.states.push_back(s);
  };
  state(StateKind::MainKv, 4, 1024, 64, 100);
  state(StateKind::IndexKeys, 4, 16, 0, 10);
  state(StateKind::WindowRing, 0, 16, 0, 50);
  state(StateKind::EngramHistory, 0, 4096, 0, 0);
  // 300 tokens: ceil(300 / 4) = 75 main records = 2 pages of 6400 B; the
  // unpaged keys 160 B; the ring 800 B; 300 ids of 8 B.
  auto at300 = pagedStateBytes(plan, 300);
  ASSERT_TRUE(at300) << at300.status().message();
  EXPECT_EQ(*at300, 2u * 6400 + 160 + 800 + 300 * 8);
  // 256 tokens: 64 records, exactly one page.
  auto at256 = pagedStateBytes(plan, 256);
  ASSERT_TRUE(at256);
  EXPECT_EQ(*at256, 6400u + 160 + 800 + 256 * 8);
  // At the plan's limit every state is at its capacity: planStateBytes.
  auto full = pagedStateBytes(plan, 4096), all = planStateBytes(plan);
  ASSERT_TRUE(full && all);
  EXPECT_EQ(*full, *all);
  EXPECT_EQ(*full, 16u * 6400 + 160 + 800 + 4096 * 8);
  EXPECT_EQ(*pagedStateBytes(plan, 0), 160u + 800);
  for (int64_t bad : {int64_t(-1), int64_t(4097)}) {
    auto b = pagedStateBytes(plan, bad);
    ASSERT_FALSE(b);
    EXPECT_NE(b.status().message().find("max_seq_len 4096"), std::string::npos)
        << b.status().message();
  }
}

TEST(MemoryPlan, BadShapesNameProgramAndSlot) {
  Plan plan;
  Program p;
  p.name = "prefill";
  p.values = {slot(ValueKind::Input, DType::I32, {kTokens}, "ids"),
              slot(ValueKind::Activation, DType::BF16, {kTokens, int64_t(1) << 61}, "huge")};
  p.inputs = {0};
  Expected<MemoryPlan> m = planMemory(plan, p, 3, 0);
  ASSERT_FALSE(m);
  EXPECT_THAT(m.status().message(), ::testing::HasSubstr("prefill: value slot 1 ('huge')"));
  p.values[1] = slot(ValueKind::Activation, DType::BF16, {kCompressedTokens}, "c");
  m = planMemory(plan, p, 3, 0);
  ASSERT_FALSE(m);
  EXPECT_THAT(m.status().message(), ::testing::HasSubstr("expected a positive ratio"));
}

// --- the invariant on random programs -------------------------------------------

TEST(MemoryPlan, RandomProgramsNeverOverlapLiveValues) {
  std::mt19937_64 rng(20240611);
  for (int iter = 0; iter < 200; ++iter) {
    Plan plan;
    Program p;
    p.name = "prefill";
    int nValues = 2 + int(rng() % 40);
    p.values.push_back(slot(ValueKind::Input, DType::I32, {kTokens}, "ids"));
    for (int i = 1; i < nValues; ++i) {
      std::vector<int64_t> shape = {rng() % 2 ? kTokens : int64_t(rng() % 5), int64_t(rng() % 300)};
      DType dt = std::array{DType::U8, DType::BF16, DType::F32}[rng() % 3];
      p.values.push_back(slot(ValueKind::Activation, dt, shape, "v" + std::to_string(i)));
    }
    p.inputs = {0};
    // Launches write unwritten values in order and read already written ones.
    std::vector<int64_t> written = {0};
    int64_t next = 1;
    while (next < nValues) {
      Launch l;
      int reads = 1 + int(rng() % 3);
      for (int r = 0; r < reads; ++r)
        l.inputs.push_back(written[rng() % written.size()]);
      int writes = 1 + int(rng() % 2);
      for (int w = 0; w < writes && next < nValues; ++w)
        l.outputs.push_back(next++);
      if (rng() % 4 == 0) // sometimes rewrite a live value
        l.outputs.push_back(written[rng() % written.size()]);
      for (int64_t v : l.outputs)
        written.push_back(v);
      p.launches.push_back(l);
    }
    p.outputs = {written[rng() % written.size()]};
    int64_t tokens = 1 + int64_t(rng() % 17);
    Expected<MemoryPlan> m = planMemory(plan, p, tokens, 0);
    ASSERT_TRUE(m) << m.status().message();

    // Live ranges recomputed here: first write (inputs -1), last use, outputs to the end.
    size_t n = p.values.size();
    int64_t L = int64_t(p.launches.size());
    std::vector<int64_t> first(n, -1), last(n, -1);
    std::vector<bool> seen(n, false);
    seen[0] = true;
    for (int64_t l = 0; l < L; ++l) {
      for (int64_t v : p.launches[l].outputs) {
        if (!seen[v])
          first[v] = l, seen[v] = true;
        last[v] = std::max(last[v], l);
      }
      for (int64_t v : p.launches[l].inputs)
        last[v] = std::max(last[v], l);
    }
    for (int64_t v : p.outputs)
      last[v] = L;
    uint64_t top = 0, bound = 0;
    for (size_t a = 0; a < n; ++a) {
      const ValueMemory &x = m->values[a];
      ASSERT_EQ(x.first, first[a]) << "iter " << iter << " value " << a;
      ASSERT_EQ(x.last, last[a]) << "iter " << iter << " value " << a;
      ASSERT_EQ(x.offset % kArenaAlignment, 0u);
      ASSERT_EQ(x.alignedBytes % kArenaAlignment, 0u);
      ASSERT_GE(x.alignedBytes, x.bytes);
      top = std::max(top, x.offset + x.alignedBytes);
      for (size_t b = a + 1; b < n; ++b) {
        const ValueMemory &y = m->values[b];
        bool live = first[a] <= last[b] && first[b] <= last[a];
        bool overlap = x.offset < y.offset + y.alignedBytes && y.offset < x.offset + x.alignedBytes;
        ASSERT_FALSE(live && overlap && x.alignedBytes && y.alignedBytes)
            << "iter " << iter << ": values " << a << " and " << b << " overlap";
      }
    }
    for (int64_t t = -1; t <= L; ++t) {
      uint64_t live = 0;
      for (size_t a = 0; a < n; ++a)
        if (first[a] <= t && t <= last[a])
          live += m->values[a].alignedBytes;
      bound = std::max(bound, live);
    }
    EXPECT_EQ(m->peakBytes, top);
    EXPECT_EQ(m->liveBound, bound);
    EXPECT_GE(m->peakBytes, bound);
    EXPECT_LE(m->peakBytes, m->sumBytes);
  }
}

// --- HostTensor views -----------------------------------------------------------

TEST(HostTensorView, CopiesOwnMovesKeepTheView) {
  HostTensor arena(DType::U8, {256});
  HostTensor view;
  ASSERT_TRUE(view.viewChecked(DType::F32, {4}, arena.bytes() + 64, 192));
  EXPECT_TRUE(view.isView());
  view.data<float>()[0] = 3.0f;
  HostTensor copy(view);
  EXPECT_FALSE(copy.isView());
  EXPECT_NE(copy.bytes(), view.bytes());
  EXPECT_EQ(copy.data<float>()[0], 3.0f);
  HostTensor assigned;
  assigned = view;
  EXPECT_FALSE(assigned.isView());
  HostTensor moved(std::move(view));
  EXPECT_TRUE(moved.isView());
  EXPECT_EQ(moved.bytes(), arena.bytes() + 64);
  EXPECT_EQ(view.byteSize(), 0u);
  EXPECT_FALSE(view.isView());
  // Re-shaping or assigning into a view never writes through it.
  moved.reset(DType::F32, {4});
  EXPECT_FALSE(moved.isView());
  EXPECT_EQ(reinterpret_cast<float *>(arena.bytes() + 64)[0], 3.0f);
  HostTensor other;
  ASSERT_TRUE(other.viewChecked(DType::F32, {4}, arena.bytes() + 64, 192));
  other = copy;
  EXPECT_FALSE(other.isView());
  // Bounds and alignment.
  HostTensor bad;
  EXPECT_FALSE(bad.viewChecked(DType::F32, {64}, arena.bytes(), 128));
  EXPECT_FALSE(bad.viewChecked(DType::F32, {4}, arena.bytes() + 4, 128));
}

// --- tiny6: planned vs observed --------------------------------------------------

std::string fixturePlan() { return dsc::test::tiny6CpuPlan(); }
std::string tiny6Weights() { return dsc::test::sharedPath("golden/tiny6/model.safetensors"); }

struct Tiny6Run {
  std::vector<HostTensor> logits;
  std::vector<SessionMemoryStats> stats; // prefill, then each decode
};

Tiny6Run runTiny6(bool arena, int64_t prompt, int decodes) {
  Tiny6Run run;
  EngineOptions options;
  options.arena = arena;
  Expected<std::unique_ptr<Engine>> engine = Engine::load(fixturePlan(), tiny6Weights(), options);
  EXPECT_TRUE(engine) << engine.status().message();
  if (!engine)
    return run;
  int64_t vocab = (*engine)->plan().model.vocabSize;
  std::vector<int32_t> ids;
  for (int64_t i = 0; i < prompt; ++i)
    ids.push_back(int32_t((i * 7919 + 13) % vocab));
  std::unique_ptr<Session> session = (*engine)->newSession();
  Expected<HostTensor> out = session->prefill(ids);
  EXPECT_TRUE(out) << out.status().message();
  if (!out)
    return run;
  run.logits.push_back(std::move(out.value()));
  run.stats.push_back(*session->memoryStats("prefill"));
  for (int d = 0; d < decodes; ++d) {
    Expected<HostTensor> next = session->decode(int32_t((d * 31 + 5) % vocab));
    EXPECT_TRUE(next) << next.status().message();
    if (!next)
      return run;
    run.logits.push_back(std::move(next.value()));
    run.stats.push_back(*session->memoryStats("decode"));
  }
  return run;
}

TEST(MemoryPlanTiny6, PlannedPeakIsValidTightAndBitIdentical) {
  DSC_SKIP_WITHOUT_TINY6_PLAN();
  if (!std::filesystem::exists(tiny6Weights()))
    GTEST_SKIP() << "no tiny6 checkpoint at " << tiny6Weights();
  Expected<Plan> plan = readPlanFile(fixturePlan());
  ASSERT_TRUE(plan) << plan.status().message();
  int64_t prompt = std::min<int64_t>(150, plan->model.maxSeqLen - 4);
  const int decodes = 3;
  Tiny6Run withArena = runTiny6(true, prompt, decodes);
  Tiny6Run perSlot = runTiny6(false, prompt, decodes);
  ASSERT_EQ(withArena.logits.size(), size_t(1 + decodes));
  ASSERT_EQ(perSlot.logits.size(), size_t(1 + decodes));
  for (size_t i = 0; i < withArena.logits.size(); ++i) {
    const HostTensor &a = withArena.logits[i], &b = perSlot.logits[i];
    ASSERT_EQ(a.shape(), b.shape());
    ASSERT_EQ(a.byteSize(), b.byteSize());
    EXPECT_EQ(std::memcmp(a.bytes(), b.bytes(), a.byteSize()), 0) << "call " << i << " differs";
  }
  for (size_t i = 0; i < withArena.stats.size(); ++i) {
    const SessionMemoryStats &s = withArena.stats[i];
    const SessionMemoryStats &t = perSlot.stats[i];
    std::printf("tiny6 %s: planned peak %llu, sum %llu, observed live peak %llu (per-slot run %llu), "
                "arena %llu\n",
                i == 0 ? ("prefill " + std::to_string(prompt)).c_str()
                       : ("decode" + std::to_string(i - 1)).c_str(),
                (unsigned long long)s.plannedPeakBytes, (unsigned long long)s.plannedSumBytes,
                (unsigned long long)s.observedPeakBytes, (unsigned long long)t.observedPeakBytes,
                (unsigned long long)s.arenaBytes);
    EXPECT_TRUE(s.arena);
    EXPECT_FALSE(t.arena);
    EXPECT_EQ(s.observedPeakBytes, t.observedPeakBytes);
    EXPECT_GE(s.arenaBytes, s.plannedPeakBytes);
    EXPECT_GE(s.plannedPeakBytes, s.observedPeakBytes) << "the plan is invalid";
    EXPECT_LE(double(s.plannedPeakBytes), 1.25 * double(s.observedPeakBytes)) << "the plan is loose";
    EXPECT_LT(s.plannedPeakBytes, s.plannedSumBytes);
  }
}

} // namespace
