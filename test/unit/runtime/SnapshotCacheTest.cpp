//===- SnapshotCacheTest.cpp - The prefix snapshot cache's bookkeeping -----===//
//
// SnapshotCache (runtime/include/dsc/runtime/SnapshotCache.h) without an
// engine: snapshots with made-up states of known sizes. The longest cached
// prefix wins, within the tail the prompt's last chunk needs; a prompt that
// differs inside a cached prefix misses; the cut points are block multiples;
// eviction is least recently used within the byte budget (a lookup refreshes);
// a served snapshot outlives its eviction; 16 threads looking up and inserting
// the same prefixes keep the counts consistent.
//===----------------------------------------------------------------------===//
#include "dsc/runtime/SnapshotCache.h"

#include <gtest/gtest.h>

#include <thread>

using namespace dsc::runtime;

namespace {

SessionSnapshot snapshotOf(std::span<const int32_t> ids, int64_t stateBytes) {
  SessionSnapshot s;
  s.ids.assign(ids.begin(), ids.end());
  s.states.emplace_back();
  EXPECT_TRUE(s.states.back().resetChecked(DType::U8, {stateBytes}));
  return s;
}

std::vector<int32_t> prompt(int n, int seed) {
  std::vector<int32_t> ids(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i)
    ids[size_t(i)] = (i * 7 + seed) % 1000;
  return ids;
}

TEST(SnapshotCache, ServesTheLongestCachedPrefixThatLeavesTheTail) {
  SnapshotCache cache(16, 1 << 20);
  const std::vector<int32_t> ids = prompt(200, 3);
  EXPECT_EQ(cache.savePoint(200, 96), 96); // (200 - 96) rounded down to 16
  EXPECT_EQ(cache.savePoint(100, 96), 0);
  ASSERT_TRUE(cache.insert(snapshotOf(std::span(ids).first(32), 100)));
  ASSERT_TRUE(cache.insert(snapshotOf(std::span(ids).first(96), 100)));
  auto hit = cache.lookup(ids, 96);
  ASSERT_TRUE(hit);
  EXPECT_EQ(hit->ids.size(), 96u);
  // A shorter prompt: the 96-token prefix would leave less than the tail.
  hit = cache.lookup(std::span(ids).first(150), 96);
  ASSERT_TRUE(hit);
  EXPECT_EQ(hit->ids.size(), 32u);
  EXPECT_FALSE(cache.lookup(std::span(ids).first(120), 96)) << "no prefix leaves 96 of 120";
  // A prompt that differs at token 40 shares only the first block's snapshot.
  std::vector<int32_t> other = ids;
  other[40] += 1;
  hit = cache.lookup(other, 96);
  ASSERT_TRUE(hit);
  EXPECT_EQ(hit->ids.size(), 32u);
  other[3] += 1;
  EXPECT_FALSE(cache.lookup(other, 96));
  const SnapshotCache::Stats s = cache.stats();
  EXPECT_EQ(s.lookups, 5);
  EXPECT_EQ(s.hits, 3);
  EXPECT_EQ(s.hitTokens, 96 + 32 + 32);
  EXPECT_EQ(s.entries, 2);
  EXPECT_EQ(s.bytes, 200u);
}

TEST(SnapshotCache, RejectsCutsOffTheBlocks) {
  SnapshotCache cache(16, 1 << 20);
  const std::vector<int32_t> ids = prompt(40, 1);
  Status s = cache.insert(snapshotOf(std::span(ids).first(20), 8));
  ASSERT_FALSE(s);
  EXPECT_EQ(s.message(), "SnapshotCache::insert: a prefix of 20 tokens is not a positive "
                         "multiple of the cache's 16-token blocks");
  EXPECT_FALSE(cache.insert(SessionSnapshot()));
  EXPECT_EQ(cache.stats().entries, 0);
}

TEST(SnapshotCache, EvictsTheLeastRecentlyUsedWithinTheBudget) {
  SnapshotCache cache(8, 300);
  const std::vector<int32_t> a = prompt(64, 1), b = prompt(64, 2), c = prompt(64, 3);
  ASSERT_TRUE(cache.insert(snapshotOf(std::span(a).first(8), 100)));
  ASSERT_TRUE(cache.insert(snapshotOf(std::span(b).first(8), 100)));
  ASSERT_TRUE(cache.insert(snapshotOf(std::span(c).first(8), 100)));
  auto held = cache.lookup(a, 0); // a is now the most recent; b the least
  ASSERT_TRUE(held);
  ASSERT_TRUE(cache.insert(snapshotOf(std::span(c).first(16), 100)));
  EXPECT_TRUE(cache.lookup(a, 0));
  EXPECT_FALSE(cache.lookup(b, 0)) << "b was the least recently used";
  EXPECT_EQ(cache.stats().evictions, 1);
  EXPECT_EQ(cache.stats().bytes, 300u);
  ASSERT_TRUE(cache.insert(snapshotOf(std::span(b).first(8), 400))); // over the budget: not kept
  EXPECT_FALSE(cache.lookup(b, 0));
  // Fill until a goes: the snapshot served earlier stays valid.
  for (int seed = 10; seed < 14; ++seed) {
    const std::vector<int32_t> d = prompt(64, seed);
    ASSERT_TRUE(cache.insert(snapshotOf(std::span(d).first(8), 100)));
  }
  EXPECT_FALSE(cache.lookup(a, 0));
  EXPECT_EQ(held->ids.size(), 8u);
  EXPECT_EQ(held->bytes(), 100u);
}

TEST(SnapshotCache, ManyThreadsKeepTheCountsConsistent) {
  SnapshotCache cache(4, 1 << 20);
  std::vector<std::vector<int32_t>> prompts;
  for (int p = 0; p < 8; ++p)
    prompts.push_back(prompt(64, p));
  std::vector<std::thread> threads;
  for (int t = 0; t < 16; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 200; ++i) {
        const std::vector<int32_t> &ids = prompts[size_t((t + i) % 8)];
        if (!cache.lookup(ids, 8))
          EXPECT_TRUE(cache.insert(snapshotOf(std::span(ids).first(16), 10)));
      }
    });
  for (std::thread &t : threads)
    t.join();
  const SnapshotCache::Stats s = cache.stats();
  EXPECT_EQ(s.lookups, 16 * 200);
  EXPECT_EQ(s.entries, 8);
  EXPECT_EQ(s.bytes, 80u);
  EXPECT_GE(s.hits, 16 * 200 - 8 * 16) << "at most one miss per prompt per thread";
  EXPECT_EQ(s.hitTokens, s.hits * 16);
}

} // namespace
