//===- BackendSessionTest.cpp - A Session owns its BackendSession -----------===//
//
// Backend::openSession on the CPU backend (through a counting wrapper): a
// Session opens exactly one BackendSession, keeps it across reset(), passes
// it to every launch and to every device hook, and destroys it with itself;
// an Engine's Sessions each have their own. A failed open is kept as the
// session's error (returned by its next call) and retried by reset().
//===----------------------------------------------------------------------===//
#include "dsc/runtime/Backend.h"
#include "dsc/runtime/Engine.h"
#include "dsc/runtime/PlanFile.h"
#include "test/unit/support/Tiny6Plan.h"

#include <gtest/gtest.h>

#include <set>

namespace {

using namespace dsc::runtime;

struct Counts {
  int opened = 0, closed = 0;
  std::set<const BackendSession *> live, seenByLaunches, seenByHooks;
  int launchesWithoutSession = 0;
  int failNextOpens = 0;
};

class CountedSession final : public BackendSession {
public:
  explicit CountedSession(Counts &counts) : counts_(counts) {
    ++counts_.opened;
    counts_.live.insert(this);
  }
  ~CountedSession() override {
    ++counts_.closed;
    counts_.live.erase(this);
  }

private:
  Counts &counts_;
};

/// The CPU backend, counting sessions and checking what its hooks receive.
class CountingBackend final : public Backend {
public:
  explicit CountingBackend(Counts &counts) : cpu_(createCpuBackend(1)), counts_(counts) {}
  const char *name() const override { return "cpu"; }
  Status check(const Plan &plan) const override { return cpu_->check(plan); }
  Expected<std::unique_ptr<BackendSession>> openSession(const Plan &) override {
    if (counts_.failNextOpens > 0) {
      --counts_.failNextOpens;
      return internalError("no session today");
    }
    return std::unique_ptr<BackendSession>(new CountedSession(counts_));
  }
  Status launch(LaunchContext &c) override {
    if (!c.session || !counts_.live.count(c.session))
      ++counts_.launchesWithoutSession;
    else
      counts_.seenByLaunches.insert(c.session);
    return cpu_->launch(c);
  }
  Status toDevice(BackendSession *s, TensorRef ref, HostTensor &t) override {
    if (ref.kind != TensorRef::Kind::Weight) {
      EXPECT_TRUE(s && counts_.live.count(s)) << "a state or value upload without its session";
      counts_.seenByHooks.insert(s);
    }
    return Status::ok();
  }
  Status toHost(BackendSession *s, TensorRef ref, HostTensor &) override {
    EXPECT_TRUE(s && counts_.live.count(s));
    return Status::ok();
  }

private:
  std::unique_ptr<Backend> cpu_;
  Counts &counts_;
};

std::unique_ptr<Engine> countingEngine(Counts &counts) {
  Expected<Plan> plan = readPlanFile(dsc::test::tiny6CpuPlan());
  EXPECT_TRUE(plan) << plan.status().message();
  SyntheticWeightOptions synthetic;
  synthetic.threads = 1;
  Expected<std::unique_ptr<Engine>> engine = Engine::createSynthetic(
      std::move(plan.value()), synthetic, std::make_unique<CountingBackend>(counts));
  EXPECT_TRUE(engine) << engine.status().message();
  return engine ? std::move(engine.value()) : nullptr;
}

TEST(BackendSession, OwnedByItsSession) {
  DSC_SKIP_WITHOUT_TINY6_PLAN();
  Counts counts;
  std::unique_ptr<Engine> engine = countingEngine(counts);
  ASSERT_TRUE(engine);
  EXPECT_EQ(counts.opened, 0);
  {
    std::unique_ptr<Session> a = engine->newSession();
    std::unique_ptr<Session> b = engine->newSession();
    EXPECT_EQ(counts.opened, 2);
    EXPECT_EQ(counts.live.size(), 2u);
    ASSERT_TRUE(a->prefill(std::vector<int32_t>{1, 2, 3, 4}));
    ASSERT_TRUE(a->decode(5));
    a->reset();
    EXPECT_EQ(counts.opened, 2) << "reset keeps the backend session";
    ASSERT_TRUE(b->prefill(std::vector<int32_t>{4, 3}));
    EXPECT_TRUE(a->syncStates());
    EXPECT_EQ(counts.seenByLaunches.size(), 2u) << "each Session's launches carry its own";
    EXPECT_EQ(counts.seenByHooks.size(), 2u);
    EXPECT_EQ(counts.launchesWithoutSession, 0);
    a.reset();
    EXPECT_EQ(counts.closed, 1);
    EXPECT_EQ(counts.live.size(), 1u);
  }
  EXPECT_EQ(counts.closed, 2);
  EXPECT_TRUE(counts.live.empty());
}

TEST(BackendSession, AFailedOpenIsTheSessionsErrorUntilReset) {
  DSC_SKIP_WITHOUT_TINY6_PLAN();
  Counts counts;
  std::unique_ptr<Engine> engine = countingEngine(counts);
  ASSERT_TRUE(engine);
  counts.failNextOpens = 1;
  std::unique_ptr<Session> s = engine->newSession();
  Expected<HostTensor> logits = s->prefill(std::vector<int32_t>{1, 2});
  ASSERT_FALSE(logits);
  EXPECT_NE(logits.status().message().find("no session today"), std::string::npos)
      << logits.status().message();
  EXPECT_FALSE(s->syncStates());
  EXPECT_EQ(s->deviceArenaBytes("decode"), 0u);
  s->reset(); // opens it now
  EXPECT_EQ(counts.opened, 1);
  EXPECT_TRUE(s->prefill(std::vector<int32_t>{1, 2}));
}

TEST(BackendSession, CpuBackendOpensAnEmptyOne) {
  std::unique_ptr<Backend> cpu = createCpuBackend(1);
  Plan plan;
  Expected<std::unique_ptr<BackendSession>> s = cpu->openSession(plan);
  ASSERT_TRUE(s);
  EXPECT_NE(s->get(), nullptr);
  EXPECT_EQ(cpu->arenaBytes(**s, "decode"), 0u);
}

} // namespace
