//===- EngramLayout.h - Engram primes, offsets and hash multipliers -------===//
//
// Host-side (not device) pieces of the Engram layout, computed exactly as the
// reference's inference/engram.py does (reference-spec §7.2–7.3):
//   - primes: for each Engram layer in order, for each n-gram size 2..maxNgram,
//     for each head, the next prime above the previous one, the search start
//     resetting to vocabSize-1 for each (layer, n-gram) while no prime is ever
//     reused (across layers too);
//   - offsets: per layer, the exclusive prefix sum of that layer's primes in
//     column order (n-gram-major, then head); the layer's table has
//     sum(primes) rows (= config engram_num_embeddings[layer]);
//   - hash multipliers: numpy `default_rng(10007*layer_id).integers(0, bound,
//     size=maxNgram, dtype=int64) * 2 + 1` with
//     bound = max(1, (INT64_MAX // compressedVocab) // 2), reproduced bit for
//     bit without Python (SeedSequence + PCG64 + numpy's bounded integers, see
//     EngramNumpyRandom.h).
// docs/engram.md states every rule with its source.
//===----------------------------------------------------------------------===//
#ifndef DSC_NUMERICS_ENGRAMLAYOUT_H
#define DSC_NUMERICS_ENGRAMLAYOUT_H

#include <cstdint>
#include <vector>

namespace dsc::numerics {

/// Deterministic primality test valid for every 64-bit integer (Miller–Rabin
/// with the first twelve primes as bases).
bool isPrime(uint64_t n);

/// The smallest prime p > start (no `seen` filtering).
uint64_t nextPrime(uint64_t start);

/// primes[layer][n-2][head] for `numLayers` Engram layers.
std::vector<std::vector<std::vector<int64_t>>>
drawEngramPrimes(int64_t engramVocabSize, int64_t numLayers,
                 int64_t maxNgram, int64_t numHeads);

/// One layer's primes flattened in column order: col = (n-2)*numHeads + head.
std::vector<int64_t>
flattenEngramPrimes(const std::vector<std::vector<int64_t>> &layerPrimes);

/// Exclusive prefix sums of a layer's flat prime list (offsets[0] = 0).
std::vector<int64_t> engramOffsets(const std::vector<int64_t> &flatPrimes);

/// Rows of one layer's table: the sum of its primes.
int64_t engramNumEmbeddings(const std::vector<int64_t> &flatPrimes);

/// bound = max(1, (INT64_MAX // compressedVocabSize) // 2).
int64_t engramMultiplierBound(int64_t compressedVocabSize);

/// The `maxNgram` odd multipliers of one Engram layer.
std::vector<int64_t> engramHashMultipliers(int64_t layerId,
                                           int64_t compressedVocabSize,
                                           int64_t maxNgram);

/// Everything the n-gram hash needs for a model's Engram layers, in the
/// order of engram_layer_ids.
struct EngramLayout {
  std::vector<int64_t> layerIds;
  int64_t maxNgram = 0;
  int64_t numHeads = 0;
  int64_t compressedVocabSize = 0;
  /// [layer][maxNgram]
  std::vector<std::vector<int64_t>> multipliers;
  /// [layer][(maxNgram-1)*numHeads], column order n-gram-major then head.
  std::vector<std::vector<int64_t>> primes;
  /// [layer][(maxNgram-1)*numHeads], exclusive prefix sums of `primes`.
  std::vector<std::vector<int64_t>> offsets;
  /// [layer] = sum of that layer's primes.
  std::vector<int64_t> numEmbeddings;

  int64_t numLayers() const { return int64_t(layerIds.size()); }
  int64_t numColumns() const { return (maxNgram - 1) * numHeads; }

  static EngramLayout make(const std::vector<int64_t> &engramLayerIds,
                           int64_t engramVocabSize, int64_t maxNgram,
                           int64_t numHeads, int64_t compressedVocabSize);
};

} // namespace dsc::numerics

#endif // DSC_NUMERICS_ENGRAMLAYOUT_H
