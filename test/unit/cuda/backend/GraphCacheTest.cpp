//===- GraphCacheTest.cpp - Graphs per (program, call shape) ----------------===//
//
// runtime/cuda/GraphCache without a device: the key is the program and the
// CallPlan's call class (sameCallClass: every decode of a sequence shares an
// entry, whatever its start), each entry runs eager, then capture, then
// replay; invalidation drops only the graphs of its program and starts
// those entries over; a failed capture keeps its entry eager; the cache is
// bounded, least recently used out.
//===----------------------------------------------------------------------===//
#include "FakeCudaDriver.h"
#include "runtime/cuda/GraphCache.h"
#include "runtime/cuda/hal/Graph.h"

#include <gtest/gtest.h>

namespace {

using dsc::cuda::GraphCache;
using dsc::runtime::CallShape;
using Action = GraphCache::Action;

CallShape decodeAt(int64_t p) {
  CallShape s;
  s.tokens = 1;
  s.startPos = p;
  return s;
}

/// A real (fake-driver) graph for an entry.
dsc::cuda::hal::Graph someGraph() {
  auto capture =
      dsc::cuda::hal::GraphCapture::begin(dsc::test::fakeCudaDriver(), reinterpret_cast<CUstream>(2));
  EXPECT_TRUE(capture);
  auto graph = capture->end();
  EXPECT_TRUE(graph);
  return std::move(graph.value());
}

TEST(GraphCache, KeyedByProgramAndCallClass) {
  dsc::test::fakeState().reset();
  GraphCache cache;
  GraphCache::Entry &a = cache.entry(1, decodeAt(7));
  EXPECT_EQ(&cache.entry(1, decodeAt(300)), &a) << "the start position is not part of the key";
  EXPECT_NE(&cache.entry(0, decodeAt(7)), &a) << "another program";
  CallShape two = decodeAt(7);
  two.tokens = 2;
  EXPECT_NE(&cache.entry(1, two), &a) << "another token count";
  CallShape observed = decodeAt(7);
  observed.observed = true;
  EXPECT_NE(&cache.entry(1, observed), &a);
  CallShape atZero = decodeAt(0);
  EXPECT_NE(&cache.entry(1, atZero), &a) << "starting at 0 is another class";
  EXPECT_EQ(cache.entries().size(), 5u);
  EXPECT_EQ(&cache.entries().front(), &cache.entry(1, decodeAt(9)));
}

TEST(GraphCache, EagerThenCaptureThenReplay) {
  dsc::test::fakeState().reset();
  GraphCache cache;
  GraphCache::Entry &e = cache.entry(1, decodeAt(5));
  EXPECT_EQ(GraphCache::next(e), Action::Eager);
  EXPECT_EQ(GraphCache::next(e), Action::Capture);
  e.graph = someGraph();
  EXPECT_EQ(GraphCache::next(e), Action::Replay);
  EXPECT_EQ(GraphCache::next(e), Action::Replay);

  cache.invalidate(0); // another program's addresses moved
  EXPECT_EQ(GraphCache::next(e), Action::Replay);
  cache.invalidate(1);
  EXPECT_FALSE(e.graph);
  EXPECT_EQ(dsc::test::fakeState().execsLive, 0);
  EXPECT_EQ(GraphCache::next(e), Action::Eager) << "one eager call after an invalidation";
  EXPECT_EQ(GraphCache::next(e), Action::Capture);
  e.graph = someGraph();
  cache.invalidate(); // every program
  EXPECT_FALSE(e.graph);
}

TEST(GraphCache, InvalidatingAnEntryWithoutAGraphKeepsItsCount) {
  GraphCache cache;
  GraphCache::Entry &e = cache.entry(1, decodeAt(5));
  EXPECT_EQ(GraphCache::next(e), Action::Eager);
  cache.invalidate(1); // e.g. scratch grown during the first, eager, decode
  EXPECT_EQ(GraphCache::next(e), Action::Capture) << "the second call is still captured";
}

TEST(GraphCache, FailedCaptureStaysEager) {
  GraphCache cache;
  GraphCache::Entry &e = cache.entry(1, decodeAt(5));
  GraphCache::next(e);
  EXPECT_EQ(GraphCache::next(e), Action::Capture);
  e.disabled = true;
  for (int i = 0; i < 5; ++i)
    EXPECT_EQ(GraphCache::next(e), Action::Eager);
}

TEST(GraphCache, BoundedLeastRecentlyUsedOut) {
  GraphCache cache;
  for (int64_t t = 1; t <= int64_t(GraphCache::kEntries); ++t) {
    CallShape s = decodeAt(5);
    s.tokens = t;
    cache.entry(0, s).calls = int(t);
  }
  cache.entry(0, decodeAt(5)); // tokens 1: used again, now the most recent
  CallShape extra = decodeAt(5);
  extra.tokens = 100;
  cache.entry(0, extra);
  EXPECT_EQ(cache.entries().size(), GraphCache::kEntries);
  bool hasTwo = false, hasOne = false;
  for (const GraphCache::Entry &e : cache.entries()) {
    hasTwo |= e.shape.tokens == 2;
    hasOne |= e.shape.tokens == 1;
  }
  EXPECT_FALSE(hasTwo) << "tokens 2 was the least recently used";
  EXPECT_TRUE(hasOne);
}

} // namespace
