//===- ModelSpec.h - One validated description of a DeepSeek-V4.1 model ---===//
//
// ModelSpec is filled from either config format (HF `config.json` with a
// nested `text_config`, or the reference `inference/config.json` with
// `ModelArgs` keys; see ConfigImport.h) and validated once. Everything the
// compiler derives from a config lives here exactly once: the role of every
// layer (SWA-only, Full, Reindex, Reuse, DSpark), its KV / index / candidate
// sources, the Engram layout (primes, offsets, hash multipliers) and the CED
// split point.
//
// Invariants after a successful import (ConfigImport.cpp / Validate.cpp):
//   - layers.size() == nLayers + nMtpLayers, layers[i].id == i;
//   - every CSA2 layer (ratio > 0) has a kvSource with the same ratio at or
//     below it, and an indexSource at or below it whose kvSource is the same;
//   - dimension divisibility for FP8/FP4 blocks holds (see Validate.cpp).
// Sizes are the config's own; names follow the reference (`dim`, `head_dim`),
// whichever format the file used.
//===----------------------------------------------------------------------===//
#ifndef DSC_MODELS_MODELSPEC_H
#define DSC_MODELS_MODELSPEC_H

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace dsc::models {

/// Which of the two config formats a file was written in (recognised by
/// content, never by file name).
enum class ConfigFormat { HuggingFace, Inference };

/// The part a layer plays in the CSA2 schedule (reference-spec §2.2).
enum class LayerRole {
  SwaOnly, ///< compress ratio 0: sliding window only
  Full,    ///< KV source and index source: owns compressor + index keys
  Reindex, ///< index source reading another layer's keys: owns queries only
  Reuse,   ///< reads KV and top-k of its sources, computes neither
  DSpark,  ///< a DSpark (MTP) stage after the backbone
};

/// Stable lower-case name used in reports and IR: "swa", "full", ...
const char *roleName(LayerRole role);

/// Derived facts for one layer (backbone layers and DSpark stages).
struct LayerSpec {
  int64_t id = 0;
  LayerRole role = LayerRole::SwaOnly;
  int64_t compressRatio = 0;
  /// KV source layer id (the layer's own id for sources); none for ratio 0.
  std::optional<int64_t> kvSource;
  /// Index source layer id (own id for index sources); none for ratio 0.
  std::optional<int64_t> indexSource;
  /// This layer's indexer publishes the candidate pool (layer 20 released).
  bool candidateSource = false;
  /// This index source scores only inside the candidate pool (24..36).
  bool usesCandidates = false;
  /// Engram runs before this layer; engramIndex is its position in
  /// ModelSpec::engram (and in the hash tensor), -1 if none.
  bool engram = false;
  int64_t engramIndex = -1;
  /// The copy mean of the stream entering this layer feeds DSpark.
  bool dsparkTarget = false;
  /// Encoder (id < cedSplitLayer) or decoder; false for DSpark stages.
  bool encoder = false;
  /// MoE width of this layer (DSpark stages use their own expert counts).
  int64_t nRoutedExperts = 0;
  int64_t nActivatedExperts = 0;
  /// RoPE base of every rotation in this layer (q, window KV, compressed KV,
  /// indexer q/k): compress_rope_theta for ratio > 0, rope_theta otherwise
  /// (DSpark stages included); YaRN only for ratio > 0 with original_seq_len
  /// > 0 (reference-spec §2.2, §9.2).
  double ropeTheta = 10000;
  bool yarn = false;

  bool isSource() const { return role == LayerRole::Full; }
  bool ownsIndexQueries() const {
    return role == LayerRole::Full || role == LayerRole::Reindex;
  }
  /// Full layers compute the index keys every index source of their ratio
  /// reads until the next Full layer.
  bool ownsIndexKeys() const { return role == LayerRole::Full; }
  /// Ratio > 0: the layer attends over compressed KV besides its window.
  bool isCsa2() const { return compressRatio > 0 && role != LayerRole::DSpark; }
  bool isDSpark() const { return role == LayerRole::DSpark; }
};

/// Inverse of roleName; std::nullopt for an unknown name.
std::optional<LayerRole> roleFromName(const std::string &name);

/// Engram layout of one Engram layer (reference-spec §7.2–7.3).
struct EngramLayerLayout {
  int64_t layerId = 0;
  /// primes[n-2][head] for n-gram sizes 2..maxNgram.
  std::vector<std::vector<int64_t>> primes;
  /// Exclusive prefix sums of the flattened primes (column order n-gram-major,
  /// then head); offsets.size() == (maxNgram-1) * nHeads.
  std::vector<int64_t> offsets;
  /// Sum of all primes: the table row count (== engram_num_embeddings[i]).
  int64_t tableRows = 0;
  /// Odd hash multipliers, maxNgram of them (numpy default_rng(10007*layer)).
  std::vector<int64_t> multipliers;
};

/// Runtime limits a config may carry; they are plan options, not model facts.
struct RuntimeLimits {
  std::optional<int64_t> maxSeqLen;     ///< max_seq_len / max_position_embeddings
  std::optional<int64_t> maxBatchSize;  ///< max_batch_size
  std::optional<double> temperature;    ///< temperature

  /// The reference ModelArgs defaults, for a plan whose config names none
  /// (reference-spec §2.1; generate.py overrides them).
  static constexpr int64_t kReferenceMaxSeqLen = 4096;
  static constexpr int64_t kReferenceMaxBatchSize = 4;
  static constexpr double kReferenceTemperature = 1.0;
};

struct ModelSpec {
  std::string sourcePath;
  ConfigFormat format = ConfigFormat::Inference;

  // Backbone sizes.
  int64_t vocabSize = 0, dim = 0, moeInterDim = 0;
  int64_t nLayers = 0, nMtpLayers = 0;
  int64_t nHeads = 0, headDim = 0, ropeHeadDim = 0;
  int64_t qLoraRank = 0, oGroups = 0, oLoraRank = 0;
  int64_t windowSize = 0;
  double normEps = 0;
  std::string dtype;       ///< "fp8" (dense weights)
  std::string expertDtype; ///< "fp4" (routed experts)

  // MoE.
  int64_t nRoutedExperts = 0, nSharedExperts = 0, nActivatedExperts = 0;
  std::string scoreFunc; ///< "sqrtsoftplus"
  double routeScale = 1, swigluLimit = 0, gateTemp = 1;
  bool normTopkProb = true;

  // CSA2 schedule (compressRatios has nLayers + nMtpLayers entries).
  std::vector<int64_t> compressRatios;
  std::vector<int64_t> kvSourceLayers, indexSourceLayers;
  int64_t candidateSourceLayer = -1; ///< -1: no candidate pool
  int64_t candidateTopkBlocks = 0, candidateBlockSize = 0;
  int64_t indexNHeads = 0, indexHeadDim = 0, indexTopk = 0;

  // RoPE / YaRN.
  double ropeTheta = 10000, compressRopeTheta = 10000, ropeFactor = 1;
  double betaFast = 32, betaSlow = 1;
  int64_t originalSeqLen = 0; ///< 0: no YaRN

  // mHC.
  int64_t hcMult = 0, hcSinkhornIters = 0;
  double hcEps = 0;

  // Engram (empty engramLayerIds: off).
  std::vector<int64_t> engramLayerIds, engramNumEmbeddings;
  int64_t engramMaxNgramSize = 0, engramVocabSize = 0, engramNHeads = 0;
  int64_t engramHeadDim = 0, engramPadId = 0, engramCompressedVocabSize = 0;

  // DSpark (nMtpLayers stages; empty dsparkTargetLayerIds: off).
  int64_t dsparkBlockSize = 0, dsparkNoiseTokenId = 0, dsparkMarkovRank = 0;
  std::vector<int64_t> dsparkTargetLayerIds;
  int64_t dsparkNRoutedExperts = 0, dsparkNActivatedExperts = 0;

  // Vision (0 layers: off). Only what the language model needs to know.
  int64_t visionNLayers = 0, imageTokenId = 0;

  RuntimeLimits limits;

  // Derived (filled by the importer after validation).
  std::vector<LayerSpec> layers;         ///< nLayers + nMtpLayers entries
  int64_t cedSplitLayer = 0;             ///< L/2: first decoder layer
  std::vector<EngramLayerLayout> engram; ///< one per engramLayerIds entry

  int64_t totalLayers() const { return nLayers + nMtpLayers; }
  bool hasEngram() const { return !engramLayerIds.empty(); }
  bool hasDSpark() const { return nMtpLayers > 0; }
  bool hasCandidates() const { return candidateSourceLayer >= 0; }
  /// Hash columns per Engram layer: (engram_max_ngram_size-1)*engram_n_heads.
  int64_t engramHashColumns() const {
    return hasEngram() ? (engramMaxNgramSize - 1) * engramNHeads : 0;
  }
};

/// Every model fact on which `a` and `b` differ, one line each
/// ("dim: 5120 vs 4096", "layers[5].role: reuse vs full"); empty when they
/// describe the same model. sourcePath and format are never compared;
/// runtime limits only when `compareLimits` (the HF format carries
/// max_position_embeddings only, the inference format max_seq_len,
/// max_batch_size and temperature). A field added to ModelSpec or LayerSpec
/// must be added there too (ModelSpec.cpp static_asserts the struct sizes).
std::vector<std::string> modelSpecDifferences(const ModelSpec &a,
                                              const ModelSpec &b,
                                              bool compareLimits = false);

} // namespace dsc::models

#endif // DSC_MODELS_MODELSPEC_H
