//===- FakeBackendTest.cpp - The CUDA backend's ownership on a fake driver --===//
//
// The CUDA backend (createCudaBackendOn) runs the tiny6 plan on
// FakeCudaDriver.h: kernels do nothing, so no value is checked here (the GPU
// scripts check logits); what is checked is the bookkeeping:
//   - a Session owns its device state: destroying it frees every allocation
//     it made (states, arenas, call states, scratch) and its graphs; a new
//     Session at the same host addresses starts from nothing (no release()
//     callbacks exist to defend against address reuse);
//   - decode is eager once, captured at the second call and replayed after,
//     one graph per (Session, program, call shape), with no allocation and
//     no stream synchronisation inside a capture; graphs = false, an
//     observer or syncEachLaunch keep every call eager;
//   - two Sessions of one Engine keep separate graphs, also on two threads
//     at once (a capture is exclusive: nothing else reaches the stream);
//   - a captured decode spreads its steps over CudaOptions::streams streams
//     (graph branches): every branch joins the capture after the leading
//     zeroing and rejoins the origin before it ends (the fake driver checks
//     both), with the same launches as the eager call; one stream makes no
//     branch and no event;
//   - destroying the Engine frees the weights, constants and modules and
//     releases the context, the stream, the branch streams and the events.
//===----------------------------------------------------------------------===//
#include "FakeCudaDriver.h"
#include "dsc/runtime/Backend.h"
#include "dsc/runtime/Engine.h"
#include "dsc/runtime/PlanFile.h"
#include "runtime/cuda/CudaBackend.h"
#include "test/unit/support/Tiny6Plan.h"

#include <gtest/gtest.h>

#include <numeric>
#include <thread>
#include <vector>

