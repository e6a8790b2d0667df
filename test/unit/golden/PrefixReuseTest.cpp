//===- PrefixReuseTest.cpp - prefillFrom a snapshot against a cold prefill --===//
//
// Issue 13's exact prefix reuse, first tier (Session::prefillPrefix /
// prefillFrom: whole state copies): on the CPU backend, a prompt A + B run as
// a hit on A's snapshot must equal A + B prefilled cold, bit for bit: the
// logits of the prefill, every state buffer after it (of a compressor's
// partial group, the live slots), and 3 greedy decode steps. tiny6 (window 16, ratio-2 and ratio-1 KV sources, Engram, candidate
// pool) with CED exact (replay 48 rows: the tail is at least 2 x 48) and
// full, tiny40 (40 layers) with full; prefixes from 1 token to most of the
// prompt, compressor groups and the window straddling the cut; the snapshot
// restored in another session and twice; prefillSaving's snapshot on the way
// equals prefillPrefix's; turns of a conversation through a SnapshotCache;
// 8 threads sharing one cache get the serial outputs.
// Bad uses are rejected with a message and leave the session as it was.
//===----------------------------------------------------------------------===//
#include "GoldenHarness.h"

#include "../support/SharedDir.h"

#include "dsc/runtime/Engine.h"
#include "dsc/runtime/SnapshotCache.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <thread>

using namespace dsc;
using namespace dsc::test;

