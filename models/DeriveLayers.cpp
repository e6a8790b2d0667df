//===- DeriveLayers.cpp - Layer roles, sources and the Engram layout ------===//
//
// Derived facts of a validated ModelSpec (reference-spec §2.2, §7.2-7.3,
// §9.4-9.6, §11):
//   role     ratio 0: SwaOnly (backbone) or DSpark (id >= n_layers);
//            ratio > 0: Full (kv source, hence also index source), Reindex
//            (index source only), else Reuse;
//   sources  kvSource / indexSource = the nearest kv / index source at or
//            below the layer (the reference's shared slot holds what the
//            most recent source published; Validate.cpp checked the ratios);
//   candidates  candidateSource = the candidate_source_layer; usesCandidates
//            = an index source above it (Indexer.uses_candidates);
//   engram, dsparkTarget, encoder (id < n_layers/2), MoE width
//            (get_moe_config: DSpark stages use dspark_n_* unless 0), RoPE
//            base and YaRN.
//===----------------------------------------------------------------------===//
#include "models/Validate.h"

#include "dsc/numerics/EngramLayout.h"

#include <algorithm>

namespace dsc::models {

namespace {
int64_t indexOf(const std::vector<int64_t> &v, int64_t x) {
  auto it = std::find(v.begin(), v.end(), x);
  return it == v.end() ? -1 : int64_t(it - v.begin());
}
} // namespace

std::vector<EngramLayerLayout> computeEngramLayout(const ModelSpec &spec) {
  std::vector<EngramLayerLayout> out;
  if (!spec.hasEngram())
    return out;
  // primes[layer][n-2][head], drawn across layers without reuse (§7.2).
  auto primes = numerics::drawEngramPrimes(
      spec.engramVocabSize, int64_t(spec.engramLayerIds.size()),
      spec.engramMaxNgramSize, spec.engramNHeads);
  for (size_t i = 0; i < spec.engramLayerIds.size(); ++i) {
    EngramLayerLayout l;
    l.layerId = spec.engramLayerIds[i];
    if (i < primes.size())
      l.primes = primes[i];
    // Offsets: exclusive prefix sums over the columns, n-gram-major then
    // head (NgramHashState.__init__); the table has sum(primes) rows.
    int64_t sum = 0;
    for (const auto &perNgram : l.primes)
      for (int64_t p : perNgram) {
        l.offsets.push_back(sum);
        sum += p;
      }
    l.tableRows = sum;
    // Odd multipliers from default_rng(10007 * layer) (§7.3).
    l.multipliers = numerics::engramHashMultipliers(
        l.layerId, spec.engramCompressedVocabSize, spec.engramMaxNgramSize);
    out.push_back(std::move(l));
  }
  return out;
}

void deriveLayers(ModelSpec &spec) {
  spec.cedSplitLayer = spec.nLayers / 2;
  spec.layers.clear();
  for (int64_t id = 0; id < spec.totalLayers(); ++id) {
    LayerSpec l;
    l.id = id;
    l.compressRatio = spec.compressRatios[id];
    bool backbone = id < spec.nLayers;
    bool isKv = backbone && indexOf(spec.kvSourceLayers, id) >= 0;
    bool isIndex = backbone && indexOf(spec.indexSourceLayers, id) >= 0;

    if (!backbone)
      l.role = LayerRole::DSpark;
    else if (l.compressRatio == 0)
      l.role = LayerRole::SwaOnly;
    else if (isKv)
      l.role = LayerRole::Full;
    else if (isIndex)
      l.role = LayerRole::Reindex;
    else
      l.role = LayerRole::Reuse;

    if (backbone && l.compressRatio > 0) {
      l.kvSource = nearestAtOrBelow(spec.kvSourceLayers, id);
      l.indexSource = nearestAtOrBelow(spec.indexSourceLayers, id);
      l.candidateSource = id == spec.candidateSourceLayer;
      l.usesCandidates =
          isIndex && spec.hasCandidates() && id > spec.candidateSourceLayer;
    }

    l.engramIndex = backbone ? indexOf(spec.engramLayerIds, id) : -1;
    l.engram = l.engramIndex >= 0;
    l.dsparkTarget = backbone && indexOf(spec.dsparkTargetLayerIds, id) >= 0;
    l.encoder = backbone && id < spec.cedSplitLayer;

    if (backbone) {
      l.nRoutedExperts = spec.nRoutedExperts;
      l.nActivatedExperts = spec.nActivatedExperts;
    } else {
      l.nRoutedExperts = spec.dsparkNRoutedExperts ? spec.dsparkNRoutedExperts
                                                   : spec.nRoutedExperts;
      l.nActivatedExperts = spec.dsparkNActivatedExperts
                                ? spec.dsparkNActivatedExperts
                                : spec.nActivatedExperts;
    }

    // Attention.__init__: ratio > 0 -> compress_rope_theta and YaRN when
    // original_seq_len > 0; ratio 0 (DSpark too) -> rope_theta, no YaRN.
    l.ropeTheta = l.compressRatio > 0 ? spec.compressRopeTheta : spec.ropeTheta;
    l.yarn = l.compressRatio > 0 && spec.originalSeqLen > 0;
    spec.layers.push_back(l);
  }
}

} // namespace dsc::models
