//===- SchedulerTest.cpp - Continuous batching of requests (Scheduler.h) --===//
//
// The runtime's Scheduler on the CPU backend with the tiny6 golden model:
// requests running together give each request the tokens of a greedy run of
// its prompt alone (Session::prefill + decode, written out here), whatever
// ran beside it; cancel, take and admission by memory do what Scheduler.h
// says; a bad request is refused before it queues; 16 threads submitting
// while another steps get the serial outputs.
//===----------------------------------------------------------------------===//
#include "GoldenHarness.h"

#include "../support/SharedDir.h"

#include "dsc/runtime/Engine.h"
#include "dsc/runtime/Scheduler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <thread>

using namespace dsc;
using namespace dsc::test;

namespace {

std::unique_ptr<runtime::Engine> tiny6Engine() {
  std::string error;
  CompiledCase compiled =
      compileCasePlan(sharedPath("golden/tiny6"), "full", 256, /*layerBoundaries=*/false, error);
  EXPECT_EQ(error, "");
  auto engine = runtime::Engine::create(std::move(compiled.plan),
                                        sharedPath("golden/tiny6") + "/model.safetensors");
  EXPECT_TRUE(engine.hasValue()) << engine.status().message();
  return engine ? std::move(engine.value()) : nullptr;
}

int32_t argmaxLast(const runtime::HostTensor &logits) {
  const int64_t vocab = logits.dim(int64_t(logits.shape().size()) - 1);
  const float *row = logits.data<float>() + (logits.numElements() - vocab);
  return int32_t(std::max_element(row, row + vocab) - row);
}

/// Greedy generation of `n` tokens after `prompt` on a session of its own.
std::vector<int32_t> alone(runtime::Engine &engine, const std::vector<int32_t> &prompt, int64_t n) {
  auto session = engine.newSession();
  auto logits = session->prefill(prompt);
  EXPECT_TRUE(logits.hasValue()) << logits.status().message();
  std::vector<int32_t> out;
  if (!logits)
    return out;
  int32_t next = argmaxLast(*logits);
  for (int64_t i = 0; i < n; ++i) {
    out.push_back(next);
    if (i + 1 == n)
      break;
    auto d = session->decode(next);
    EXPECT_TRUE(d.hasValue()) << d.status().message();
    if (!d)
      break;
    next = argmaxLast(*d);
  }
  return out;
}

/// Prompts of different lengths from the golden ids (some sharing a prefix).
std::vector<std::vector<int32_t>> prompts() {
  const std::vector<int32_t> ids = extendedGoldenIds(sharedPath("golden/tiny6"), 120, 1024);
  std::vector<std::vector<int32_t>> p;
  for (size_t n : {20u, 45u, 33u, 120u, 7u})
    p.emplace_back(ids.begin(), ids.begin() + long(n));
  p.push_back(p[1]);
  p.back()[10] = (p.back()[10] + 5) % 1024;
  return p;
}

/// Steps until idle (bounded), checking every report against the limits.
void drain(runtime::Scheduler &s, int64_t maxRunning, int64_t *peak = nullptr) {
  for (int i = 0; i < 1000 && !s.idle(); ++i) {
    auto r = s.step();
    ASSERT_TRUE(r.hasValue()) << r.status().message();
    EXPECT_LE(r->running, maxRunning);
    if (peak)
      *peak = std::max(*peak, r->running + r->finished + r->failed);
  }
  EXPECT_TRUE(s.idle());
}

// The greedy rule, by hand: the last row decides, the lowest id wins a tie.
TEST(Scheduler, GreedyTokenIsTheLastRowsArgmaxLowestIdOnTies) {
  runtime::HostTensor logits(runtime::DType::F32, {2, 5});
  const float values[10] = {9, 0, 0, 0, 0, /*last row*/ -1, 3, -2, 3, 1};
  std::copy(values, values + 10, logits.data<float>());
  EXPECT_EQ(runtime::greedyToken(logits), 1);
  logits.data<float>()[9] = 4;
  EXPECT_EQ(runtime::greedyToken(logits), 4);
}

TEST(Scheduler, RequestsRunningTogetherGetTheirAloneTokens) {
  auto engine = tiny6Engine();
  ASSERT_TRUE(engine);
  const auto ps = prompts();
  const std::vector<int64_t> news = {4, 6, 0, 3, 5, 6};
  std::vector<std::vector<int32_t>> expected;
  for (size_t i = 0; i < ps.size(); ++i)
    expected.push_back(alone(*engine, ps[i], news[i]));
  for (int64_t maxRunning : {1, 3, 8}) {
    SCOPED_TRACE("maxRunning " + std::to_string(maxRunning));
    runtime::SnapshotCache cache(16, uint64_t(1) << 30);
    runtime::SchedulerOptions o;
    o.maxRunning = maxRunning;
    o.prefixCache = maxRunning == 3 ? &cache : nullptr; // exact reuse changes nothing
    auto s = runtime::Scheduler::create(*engine, o);
    ASSERT_TRUE(s.hasValue()) << s.status().message();
    std::vector<uint64_t> ids;
    for (size_t i = 0; i < ps.size(); ++i) {
      auto id = (*s)->submit({ps[i], news[i]});
      ASSERT_TRUE(id.hasValue()) << id.status().message();
      ids.push_back(*id);
    }
    int64_t peak = 0;
    drain(**s, maxRunning, &peak);
    EXPECT_EQ(peak, std::min<int64_t>(maxRunning, int64_t(ps.size())));
    for (size_t i = 0; i < ps.size(); ++i) {
      auto r = (*s)->take(ids[i]);
      ASSERT_TRUE(r.hasValue()) << r.status().message();
      EXPECT_EQ(r->state, runtime::RequestState::Finished) << "request " << i;
      EXPECT_EQ(r->outputIds, expected[i]) << "request " << i;
    }
  }
}

TEST(Scheduler, CancelAndTake) {
  auto engine = tiny6Engine();
  ASSERT_TRUE(engine);
  const auto ps = prompts();
  runtime::SchedulerOptions o;
  o.maxRunning = 2;
  auto s = runtime::Scheduler::create(*engine, o);
  ASSERT_TRUE(s.hasValue()) << s.status().message();
  const uint64_t a = *(*s)->submit({ps[0], 6}), b = *(*s)->submit({ps[1], 6}),
                 c = *(*s)->submit({ps[2], 6});
  for (int i = 0; i < 2; ++i)
    ASSERT_TRUE((*s)->step().hasValue());
  EXPECT_EQ((*s)->result(c)->state, runtime::RequestState::Queued);
  EXPECT_EQ((*s)->take(b).status().code(), runtime::StatusCode::FailedPrecondition)
      << "a running request has no final result";
  ASSERT_TRUE((*s)->cancel(b));
  ASSERT_TRUE((*s)->cancel(c));
  EXPECT_EQ((*s)->cancel(999).code(), runtime::StatusCode::NotFound);
  // A cancelled request's result may be taken at once, while its session is
  // still in the running set (the next step lets it go).
  auto rb = (*s)->take(b);
  drain(**s, 2);
  auto ra = (*s)->take(a), rc = (*s)->take(c);
  ASSERT_TRUE(ra && rb && rc);
  EXPECT_EQ(ra->state, runtime::RequestState::Finished);
  EXPECT_EQ(ra->outputIds, alone(*engine, ps[0], 6));
  EXPECT_EQ(rb->state, runtime::RequestState::Cancelled);
  const std::vector<int32_t> full = alone(*engine, ps[1], 6);
  EXPECT_EQ(rb->outputIds, std::vector<int32_t>(full.begin(), full.begin() + 2))
      << "the tokens before the cancel";
  EXPECT_EQ(rc->state, runtime::RequestState::Cancelled);
  EXPECT_TRUE(rc->outputIds.empty()) << "cancelled while queued";
  EXPECT_EQ((*s)->take(a).status().code(), runtime::StatusCode::NotFound) << "taken once";
  EXPECT_TRUE((*s)->cancel(a).code() == runtime::StatusCode::NotFound);
}

TEST(Scheduler, AdmissionStaysWithinTheMemoryLimit) {
  auto engine = tiny6Engine();
  ASSERT_TRUE(engine);
  const auto ps = prompts();
  runtime::SchedulerOptions o;
  o.maxRunning = 8;
  {
    auto probe = runtime::Scheduler::create(*engine, o);
    ASSERT_TRUE(probe.hasValue());
    o.memoryLimit = 2 * (*probe)->sessionBytes() + 1;
    ASSERT_GT((*probe)->sessionBytes(), 0u);
  }
  auto s = runtime::Scheduler::create(*engine, o);
  ASSERT_TRUE(s.hasValue()) << s.status().message();
  std::vector<uint64_t> ids;
  for (const auto &p : ps)
    ids.push_back(*(*s)->submit({p, 3}));
  int64_t peak = 0;
  drain(**s, 2, &peak);
  EXPECT_EQ(peak, 2) << "two sessions' states fit the limit, three do not";
  for (size_t i = 0; i < ps.size(); ++i)
    EXPECT_EQ((*s)->take(ids[i])->outputIds, alone(*engine, ps[i], 3)) << "request " << i;

  o.memoryLimit = (*s)->sessionBytes() - 1;
  auto none = runtime::Scheduler::create(*engine, o);
  ASSERT_FALSE(none.hasValue());
  EXPECT_NE(none.status().message().find("is below one session's states"), std::string::npos)
      << none.status().message();
  o.memoryLimit = 0;
  o.maxRunning = -1;
  EXPECT_FALSE(runtime::Scheduler::create(*engine, o).hasValue());
}

TEST(Scheduler, BadRequestsAreRefusedBeforeTheyQueue) {
  auto engine = tiny6Engine();
  ASSERT_TRUE(engine);
  auto s = runtime::Scheduler::create(*engine, {});
  ASSERT_TRUE(s.hasValue());
  EXPECT_EQ((*s)->submit({{}, 3}).status().message(), "request: the prompt has no tokens");
  EXPECT_EQ((*s)->submit({{1, 2, 1024}, 3}).status().message(),
            "request: prompt id [2] = 1024 is outside the vocabulary [0, 1024)");
  EXPECT_EQ((*s)->submit({{1, -4}, 3}).status().message(),
            "request: prompt id [1] = -4 is outside the vocabulary [0, 1024)");
  EXPECT_EQ((*s)->submit({std::vector<int32_t>(200, 1), 57}).status().message(),
            "request: 200 prompt + 57 new tokens exceed the plan's max_seq_len 256");
  EXPECT_EQ((*s)->submit({{1}, INT64_MAX}).status().message(),
            "request: 1 prompt + 9223372036854775807 new tokens exceed the plan's max_seq_len 256");
  EXPECT_EQ((*s)->submit({{1}, -1}).status().message(),
            "request: maxNewTokens is -1, must be >= 0");
  EXPECT_TRUE((*s)->idle());
  EXPECT_EQ((*s)->maxRunning(), 1) << "the plan's max_batch";
}

TEST(Scheduler, ThreadsSubmittingWhileOneStepsGetTheSerialTokens) {
  auto engine = tiny6Engine();
  ASSERT_TRUE(engine);
  const auto ps = prompts();
  std::vector<std::vector<int32_t>> expected;
  for (const auto &p : ps)
    expected.push_back(alone(*engine, p, 3));
  runtime::SnapshotCache cache(16, uint64_t(1) << 30);
  runtime::SchedulerOptions o;
  o.maxRunning = 4;
  o.prefixCache = &cache;
  auto s = runtime::Scheduler::create(*engine, o);
  ASSERT_TRUE(s.hasValue());
  constexpr int kThreads = 16;
  std::vector<uint64_t> ids(kThreads);
  std::atomic<int> submitted{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      auto id = (*s)->submit({ps[size_t(t) % ps.size()], 3});
      ids[size_t(t)] = id ? *id : 0;
      ++submitted;
    });
  for (int i = 0; i < 2000 && (submitted < kThreads || !(*s)->idle()); ++i) {
    auto r = (*s)->step();
    ASSERT_TRUE(r.hasValue()) << r.status().message();
  }
  for (std::thread &t : threads)
    t.join();
  drain(**s, 4);
  for (int t = 0; t < kThreads; ++t) {
    auto r = (*s)->take(ids[size_t(t)]);
    ASSERT_TRUE(r.hasValue()) << "thread " << t << ": " << r.status().message();
    EXPECT_EQ(r->outputIds, expected[size_t(t) % ps.size()]) << "thread " << t;
  }
}