namespace {

std::unique_ptr<runtime::Engine> engineFor(const std::string &dir, const std::string &mode,
                                           int64_t maxSeqLen) {
  std::string error;
  CompiledCase compiled = compileCasePlan(dir, mode, maxSeqLen, /*layerBoundaries=*/false, error);
  EXPECT_EQ(error, "") << mode;
  auto engine = runtime::Engine::create(std::move(compiled.plan), dir + "/model.safetensors");
  EXPECT_TRUE(engine.hasValue()) << engine.status().message();
  return engine ? std::move(engine.value()) : nullptr;
}

/// What a prefill leaves: its logits bytes, every state's bytes, then the
/// logits bytes of 3 greedy decode steps.
struct Outcome {
  std::vector<std::vector<uint8_t>> logits, states;
};

std::vector<uint8_t> bytesOf(const runtime::HostTensor &t) {
  const auto *b = reinterpret_cast<const uint8_t *>(t.bytes());
  return std::vector<uint8_t>(b, b + t.byteSize());
}

Outcome follow(runtime::Session &session, const runtime::HostTensor &first, int64_t vocab,
               size_t states) {
  Outcome out;
  out.logits.push_back(bytesOf(first));
  for (size_t i = 0; i < states; ++i)
    out.states.push_back(bytesOf(session.state(int64_t(i))));
  const runtime::HostTensor *last = &first;
  runtime::HostTensor step;
  for (int s = 0; s < 3; ++s) {
    const float *l = last->data<float>() + (last->numElements() - vocab);
    const int32_t next = int32_t(std::max_element(l, l + vocab) - l);
    auto d = session.decode(next);
    EXPECT_TRUE(d.hasValue()) << d.status().message();
    if (!d)
      break;
    step = std::move(d.value());
    out.logits.push_back(bytesOf(step));
    last = &step;
  }
  return out;
}

/// Of a [2, r, dim] compressor state after S tokens, the live bytes: the
/// open group's slots [0, S % r) of each half (the slots past it are written
/// before they are read again, and which stale group they hold depends on
/// where the calls split the prompt: ChunkedPrefillTest's rule).
std::vector<uint8_t> liveCompressorBytes(const std::vector<uint8_t> &s,
                                         const runtime::StateBuffer &state, int64_t S) {
  const size_t live = size_t(S % state.ratio * state.dim) * sizeof(float), half = s.size() / 2;
  std::vector<uint8_t> out(s.begin(), s.begin() + live);
  out.insert(out.end(), s.begin() + half, s.begin() + half + live);
  return out;
}

void expectSame(const Outcome &cold, const Outcome &hit, const runtime::Plan &plan, int64_t S) {
  ASSERT_EQ(cold.logits.size(), hit.logits.size());
  for (size_t c = 0; c < cold.logits.size(); ++c)
    EXPECT_TRUE(cold.logits[c] == hit.logits[c])
        << (c == 0 ? std::string("the prefill") : "decode step " + std::to_string(c - 1))
        << ": logits differ from the cold prefill";
  ASSERT_EQ(cold.states.size(), hit.states.size());
  for (size_t i = 0; i < cold.states.size(); ++i) {
    const runtime::StateBuffer &state = plan.states[i];
    if (state.kind == runtime::StateKind::CompressorState) {
      ASSERT_EQ(cold.states[i].size(), size_t(2 * state.ratio * state.dim) * sizeof(float));
      EXPECT_TRUE(liveCompressorBytes(cold.states[i], state, S) ==
                  liveCompressorBytes(hit.states[i], state, S))
          << "state '" << state.name << "' (its live slots) differs after the prefill";
      continue;
    }
    EXPECT_TRUE(cold.states[i] == hit.states[i])
        << "state '" << state.name << "' differs after the prefill";
  }
}

/// For each (prefix, total): cold prefill of ids[0, total) vs prefillFrom the
/// snapshot of ids[0, prefix), in a session other than the one that made it.
void checkHits(runtime::Engine &engine, const std::vector<int32_t> &ids,
               std::initializer_list<std::pair<int64_t, int64_t>> cases) {
  const runtime::Plan &plan = engine.plan();
  const int64_t vocab = plan.model.vocabSize;
  auto maker = engine.newSession();
  auto cold = engine.newSession();
  auto warm = engine.newSession();
  for (auto [prefix, total] : cases) {
    SCOPED_TRACE("prefix " + std::to_string(prefix) + ", prompt " + std::to_string(total));
    ASSERT_LE(total, int64_t(ids.size()));
    std::span<const int32_t> prompt(ids.data(), size_t(total));
    cold->reset();
    auto c = cold->prefill(prompt);
    ASSERT_TRUE(c.hasValue()) << c.status().message();
    const Outcome expected = follow(*cold, *c, vocab, plan.states.size());
    auto snapshot = maker->prefillPrefix(prompt.first(size_t(prefix)));
    ASSERT_TRUE(snapshot.hasValue()) << snapshot.status().message();
    EXPECT_EQ(maker->position(), 0) << "prefillPrefix leaves its session reset";
    EXPECT_EQ(snapshot->ids.size(), size_t(prefix));
    EXPECT_GT(snapshot->bytes(), 0u);
    for (int round = 0; round < 2; ++round) { // the snapshot is not used up
      auto h = warm->prefillFrom(*snapshot, prompt);
      ASSERT_TRUE(h.hasValue()) << h.status().message();
      EXPECT_EQ(warm->position(), total);
      expectSame(expected, follow(*warm, *h, vocab, plan.states.size()), plan, total);
    }
  }
}

TEST(PrefixReuse, Tiny6ExactHitEqualsTheColdPrefill) {
  const std::string dir = sharedPath("golden/tiny6");
  auto engine = engineFor(dir, "exact", 256);
  ASSERT_TRUE(engine);
  ASSERT_EQ(engine->plan().model.cedReplayTokens, 48);
  auto probe = engine->newSession();
  ASSERT_EQ(probe->minPrefixTail(), 96) << "2 x the replay rows (48), above 2 x the window";
  const std::vector<int32_t> ids = extendedGoldenIds(dir, 250, 1024);
  ASSERT_EQ(ids.size(), 250u);
  checkHits(*engine, ids, {{1, 97}, {32, 128}, {57, 160}, {100, 250}, {150, 250}});
}

TEST(PrefixReuse, Tiny6FullHitEqualsTheColdPrefill) {
  const std::string dir = sharedPath("golden/tiny6");
  auto engine = engineFor(dir, "full", 256);
  ASSERT_TRUE(engine);
  auto probe = engine->newSession();
  ASSERT_EQ(probe->minPrefixTail(), 32) << "2 x the window (16)";
  const std::vector<int32_t> ids = extendedGoldenIds(dir, 200, 1024);
  checkHits(*engine, ids, {{1, 40}, {33, 70}, {64, 200}, {151, 200}});
}

TEST(PrefixReuse, Tiny40FullHitEqualsTheColdPrefill) {
  const std::string dir = sharedPath("golden/tiny40");
  auto engine = engineFor(dir, "full", 128);
  ASSERT_TRUE(engine);
  auto probe = engine->newSession();
  const int64_t tail = probe->minPrefixTail();
  const std::vector<int32_t> ids = extendedGoldenIds(dir, 120, 512);
  ASSERT_LE(40 + tail, 120);
  checkHits(*engine, ids, {{1, 1 + tail}, {40, 120}, {120 - tail, 120}});
}

// prefillSaving leaves on the way the snapshot prefillPrefix would make, and
// its own result is the cold prefill's; a multi-turn conversation served
// through a SnapshotCache (each turn the previous turn plus new tokens)
// hits on every turn after the first and matches the cold prefills.
TEST(PrefixReuse, SavingOnTheWayAndACacheOfTurns) {
  const std::string dir = sharedPath("golden/tiny6");
  auto engine = engineFor(dir, "exact", 256);
  ASSERT_TRUE(engine);
  const runtime::Plan &plan = engine->plan();
  const int64_t vocab = plan.model.vocabSize;
  const std::vector<int32_t> ids = extendedGoldenIds(dir, 250, 1024);
  auto cold = engine->newSession(), served = engine->newSession(), maker = engine->newSession();
  auto coldRun = [&](int64_t n) {
    cold->reset();
    auto c = cold->prefill(std::span<const int32_t>(ids.data(), size_t(n)));
    EXPECT_TRUE(c.hasValue()) << c.status().message();
    return follow(*cold, *c, vocab, plan.states.size());
  };
  auto sameSnapshot = [&](const runtime::SessionSnapshot &a, const runtime::SessionSnapshot &b) {
    ASSERT_EQ(a.ids, b.ids);
    ASSERT_EQ(a.states.size(), b.states.size());
    for (size_t i = 0; i < a.states.size(); ++i) {
      std::vector<uint8_t> x = bytesOf(a.states[i]), y = bytesOf(b.states[i]);
      if (plan.states[i].kind == runtime::StateKind::CompressorState) {
        x = liveCompressorBytes(x, plan.states[i], int64_t(a.ids.size()));
        y = liveCompressorBytes(y, plan.states[i], int64_t(b.ids.size()));
      }
      EXPECT_TRUE(x == y) << "state '" << plan.states[i].name << "' of the saved snapshot";
    }
  };
  { // From nothing, saving at 64; then from that snapshot, saving at 144.
    runtime::SessionSnapshot at64, at144;
    auto a = served->prefillSaving(nullptr, std::span<const int32_t>(ids.data(), 200), 64, at64);
    ASSERT_TRUE(a.hasValue()) << a.status().message();
    expectSame(coldRun(200), follow(*served, *a, vocab, plan.states.size()), plan, 200);
    auto ref64 = maker->prefillPrefix(std::span<const int32_t>(ids.data(), 64));
    ASSERT_TRUE(ref64.hasValue());
    sameSnapshot(at64, *ref64);
    auto b = served->prefillSaving(&at64, std::span<const int32_t>(ids.data(), 250), 144, at144);
    ASSERT_TRUE(b.hasValue()) << b.status().message();
    expectSame(coldRun(250), follow(*served, *b, vocab, plan.states.size()), plan, 250);
    auto ref144 = maker->prefillPrefix(std::span<const int32_t>(ids.data(), 144));
    ASSERT_TRUE(ref144.hasValue());
    sameSnapshot(at144, *ref144);
    runtime::SessionSnapshot unused;
    auto late = served->prefillSaving(&at64, std::span<const int32_t>(ids.data(), 250), 200, unused);
    ASSERT_FALSE(late.hasValue());
    EXPECT_EQ(late.status().message(), "prefillSaving: a snapshot at 200 must lie after the 64 "
                                       "tokens it starts from and leave at least 96 of the 250");
  }
  // Turns of 100, 140, 190, 250 tokens, each extending the one before.
  runtime::SnapshotCache cache(16, uint64_t(1) << 30);
  const int64_t tail = served->minPrefixTail();
  int64_t hits = 0;
  for (int64_t n : {100, 140, 190, 250}) {
    SCOPED_TRACE("turn of " + std::to_string(n) + " tokens");
    std::span<const int32_t> turn(ids.data(), size_t(n));
    std::shared_ptr<const runtime::SessionSnapshot> hit = cache.lookup(turn, tail);
    const int64_t held = hit ? int64_t(hit->ids.size()) : 0, cut = cache.savePoint(n, tail);
    runtime::Expected<runtime::HostTensor> logits = runtime::failedPrecondition("not run");
    if (cut > held) {
      runtime::SessionSnapshot saved;
      logits = served->prefillSaving(hit.get(), turn, cut, saved);
      ASSERT_TRUE(logits.hasValue()) << logits.status().message();
      ASSERT_TRUE(cache.insert(std::move(saved)));
    } else {
      if (!hit)
        served->reset(); // prefill starts a sequence; prefillFrom resets itself
      logits = hit ? served->prefillFrom(*hit, turn) : served->prefill(turn);
      ASSERT_TRUE(logits.hasValue()) << logits.status().message();
    }
    hits += hit ? 1 : 0;
    expectSame(coldRun(n), follow(*served, *logits, vocab, plan.states.size()), plan, n);
  }
  EXPECT_EQ(hits, 2) << "100 (saves nothing: 100 - 96 < 16), 140 (saves 32), 190 hits 32 "
                        "(saves 80), 250 hits 80";
  EXPECT_EQ(cache.stats().hitTokens, 32 + 80);
}

// Sessions on 8 threads serve overlapping prompts through one SnapshotCache
// (lookups, saves and hits interleaved): every prefill's logits equal the
// same prompt's cold prefill, and the cache served some of them.
TEST(PrefixReuse, ThreadsSharingACacheGetTheSerialOutputs) {
  const std::string dir = sharedPath("golden/tiny6");
  auto engine = engineFor(dir, "full", 256);
  ASSERT_TRUE(engine);
  const std::vector<int32_t> ids = extendedGoldenIds(dir, 200, 1024);
  // Prompts: the shared 200-token stream cut at four lengths, and a variant
  // that leaves it after 48 tokens.
  std::vector<std::vector<int32_t>> prompts;
  for (size_t n : {90u, 130u, 170u, 200u})
    prompts.emplace_back(ids.begin(), ids.begin() + long(n));
  prompts.push_back(prompts[2]);
  prompts.back()[48] = (prompts.back()[48] + 3) % 1024;
  std::vector<std::vector<uint8_t>> cold;
  auto serial = engine->newSession();
  for (const std::vector<int32_t> &p : prompts) {
    serial->reset();
    auto l = serial->prefill(p);
    ASSERT_TRUE(l.hasValue()) << l.status().message();
    cold.push_back(bytesOf(*l));
  }
  runtime::SnapshotCache cache(16, uint64_t(1) << 30);
  constexpr int kThreads = 8, kRounds = 2;
  std::vector<std::string> errors(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      auto session = engine->newSession();
      const int64_t tail = session->minPrefixTail();
      for (int r = 0; r < kRounds; ++r) {
        const size_t which = size_t(t + 3 * r) % prompts.size();
        const std::vector<int32_t> &p = prompts[which];
        auto hit = cache.lookup(p, tail);
        const int64_t held = hit ? int64_t(hit->ids.size()) : 0;
        const int64_t cut = cache.savePoint(int64_t(p.size()), tail);
        runtime::Expected<runtime::HostTensor> l = runtime::failedPrecondition("not run");
        if (cut > held) {
          runtime::SessionSnapshot saved;
          l = session->prefillSaving(hit.get(), p, cut, saved);
          if (l)
            (void)cache.insert(std::move(saved));
        } else if (hit) {
          l = session->prefillFrom(*hit, p);
        } else {
          session->reset();
          l = session->prefill(p);
        }
        if (!l)
          errors[size_t(t)] = l.status().message();
        else if (bytesOf(*l) != cold[which])
          errors[size_t(t)] = "prompt " + std::to_string(which) + ": logits differ from serial";
      }
    });
  for (std::thread &t : threads)
    t.join();
  for (int t = 0; t < kThreads; ++t)
    EXPECT_EQ(errors[size_t(t)], "") << "thread " << t;
  EXPECT_EQ(cache.stats().lookups, kThreads * kRounds);
  EXPECT_GT(cache.stats().entries, 0);
}

