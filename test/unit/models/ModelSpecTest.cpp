//===- ModelSpecTest.cpp - Both formats, roles, sources, Engram layout ----===//
#include "ConfigTestUtil.h"

#include "models/ConfigImport.h"
#include "models/ModelSpec.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

using namespace dsc::models;
using namespace dsc::test;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

namespace {

ModelSpec importShared(const std::string &relative) {
  llvm::Expected<ModelSpec> spec = importConfigFile(sharedPath(relative));
  if (!spec) {
    ADD_FAILURE() << llvm::toString(spec.takeError());
    return ModelSpec();
  }
  return std::move(*spec);
}

std::string roles(const ModelSpec &spec) {
  std::string s;
  for (const LayerSpec &l : spec.layers)
    s += std::string(s.empty() ? "" : " ") + roleName(l.role);
  return s;
}

// --- Both formats yield the same ModelSpec -------------------------------

TEST(ModelSpecFormats, ReleasedPairIdentical) {
  ModelSpec inf = importShared(kReleasedInference);
  ModelSpec hf = importShared(kReleasedHF);
  EXPECT_EQ(inf.format, ConfigFormat::Inference);
  EXPECT_EQ(hf.format, ConfigFormat::HuggingFace);
  EXPECT_THAT(modelSpecDifferences(inf, hf), IsEmpty());
  ASSERT_EQ(inf.layers.size(), 43u);
  // Limits differ by design: the reference file names none, HF names
  // max_position_embeddings.
  EXPECT_FALSE(inf.limits.maxSeqLen);
  EXPECT_EQ(hf.limits.maxSeqLen, 1048576);
  EXPECT_FALSE(hf.limits.maxBatchSize);
  EXPECT_FALSE(hf.limits.temperature);
}

class GoldenPair : public ::testing::TestWithParam<const char *> {};

TEST_P(GoldenPair, ConfigAndHfConfigIdentical) {
  std::string dir = std::string("golden/") + GetParam() + "/";
  ModelSpec inf = importShared(dir + "config.json");
  ModelSpec hf = importShared(dir + "hf_config.json");
  EXPECT_EQ(inf.format, ConfigFormat::Inference);
  EXPECT_EQ(hf.format, ConfigFormat::HuggingFace);
  EXPECT_THAT(modelSpecDifferences(inf, hf), IsEmpty());
  // max_seq_len and max_position_embeddings agree in the goldens.
  EXPECT_EQ(inf.limits.maxSeqLen, hf.limits.maxSeqLen);
  EXPECT_EQ(inf.limits.maxBatchSize, 1);
  EXPECT_EQ(inf.limits.temperature, 0.0);
}

INSTANTIATE_TEST_SUITE_P(Golden, GoldenPair,
                         ::testing::Values("tiny40", "tiny6"));

TEST(ModelSpecFormats, DifferencesAreReported) {
  ModelSpec a = importShared(kReleasedInference);
  ModelSpec b = a;
  b.layers[5].role = LayerRole::Full;
  b.dim = 4096;
  b.engram[1].multipliers[0] += 2;
  EXPECT_THAT(modelSpecDifferences(a, b),
              ElementsAre("dim: 5120 vs 4096", "layers[5].role: reuse vs full",
                          "engram[1].multipliers: [67716810739261, "
                          "51510806800915, 30921347202721, 82619226485591] vs "
                          "[67716810739263, 51510806800915, 30921347202721, "
                          "82619226485591]"));
  b = a;
  b.limits.maxSeqLen = 7;
  EXPECT_THAT(modelSpecDifferences(a, b), IsEmpty());
  EXPECT_THAT(modelSpecDifferences(a, b, /*compareLimits=*/true),
              ElementsAre("limits.maxSeqLen: none vs 7"));
}

// The format is recognised by content, never by file name.
TEST(ModelSpecFormats, DetectedByContentNotName) {
  llvm::SmallString<128> dir;
  ASSERT_FALSE(llvm::sys::fs::createUniqueDirectory("dsc-models", dir));
  auto write = [&](const char *name, const std::string &text) {
    llvm::SmallString<128> path(dir);
    llvm::sys::path::append(path, name);
    std::error_code ec;
    llvm::raw_fd_ostream os(path, ec);
    EXPECT_FALSE(ec);
    os << text;
    return std::string(path);
  };
  // HF content under the reference's file name and vice versa.
  std::string hfPath = write("inference_config.json", readShared(kReleasedHF));
  std::string infPath = write("config.json", readShared(kReleasedInference));
  std::string oddPath = write("model.txt", readShared(kReleasedHF));
  llvm::Expected<ModelSpec> hf = importConfigFile(hfPath);
  llvm::Expected<ModelSpec> inf = importConfigFile(infPath);
  llvm::Expected<ModelSpec> odd = importConfigFile(oddPath);
  ASSERT_TRUE(bool(hf)) << llvm::toString(hf.takeError());
  ASSERT_TRUE(bool(inf)) << llvm::toString(inf.takeError());
  ASSERT_TRUE(bool(odd)) << llvm::toString(odd.takeError());
  EXPECT_EQ(hf->format, ConfigFormat::HuggingFace);
  EXPECT_EQ(odd->format, ConfigFormat::HuggingFace);
  EXPECT_EQ(inf->format, ConfigFormat::Inference);
  EXPECT_EQ(hf->sourcePath, hfPath);
  EXPECT_THAT(modelSpecDifferences(*hf, *inf), IsEmpty());
  llvm::sys::fs::remove_directories(dir);
}

// A flat HF file (text keys at the top level, no text_config) is HF too.
TEST(ModelSpecFormats, FlatHuggingFace) {
  llvm::json::Object root = loadShared(kReleasedHF);
  llvm::json::Object flat = *root.getObject("text_config");
  for (const char *k : {"quantization_config", "vision_config",
                        "image_token_id"})
    flat[k] = *root.get(k);
  llvm::Expected<ModelSpec> spec = importObject(flat);
  ASSERT_TRUE(bool(spec)) << llvm::toString(spec.takeError());
  EXPECT_EQ(spec->format, ConfigFormat::HuggingFace);
  EXPECT_THAT(modelSpecDifferences(*spec, importShared(kReleasedInference)),
              IsEmpty());
}

// --- Defaults -------------------------------------------------------------

TEST(ModelSpecDefaults, AbsentKeysTakeModelArgsDefaults) {
  // The released inference/config.json names neither gate_temp nor
  // norm_topk_prob (reference-spec §2.1).
  ModelSpec spec = importShared(kReleasedInference);
  EXPECT_EQ(spec.gateTemp, 1.0);
  EXPECT_TRUE(spec.normTopkProb);
  EXPECT_EQ(spec.nSharedExperts, 1);
  EXPECT_EQ(spec.engramPadId, 2);
  EXPECT_EQ(spec.visionNLayers, 32);
  EXPECT_EQ(spec.imageTokenId, 129264);

  llvm::json::Object obj = loadShared(kReleasedInference);
  for (const char *k : {"score_func", "route_scale", "swiglu_limit",
                        "norm_eps", "compress_rope_theta", "rope_theta",
                        "rope_factor", "beta_fast", "beta_slow",
                        "original_seq_len", "hc_sinkhorn_iters", "hc_eps",
                        "engram_pad_id", "vision_n_layers", "image_token_id",
                        "dspark_markov_rank", "dspark_n_routed_experts",
                        "dspark_n_activated_experts", "dtype", "expert_dtype"})
    obj.erase(k);
  llvm::Expected<ModelSpec> d = importObject(obj);
  ASSERT_TRUE(bool(d)) << llvm::toString(d.takeError());
  EXPECT_EQ(d->scoreFunc, "sqrtsoftplus");
  EXPECT_EQ(d->routeScale, 1.0);
  EXPECT_EQ(d->swigluLimit, 0.0);
  EXPECT_EQ(d->normEps, 1e-20);
  EXPECT_EQ(d->compressRopeTheta, 40000.0);
  EXPECT_EQ(d->ropeTheta, 10000.0);
  EXPECT_EQ(d->ropeFactor, 40.0);
  EXPECT_EQ(d->betaFast, 32.0);
  EXPECT_EQ(d->betaSlow, 1.0);
  EXPECT_EQ(d->originalSeqLen, 0);
  EXPECT_EQ(d->hcSinkhornIters, 20);
  EXPECT_EQ(d->hcEps, 1e-6);
  EXPECT_EQ(d->visionNLayers, 0);
  EXPECT_EQ(d->dsparkMarkovRank, 256);
  EXPECT_EQ(d->dtype, "fp8");
  EXPECT_EQ(d->expertDtype, "fp4");
  // DSpark expert counts 0 fall back to the backbone's (get_moe_config).
  EXPECT_EQ(d->layers[40].nRoutedExperts, 384);
  EXPECT_EQ(d->layers[40].nActivatedExperts, 6);
  // No YaRN without original_seq_len.
  EXPECT_FALSE(d->layers[2].yarn);
  EXPECT_EQ(d->layers[2].ropeTheta, 40000.0);
}

TEST(ModelSpecDefaults, HfWithoutRopeScalingHasNoYarn) {
  llvm::json::Object obj = loadShared(kReleasedHF);
  (*obj.getObject("text_config"))["rope_scaling"] = nullptr;
  llvm::Expected<ModelSpec> spec = importObject(obj);
  ASSERT_TRUE(bool(spec)) << llvm::toString(spec.takeError());
  EXPECT_EQ(spec->originalSeqLen, 0);
  EXPECT_EQ(spec->ropeFactor, 40.0);
  for (const LayerSpec &l : spec->layers)
    EXPECT_FALSE(l.yarn) << l.id;
}

TEST(ModelSpecDefaults, NegativeCandidateSourceMeansOff) {
  llvm::json::Object obj = loadShared(kReleasedInference);
  obj["candidate_source_layer"] = -5;
  llvm::Expected<ModelSpec> spec = importObject(obj);
  ASSERT_TRUE(bool(spec)) << llvm::toString(spec.takeError());
  EXPECT_EQ(spec->candidateSourceLayer, -1);
  EXPECT_FALSE(spec->hasCandidates());
  for (const LayerSpec &l : spec->layers) {
    EXPECT_FALSE(l.candidateSource) << l.id;
    EXPECT_FALSE(l.usesCandidates) << l.id;
  }
}

// --- Released layer facts (README, reference-spec §2.2) ----------------------

TEST(ReleasedLayers, RoleOfEveryLayer) {
  ModelSpec spec = importShared(kReleasedInference);
  std::string expected;
  for (int i = 0; i < 43; ++i) {
    const char *r = i < 2                             ? "swa"
                    : i >= 40                         ? "dspark"
                    : (i == 2 || i == 8 || i == 14 || i == 20) ? "full"
                    : (i == 24 || i == 28 || i == 32 || i == 36) ? "reindex"
                                                                 : "reuse";
    expected += std::string(i ? " " : "") + r;
  }
  EXPECT_EQ(roles(spec), expected);
  int reuse = 0;
  for (const LayerSpec &l : spec.layers) {
    EXPECT_EQ(l.id, &l - spec.layers.data());
    reuse += l.role == LayerRole::Reuse;
  }
  EXPECT_EQ(reuse, 30);
}

TEST(ReleasedLayers, Sources) {
  ModelSpec spec = importShared(kReleasedInference);
  struct Case {
    int layer, kv, index;
  };
  for (Case c : {Case{2, 2, 2}, Case{3, 2, 2}, Case{19, 14, 14},
                 Case{20, 20, 20}, Case{21, 20, 20}, Case{24, 20, 24},
                 Case{25, 20, 24}, Case{39, 20, 36}}) {
    const LayerSpec &l = spec.layers[c.layer];
    EXPECT_EQ(l.kvSource, c.kv) << c.layer;
    EXPECT_EQ(l.indexSource, c.index) << c.layer;
  }
  for (int id : {0, 1, 40, 41, 42}) {
    EXPECT_FALSE(spec.layers[id].kvSource) << id;
    EXPECT_FALSE(spec.layers[id].indexSource) << id;
  }
}

TEST(ReleasedLayers, CandidatesEngramDSparkCed) {
  ModelSpec spec = importShared(kReleasedInference);
  EXPECT_EQ(spec.cedSplitLayer, 20);
  for (const LayerSpec &l : spec.layers) {
    int i = int(l.id);
    EXPECT_EQ(l.candidateSource, i == 20) << i;
    EXPECT_EQ(l.usesCandidates, i == 24 || i == 28 || i == 32 || i == 36)
        << i;
    EXPECT_EQ(l.engram, i == 1 || i == 14) << i;
    EXPECT_EQ(l.engramIndex, i == 1 ? 0 : i == 14 ? 1 : -1) << i;
    EXPECT_EQ(l.dsparkTarget, i >= 37 && i <= 39) << i;
    EXPECT_EQ(l.encoder, i < 20) << i;
    EXPECT_EQ(l.nRoutedExperts, i >= 40 ? 128 : 384) << i;
    EXPECT_EQ(l.nActivatedExperts, i >= 40 ? 3 : 6) << i;
    EXPECT_EQ(l.compressRatio, i < 2 || i >= 40 ? 0 : i < 20 ? 2 : 1) << i;
    // Ratio > 0: theta 160000 + YaRN; ratio 0 (DSpark too): 10000, no YaRN.
    EXPECT_EQ(l.yarn, i >= 2 && i < 40) << i;
    EXPECT_EQ(l.ropeTheta, i >= 2 && i < 40 ? 160000.0 : 10000.0) << i;
  }
  EXPECT_EQ(spec.engramHashColumns(), 24);
}

TEST(ReleasedLayers, EngramLayout) {
  ModelSpec spec = importShared(kReleasedInference);
  ASSERT_EQ(spec.engram.size(), 2u);
  const EngramLayerLayout &l1 = spec.engram[0], &l14 = spec.engram[1];
  EXPECT_EQ(l1.layerId, 1);
  EXPECT_EQ(l14.layerId, 14);
  ASSERT_EQ(l1.primes.size(), 3u);
  ASSERT_EQ(l14.primes.size(), 3u);
  for (const auto &p : l1.primes)
    EXPECT_EQ(p.size(), 8u);
  EXPECT_EQ(l1.primes.front().front(), 16000057);
  EXPECT_EQ(l1.primes.back().back(), 16000463);
  EXPECT_EQ(l14.primes.front().front(), 16000477);
  EXPECT_EQ(l14.primes.back().back(), 16000889);
  EXPECT_EQ(l1.tableRows, 384006168);
  EXPECT_EQ(l14.tableRows, 384016682);
  // Offsets: exclusive prefix sums, n-gram-major then head.
  ASSERT_EQ(l1.offsets.size(), 24u);
  EXPECT_EQ(l1.offsets[0], 0);
  EXPECT_EQ(l1.offsets[1], l1.primes[0][0]);
  EXPECT_EQ(l1.offsets[8], l1.offsets[7] + l1.primes[0][7]);
  EXPECT_EQ(l1.offsets[9], l1.offsets[8] + l1.primes[1][0]);
  EXPECT_EQ(l1.offsets[23], 384006168 - 16000463);
  EXPECT_EQ(l14.offsets[23], 384016682 - 16000889);
  EXPECT_THAT(l1.multipliers,
              ElementsAre(76632096046245, 4839876093313, 35959672319349,
                          73987337458391));
  EXPECT_THAT(l14.multipliers,
              ElementsAre(67716810739261, 51510806800915, 30921347202721,
                          82619226485591));
}

// --- Golden tiny cases ------------------------------------------------------

TEST(GoldenLayers, Tiny6Roles) {
  ModelSpec spec = importShared("golden/tiny6/config.json");
  EXPECT_EQ(roles(spec), "swa full reuse full reuse reindex dspark");
  const auto &L = spec.layers;
  EXPECT_EQ(L[1].compressRatio, 2);
  EXPECT_EQ(L[2].compressRatio, 2);
  EXPECT_EQ(L[3].compressRatio, 1);
  EXPECT_EQ(L[2].kvSource, 1);
  EXPECT_EQ(L[2].indexSource, 1);
  EXPECT_EQ(L[4].kvSource, 3);
  EXPECT_EQ(L[4].indexSource, 3);
  EXPECT_EQ(L[5].kvSource, 3);
  EXPECT_EQ(L[5].indexSource, 5);
  EXPECT_TRUE(L[3].candidateSource);
  for (const LayerSpec &l : L) {
    EXPECT_EQ(l.candidateSource, l.id == 3) << l.id;
    EXPECT_EQ(l.usesCandidates, l.id == 5) << l.id;
    EXPECT_EQ(l.engram, l.id == 0 || l.id == 1) << l.id;
    EXPECT_EQ(l.dsparkTarget, l.id >= 3 && l.id <= 5) << l.id;
    EXPECT_EQ(l.encoder, l.id < 3) << l.id;
  }
  EXPECT_EQ(spec.cedSplitLayer, 3);
  EXPECT_EQ(L[6].nRoutedExperts, 8);
  EXPECT_EQ(L[6].nActivatedExperts, 2);
  ASSERT_EQ(spec.engram.size(), 2u);
  EXPECT_EQ(spec.engram[0].tableRows, 1854);
  EXPECT_EQ(spec.engram[1].tableRows, 2194);
  EXPECT_EQ(spec.engram[0].offsets.size(), 8u);
  EXPECT_EQ(spec.engram[0].multipliers.size(), 3u);
  for (int64_t m : spec.engram[0].multipliers)
    EXPECT_EQ(m % 2, 1);
}

TEST(GoldenLayers, Tiny40MatchesReleasedSchedule) {
  ModelSpec tiny = importShared("golden/tiny40/config.json");
  ModelSpec released = importShared(kReleasedInference);
  ASSERT_EQ(tiny.layers.size(), released.layers.size());
  for (size_t i = 0; i < tiny.layers.size(); ++i) {
    const LayerSpec &a = tiny.layers[i], &b = released.layers[i];
    EXPECT_EQ(a.role, b.role) << i;
    EXPECT_EQ(a.kvSource, b.kvSource) << i;
    EXPECT_EQ(a.indexSource, b.indexSource) << i;
    EXPECT_EQ(a.candidateSource, b.candidateSource) << i;
    EXPECT_EQ(a.usesCandidates, b.usesCandidates) << i;
    EXPECT_EQ(a.engramIndex, b.engramIndex) << i;
    EXPECT_EQ(a.dsparkTarget, b.dsparkTarget) << i;
    EXPECT_EQ(a.encoder, b.encoder) << i;
  }
  ASSERT_EQ(tiny.engram.size(), 2u);
  EXPECT_EQ(tiny.engram[0].tableRows, 660);
  EXPECT_EQ(tiny.engram[1].tableRows, 864);
}

TEST(RoleNames, RoundTrip) {
  for (LayerRole r : {LayerRole::SwaOnly, LayerRole::Full, LayerRole::Reindex,
                      LayerRole::Reuse, LayerRole::DSpark})
    EXPECT_EQ(roleFromName(roleName(r)), r);
  EXPECT_STREQ(roleName(LayerRole::SwaOnly), "swa");
  EXPECT_STREQ(roleName(LayerRole::Reindex), "reindex");
  EXPECT_FALSE(roleFromName("encoder"));
}

} // namespace