namespace {

using namespace dsc::runtime;
using dsc::test::fakeState;

/// The tiny6 CPU plan with one stand-in module for every kernel and native
/// executable (the fake driver loads any bytes).
Plan fakeCudaPlan() {
  Expected<Plan> plan = readPlanFile(dsc::test::tiny6CpuPlan());
  EXPECT_TRUE(plan) << plan.status().message();
  Plan p = std::move(plan.value());
  Module m;
  m.templateName = "fake";
  m.cubin = {1, 2, 3, 0};
  p.modules.assign(1, m);
  for (KernelSpec &k : p.kernels)
    k.module = 0;
  for (Program &program : p.programs)
    for (Fusion &f : program.fusions)
      f.module = f.executable.empty() ? -1 : 0;
  return p;
}

std::unique_ptr<Engine> fakeEngine(CudaOptions cuda = {}) {
  Expected<std::unique_ptr<Backend>> backend =
      dsc::cuda::createCudaBackendOn(dsc::test::fakeCudaDriver(), cuda);
  EXPECT_TRUE(backend) << backend.status().message();
  EngineOptions options;
  options.backend = "cuda";
  options.cuda = cuda;
  SyntheticWeightOptions synthetic;
  synthetic.threads = 1;
  Expected<std::unique_ptr<Engine>> engine =
      Engine::createSynthetic(fakeCudaPlan(), synthetic, std::move(backend.value()), options);
  EXPECT_TRUE(engine) << engine.status().message();
  return engine ? std::move(engine.value()) : nullptr;
}

std::vector<int32_t> prompt(size_t n) {
  std::vector<int32_t> ids(n);
  std::iota(ids.begin(), ids.end(), 3);
  return ids;
}

/// A fake Engine made with `cuda` and a Session that prefilled 20 tokens
/// (null members on failure, reported).
struct Prefilled {
  std::unique_ptr<Engine> engine;
  std::unique_ptr<Session> session;
};
Prefilled prefilled(CudaOptions cuda) {
  Prefilled p;
  p.engine = fakeEngine(cuda);
  if (!p.engine)
    return p;
  p.session = p.engine->newSession();
  Expected<HostTensor> logits = p.session->prefill(prompt(20));
  EXPECT_TRUE(logits) << logits.status().message();
  if (!logits)
    p.session.reset();
  return p;
}

/// Decode launches of one call, from the counts around it.
long long launchesOf(Session &session, int32_t id) {
  const long long before = fakeState().launches;
  Expected<HostTensor> logits = session.decode(id);
  EXPECT_TRUE(logits) << logits.status().message();
  return fakeState().launches - before;
}

class FakeCudaBackend : public ::testing::Test {
protected:
  void SetUp() override {
    DSC_SKIP_WITHOUT_TINY6_PLAN();
    fakeState().reset();
  }
  void TearDown() override {
    if (dsc::test::tiny6CpuPlan().empty())
      return;
    EXPECT_EQ(fakeState().badFrees, 0);
    EXPECT_EQ(fakeState().syncsDuringCapture, 0);
    EXPECT_EQ(fakeState().allocsDuringCapture, 0);
    EXPECT_EQ(fakeState().workOutsideCapture, 0) << "a branch stream outside the capture";
    EXPECT_EQ(fakeState().unjoinedEnds, 0) << "a capture ended with a branch not rejoined";
    EXPECT_FALSE(fakeState().capturing);
  }
};

TEST_F(FakeCudaBackend, DecodeIsCapturedOnceAndReplayed) {
  std::unique_ptr<Engine> engine = fakeEngine();
  ASSERT_TRUE(engine);
  std::unique_ptr<Session> session = engine->newSession();
  ASSERT_TRUE(session->prefill(prompt(20)));
  EXPECT_EQ(fakeState().captures, 0) << "prefill stays eager";
  const long long eager = launchesOf(*session, 5);
  EXPECT_GT(eager, 0);
  EXPECT_EQ(fakeState().captures, 0) << "the first decode runs eagerly";
  EXPECT_EQ(launchesOf(*session, 6), eager) << "the captured call runs once, as its graph";
  EXPECT_EQ(fakeState().captures, 1);
  EXPECT_EQ(fakeState().graphLaunches, 1);
  for (int i = 0; i < 5; ++i)
    EXPECT_EQ(launchesOf(*session, 7 + i), eager);
  EXPECT_EQ(fakeState().captures, 1) << "one graph for every decode position";
  EXPECT_EQ(fakeState().graphLaunches, 6);
  EXPECT_EQ(fakeState().execsLive, 1);
  EXPECT_GT(session->deviceArenaBytes("decode"), 0u);
  EXPECT_GT(session->deviceArenaBytes("prefill"), session->deviceArenaBytes("decode"));

  // reset() keeps the session's graph (same call shape, same addresses): the
  // next sequence's first decode already replays it.
  session->reset();
  ASSERT_TRUE(session->prefill(prompt(20)));
  EXPECT_EQ(launchesOf(*session, 5), eager);
  EXPECT_EQ(fakeState().captures, 1);
  EXPECT_EQ(fakeState().graphLaunches, 7);
  // A longer prompt grows prefill's arena and scratch: decode's graph holds
  // none of them and is kept.
  const uint64_t prefillArena = session->deviceArenaBytes("prefill");
  session->reset();
  ASSERT_TRUE(session->prefill(prompt(120)));
  EXPECT_GT(session->deviceArenaBytes("prefill"), prefillArena);
  EXPECT_EQ(launchesOf(*session, 5), eager);
  EXPECT_EQ(fakeState().captures, 1);
  EXPECT_EQ(fakeState().graphLaunches, 8);
  session.reset();
  EXPECT_EQ(fakeState().execsLive, 0) << "the graph goes with its Session";
}

TEST_F(FakeCudaBackend, CapturedDecodeBranchesOverStreams) {
  long long eagerOneStream = 0, branchedProgramOrder = 0, switchesProgramOrder = 0;
  // (streams, heir-first capture order): the order moves no launch between
  // streams, so the branch launches are program order's.
  for (auto [streams, heirFirst] : {std::pair{1, false}, std::pair{4, false}, std::pair{4, true}}) {
    fakeState().reset();
    CudaOptions cuda;
    cuda.streams = streams;
    cuda.captureHeirFirst = heirFirst;
    {
      Prefilled run = prefilled(cuda);
      ASSERT_TRUE(run.session);
      const long long eager = launchesOf(*run.session, 5);
      EXPECT_EQ(fakeState().branchLaunches, 0) << "eager calls use the one stream";
      EXPECT_EQ(launchesOf(*run.session, 6), eager) << "the branched graph has every launch";
      EXPECT_EQ(launchesOf(*run.session, 7), eager);
      EXPECT_EQ(fakeState().captures, 1);
      EXPECT_EQ(fakeState().capturesEnded, 1);
      if (streams == 1) {
        eagerOneStream = eager;
        EXPECT_EQ(fakeState().branchLaunches, 0);
        EXPECT_EQ(fakeState().nextEvent, 0) << "one stream needs no event";
        EXPECT_EQ(fakeState().streamsLive, 1);
      } else {
        EXPECT_EQ(eager, eagerOneStream);
        EXPECT_GT(fakeState().branchLaunches, 0) << "tiny6 decode has independent steps";
        EXPECT_LT(fakeState().branchLaunches, eager);
        EXPECT_GT(fakeState().streamsLive, 1);
        EXPECT_LE(fakeState().streamsLive, 4);
        EXPECT_GT(fakeState().eventsLive, 0);
        if (!heirFirst) {
          branchedProgramOrder = fakeState().branchLaunches;
          switchesProgramOrder = fakeState().captureSwitches;
        } else {
          EXPECT_EQ(fakeState().branchLaunches, branchedProgramOrder) << "heir-first capture";
          // Each stream's successor captured right after it when it can be:
          // fewer switches between streams than in program order.
          EXPECT_LT(fakeState().captureSwitches, switchesProgramOrder);
        }
      }
    }
    EXPECT_EQ(fakeState().streamsLive, 0) << "streams " << streams;
    EXPECT_EQ(fakeState().eventsLive, 0) << "streams " << streams;
  }
}

/// CudaOptions::dependentLaunch: every launch of a marked module goes out
/// as a programmatic dependent launch, eager and captured alike; off, or for
/// modules without the prologue mark (older plans), none does.
TEST_F(FakeCudaBackend, DependentLaunchesFollowTheOptionAndTheModuleMark) {
  for (const bool on : {true, false}) {
    for (const bool marked : {true, false}) {
      fakeState().reset();
      fakeState().modulesMarked = marked;
      CudaOptions cuda;
      cuda.dependentLaunch = on;
      Prefilled run = prefilled(cuda);
      ASSERT_TRUE(run.session);
      const long long eager = launchesOf(*run.session, 5);
      ASSERT_GT(eager, 0);
      if (on && marked)
        EXPECT_EQ(fakeState().dependentLaunches, fakeState().launches) << "every eager launch";
      else
        EXPECT_EQ(fakeState().dependentLaunches, 0) << "on " << on << " marked " << marked;
    }
  }
}

TEST_F(FakeCudaBackend, SessionFreesItsDeviceState) {
  std::unique_ptr<Engine> engine = fakeEngine();
  ASSERT_TRUE(engine);
  const size_t weightsOnly = fakeState().live.size();
  EXPECT_GE(weightsOnly, engine->plan().tensors.size());
  size_t afterFirst = 0;
  for (int round = 0; round < 3; ++round) {
    std::unique_ptr<Session> session = engine->newSession();
    ASSERT_TRUE(session->prefill(prompt(33)));
    for (int i = 0; i < 4; ++i)
      ASSERT_TRUE(session->decode(9 + i));
    EXPECT_GT(fakeState().live.size(), weightsOnly);
    session.reset();
    // What stays is the Engine's: weights and the constants adapters uploaded.
    if (round == 0)
      afterFirst = fakeState().live.size();
    else
      EXPECT_EQ(fakeState().live.size(), afterFirst) << "round " << round << " leaked";
    EXPECT_EQ(fakeState().execsLive, 0);
  }
  EXPECT_GE(afterFirst, weightsOnly);
  const long long modules = fakeState().modulesLive;
  EXPECT_EQ(modules, 1);
  engine.reset();
  EXPECT_TRUE(fakeState().live.empty()) << fakeState().live.size() << " allocations left";
  EXPECT_EQ(fakeState().modulesLive, 0);
  EXPECT_EQ(fakeState().contextsRetained, 0);
  EXPECT_EQ(fakeState().streamsLive, 0);
}

TEST_F(FakeCudaBackend, SessionsKeepTheirOwnGraphs) {
  std::unique_ptr<Engine> engine = fakeEngine();
  ASSERT_TRUE(engine);
  std::unique_ptr<Session> a = engine->newSession(), b = engine->newSession();
  ASSERT_TRUE(a->prefill(prompt(20)));
  ASSERT_TRUE(b->prefill(prompt(30)));
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(a->decode(4 + i));
    ASSERT_TRUE(b->decode(4 + i));
  }
  EXPECT_EQ(fakeState().captures, 2);
  EXPECT_EQ(fakeState().execsLive, 2);
  a.reset();
  EXPECT_EQ(fakeState().execsLive, 1);
  const long long launches = fakeState().graphLaunches;
  ASSERT_TRUE(b->decode(8));
  EXPECT_EQ(fakeState().graphLaunches, launches + 1) << "b's graph survives a";
  EXPECT_EQ(fakeState().captures, 2);
}