TEST(PrefixReuse, RejectsWhatItCannotReuse) {
  const std::string dir = sharedPath("golden/tiny6");
  auto engine = engineFor(dir, "exact", 256);
  ASSERT_TRUE(engine);
  const std::vector<int32_t> ids = extendedGoldenIds(dir, 200, 1024);
  auto session = engine->newSession();
  auto snapshot = session->prefillPrefix(std::span<const int32_t>(ids.data(), 50));
  ASSERT_TRUE(snapshot.hasValue()) << snapshot.status().message();
  ASSERT_TRUE(session->prefill(std::span<const int32_t>(ids.data(), 20)).hasValue());

  auto shortTail = session->prefillFrom(*snapshot, std::span<const int32_t>(ids.data(), 100));
  ASSERT_FALSE(shortTail.hasValue());
  EXPECT_EQ(shortTail.status().message(),
            "prefillFrom: 50 tokens after the cached prefix of 50; the plan's last prefill chunk "
            "needs at least 96");
  std::vector<int32_t> other(ids.begin(), ids.begin() + 200);
  other[7] = (other[7] + 1) % 1024;
  auto mismatch = session->prefillFrom(*snapshot, other);
  ASSERT_FALSE(mismatch.hasValue());
  EXPECT_EQ(mismatch.status().message(),
            "prefillFrom: the prompt does not start with the snapshot's 50 tokens");
  std::vector<int32_t> badToken(ids.begin(), ids.begin() + 200);
  badToken[180] = 5000;
  auto outside = session->prefillFrom(*snapshot, badToken);
  ASSERT_FALSE(outside.hasValue());
  EXPECT_EQ(outside.status().message(),
            "prefillFrom: token 180 has id 5000, outside the vocabulary [0, 1024)");
  runtime::SessionSnapshot empty;
  EXPECT_FALSE(session->prefillFrom(empty, std::span<const int32_t>(ids.data(), 200)).hasValue());
  runtime::SessionSnapshot truncated = *snapshot;
  truncated.states.pop_back();
  auto wrongPlan = session->prefillFrom(truncated, std::span<const int32_t>(ids.data(), 200));
  ASSERT_FALSE(wrongPlan.hasValue());
  EXPECT_EQ(wrongPlan.status().message(), "prefillFrom: the snapshot holds " +
                                              std::to_string(engine->plan().states.size() - 1) +
                                              " states, the plan " +
                                              std::to_string(engine->plan().states.size()));
  EXPECT_EQ(session->position(), 20) << "a rejected prefillFrom leaves the sequence as it was";
  auto tooLong = session->prefillPrefix(std::span<const int32_t>(ids.data(), 200));
  ASSERT_FALSE(tooLong.hasValue());
  EXPECT_EQ(tooLong.status().message(),
            "prefillPrefix: a prefix of 200 tokens leaves less than the 96-token tail prefillFrom "
            "needs within the plan's max_seq_len 256");
}

} // namespace
