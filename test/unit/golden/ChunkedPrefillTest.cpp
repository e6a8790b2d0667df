//===- ChunkedPrefillTest.cpp - Chunked prefill against one call ----------===//
//
// Issue 5: a prompt longer than the plan's prefill chunk runs as several
// calls (Session::prefill, docs/runtime.md "Chunked prefill"). On the CPU
// backend, with tiny6 (window 16, ratio-2 and ratio-1 KV sources, Engram,
// candidate pool) at --max-seq-len 256, chunked prefill must equal the one
// call bit for bit: the logits at the last prompt position, every state
// buffer after the prefill (window rings, main KV, index keys, compressor
// partial groups, Engram history) and the logits of 4 greedy decode steps.
// Chunk 32 (= 2 x window, the smallest allowed) with --ced=full and chunk 96
// (= 2 x the exact replay R = 48) with --ced=exact, prompts up to 256 tokens
// (2 to 8 chunks, chunk starts at odd positions: compressor groups straddle
// calls). Also checks the chunk split and that a chunk's activation peak is
// below the one call's (the indexer scores are [chunk, S/r], not [S, S/r]).
//===----------------------------------------------------------------------===//
#include "GoldenHarness.h"

#include "../support/SharedDir.h"

#include "dsc/runtime/Engine.h"
#include "dsc/runtime/MemoryPlan.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>

using namespace dsc;
using namespace dsc::test;
using runtime::HostTensor;

