//===- PrefixCacheTest.cpp - Content-addressed prompt blocks ---------------===//
//
// prefixBlockHashes against the same mixing written in Python (values below)
// and its chain property; PrefixCache (PrefixCache.h): hits in whole blocks
// along the chain, references, LRU eviction of leaves only (a prefix
// outlives its tails, a held page is never freed, a long chain evicts
// without recursion), releases that fail without dropping anything, the errors of bad calls (naming the page or block), and 16
// threads acquiring, inserting and releasing overlapping prompts leaving a
// consistent cache with no reference left.
//===----------------------------------------------------------------------===//
#include "dsc/runtime/PrefixCache.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

using namespace dsc::runtime;

namespace {

std::vector<int32_t> iota(int n, int from = 0) {
  std::vector<int32_t> v(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i)
    v[size_t(i)] = from + i;
  return v;
}

TEST(PrefixBlockHashes, MatchTheReferenceMixingAndChain) {
  // python3: mix(h, v) = (h ^ v) * 0x100000001b3 mod 2^64 over the FNV
  // offset basis, the previous hash, then each id as uint32; splitmix64's
  // finaliser per block. Ids 1..5, -6, 7 in blocks of 3 (the 7 is a partial block).
  const std::vector<int32_t> ids = {1, 2, 3, 4, 5, -6, 7};
  EXPECT_EQ(prefixBlockHashes(ids, 3),
            (std::vector<uint64_t>{0xc0bd9d7f5fa9fca0ull, 0x0b76fc9db88bf4ceull}));
  // Equal prefixes share hashes; a block equal to another's but after a
  // different prefix does not.
  std::vector<int32_t> a = iota(12), b = iota(12);
  b[5] = 99; // block 1 differs
  const auto ha = prefixBlockHashes(a, 4), hb = prefixBlockHashes(b, 4);
  ASSERT_EQ(ha.size(), 3u);
  EXPECT_EQ(ha[0], hb[0]);
  EXPECT_NE(ha[1], hb[1]);
  EXPECT_NE(ha[2], hb[2]) << "block 2's ids are equal, its prefix is not";
  EXPECT_TRUE(prefixBlockHashes(a, 0).empty());
}

TEST(PrefixCache, HitsTheLongestCachedPrefixInWholeBlocks) {
  PrefixCache cache(4);
  const std::vector<int32_t> prompt = iota(14); // 3 whole blocks + 2 tokens
  PrefixCache::Hit cold = cache.acquire(prompt);
  EXPECT_EQ(cold.tokens, 0);
  EXPECT_TRUE(cold.pages.empty());
  std::vector<int64_t> added;
  ASSERT_TRUE(cache.insert(prompt, 0, std::vector<int64_t>{10, 11, 12}, &added));
  EXPECT_EQ(added, (std::vector<int64_t>{10, 11, 12}));
  // The same prompt with more tokens: the 3 blocks.
  std::vector<int32_t> longer = iota(20);
  PrefixCache::Hit hit = cache.acquire(longer);
  EXPECT_EQ(hit.tokens, 12);
  EXPECT_EQ(hit.pages, (std::vector<int64_t>{10, 11, 12}));
  // A prompt that leaves the path in block 1: block 0 only.
  std::vector<int32_t> other = iota(12);
  other[6] = -1;
  PrefixCache::Hit part = cache.acquire(other);
  EXPECT_EQ(part.tokens, 4);
  EXPECT_EQ(part.pages, (std::vector<int64_t>{10}));
  // Continue `longer` from its hit: block 3 and 4 (tokens 12 .. 19 + ...).
  std::vector<int32_t> longest = iota(21);
  ASSERT_TRUE(cache.insert(longest, 3, std::vector<int64_t>{13, 14}, &added));
  EXPECT_EQ(cache.cachedBlocks(), 5);
  EXPECT_EQ(cache.acquire(longest).tokens, 20);
}

TEST(PrefixCache, EvictsLeastRecentlyUsedLeavesNeverAHeldPage) {
  PrefixCache cache(2);
  const std::vector<int32_t> a = {1, 2, 3, 4, 5, 6}, b = {7, 8, 9, 10};
  ASSERT_TRUE(cache.insert(a, 0, std::vector<int64_t>{0, 1, 2}));
  ASSERT_TRUE(cache.insert(b, 0, std::vector<int64_t>{3, 4}));
  // Both held (insert's references): nothing can go.
  EXPECT_TRUE(cache.evict(5).empty());
  ASSERT_TRUE(cache.release(std::vector<int64_t>{0, 1, 2}));
  ASSERT_TRUE(cache.release(std::vector<int64_t>{3, 4}));
  // Use a again: b is now the least recently used.
  PrefixCache::Hit again = cache.acquire(a);
  ASSERT_TRUE(cache.release(again.pages));
  EXPECT_EQ(cache.evict(1), (std::vector<int64_t>{4})) << "b's tail first";
  EXPECT_EQ(cache.evict(1), (std::vector<int64_t>{3})) << "then b's first block";
  EXPECT_EQ(cache.acquire(b).tokens, 0);
  // Touching a's first block alone makes it newer than the two after it;
  // still only the leaf can go.
  PrefixCache::Hit one = cache.acquire(std::vector<int32_t>{1, 2});
  ASSERT_TRUE(cache.release(one.pages));
  EXPECT_EQ(cache.evict(1), (std::vector<int64_t>{2}));
  EXPECT_EQ(cache.acquire(a).tokens, 4) << "a's chain now ends after block 1";
  ASSERT_TRUE(cache.release(std::vector<int64_t>{0, 1}));
  ASSERT_TRUE(cache.insert(a, 2, std::vector<int64_t>{2}));
  ASSERT_TRUE(cache.release(std::vector<int64_t>{2}));
  // A held descendant keeps its chain: hold a's blocks, then nothing goes.
  PrefixCache::Hit held = cache.acquire(a);
  EXPECT_EQ(held.tokens, 6);
  EXPECT_TRUE(cache.evict(3).empty());
  ASSERT_TRUE(cache.release(held.pages));
  EXPECT_EQ(cache.evict(3).size(), 3u);
  EXPECT_EQ(cache.cachedBlocks(), 0);
}

TEST(PrefixCache, APrefixOutlivesTheTailInsertedAfterIt) {
  // acquire stamps the hit before insert stamps the tail, so the prefix is
  // the older block; eviction still takes the tail's leaf first, one block
  // at a time.
  PrefixCache cache(2);
  const std::vector<int32_t> p = {1, 2, 3, 4, 5, 6, 7, 8};
  ASSERT_TRUE(cache.insert(std::vector<int32_t>{1, 2}, 0, std::vector<int64_t>{0}));
  ASSERT_TRUE(cache.release(std::vector<int64_t>{0}));
  PrefixCache::Hit hit = cache.acquire(p);
  ASSERT_EQ(hit.pages, (std::vector<int64_t>{0}));
  ASSERT_TRUE(cache.insert(p, 1, std::vector<int64_t>{1, 2, 3}));
  ASSERT_TRUE(cache.release(std::vector<int64_t>{0, 1, 2, 3}));
  EXPECT_EQ(cache.evict(1), (std::vector<int64_t>{3}));
  EXPECT_EQ(cache.cachedBlocks(), 3);
  EXPECT_EQ(cache.acquire(p).tokens, 6);
}

TEST(PrefixCache, AFailedReleaseDropsNothing) {
  PrefixCache cache(2);
  ASSERT_TRUE(cache.insert(std::vector<int32_t>{1, 2, 3, 4}, 0, std::vector<int64_t>{0, 1}));
  EXPECT_FALSE(cache.release(std::vector<int64_t>{0, 99, 1}));
  EXPECT_EQ(cache.referencedBlocks(), 2) << "page 0 is still held";
  EXPECT_FALSE(cache.release(std::vector<int64_t>{1, 1})) << "one reference, released twice";
  EXPECT_EQ(cache.referencedBlocks(), 2);
  EXPECT_TRUE(cache.release(std::vector<int64_t>{0, 1}));
  EXPECT_EQ(cache.referencedBlocks(), 0);
}

TEST(PrefixCache, ALongChainEvictsWithoutRecursion) {
  // 4,096 blocks of one prompt (1M tokens in 256-token pages): evicting
  // them all walks no chain recursively.
  PrefixCache cache(1);
  const std::vector<int32_t> p = iota(4096);
  std::vector<int64_t> pages(4096);
  for (int64_t i = 0; i < 4096; ++i)
    pages[size_t(i)] = i;
  ASSERT_TRUE(cache.insert(p, 0, pages));
  ASSERT_TRUE(cache.release(pages));
  const std::vector<int64_t> freed = cache.evict(4096);
  ASSERT_EQ(freed.size(), 4096u);
  EXPECT_EQ(freed.front(), 4095) << "the deepest block first";
  EXPECT_EQ(freed.back(), 0);
  EXPECT_EQ(cache.cachedBlocks(), 0);
}

TEST(PrefixCache, BadCallsAreErrorsNamingWhat) {
  PrefixCache cache(2);
  const std::vector<int32_t> a = {1, 2, 3, 4};
  Status s = cache.release(std::vector<int64_t>{7});
  EXPECT_EQ(s.code(), StatusCode::InvalidArgument);
  EXPECT_NE(s.message().find("page 7"), std::string::npos) << s.message();
  s = cache.insert(a, 1, std::vector<int64_t>{5});
  EXPECT_NE(s.message().find("block 0"), std::string::npos) << s.message();
  s = cache.insert(a, 0, std::vector<int64_t>{5});
  EXPECT_NE(s.message().find("1 pages for 2 blocks"), std::string::npos) << s.message();
  s = cache.insert(a, 0, std::vector<int64_t>{5, 5});
  EXPECT_NE(s.message().find("page 5 is given twice"), std::string::npos) << s.message();
  ASSERT_TRUE(cache.insert(a, 0, std::vector<int64_t>{5, 6}));
  s = cache.insert(std::vector<int32_t>{9, 9}, 0, std::vector<int64_t>{6});
  EXPECT_NE(s.message().find("page 6 is already in the cache"), std::string::npos) << s.message();
  ASSERT_TRUE(cache.release(std::vector<int64_t>{5, 6}));
  s = cache.release(std::vector<int64_t>{5});
  EXPECT_NE(s.message().find("page 5 has no reference"), std::string::npos) << s.message();
}

TEST(PrefixCache, SixteenThreadsOnOverlappingPromptsLeaveItConsistent) {
  PrefixCache cache(4);
  std::atomic<int64_t> nextPage{0};
  std::atomic<int> bad{0};
  auto worker = [&](int t) {
    for (int round = 0; round < 200; ++round) {
      // A shared 16-token system prefix, then a tail from a few variants.
      std::vector<int32_t> prompt = iota(16, 1000);
      const std::vector<int32_t> tail = iota(8 + 4 * ((t + round) % 3), 100 * ((t * 7 + round) % 5));
      prompt.insert(prompt.end(), tail.begin(), tail.end());
      PrefixCache::Hit hit = cache.acquire(prompt);
      const int64_t blocks = int64_t(prompt.size()) / 4, have = hit.tokens / 4;
      std::vector<int64_t> pages;
      for (int64_t b = have; b < blocks; ++b)
        pages.push_back(nextPage++);
      std::vector<int64_t> added;
      if (!cache.insert(prompt, have, pages, &added))
        ++bad;
      if (!cache.release(hit.pages) || !cache.release(added))
        ++bad;
      if (round % 50 == 49)
        cache.evict(8);
    }
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < 16; ++t)
    threads.emplace_back(worker, t);
  for (std::thread &th : threads)
    th.join();
  EXPECT_EQ(bad.load(), 0);
  EXPECT_EQ(cache.referencedBlocks(), 0);
  // The shared prefix is cached whole (4 blocks... 16 tokens = 4 blocks of 4)
  // unless the last eviction took it; either way a hit is whole blocks.
  const PrefixCache::Hit h = cache.acquire(iota(16, 1000));
  EXPECT_EQ(h.tokens % 4, 0);
  EXPECT_TRUE(cache.release(h.pages));
  const int64_t cached = cache.cachedBlocks();
  EXPECT_EQ(int64_t(cache.evict(1 << 20).size()), cached) << "every unreferenced block can go";
}

} // namespace
