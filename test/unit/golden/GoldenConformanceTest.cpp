//===- GoldenConformanceTest.cpp - The goldens on the CPU backend ----------===//
//
// For tiny40 and tiny6, both runs: compile the conformance plan, run prefill
// and every teacher-forced decode step with forced boundaries, and check every
// gate of ../shared/golden/README.md for the CPU reference backend: block
// errors (≤ 5e-3, rows ≤ 5e-2, tie rows excused), top-k sets and candidate
// masks, Engram hash ids, caches after prefill decoded from the packed bytes
// (exact), logits (≤ 1e-4, same argmax). A free-running run (no forcing)
// reports its errors without gating. Set DSC_FIDELITY_OUT=<dir> to write the
// per-block numbers as markdown (docs/fidelity.md is made from them).
//===----------------------------------------------------------------------===//
#include "GoldenHarness.h"

#include "dsc/runtime/Conformance.h"
#include "dsc/runtime/StateLayout.h"
#include "dsc/numerics/KvLayout.h"

#include "../support/SharedDir.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <fstream>
#include <numeric>

using namespace dsc;
using namespace dsc::test;
using runtime::HostTensor;

namespace {

struct GoldenRun {
  std::string name; ///< tiny40, tiny6
  std::string file; ///< expected, expected_short
};

void PrintTo(const GoldenRun &run, std::ostream *os) { *os << run.name << "/" << run.file; }

std::string caseName(const testing::TestParamInfo<GoldenRun> &info) {
  return info.param.name + "_" + info.param.file;
}

struct LoadedRun {
  CompiledCase compiled;
  std::unique_ptr<runtime::Engine> engine;
  std::optional<runtime::SafetensorsFile> golden;
  std::vector<int32_t> ids;
  int64_t promptLen = 0;
};

void load(const GoldenRun &run, LoadedRun &out) {
  std::string dir = sharedPath("golden/" + run.name);
  std::string error;
  out.compiled = compileGoldenPlan(dir, error);
  ASSERT_EQ(error, "");
  auto engine = runtime::Engine::create(out.compiled.plan, dir + "/model.safetensors");
  ASSERT_TRUE(engine.hasValue()) << engine.status().message();
  out.engine = std::move(engine.value());
  auto golden = runtime::SafetensorsFile::open(dir + "/" + run.file + ".safetensors");
  ASSERT_TRUE(golden.hasValue()) << golden.status().message();
  out.golden.emplace(std::move(golden.value()));
  const runtime::TensorView *ids = out.golden->find("input_ids");
  ASSERT_NE(ids, nullptr);
  for (int64_t v : goldenInts(*ids))
    out.ids.push_back(int32_t(v));
  auto meta = nlohmann::json::parse(out.golden->metadata().at("case.json"));
  out.promptLen = meta.at("prompt_len").get<int64_t>();
}

double logitsError(const HostTensor &mine, int64_t row, const std::vector<float> &gold,
                   int64_t goldRow, bool &sameArgmax) {
  int64_t V = mine.dim(1);
  std::vector<float> a(mine.data<float>() + row * V, mine.data<float>() + (row + 1) * V);
  std::vector<float> b(gold.begin() + goldRow * V, gold.begin() + (goldRow + 1) * V);
  sameArgmax = std::max_element(a.begin(), a.end()) - a.begin() ==
               std::max_element(b.begin(), b.end()) - b.begin();
  return relativeError(a, b, V);
}

void writeFidelity(const GoldenRun &run, const char *mode, const std::vector<BlockResult> &blocks) {
  const char *dir = std::getenv("DSC_FIDELITY_OUT");
  if (!dir)
    return;
  std::ofstream out(std::string(dir) + "/" + run.name + "_" + run.file + "_" + mode + ".md");
  out << "| phase | layer | block error | worst row | excused rows |\n|---|---|---|---|---|\n";
  for (const BlockResult &b : blocks)
    out << "| " << b.phase << " | " << b.layer << " | " << b.blockError << " | "
        << b.worstRowError << " | " << b.excusedRows << " |\n";
}

class GoldenConformance : public testing::TestWithParam<GoldenRun> {};

TEST_P(GoldenConformance, ForcedBoundariesMeetEveryGate) {
  LoadedRun run;
  ASSERT_NO_FATAL_FAILURE(load(GetParam(), run));
  const runtime::SafetensorsFile &golden = *run.golden;
  auto session = run.engine->newSession();
  GoldenComparator comparator(golden, run.compiled.spec);
  auto forcing = runtime::GoldenForcing::open(golden.path());
  ASSERT_TRUE(forcing.hasValue());
  runtime::ObserverChain chain;
  chain.add(&comparator);
  chain.add(forcing->get());
  session->setObserver(&chain);

  // Prefill: every position's logits.
  auto logits = session->prefill(std::span<const int32_t>(run.ids.data(), run.promptLen));
  ASSERT_TRUE(logits.hasValue()) << logits.status().message();
  // The logits gate is on the whole [P, vocab] matrix; argmax per row.
  std::vector<float> goldAll = goldenFloats(*golden.find("prefill.logits_all"));
  ASSERT_EQ(logits->dim(0), run.promptLen);
  std::vector<float> mineAll(logits->data<float>(), logits->data<float>() + logits->numElements());
  EXPECT_LE(relativeError(mineAll, goldAll, logits->dim(1)), 1e-4) << "prefill logits";
  for (int64_t r = 0; r < run.promptLen; ++r) {
    bool same = false;
    logitsError(*logits, r, goldAll, r, same);
    EXPECT_TRUE(same) << "prefill argmax of row " << r;
  }

  // Caches after prefill, decoded from the packed records: exact.
  const runtime::Plan &plan = run.engine->plan();
  for (size_t i = 0; i < plan.states.size(); ++i) {
    const runtime::StateBuffer &state = plan.states[i];
    std::string name = state.kind == runtime::StateKind::WindowRing ? "window_kv"
                       : state.kind == runtime::StateKind::MainKv   ? "compress_kv"
                       : state.kind == runtime::StateKind::IndexKeys ? "index_k"
                                                                     : "";
    if (name.empty())
      continue;
    const runtime::TensorView *view =
        golden.find("prefill.cache." + std::to_string(state.layer) + "." + name);
    ASSERT_NE(view, nullptr) << state.name;
    std::vector<float> gold = goldenFloats(*view);
    numerics::KvPageLayout layout = runtime::pageLayoutOf(state.layout);
    int64_t width = layout.format.valuesPerEntry, rows = view->shape[0];
    const uint8_t *pool = session->state(int64_t(i)).data<uint8_t>();
    std::vector<float> mine(rows * width);
    for (int64_t r = 0; r < rows; ++r)
      numerics::decodeKvRecord(layout.format, pool + layout.tokenDataOffset(r),
                               pool + layout.tokenScaleOffset(r), mine.data() + r * width);
    int64_t differing = 0;
    for (size_t k = 0; k < gold.size(); ++k)
      differing += std::memcmp(&gold[k], &mine[k], sizeof(float)) != 0 && !(gold[k] == 0 && mine[k] == 0);
    EXPECT_EQ(differing, 0) << "prefill.cache." << state.layer << "." << name << ": "
                            << differing << " values differ from the golden QDQ values";
  }

  // Teacher-forced decode.
  for (size_t p = run.promptLen, step = 0; p < run.ids.size(); ++p, ++step) {
    auto out = session->decode(run.ids[p]);
    ASSERT_TRUE(out.hasValue()) << out.status().message();
    std::vector<float> gold = goldenFloats(*golden.find("decode" + std::to_string(step) + ".logits"));
    bool same = false;
    double e = logitsError(*out, out->dim(0) - 1, gold, 0, same);
    EXPECT_LE(e, 1e-4) << "decode" << step << " logits";
    EXPECT_TRUE(same) << "decode" << step << " argmax";
  }

  double worstBlock = 0;
  for (const BlockResult &b : comparator.blocks()) {
    worstBlock = std::max(worstBlock, b.blockError);
    EXPECT_LE(b.blockError, 5e-3) << b.phase << " layer " << b.layer;
    // The README's row bound (5e-2 since 2026-12-01: one last-bit change of
    // the reference's own fp32 sums moves a row by up to 1.9e-2), no excuses
    // beyond the goldens' tie rows.
    EXPECT_LE(b.worstRowError, 5e-2) << b.phase << " layer " << b.layer << " row " << b.worstRow;
  }
  EXPECT_GT(comparator.blocks().size(), 0u);
  for (const std::string &f : comparator.failures())
    ADD_FAILURE() << f;
  std::printf("[golden] %s/%s: %zu blocks, worst block error %.3g\n", GetParam().name.c_str(),
              GetParam().file.c_str(), comparator.blocks().size(), worstBlock);
  writeFidelity(GetParam(), "forced", comparator.blocks());
}

TEST_P(GoldenConformance, FreeRunningErrorsAreReported) {
  LoadedRun run;
  ASSERT_NO_FATAL_FAILURE(load(GetParam(), run));
  auto session = run.engine->newSession();
  GoldenComparator comparator(*run.golden, run.compiled.spec);
  session->setObserver(&comparator);
  auto logits = session->prefill(std::span<const int32_t>(run.ids.data(), run.promptLen));
  ASSERT_TRUE(logits.hasValue()) << logits.status().message();
  for (size_t p = run.promptLen; p < run.ids.size(); ++p)
    ASSERT_TRUE(session->decode(run.ids[p]).hasValue());
  // Layers before the first CSA2 layer see the same inputs free-running as
  // forced, so they meet the forced block gate (5e-3; golden/README.md: they
  // "should still agree"). tiny6 layer 0 measures 1.4e-3 with its near-tie
  // row 20 counted (one bf16 halfway rounding upstream of the MoE moves that
  // row by 2-3e-2, within the README's row bound), 1e-4 or less without it.
  for (const BlockResult &b : comparator.blocks())
    if (b.phase == "prefill" && run.compiled.spec.layers.at(b.layer).compressRatio == 0 &&
        b.layer < 2)
      EXPECT_LE(b.blockError, 5e-3) << "free-running layer " << b.layer;
  writeFidelity(GetParam(), "free", comparator.blocks());
}

INSTANTIATE_TEST_SUITE_P(Goldens, GoldenConformance,
                         testing::Values(GoldenRun{"tiny40", "expected"},
                                         GoldenRun{"tiny40", "expected_short"},
                                         GoldenRun{"tiny6", "expected"},
                                         GoldenRun{"tiny6", "expected_short"}),
                         caseName);

} // namespace
