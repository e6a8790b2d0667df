//===- CedReplayTest.cpp - CED prefill plans against the full prefill -----===//
//
// Issue 5: tiny6 (window 16, split L/2 = 3: exact R = 48, bounded R = 16)
// compiled with --max-seq-len 256 in the three CED modes and run free on the
// CPU backend. `exact` must give bit-identical logits to `full` at the last
// prefill position and in 4 greedy decode steps (docs/passes.md, "Why exact
// is exact"); `bounded` is measured: the largest relative logits error over
// the prefill and the 4 decode steps (fed with the full run's greedy tokens)
// per prompt length is printed (docs/fidelity.md, "CED bounded replay").
// Prompts longer than the golden input_ids are extended deterministically.
//===----------------------------------------------------------------------===//
#include "GoldenHarness.h"

#include "../support/SharedDir.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

using namespace dsc;
using namespace dsc::test;
using runtime::HostTensor;

namespace {

constexpr int kDecodeSteps = 4;

std::vector<float> floatsOf(const HostTensor &t) {
  return std::vector<float>(t.data<float>(), t.data<float>() + t.numElements());
}

int32_t argmax(const std::vector<float> &v) {
  return int32_t(std::max_element(v.begin(), v.end()) - v.begin());
}

/// Prefill `ids`, then kDecodeSteps decode steps fed with `feed` (or, when
/// empty, greedily with this run's own argmax). Returns the logits of each
/// call and fills `fed` with the tokens decoded.
std::vector<std::vector<float>> runFree(runtime::Engine &engine, const std::vector<int32_t> &ids,
                                        const std::vector<int32_t> &feed,
                                        std::vector<int32_t> *fed) {
  std::vector<std::vector<float>> out;
  auto session = engine.newSession();
  auto logits = session->prefill(ids);
  EXPECT_TRUE(logits.hasValue()) << logits.status().message();
  if (!logits)
    return out;
  out.push_back(floatsOf(*logits));
  for (int step = 0; step < kDecodeSteps; ++step) {
    int32_t next = feed.empty() ? argmax(out.back()) : feed[size_t(step)];
    if (fed)
      fed->push_back(next);
    auto d = session->decode(next);
    EXPECT_TRUE(d.hasValue()) << d.status().message();
    if (!d)
      return out;
    out.push_back(floatsOf(*d));
  }
  return out;
}

TEST(CedReplay, ExactIsBitIdenticalAndBoundedIsMeasured) {
  const std::string dir = sharedPath("golden/tiny6");
  std::map<std::string, std::unique_ptr<runtime::Engine>> engines;
  int64_t vocab = 0;
  for (const char *mode : {"full", "exact", "bounded"}) {
    std::string error;
    CompiledCase compiled = compileCasePlan(dir, mode, 256, /*layerBoundaries=*/false, error);
    ASSERT_EQ(error, "") << mode;
    const int64_t wantR = std::string(mode) == "exact"     ? 48
                          : std::string(mode) == "bounded" ? 16
                                                           : 0;
    ASSERT_EQ(compiled.plan.model.cedReplayTokens, wantR) << mode;
    vocab = compiled.plan.model.vocabSize;
    auto engine = runtime::Engine::create(std::move(compiled.plan), dir + "/model.safetensors");
    ASSERT_TRUE(engine.hasValue()) << mode << ": " << engine.status().message();
    engines[mode] = std::move(engine.value());
  }
  std::string table = "CED bounded (R = 16) vs full, tiny6, max relative logits error\n"
                      "  S     prefill     max(prefill, 4 decode steps)\n";
  for (int64_t S : {16, 20, 47, 48, 49, 100, 200}) {
    SCOPED_TRACE("S = " + std::to_string(S));
    std::vector<int32_t> ids = extendedGoldenIds(dir, S, vocab);
    ASSERT_EQ(int64_t(ids.size()), S);
    std::vector<int32_t> fed;
    auto full = runFree(*engines["full"], ids, {}, &fed);
    auto exact = runFree(*engines["exact"], ids, {}, nullptr);
    ASSERT_EQ(full.size(), size_t(kDecodeSteps + 1));
    ASSERT_EQ(exact.size(), full.size());
    for (size_t c = 0; c < full.size(); ++c) {
      ASSERT_EQ(exact[c].size(), full[c].size());
      EXPECT_EQ(std::memcmp(exact[c].data(), full[c].data(), full[c].size() * sizeof(float)), 0)
          << (c == 0 ? std::string("prefill") : "decode step " + std::to_string(c - 1))
          << ": exact logits differ from full";
    }
    auto bounded = runFree(*engines["bounded"], ids, fed, nullptr);
    ASSERT_EQ(bounded.size(), full.size());
    double prefillErr = 0, maxErr = 0;
    for (size_t c = 0; c < full.size(); ++c) {
      double e = relativeError(bounded[c], full[c], int64_t(full[c].size()));
      if (c == 0)
        prefillErr = e;
      maxErr = std::max(maxErr, e);
    }
    if (S <= 16) // one replayed window covers the prompt: bounded is exact
      EXPECT_EQ(maxErr, 0.0);
    char line[128];
    std::snprintf(line, sizeof line, "  %-5lld %.3e   %.3e\n", (long long)S, prefillErr, maxErr);
    table += line;
  }
  std::printf("%s", table.c_str());
  RecordProperty("ced_bounded_errors", table);
}

} // namespace