namespace {

constexpr int kDecodeSteps = 4;

struct PrefillRun {
  std::vector<std::vector<float>> logits;        ///< prefill, then each decode step
  std::vector<std::vector<uint8_t>> statesAfter; ///< every state after the prefill
  uint64_t prefillPlannedPeak = 0;               ///< the last prefill call's
  uint64_t prefillObservedPeak = 0;
};

PrefillRun runFree(runtime::Engine &engine, const std::vector<int32_t> &ids) {
  PrefillRun run;
  auto session = engine.newSession();
  auto logits = session->prefill(ids);
  EXPECT_TRUE(logits.hasValue()) << logits.status().message();
  if (!logits)
    return run;
  run.logits.emplace_back(logits->data<float>(), logits->data<float>() + logits->numElements());
  for (size_t i = 0; i < engine.plan().states.size(); ++i) {
    const HostTensor &s = session->state(int64_t(i));
    const auto *bytes = reinterpret_cast<const uint8_t *>(s.bytes());
    run.statesAfter.emplace_back(bytes, bytes + s.byteSize());
  }
  if (const runtime::SessionMemoryStats *m = session->memoryStats("prefill")) {
    run.prefillPlannedPeak = m->plannedPeakBytes;
    run.prefillObservedPeak = m->observedPeakBytes;
  }
  for (int step = 0; step < kDecodeSteps; ++step) {
    const std::vector<float> &last = run.logits.back();
    int32_t next = int32_t(std::max_element(last.begin(), last.end()) - last.begin());
    auto d = session->decode(next);
    EXPECT_TRUE(d.hasValue()) << d.status().message();
    if (!d)
      return run;
    run.logits.emplace_back(d->data<float>(), d->data<float>() + d->numElements());
  }
  return run;
}

/// The first `live` bytes of each half of a [2, r, dim] compressor state.
std::vector<uint8_t> concat(const std::vector<uint8_t> &s, size_t live, size_t half) {
  std::vector<uint8_t> out(s.begin(), s.begin() + live);
  out.insert(out.end(), s.begin() + half, s.begin() + half + live);
  return out;
}

/// tiny6 at --max-seq-len 256 with a prefill chunk and the fused indexer's
/// rows per tile (-1: the compiler's 128; 0: untiled).
std::unique_ptr<runtime::Engine> engineFor(const std::string &dir, const std::string &mode,
                                           int64_t chunk, int64_t tileRows = -1) {
  std::string error;
  CompiledCase compiled = compileCasePlan(dir, mode, 256, /*layerBoundaries=*/false, error);
  EXPECT_EQ(error, "") << mode;
  compiled.plan.model.prefillChunk = chunk;
  int64_t tiled = 0;
  for (runtime::Program &program : compiled.plan.programs)
    for (runtime::Fusion &fusion : program.fusions)
      if (fusion.kernel == "indexer") {
        EXPECT_EQ(fusion.tileRows, 128) << "ds-fuse-kernels' default";
        if (tileRows >= 0)
          fusion.tileRows = tileRows;
        ++tiled;
      }
  EXPECT_EQ(tiled, 6) << "tiny6 has three indexer layers in prefill and decode";
  auto engine = runtime::Engine::create(std::move(compiled.plan), dir + "/model.safetensors");
  EXPECT_TRUE(engine.hasValue()) << mode << " chunk " << chunk << ": "
                                 << engine.status().message();
  return engine ? std::move(engine.value()) : nullptr;
}

TEST(ChunkedPrefill, Split) {
  using C = std::vector<std::pair<int64_t, int64_t>>;
  auto split = [](int64_t s, int64_t c) {
    C out;
    for (const runtime::PrefillChunk &k : runtime::prefillChunks(s, c))
      out.push_back({k.startPos, k.tokens});
    return out;
  };
  EXPECT_EQ(split(100, 0), (C{{0, 100}}));
  EXPECT_EQ(split(32, 32), (C{{0, 32}}));
  EXPECT_EQ(split(33, 32), (C{{0, 16}, {16, 17}}));
  EXPECT_EQ(split(100, 32), (C{{0, 25}, {25, 25}, {50, 25}, {75, 25}}));
  EXPECT_EQ(split(101, 32), (C{{0, 25}, {25, 25}, {50, 25}, {75, 26}}));
  // 1,048,576 tokens at 8,192: 128 chunks of exactly 8,192.
  auto big = runtime::prefillChunks(1 << 20, 8192);
  ASSERT_EQ(big.size(), 128u);
  EXPECT_EQ(big.back().startPos, (1 << 20) - 8192);
  for (int64_t s : {33, 97, 1000, 4097, 65537})
    for (int64_t c : {32, 96, 4096}) {
      auto chunks = runtime::prefillChunks(s, c);
      int64_t next = 0;
      for (const runtime::PrefillChunk &k : chunks) {
        EXPECT_EQ(k.startPos, next);
        EXPECT_LE(k.tokens, c);
        if (chunks.size() > 1)
          EXPECT_GE(2 * k.tokens, c) << s << " / " << c;
        next += k.tokens;
      }
      EXPECT_EQ(next, s);
    }
}

TEST(ChunkedPrefill, BitIdenticalToOneCall) {
  const std::string dir = sharedPath("golden/tiny6");
  for (auto [mode, chunk] : {std::pair<std::string, int64_t>{"full", 32}, {"exact", 96}}) {
    SCOPED_TRACE(mode + " chunk " + std::to_string(chunk));
    auto one = engineFor(dir, mode, 0);
    auto chunked = engineFor(dir, mode, chunk);
    ASSERT_TRUE(one && chunked);
    const int64_t vocab = one->plan().model.vocabSize;
    for (int64_t S : {33, 47, 64, 100, 129, 200, 251}) {
      if (mode == "exact" && S <= chunk)
        continue; // one call either way
      SCOPED_TRACE("S = " + std::to_string(S));
      std::vector<int32_t> ids = extendedGoldenIds(dir, S, vocab);
      ASSERT_EQ(int64_t(ids.size()), S);
      PrefillRun a = runFree(*one, ids), b = runFree(*chunked, ids);
      ASSERT_EQ(a.logits.size(), size_t(kDecodeSteps + 1));
      ASSERT_EQ(b.logits.size(), a.logits.size());
      for (size_t c = 0; c < a.logits.size(); ++c)
        EXPECT_EQ(std::memcmp(a.logits[c].data(), b.logits[c].data(),
                              a.logits[c].size() * sizeof(float)),
                  0)
            << (c == 0 ? std::string("prefill") : "decode step " + std::to_string(c - 1))
            << ": chunked logits differ from one call";
      ASSERT_EQ(a.statesAfter.size(), b.statesAfter.size());
      for (size_t i = 0; i < a.statesAfter.size(); ++i) {
        const runtime::StateBuffer &state = one->plan().states[i];
        std::vector<uint8_t> x = a.statesAfter[i], y = b.statesAfter[i];
        if (state.kind == runtime::StateKind::CompressorState) {
          // Only the open group's slots [0, S % r) are live: the slots past
          // it are written before they are read again (Compressor.h), and
          // which stale group they hold depends on the split.
          ASSERT_EQ(x.size(), size_t(2 * state.ratio * state.dim) * sizeof(float));
          const size_t live = size_t(S % state.ratio * state.dim) * sizeof(float),
                       half = x.size() / 2;
          x = concat(x, live, half);
          y = concat(y, live, half);
        }
        EXPECT_TRUE(x == y) << "state '" << state.name << "' differs after the prefill";
      }
      EXPECT_LT(b.prefillPlannedPeak, a.prefillPlannedPeak)
          << "a chunk should plan less than the whole prompt";
    }
  }
}

// A chunked prefill rejects a bad id anywhere in the prompt before its first
// chunk runs: the session stays at position 0 and takes the good prompt.
TEST(ChunkedPrefill, RejectsBadIdsBeforeTheFirstChunk) {
  const std::string dir = sharedPath("golden/tiny6");
  auto engine = engineFor(dir, "full", 32);
  ASSERT_TRUE(engine);
  std::vector<int32_t> ids = extendedGoldenIds(dir, 100, 1024);
  ASSERT_EQ(ids.size(), 100u);
  std::vector<int32_t> bad = ids;
  bad[90] = 5000; // in the fourth chunk
  auto session = engine->newSession();
  auto rejected = session->prefill(bad);
  ASSERT_FALSE(rejected.hasValue());
  EXPECT_EQ(rejected.status().message(),
            "prefill: token 90 has id 5000, outside the vocabulary [0, 1024)");
  EXPECT_EQ(session->position(), 0);
  auto accepted = session->prefill(ids);
  EXPECT_TRUE(accepted.hasValue()) << accepted.status().message();
  EXPECT_EQ(session->position(), 100);
}

// The row-tiled indexer (Fusion::tileRows, docs/runtime.md) against the
// untiled one: tiles of 1, 7, 16 and 128 rows, with and without chunking and
// CED, give bit-identical logits (prefill and 4 decode steps) and states, and
// the planned peak stays above the live peak the Session observes.
TEST(RowTiledIndexer, BitIdenticalToUntiled) {
  const std::string dir = sharedPath("golden/tiny6");
  const std::vector<int32_t> ids = extendedGoldenIds(dir, 230, /*tiny6 vocab*/ 1024);
  ASSERT_EQ(ids.size(), 230u);
  for (auto [mode, chunk] : {std::pair<std::string, int64_t>{"full", 0}, {"full", 64}, {"exact", 0}}) {
    SCOPED_TRACE(mode + " chunk " + std::to_string(chunk));
    auto untiled = engineFor(dir, mode, chunk, 0);
    ASSERT_TRUE(untiled);
    PrefillRun want = runFree(*untiled, ids);
    ASSERT_EQ(want.logits.size(), size_t(kDecodeSteps + 1));
    for (int64_t tile : {1, 7, 16, 128}) {
      SCOPED_TRACE("tile " + std::to_string(tile));
      auto tiled = engineFor(dir, mode, chunk, tile);
      ASSERT_TRUE(tiled);
      PrefillRun got = runFree(*tiled, ids);
      ASSERT_EQ(got.logits.size(), want.logits.size());
      for (size_t c = 0; c < want.logits.size(); ++c)
        EXPECT_TRUE(got.logits[c] == want.logits[c])
            << (c == 0 ? std::string("prefill") : "decode step " + std::to_string(c - 1));
      EXPECT_TRUE(got.statesAfter == want.statesAfter) << "states after the prefill";
      EXPECT_GE(got.prefillPlannedPeak, got.prefillObservedPeak);
    }
  }
}

} // namespace
