//===- EngramLayout.cpp - Engram primes, offsets and hash multipliers -----===//
#include "dsc/numerics/EngramLayout.h"
#include "dsc/numerics/EngramNumpyRandom.h"

#include <limits>
#include <set>
#include <stdexcept>

namespace dsc::numerics {
namespace {

using u128 = unsigned __int128;

uint64_t mulMod(uint64_t a, uint64_t b, uint64_t m) {
  return uint64_t((u128(a) * b) % m);
}

uint64_t powMod(uint64_t b, uint64_t e, uint64_t m) {
  uint64_t r = 1 % m;
  b %= m;
  while (e) {
    if (e & 1)
      r = mulMod(r, b, m);
    b = mulMod(b, b, m);
    e >>= 1;
  }
  return r;
}

} // namespace

bool isPrime(uint64_t n) {
  // The first twelve primes as Miller–Rabin bases are a deterministic test
  // for every n < 3.3e24, so for all of uint64.
  static constexpr uint64_t kBases[] = {2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37};
  if (n < 2)
    return false;
  for (uint64_t p : kBases) {
    if (n % p == 0)
      return n == p;
  }
  uint64_t d = n - 1;
  unsigned s = 0;
  while ((d & 1) == 0) {
    d >>= 1;
    ++s;
  }
  for (uint64_t a : kBases) {
    uint64_t x = powMod(a, d, n);
    if (x == 1 || x == n - 1)
      continue;
    bool composite = true;
    for (unsigned r = 1; r < s; ++r) {
      x = mulMod(x, x, n);
      if (x == n - 1) {
        composite = false;
        break;
      }
    }
    if (composite)
      return false;
  }
  return true;
}

uint64_t nextPrime(uint64_t start) {
  for (uint64_t c = start + 1;; ++c) {
    if (c == 0)
      throw std::overflow_error("nextPrime: no prime above start in uint64");
    if (isPrime(c))
      return c;
  }
}

std::vector<std::vector<std::vector<int64_t>>>
drawEngramPrimes(int64_t engramVocabSize, int64_t numLayers, int64_t maxNgram,
                 int64_t numHeads) {
  if (engramVocabSize < 1 || numLayers < 0 || maxNgram < 1 || numHeads < 0)
    throw std::invalid_argument("drawEngramPrimes: bad sizes");
  std::set<int64_t> seen; // primes are never reused, across layers included
  std::vector<std::vector<std::vector<int64_t>>> out(static_cast<size_t>(numLayers));
  for (auto &layer : out) {
    for (int64_t n = 2; n <= maxNgram; ++n) {
      std::vector<int64_t> heads;
      // The search restarts from vocab-1 for each (layer, n-gram).
      uint64_t cur = uint64_t(engramVocabSize - 1);
      for (int64_t h = 0; h < numHeads; ++h) {
        uint64_t p = nextPrime(cur);
        while (seen.count(int64_t(p)))
          p = nextPrime(p);
        seen.insert(int64_t(p));
        heads.push_back(int64_t(p));
        cur = p;
      }
      layer.push_back(std::move(heads));
    }
  }
  return out;
}

std::vector<int64_t>
flattenEngramPrimes(const std::vector<std::vector<int64_t>> &layerPrimes) {
  std::vector<int64_t> flat;
  for (const auto &row : layerPrimes)
    flat.insert(flat.end(), row.begin(), row.end());
  return flat;
}

std::vector<int64_t> engramOffsets(const std::vector<int64_t> &flatPrimes) {
  std::vector<int64_t> off(flatPrimes.size());
  int64_t acc = 0;
  for (size_t i = 0; i < flatPrimes.size(); ++i) {
    off[i] = acc;
    acc += flatPrimes[i];
  }
  return off;
}

int64_t engramNumEmbeddings(const std::vector<int64_t> &flatPrimes) {
  int64_t acc = 0;
  for (int64_t p : flatPrimes)
    acc += p;
  return acc;
}

int64_t engramMultiplierBound(int64_t compressedVocabSize) {
  if (compressedVocabSize < 1)
    throw std::invalid_argument("engramMultiplierBound: compressed vocab < 1");
  const int64_t b = (std::numeric_limits<int64_t>::max() / compressedVocabSize) / 2;
  return b < 1 ? 1 : b;
}

std::vector<int64_t> engramHashMultipliers(int64_t layerId,
                                           int64_t compressedVocabSize,
                                           int64_t maxNgram) {
  if (layerId < 0 || maxNgram < 0)
    throw std::invalid_argument("engramHashMultipliers: negative layer id or size");
  const int64_t bound = engramMultiplierBound(compressedVocabSize);
  std::vector<int64_t> v = numpy_random::defaultRngIntegersInt64(
      uint64_t(10007) * uint64_t(layerId), 0, bound, size_t(maxNgram));
  for (int64_t &x : v)
    x = x * 2 + 1; // x < bound <= INT64_MAX/2: no overflow
  return v;
}

EngramLayout EngramLayout::make(const std::vector<int64_t> &engramLayerIds,
                                int64_t engramVocabSize, int64_t maxNgram,
                                int64_t numHeads, int64_t compressedVocabSize) {
  EngramLayout L;
  L.layerIds = engramLayerIds;
  L.maxNgram = maxNgram;
  L.numHeads = numHeads;
  L.compressedVocabSize = compressedVocabSize;
  auto primes = drawEngramPrimes(engramVocabSize, int64_t(engramLayerIds.size()),
                                 maxNgram, numHeads);
  for (size_t l = 0; l < engramLayerIds.size(); ++l) {
    L.multipliers.push_back(
        engramHashMultipliers(engramLayerIds[l], compressedVocabSize, maxNgram));
    L.primes.push_back(flattenEngramPrimes(primes[l]));
    L.offsets.push_back(engramOffsets(L.primes.back()));
    L.numEmbeddings.push_back(engramNumEmbeddings(L.primes.back()));
  }
  return L;
}

} // namespace dsc::numerics