TEST_F(FakeCudaBackend, SessionsOnTwoThreads) {
  std::unique_ptr<Engine> engine = fakeEngine();
  ASSERT_TRUE(engine);
  constexpr int kThreads = 2, kRounds = 3, kDecodes = 6;
  std::vector<int> failures(kThreads, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      for (int round = 0; round < kRounds; ++round) {
        std::unique_ptr<Session> session = engine->newSession();
        if (!session->prefill(prompt(size_t(17 + 9 * t))))
          ++failures[size_t(t)];
        for (int i = 0; i < kDecodes; ++i)
          if (!session->decode(3 + i))
            ++failures[size_t(t)];
      }
    });
  for (std::thread &th : threads)
    th.join();
  for (int t = 0; t < kThreads; ++t)
    EXPECT_EQ(failures[size_t(t)], 0) << "thread " << t;
  EXPECT_EQ(fakeState().captures, kThreads * kRounds) << "one capture per session";
  EXPECT_EQ(fakeState().graphLaunches, kThreads * kRounds * (kDecodes - 1));
  EXPECT_EQ(fakeState().execsLive, 0);
}

TEST_F(FakeCudaBackend, GraphsOffSyncEachLaunchAndObserversStayEager) {
  class Quiet final : public SessionObserver {};
  for (int mode = 0; mode < 3; ++mode) {
    fakeState().reset();
    CudaOptions cuda;
    cuda.graphs = mode != 0;
    cuda.syncEachLaunch = mode == 1;
    std::unique_ptr<Engine> engine = fakeEngine(cuda);
    ASSERT_TRUE(engine);
    std::unique_ptr<Session> session = engine->newSession();
    Quiet quiet;
    if (mode == 2)
      session->setObserver(&quiet);
    ASSERT_TRUE(session->prefill(prompt(20)));
    const long long eager = launchesOf(*session, 5);
    for (int i = 0; i < 3; ++i)
      EXPECT_EQ(launchesOf(*session, 6 + i), eager) << "mode " << mode;
    EXPECT_EQ(fakeState().captures, 0) << "mode " << mode;
    EXPECT_EQ(fakeState().graphLaunches, 0) << "mode " << mode;
  }
}

TEST_F(FakeCudaBackend, StatesReadBackAndTokensRejected) {
  std::unique_ptr<Engine> engine = fakeEngine();
  ASSERT_TRUE(engine);
  std::unique_ptr<Session> session = engine->newSession();
  ASSERT_TRUE(session->prefill(prompt(20)));
  EXPECT_TRUE(session->syncStates());
  // A rejected call changes nothing on the device either.
  const size_t live = fakeState().live.size();
  EXPECT_FALSE(session->decode(-1));
  EXPECT_EQ(fakeState().live.size(), live);
  EXPECT_TRUE(session->decode(5));
}

} // namespace
