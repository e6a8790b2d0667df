//===- EngramLayout.h - Engram primes, offsets and hash multipliers -------===//
//
// Host-side (not device) pieces of the Engram layout, computed exactly as the
// reference's inference/engram.py does (reference-spec §7.2–7.3):
//   - primes: for each Engram layer in order, for each n-gram size 2..maxNgram,
//     for each head, the next prime above the previous one, the search start
//     resetting to vocabSize-1 for each (layer, n-gram) while no prime is ever
//     reused (across layers too);
//   - hash multipliers: numpy `default_rng(10007*layer_id).integers(0, bound,
//     size=maxNgram, dtype=int64) * 2 + 1` with
//     bound = max(1, (INT64_MAX // compressedVocab) // 2), reproduced bit for
//     bit without Python (SeedSequence + PCG64 + numpy's bounded integers).
//===----------------------------------------------------------------------===//
#ifndef DSC_NUMERICS_ENGRAMLAYOUT_H
#define DSC_NUMERICS_ENGRAMLAYOUT_H

#include <cstdint>
#include <vector>

namespace dsc::numerics {

/// Deterministic primality test valid for every 64-bit integer.
bool isPrime(uint64_t n);

/// primes[layer][n-2][head] for `numLayers` Engram layers.
std::vector<std::vector<std::vector<int64_t>>>
drawEngramPrimes(int64_t engramVocabSize, int64_t numLayers,
                 int64_t maxNgram, int64_t numHeads);

/// The `maxNgram` odd multipliers of one Engram layer.
std::vector<int64_t> engramHashMultipliers(int64_t layerId,
                                           int64_t compressedVocabSize,
                                           int64_t maxNgram);

} // namespace dsc::numerics

#endif // DSC_NUMERICS_ENGRAMLAYOUT_H