TEST(Scheduler, ACacheBreakpointLetsPromptsSharingOnlyItHit) {
  auto engine = tiny6Engine();
  ASSERT_TRUE(engine);
  const std::vector<int32_t> ids = extendedGoldenIds(sharedPath("golden/tiny6"), 200, 1024);
  // Two prompts of 200 tokens sharing their first 100 (a system prompt).
  std::vector<int32_t> a(ids.begin(), ids.begin() + 200), b = a;
  for (size_t i = 100; i < b.size(); ++i)
    b[i] = (b[i] + 11) % 1024;
  runtime::SnapshotCache cache(16, uint64_t(1) << 30);
  const int64_t tail = engine->newSession()->minPrefixTail();
  const int64_t expected = std::min<int64_t>(cache.savePoint(200, tail), 96);
  ASSERT_GT(expected, 0) << "the plan leaves no room for a cached prefix";
  runtime::SchedulerOptions o;
  o.prefixCache = &cache;
  auto s = runtime::Scheduler::create(*engine, o);
  ASSERT_TRUE(s.hasValue());
  EXPECT_EQ((*s)->submit({a, 2, 201}).status().message(),
            "request: cachePrefix is 201, must be in [0, 200] (the prompt's tokens)");
  const uint64_t ia = *(*s)->submit({a, 3, 100}), ib = *(*s)->submit({b, 3, 100});
  drain(**s, 1);
  auto ra = (*s)->take(ia), rb = (*s)->take(ib);
  ASSERT_TRUE(ra && rb);
  EXPECT_EQ(ra->prefixHitTokens, 0);
  EXPECT_EQ(rb->prefixHitTokens, expected) << "b starts from a's states after the breakpoint";
  EXPECT_EQ(ra->outputIds, alone(*engine, a, 3));
  EXPECT_EQ(rb->outputIds, alone(*engine, b, 3));
}

} // namespace
