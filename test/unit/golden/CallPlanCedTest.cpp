//===- CallPlanCedTest.cpp - CallPlans of real CED plans -------------------===//
//
// What: tiny6 compiled with --ced=exact (R = 48) and --max-seq-len 256. The
// replay range of planCall is the last min(R, S) rows (start S - R'), the
// replay steps are exactly the plan's Launch::replay launches (skipped when
// the call does not replay), the kReplayTokens slots hold R' rows; a chunked
// CED prefill (chunk 96) in a Session replays only in its last chunk, whose
// plan replays rows S - R' .. S - 1 of the prompt.
// Why: the replay range moved from Session::run into the CallPlan; CedReplay
// and ChunkedPrefill check the logits, this checks the plan itself.
//===----------------------------------------------------------------------===//
#include "GoldenHarness.h"

#include "../support/SharedDir.h"
#include "dsc/runtime/Backend.h"
#include "dsc/runtime/CallPlan.h"

#include <gtest/gtest.h>

#include <algorithm>

using namespace dsc;
using namespace dsc::test;
using runtime::CallPlan;
using runtime::CallShape;
using runtime::CallStep;

namespace {

constexpr int64_t kR = 48; // tiny6 exact: (L/2) * W = 3 * 16

TEST(CallPlanCed, ReplayRangeAndStepsOfTheExactPlan) {
  const std::string dir = sharedPath("golden/tiny6");
  std::string error;
  CompiledCase compiled = compileCasePlan(dir, "exact", 256, /*layerBoundaries=*/false, error);
  ASSERT_EQ(error, "");
  const runtime::Plan &plan = compiled.plan;
  ASSERT_EQ(plan.model.cedReplayTokens, kR);
  const runtime::Program *prefill = plan.program("prefill");
  ASSERT_TRUE(prefill);
  std::unique_ptr<runtime::Backend> cpu = runtime::createCpuBackend();
  const runtime::BackendTraits traits = runtime::traitsOf(*cpu);
  std::vector<size_t> replayed;
  for (size_t l = 0; l < prefill->launches.size(); ++l)
    if (prefill->launches[l].replay)
      replayed.push_back(l);
  ASSERT_FALSE(replayed.empty());
  for (int64_t tokens : {int64_t(20), kR, int64_t(100), int64_t(200)})
    for (bool runReplay : {true, false}) {
      CallShape shape;
      shape.tokens = tokens;
      shape.prefillLike = true;
      shape.runReplay = runReplay;
      runtime::Expected<CallPlan> cp = runtime::planCall(plan, *prefill, shape, traits);
      ASSERT_TRUE(cp) << cp.status().message();
      const int64_t rows = std::min(kR, tokens);
      EXPECT_EQ(cp->replayRows, rows);
      EXPECT_EQ(cp->replay.startPos, tokens - rows);
      EXPECT_EQ(cp->replay.tokens, rows);
      EXPECT_TRUE(cp->replay.prefillLike);
      EXPECT_EQ(cp->replay.ringRows, 0);
      std::vector<size_t> stepped;
      for (const CallStep &step : cp->steps) {
        EXPECT_EQ(step.replay, prefill->launches[step.first].replay);
        EXPECT_EQ(step.kind == CallStep::Kind::SkipReplay, step.replay && !runReplay);
        if (step.replay)
          for (size_t k = step.first; k < step.end; ++k)
            stepped.push_back(k);
        if (step.kind == CallStep::Kind::RowTiles) { // tiles of the rows the step runs on
          int64_t covered = 0;
          for (const runtime::RowTile &t : step.tiles)
            covered += t.rows;
          EXPECT_EQ(covered, step.replay ? rows : tokens);
        }
      }
      EXPECT_EQ(stepped, replayed);
      for (size_t i = 0; i < prefill->values.size(); ++i)
        if (cp->host.values[i].planned && !prefill->values[i].shape.empty() &&
            prefill->values[i].shape[0] == runtime::kReplayTokens && !cp->tileRows[i])
          EXPECT_EQ(cp->host.values[i].shape[0], rows) << prefill->values[i].name;
    }
}

TEST(CallPlanCed, ChunkedPrefillReplaysInItsLastChunk) {
  const std::string dir = sharedPath("golden/tiny6");
  std::string error;
  CompiledCase compiled = compileCasePlan(dir, "exact", 256, /*layerBoundaries=*/false, error);
  ASSERT_EQ(error, "");
  compiled.plan.model.prefillChunk = 96;
  auto engine = runtime::Engine::create(std::move(compiled.plan), dir + "/model.safetensors");
  ASSERT_TRUE(engine) << engine.status().message();
  const std::vector<int32_t> ids = extendedGoldenIds(dir, 200, (*engine)->plan().model.vocabSize);
  ASSERT_EQ(ids.size(), 200u);
  auto session = (*engine)->newSession();
  ASSERT_TRUE(session->prefill(ids));
  const std::vector<runtime::PrefillChunk> chunks = runtime::prefillChunks(200, 96);
  ASSERT_EQ(chunks.size(), 3u);
  const CallPlan *last = session->lastCallPlan("prefill");
  ASSERT_NE(last, nullptr);
  EXPECT_EQ(last->shape.startPos, chunks.back().startPos);
  EXPECT_TRUE(last->shape.runReplay);
  EXPECT_EQ(last->replayRows, kR);
  EXPECT_EQ(last->replay.startPos, 200 - kR);
  // Chunks 0 and 1 skip the replay (two shapes: the first at 0, the second
  // a continuation); chunk 2 replays: a third.
  EXPECT_EQ(session->callPlanStats().plansMade, 3u);
}

} // namespace
