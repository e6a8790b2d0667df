//===- ExtendTest.cpp - Session::extend against one prefill ----------------===//
//
// Session::extend runs M tokens at the next positions in one call (the M-row
// decode step). On the CPU backend, with tiny6 (window 16, ratio-2 and ratio-1
// KV sources, Engram, candidate pool) compiled --ced=full at --max-seq-len 256,
// prefill(P) then extend(ids[P, P + M)) must give the logits bytes of
// prefill(ids[0, P + M)), and the greedy decode steps after it must match
// too: the continuation is the same computation as a chunk of a chunked
// prefill. M from 1 (a decode through the prefill program) past the window.
// A CED-exact plan and an unprefilled session are rejected with a message.
//===----------------------------------------------------------------------===//
#include "GoldenHarness.h"

#include "../support/SharedDir.h"

#include "dsc/runtime/Engine.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>

using namespace dsc;
using namespace dsc::test;

namespace {

std::unique_ptr<runtime::Engine> tiny6(const std::string &dir, const std::string &mode) {
  std::string error;
  CompiledCase compiled = compileCasePlan(dir, mode, 256, /*layerBoundaries=*/false, error);
  EXPECT_EQ(error, "") << mode;
  auto engine = runtime::Engine::create(std::move(compiled.plan), dir + "/model.safetensors");
  EXPECT_TRUE(engine.hasValue()) << engine.status().message();
  return engine ? std::move(engine.value()) : nullptr;
}

std::vector<float> values(const runtime::HostTensor &t) {
  return std::vector<float>(t.data<float>(), t.data<float>() + t.numElements());
}

/// The logits of the call, then of 3 greedy decode steps after it.
std::vector<std::vector<float>> thenDecode(runtime::Session &session,
                                           const runtime::HostTensor &first) {
  std::vector<std::vector<float>> out{values(first)};
  for (int step = 0; step < 3; ++step) {
    const std::vector<float> &last = out.back();
    int32_t next = int32_t(std::max_element(last.end() - 1024, last.end()) - (last.end() - 1024));
    auto d = session.decode(next);
    EXPECT_TRUE(d.hasValue()) << d.status().message();
    if (!d)
      break;
    out.push_back(values(*d));
  }
  return out;
}

TEST(SessionExtend, EqualsOnePrefill) {
  const std::string dir = sharedPath("golden/tiny6");
  auto engine = tiny6(dir, "full");
  ASSERT_TRUE(engine);
  ASSERT_EQ(engine->plan().model.vocabSize, 1024);
  const std::vector<int32_t> ids = extendedGoldenIds(dir, 120, 1024);
  ASSERT_EQ(ids.size(), 120u);
  for (auto [P, M] : {std::pair<int64_t, int64_t>{40, 1}, {40, 2}, {57, 5}, {33, 16}, {64, 37}}) {
    SCOPED_TRACE("P = " + std::to_string(P) + ", M = " + std::to_string(M));
    auto whole = engine->newSession();
    auto one = whole->prefill(std::span<const int32_t>(ids.data(), size_t(P + M)));
    ASSERT_TRUE(one.hasValue()) << one.status().message();
    auto stepwise = engine->newSession();
    auto first = stepwise->prefill(std::span<const int32_t>(ids.data(), size_t(P)));
    ASSERT_TRUE(first.hasValue()) << first.status().message();
    auto extended = stepwise->extend(std::span<const int32_t>(ids.data() + P, size_t(M)));
    ASSERT_TRUE(extended.hasValue()) << extended.status().message();
    EXPECT_EQ(stepwise->position(), P + M);
    auto a = thenDecode(*whole, *one), b = thenDecode(*stepwise, *extended);
    ASSERT_EQ(a.size(), b.size());
    for (size_t c = 0; c < a.size(); ++c) {
      ASSERT_EQ(a[c].size(), b[c].size());
      EXPECT_EQ(std::memcmp(a[c].data(), b[c].data(), a[c].size() * sizeof(float)), 0)
          << (c == 0 ? std::string("the extend call") : "decode step " + std::to_string(c - 1))
          << ": logits differ from one prefill";
    }
  }
}

TEST(SessionExtend, RejectsWhatItCannotContinue) {
  const std::string dir = sharedPath("golden/tiny6");
  const std::vector<int32_t> ids = extendedGoldenIds(dir, 60, 1024);
  auto full = tiny6(dir, "full");
  ASSERT_TRUE(full);
  auto session = full->newSession();
  auto early = session->extend(std::span<const int32_t>(ids.data(), 4));
  ASSERT_FALSE(early.hasValue());
  EXPECT_EQ(early.status().message(),
            "extend continues a prefilled sequence: call prefill() first");
  ASSERT_TRUE(session->prefill(std::span<const int32_t>(ids.data(), 40)).hasValue());
  auto none = session->extend(std::span<const int32_t>());
  ASSERT_FALSE(none.hasValue());
  EXPECT_EQ(none.status().message(), "extend: no tokens");

  auto exact = tiny6(dir, "exact");
  ASSERT_TRUE(exact);
  ASSERT_GT(exact->plan().model.cedReplayTokens, 0);
  auto ced = exact->newSession();
  ASSERT_TRUE(ced->prefill(std::span<const int32_t>(ids.data(), 40)).hasValue());
  auto rejected = ced->extend(std::span<const int32_t>(ids.data() + 40, 4));
  ASSERT_FALSE(rejected.hasValue());
  EXPECT_EQ(rejected.status().message(),
            "extend: the plan replays the last " +
                std::to_string(exact->plan().model.cedReplayTokens) +
                " prompt rows (CED); compile it with --ced=full to extend a sequence");
  EXPECT_EQ(ced->position(), 40) << "a rejected extend leaves the sequence as it was";
}

} // namespace
