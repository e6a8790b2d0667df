//===- CallPlanTest.cpp - Plan once, run many (CallPlan.h) -----------------===//
//
// What: planCall on a hand-built program whose steps, tiles, replay range,
// zeroing schedule and last uses are worked out by hand; on the tiny6
// fixture plan (the build-time tiny6 CPU plan, test/unit/support/Tiny6Plan.h; no weights needed) that the host and
// device layouts are planMemory's and that moving a decode plan to every
// position (resolveStart) gives exactly the plan made there, re-placing the
// host arena only when an aligned size changes; with the tiny6 weights, that
// a Session makes one plan per call shape (decode: one for the sequence,
// chunked prefill: first chunk + continuation) and reuses it.
// Why: Session::run is a loop over a cached CallPlan; these are the facts the
// cache relies on.
//===----------------------------------------------------------------------===//
#include "dsc/runtime/CallPlan.h"
#include "dsc/runtime/Engine.h"
#include "dsc/runtime/MemoryPlan.h"
#include "dsc/runtime/PlanFile.h"
#include "test/unit/support/SharedDir.h"
#include "test/unit/support/Tiny6Plan.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <set>

using namespace dsc::runtime;
using ::testing::HasSubstr;

namespace {

ValueSlot slot(ValueKind kind, DType dtype, std::vector<int64_t> shape, std::string name,
               int64_t ratio = 0) {
  ValueSlot v;
  v.kind = kind;
  v.dtype = dtype;
  v.shape = std::move(shape);
  v.name = std::move(name);
  v.ratio = ratio;
  return v;
}

Launch launch(int64_t kernel, std::vector<int64_t> in, std::vector<int64_t> out,
              int64_t fusion = -1, bool replay = false) {
  Launch l;
  l.kernel = kernel;
  l.inputs = std::move(in);
  l.outputs = std::move(out);
  l.fusion = fusion;
  l.replay = replay;
  return l;
}

// Slots: 0 ids, 1 x, 2 scores (internal to the tiled fusion), 3 topk, 4 r
// (replayed rows), 5 y, 6 logits.
// Launches: 0 embed; 1-2 the row-tiled fusion 0 (7 rows); 3 the replayed
// launch; 4-5 fusion 1 (a native kernel when the backend says so).
// Boundary: layer 0 after launch 4, stream x, mix topk.
constexpr int64_t kReplay = 5;
Plan handPlan() {
  Plan plan;
  plan.model.windowSize = 4;
  plan.model.maxSeqLen = 64;
  plan.model.vocabSize = 16;
  plan.model.cedReplayTokens = kReplay;
  for (const char *name : {"embed", "score", "topk", "replayed", "a", "b"}) {
    KernelSpec k;
    k.name = name;
    plan.kernels.push_back(k);
  }
  Program p;
  p.name = "prefill";
  p.values = {slot(ValueKind::Input, DType::I32, {kTokens}, "ids"),
              slot(ValueKind::Activation, DType::BF16, {kTokens, 8}, "x"),
              slot(ValueKind::Activation, DType::F32, {kTokens, kCompressedLength}, "scores", 4),
              slot(ValueKind::Activation, DType::I32, {kTokens, 4}, "topk"),
              slot(ValueKind::Activation, DType::BF16, {kReplayTokens, 8}, "r"),
              slot(ValueKind::Activation, DType::BF16, {kTokens, 8}, "y"),
              slot(ValueKind::Activation, DType::F32, {kTokens, 16}, "logits")};
  p.inputs = {0};
  p.outputs = {6};
  p.fusions = {{"indexer", -1, 7}, {"pair", -1, 0}};
  p.launches = {launch(0, {0}, {1}),           launch(1, {1}, {2}, 0),
                launch(2, {2}, {3}, 0),        launch(3, {1, 3}, {4}, -1, true),
                launch(4, {1}, {5}, 1),        launch(5, {5, 4}, {6}, 1)};
  p.boundaries.push_back({/*layer=*/0, /*stream=*/1, /*mix=*/3, /*afterLaunch=*/4});
  plan.programs.push_back(p);
  return plan;
}

BackendTraits nativePair() {
  BackendTraits traits;
  traits.rowTiles = true;
  traits.runsFusion = [](const Plan &, const Program &program, size_t first, size_t count) {
    return program.launches[first].fusion == 1 && count == 2;
  };
  return traits;
}

CallShape prefillShape(int64_t tokens, int64_t startPos = 0) {
  CallShape shape;
  shape.tokens = tokens;
  shape.startPos = startPos;
  shape.prefillLike = true;
  return shape;
}

struct StepView {
  CallStep::Kind kind;
  size_t first, end;
  bool replay;
  bool operator==(const StepView &) const = default;
};
std::vector<StepView> stepsOf(const CallPlan &plan) {
  std::vector<StepView> out;
  for (const CallStep &s : plan.steps)
    out.push_back({s.kind, s.first, s.end, s.replay});
  return out;
}
using K = CallStep::Kind;

void expectSameMemory(const MemoryPlan &a, const MemoryPlan &b, const std::string &what) {
  ASSERT_EQ(a.values.size(), b.values.size()) << what;
  EXPECT_EQ(a.tokens, b.tokens) << what;
  EXPECT_EQ(a.startPos, b.startPos) << what;
  EXPECT_EQ(a.peakBytes, b.peakBytes) << what;
  EXPECT_EQ(a.sumBytes, b.sumBytes) << what;
  EXPECT_EQ(a.liveBound, b.liveBound) << what;
  for (size_t i = 0; i < a.values.size(); ++i) {
    const ValueMemory &x = a.values[i], &y = b.values[i];
    EXPECT_EQ(x.planned, y.planned) << what << " slot " << i;
    EXPECT_EQ(x.shape, y.shape) << what << " slot " << i;
    EXPECT_EQ(x.bytes, y.bytes) << what << " slot " << i;
    EXPECT_EQ(x.alignedBytes, y.alignedBytes) << what << " slot " << i;
    EXPECT_EQ(x.first, y.first) << what << " slot " << i;
    EXPECT_EQ(x.last, y.last) << what << " slot " << i;
    EXPECT_EQ(x.offset, y.offset) << what << " slot " << i;
  }
}

void expectSameGeometry(const CallGeometry &a, const CallGeometry &b, const std::string &what) {
  EXPECT_EQ(a.startPos, b.startPos) << what;
  EXPECT_EQ(a.tokens, b.tokens) << what;
  EXPECT_EQ(a.prefillLike, b.prefillLike) << what;
  EXPECT_EQ(a.ringRows, b.ringRows) << what;
  EXPECT_EQ(a.windowRows, b.windowRows) << what;
}

// --- hand-built program --------------------------------------------------------

TEST(CallPlan, StepsOfAHandBuiltProgram) {
  Plan plan = handPlan();
  const Program &p = plan.programs[0];
  Expected<CallPlan> cp = planCall(plan, p, prefillShape(20), nativePair());
  ASSERT_TRUE(cp) << cp.status().message();
  EXPECT_EQ(stepsOf(*cp), (std::vector<StepView>{{K::Launch, 0, 1, false},
                                                 {K::RowTiles, 1, 3, false},
                                                 {K::Launch, 3, 4, true},
                                                 {K::NativeFusion, 4, 6, false}}));
  EXPECT_EQ(cp->steps[1].tiles, (std::vector<RowTile>{{0, 7}, {7, 7}, {14, 6}}));
  EXPECT_EQ(cp->tileRows, (std::vector<int64_t>{0, 0, 7, 0, 0, 0, 0})) << "only scores is internal";
  EXPECT_EQ(cp->tokenInput, 0u);
  EXPECT_EQ(cp->logitsOutput, 6u);
  EXPECT_EQ(cp->boundariesAfter[4], (std::vector<size_t>{0}));
  for (size_t l : {0u, 1u, 2u, 3u, 5u})
    EXPECT_TRUE(cp->boundariesAfter[l].empty()) << l;

  // An observer sees every step: fusion 1 runs step by step.
  CallShape observed = prefillShape(20);
  observed.observed = true;
  Expected<CallPlan> seen = planCall(plan, p, observed, nativePair());
  ASSERT_TRUE(seen) << seen.status().message();
  EXPECT_EQ(stepsOf(*seen), (std::vector<StepView>{{K::Launch, 0, 1, false},
                                                   {K::RowTiles, 1, 3, false},
                                                   {K::Launch, 3, 4, true},
                                                   {K::Launch, 4, 5, false},
                                                   {K::Launch, 5, 6, false}}));
  // An earlier chunk of a chunked CED prefill skips the replayed launch.
  CallShape early = prefillShape(20);
  early.runReplay = false;
  Expected<CallPlan> skip = planCall(plan, p, early, nativePair());
  ASSERT_TRUE(skip) << skip.status().message();
  EXPECT_EQ(skip->steps[2].kind, K::SkipReplay);
  // A backend without row tiles runs the fusion whole (and plans it whole).
  BackendTraits whole = nativePair();
  whole.rowTiles = false;
  Expected<CallPlan> untiled = planCall(plan, p, prefillShape(20), whole);
  ASSERT_TRUE(untiled) << untiled.status().message();
  EXPECT_EQ(stepsOf(*untiled), (std::vector<StepView>{{K::Launch, 0, 1, false},
                                                      {K::Launch, 1, 2, false},
                                                      {K::Launch, 2, 3, false},
                                                      {K::Launch, 3, 4, true},
                                                      {K::NativeFusion, 4, 6, false}}));
  EXPECT_EQ(untiled->tileRows, std::vector<int64_t>(7, 0));
  Expected<MemoryPlan> m = planMemory(plan, p, 20, 0, false, /*rowTiles=*/false);
  ASSERT_TRUE(m);
  expectSameMemory(untiled->host, *m, "untiled host");
  EXPECT_EQ(untiled->host.values[2].shape, (std::vector<int64_t>{20, 5}));
  EXPECT_EQ(cp->host.values[2].shape, (std::vector<int64_t>{7, 5})) << "one tile of scores";
}

TEST(CallPlan, ReplayRangeIsTheLastMinRSRows) {
  Plan plan = handPlan();
  const Program &p = plan.programs[0];
  for (int64_t start : {int64_t(0), int64_t(30)})
    for (int64_t tokens : {int64_t(1), int64_t(3), kReplay, kReplay + 1, int64_t(20)}) {
      Expected<CallPlan> cp = planCall(plan, p, prefillShape(tokens, start), nativePair());
      ASSERT_TRUE(cp) << cp.status().message();
      const int64_t rows = std::min(kReplay, tokens);
      EXPECT_EQ(cp->replayRows, rows) << tokens;
      EXPECT_EQ(cp->replay.startPos, start + tokens - rows) << tokens;
      EXPECT_EQ(cp->replay.tokens, rows);
      EXPECT_TRUE(cp->replay.prefillLike);
      EXPECT_EQ(cp->replay.ringRows, 0);
      EXPECT_EQ(cp->replay.windowRows, rows);
      EXPECT_EQ(cp->host.values[4].shape, (std::vector<int64_t>{rows, 8}));
      // The call: ring rows min(W - 1, start) ahead of a continuation chunk.
      EXPECT_EQ(cp->call.startPos, start);
      EXPECT_EQ(cp->call.tokens, tokens);
      EXPECT_EQ(cp->call.ringRows, std::min<int64_t>(3, start));
      EXPECT_EQ(cp->call.windowRows, std::min<int64_t>(3, start) + tokens);
      EXPECT_EQ(&stepGeometry(*cp, cp->steps[2]), &cp->replay);
      EXPECT_EQ(&stepGeometry(*cp, cp->steps[0]), &cp->call);
    }
  // A plan without replay: no replay rows.
  plan.model.cedReplayTokens = 0;
  plan.programs[0].launches[3].replay = false;
  Expected<CallPlan> none = planCall(plan, plan.programs[0], prefillShape(20), nativePair());
  ASSERT_TRUE(none) << none.status().message();
  EXPECT_EQ(none->replayRows, 0);
}

TEST(CallPlan, RowTilesCoverTheRowsExactly) {
  Plan plan = handPlan();
  // A replayed tiled fusion tiles the replay's rows, any other the call's.
  Plan replayed = handPlan();
  replayed.programs[0].values[2].shape[0] = kReplayTokens;
  replayed.programs[0].values[3].shape[0] = kReplayTokens;
  replayed.programs[0].launches[1].replay = replayed.programs[0].launches[2].replay = true;
  for (int64_t tileRows : {1, 3, 7, 64})
    for (int64_t tokens = 1; tokens <= 40; ++tokens)
      for (Plan *pm : {&plan, &replayed}) {
        pm->programs[0].fusions[0].tileRows = tileRows;
        Expected<CallPlan> cp =
            planCall(*pm, pm->programs[0], prefillShape(tokens, 2), nativePair());
        ASSERT_TRUE(cp) << cp.status().message();
        const CallStep &step = cp->steps[1];
        ASSERT_EQ(step.kind, K::RowTiles);
        const int64_t rows = pm == &plan ? tokens : std::min(kReplay, tokens);
        EXPECT_EQ(step.replay, pm == &replayed);
        int64_t next = 0;
        for (const RowTile &t : step.tiles) {
          EXPECT_EQ(t.offset, next) << "tiles are contiguous, in order";
          EXPECT_GT(t.rows, 0);
          EXPECT_LE(t.rows, tileRows);
          next += t.rows;
          const CallGeometry g = tileGeometry(stepGeometry(*cp, step), t);
          EXPECT_EQ(g.startPos, stepGeometry(*cp, step).startPos + t.offset);
          EXPECT_EQ(g.tokens, t.rows);
          EXPECT_EQ(g.windowRows, stepGeometry(*cp, step).windowRows) << "the call's window";
        }
        EXPECT_EQ(next, rows) << "tokens " << tokens << " tile " << tileRows;
        EXPECT_EQ(int64_t(step.tiles.size()), (rows + tileRows - 1) / tileRows);
      }
}

TEST(CallPlan, ZeroingFollowsTheFirstWritersAndLastUsesTheLiveRanges) {
  Plan plan = handPlan();
  const Program &p = plan.programs[0];
  Expected<CallPlan> cp = planCall(plan, p, prefillShape(20), nativePair());
  ASSERT_TRUE(cp) << cp.status().message();
  Expected<MemoryPlan> m = planMemory(plan, p, 20, 0, false, /*rowTiles=*/true);
  ASSERT_TRUE(m);
  expectSameMemory(cp->host, *m, "host");
  // Each slot is zeroed right before the launch that first writes it (launch
  // k writes slot k + 1), not where its live range starts: topk (slot 3) is
  // live from fusion 0's first launch (1) but written by launch 2; logits
  // (slot 6) live from 4, written by 5. ids (slot 0), an input, at the start.
  EXPECT_EQ(cp->zeroAtStart, (std::vector<int64_t>{0}));
  EXPECT_EQ(cp->zeroBefore, (std::vector<std::vector<int64_t>>{{1}, {2}, {3}, {4}, {5}, {6}}));
  EXPECT_EQ(zeroingLaunches(p), (std::vector<int64_t>{-1, 0, 1, 2, 3, 4, 5}));
  // A zeroing is a write of the launch it precedes (what LaunchGraph orders).
  for (size_t k = 0; k < cp->zeroBefore.size(); ++k)
    for (int64_t v : cp->zeroBefore[k]) {
      const std::vector<int64_t> &outs = p.launches[k].outputs;
      EXPECT_NE(std::find(outs.begin(), outs.end(), v), outs.end()) << "slot " << v;
    }
  // Last uses: x is read by fusion 1, which ends at 5; topk by launch 3;
  // outputs past the end (6 launches).
  EXPECT_EQ(cp->lastUse, (std::vector<int64_t>{0, 5, 2, 3, 5, 5, 6}));
  EXPECT_EQ(cp->dieAfter,
            (std::vector<std::vector<int64_t>>{{0}, {}, {2}, {3}, {}, {1, 4, 5}}));
  // An observer of a plan with layer boundaries keeps the mix (topk) to
  // its boundary (after launch 4); without boundaries it does not.
  CallShape observed = prefillShape(20);
  observed.observed = true;
  plan.model.layerBoundaries = true;
  Expected<CallPlan> seen = planCall(plan, plan.programs[0], observed, nativePair());
  ASSERT_TRUE(seen) << seen.status().message();
  EXPECT_EQ(seen->lastUse[3], 4);
  plan.model.layerBoundaries = false;
  Expected<CallPlan> noBoundaries = planCall(plan, plan.programs[0], observed, nativePair());
  ASSERT_TRUE(noBoundaries);
  EXPECT_EQ(noBoundaries->lastUse[3], 3);
}

TEST(CallPlan, ProgramErrorsAreReportedBeforeAnythingRuns) {
  {
    Plan plan = handPlan();
    plan.programs[0].values[6].dtype = DType::BF16;
    Expected<CallPlan> cp = planCall(plan, plan.programs[0], prefillShape(4), nativePair());
    ASSERT_FALSE(cp);
    EXPECT_EQ(cp.status().code(), StatusCode::FailedPrecondition);
    EXPECT_THAT(cp.status().message(), HasSubstr("prefill: output 0 (value 6 'logits') is BF16"));
  }
  {
    Plan plan = handPlan();
    plan.programs[0].launches[2].outputs = {9};
    Expected<CallPlan> cp = planCall(plan, plan.programs[0], prefillShape(4), nativePair());
    ASSERT_FALSE(cp);
    EXPECT_THAT(cp.status().message(), HasSubstr("prefill launch 2: value 9 does not exist"));
  }
  {
    Plan plan = handPlan();
    CallShape decode = prefillShape(1, 10);
    decode.prefillLike = false; // a replayed launch outside a prefill
    Expected<CallPlan> cp = planCall(plan, plan.programs[0], decode, nativePair());
    ASSERT_FALSE(cp);
    EXPECT_THAT(cp.status().message(),
                HasSubstr("prefill launch 3: a replayed launch outside a CED prefill"));
  }
  {
    Plan plan = handPlan();
    plan.programs[0].launches[4].replay = true; // fusion 1 half replayed
    Expected<CallPlan> cp = planCall(plan, plan.programs[0], prefillShape(4), nativePair());
    ASSERT_FALSE(cp);
    EXPECT_THAT(cp.status().message(), HasSubstr("mixes replayed and full-prompt launches"));
  }
  {
    Plan plan = handPlan();
    plan.programs[0].values[1].shape = {kTokens, int64_t(1) << 61};
    Expected<CallPlan> cp = planCall(plan, plan.programs[0], prefillShape(4), nativePair());
    ASSERT_FALSE(cp);
    EXPECT_EQ(cp.status().code(), StatusCode::InvalidArgument);
    EXPECT_THAT(cp.status().message(), HasSubstr("prefill: value slot 1 ('x')"));
  }
}

TEST(CallPlan, TheCacheKeyIgnoresOnlyTheStartPosition) {
  CallShape a = prefillShape(1, 7);
  a.prefillLike = false;
  CallShape b = a;
  b.startPos = 200;
  EXPECT_TRUE(sameCallClass(a, b)) << "decode at any position";
  b.startPos = 0;
  EXPECT_FALSE(sameCallClass(a, b)) << "a first call has its own device plan";
  for (auto change : std::vector<void (*)(CallShape &)>{
           [](CallShape &s) { s.tokens = 2; }, [](CallShape &s) { s.prefillLike = true; },
           [](CallShape &s) { s.runReplay = false; }, [](CallShape &s) { s.observed = true; }}) {
    CallShape c = a;
    change(c);
    EXPECT_FALSE(sameCallClass(a, c));
  }
  // A plan cannot be moved across classes.
  Plan plan = handPlan();
  Expected<CallPlan> cp = planCall(plan, plan.programs[0], prefillShape(4, 0), nativePair());
  ASSERT_TRUE(cp);
  Status s = resolveStart(*cp, plan, plan.programs[0], 9, nativePair());
  EXPECT_FALSE(s);
  EXPECT_THAT(s.message(), HasSubstr("cannot serve start 9"));
  EXPECT_EQ(cp->shape.startPos, 0) << "unchanged on error";
}

// --- tiny6 fixture ----------------------------------------------------------------

std::string fixturePlan() { return dsc::test::tiny6CpuPlan(); }
std::string tiny6Weights() { return dsc::test::sharedPath("golden/tiny6/model.safetensors"); }

TEST(CallPlanTiny6, HostAndDeviceLayoutsArePlanMemorys) {
  DSC_SKIP_WITHOUT_TINY6_PLAN();
  Expected<Plan> plan = readPlanFile(fixturePlan());
  ASSERT_TRUE(plan) << plan.status().message();
  const Program *prefill = plan->program("prefill");
  ASSERT_TRUE(prefill);
  BackendTraits device;
  device.rowTiles = false;
  device.deviceResident = true;
  const int64_t maxLen = plan->model.maxSeqLen;
  for (auto [tokens, start] : std::vector<std::pair<int64_t, int64_t>>{{150, 0}, {50, 100}}) {
    for (const BackendTraits &traits : {BackendTraits(), device}) {
      Expected<CallPlan> cp = planCall(*plan, *prefill, prefillShape(tokens, start), traits);
      ASSERT_TRUE(cp) << cp.status().message();
      Expected<MemoryPlan> host = planMemory(*plan, *prefill, tokens, start, false, traits.rowTiles);
      ASSERT_TRUE(host);
      expectSameMemory(cp->host, *host, "host " + std::to_string(tokens));
      EXPECT_EQ(cp->hasDevicePlan, traits.deviceResident);
      if (traits.deviceResident) {
        Expected<MemoryPlan> cap =
            planMemory(*plan, *prefill, tokens, start == 0 ? 0 : maxLen - tokens, true);
        ASSERT_TRUE(cap);
        expectSameMemory(cp->device, *cap, "device " + std::to_string(tokens));
      }
      // Every launch is in exactly one step, in order.
      size_t next = 0;
      for (const CallStep &step : cp->steps) {
        EXPECT_EQ(step.first, next);
        EXPECT_GT(step.end, step.first);
        next = step.end;
      }
      EXPECT_EQ(next, prefill->launches.size());
      const bool anyTiles = std::any_of(cp->steps.begin(), cp->steps.end(), [](const CallStep &s) {
        return s.kind == K::RowTiles;
      });
      EXPECT_EQ(anyTiles, traits.rowTiles) << "tiny6's indexer is row-tiled";
    }
  }
}

TEST(CallPlanTiny6, MovedDecodePlanEqualsTheFreshPlanAtEveryPosition) {
  DSC_SKIP_WITHOUT_TINY6_PLAN();
  Expected<Plan> plan = readPlanFile(fixturePlan());
  ASSERT_TRUE(plan) << plan.status().message();
  const Program *decode = plan->program("decode");
  ASSERT_TRUE(decode);
  BackendTraits traits;
  traits.deviceResident = true; // the device plan is made too (pure: no device needed)
  CallShape shape;
  shape.tokens = 1;
  shape.startPos = 1;
  Expected<CallPlan> moving = planCall(*plan, *decode, shape, traits);
  ASSERT_TRUE(moving) << moving.status().message();
  const MemoryPlan device = moving->device;
  // Independently: the distinct sets of aligned sizes over the positions
  // (tiny6's decode sizes cycle between two sets while its scores grow, so
  // the plan's last few layouts hold every recurring set).
  std::set<std::vector<uint64_t>> alignedSets;
  auto alignedAt = [&](int64_t p) {
    Expected<std::vector<ValueMemory>> sized = sizeValues(*plan, *decode, 1, p, false, true);
    EXPECT_TRUE(sized);
    std::vector<uint64_t> out;
    for (const ValueMemory &m : *sized)
      out.push_back(m.alignedBytes);
    return out;
  };
  alignedSets.insert(alignedAt(1));
  const int64_t last = plan->model.maxSeqLen - 1;
  for (int64_t p = 2; p <= last; ++p) {
    alignedSets.insert(alignedAt(p));
    ASSERT_TRUE(resolveStart(*moving, *plan, *decode, p, traits)) << p;
    shape.startPos = p;
    Expected<CallPlan> fresh = planCall(*plan, *decode, shape, traits);
    ASSERT_TRUE(fresh) << fresh.status().message();
    const std::string at = "position " + std::to_string(p);
    expectSameMemory(moving->host, fresh->host, at);
    expectSameGeometry(moving->call, fresh->call, at);
    EXPECT_EQ(moving->call.windowRows, plan->model.windowSize) << "decode reads the ring";
    EXPECT_FALSE(moving->call.prefillLike);
    EXPECT_EQ(moving->zeroBefore, fresh->zeroBefore) << at;
    EXPECT_EQ(moving->lastUse, fresh->lastUse) << at;
    EXPECT_EQ(stepsOf(*moving), stepsOf(*fresh)) << at;
    expectSameMemory(moving->device, device, at + " (device)");
    expectSameMemory(fresh->device, device, at + " (fresh device)");
    if (::testing::Test::HasFailure())
      return;
  }
  EXPECT_EQ(moving->hostPlacements, uint64_t(alignedSets.size()));
  EXPECT_LT(alignedSets.size(), size_t(last / 4)) << "most decode positions reuse a layout";
  EXPECT_LE(moving->otherLayouts.size(), kOtherHostLayouts);
  std::printf("tiny6 decode: %llu host placements over %lld positions\n",
              (unsigned long long)moving->hostPlacements, (long long)last);
}

// --- the Session's cache (tiny6 weights) -------------------------------------------

class CountLaunches : public SessionObserver {
public:
  void afterLaunch(const CallInfo &, const Program &, const Launch &, const KernelSpec &,
                   std::span<const HostTensor *const>) override {
    ++launches;
  }
  int64_t launches = 0;
};

TEST(CallPlanSession, OnePlanPerCallShape) {
  DSC_SKIP_WITHOUT_TINY6_PLAN();
  if (!std::filesystem::exists(tiny6Weights()))
    GTEST_SKIP() << "no tiny6 checkpoint at " << tiny6Weights();
  Expected<Plan> plan = readPlanFile(fixturePlan());
  ASSERT_TRUE(plan) << plan.status().message();
  plan->model.prefillChunk = 64; // 200 tokens: 4 chunks of 50
  Expected<std::unique_ptr<Engine>> engine = Engine::create(std::move(plan.value()), tiny6Weights());
  ASSERT_TRUE(engine) << engine.status().message();
  const Plan &pm = (*engine)->plan();
  std::vector<int32_t> ids;
  for (int i = 0; i < 200; ++i)
    ids.push_back(int32_t((i * 7919 + 13) % pm.model.vocabSize));
  std::unique_ptr<Session> session = (*engine)->newSession();
  EXPECT_EQ(session->lastCallPlan("decode"), nullptr);

  ASSERT_TRUE(session->prefill(std::span<const int32_t>(ids.data(), 40)));
  const int decodes = 12;
  for (int d = 0; d < decodes; ++d)
    ASSERT_TRUE(session->decode(ids[size_t(d)]));
  CallPlanStats stats = session->callPlanStats();
  EXPECT_EQ(stats.plansMade, 2u) << "one prefill shape, one decode shape";
  EXPECT_EQ(stats.plansReused, uint64_t(decodes - 1));
  EXPECT_EQ(stats.startsResolved, uint64_t(decodes - 1));
  const CallPlan *decodePlan = session->lastCallPlan("decode");
  ASSERT_NE(decodePlan, nullptr);
  EXPECT_EQ(decodePlan->shape.startPos, 40 + decodes - 1);
  CallShape shape;
  shape.tokens = 1;
  shape.startPos = 40 + decodes - 1;
  Expected<CallPlan> fresh = planCall(pm, *pm.program("decode"), shape, traitsOf((*engine)->backend()));
  ASSERT_TRUE(fresh);
  expectSameMemory(decodePlan->host, fresh->host, "session's decode plan");
  EXPECT_EQ(session->memoryStats("decode")->plannedPeakBytes, fresh->host.peakBytes);

  // The same prompt again: the cached prefill plan.
  session->reset();
  ASSERT_TRUE(session->prefill(std::span<const int32_t>(ids.data(), 40)));
  EXPECT_EQ(session->callPlanStats().plansMade, 2u);
  // Another length: a new plan. A chunked prompt: one for the first chunk,
  // one for the continuations (moved from start to start).
  session->reset();
  ASSERT_TRUE(session->prefill(ids));
  stats = session->callPlanStats();
  EXPECT_EQ(stats.plansMade, 4u);
  const std::vector<PrefillChunk> chunks = prefillChunks(200, 64);
  ASSERT_EQ(chunks.size(), 4u);
  EXPECT_EQ(session->lastCallPlan("prefill")->shape.startPos, chunks.back().startPos);
  EXPECT_EQ(session->lastCallPlan("prefill")->call.ringRows, pm.model.windowSize - 1);
  // An observer: its own plan (steps one by one); then back to the cached one.
  ASSERT_TRUE(session->decode(3));
  CountLaunches observer;
  session->setObserver(&observer);
  ASSERT_TRUE(session->decode(4));
  EXPECT_EQ(observer.launches, int64_t(pm.program("decode")->launches.size()));
  EXPECT_EQ(session->callPlanStats().plansMade, 5u);
  session->setObserver(nullptr);
  ASSERT_TRUE(session->decode(5));
  EXPECT_EQ(session->callPlanStats().plansMade, 5u);
}

} // namespace
