//===- EngramPrimesTest.cpp - Primes, offsets and table sizes -------------===//
//
// Sums against the configs' engram_num_embeddings (released config and both
// goldens), first/last primes against the models README, the primality test
// against trial division and known 64-bit pseudoprimes.
//===----------------------------------------------------------------------===//
#include "EngramTestUtil.h"

#include "dsc/numerics/EngramLayout.h"

#include <gtest/gtest.h>

#include <set>

using namespace dsc::numerics;
using dsc::test::sharedPath;
using dsc::test::engram::readJson;

namespace {

bool trialDivision(uint64_t n) {
  if (n < 2)
    return false;
  for (uint64_t d = 2; d * d <= n; ++d)
    if (n % d == 0)
      return false;
  return true;
}

void checkConfig(const std::string &configPath) {
  SCOPED_TRACE(configPath);
  nlohmann::json c = readJson(configPath);
  auto layers = c["engram_layer_ids"].get<std::vector<int64_t>>();
  auto want = c["engram_num_embeddings"].get<std::vector<int64_t>>();
  const int64_t maxNgram = c["engram_max_ngram_size"], heads = c["engram_n_heads"];
  EngramLayout L = EngramLayout::make(layers, c["engram_vocab_size"], maxNgram,
                                      heads, c["engram_compressed_vocab_size"]);
  EXPECT_EQ(L.numEmbeddings, want);
  ASSERT_EQ(L.primes.size(), layers.size());
  for (size_t l = 0; l < layers.size(); ++l) {
    ASSERT_EQ(int64_t(L.primes[l].size()), (maxNgram - 1) * heads);
    EXPECT_EQ(L.offsets[l][0], 0);
    for (size_t i = 1; i < L.offsets[l].size(); ++i)
      EXPECT_EQ(L.offsets[l][i], L.offsets[l][i - 1] + L.primes[l][i - 1]);
    EXPECT_EQ(L.offsets[l].back() + L.primes[l].back(), want[l]);
  }
}

} // namespace

TEST(EngramPrimes, IsPrimeSmallMatchesTrialDivision) {
  for (uint64_t n = 0; n < 200000; ++n)
    ASSERT_EQ(isPrime(n), trialDivision(n)) << n;
  for (uint64_t n = 16000000; n < 16002000; ++n)
    ASSERT_EQ(isPrime(n), trialDivision(n)) << n;
}

TEST(EngramPrimes, IsPrimeLarge) {
  EXPECT_TRUE(isPrime(2305843009213693951ULL));   // 2^61-1
  EXPECT_TRUE(isPrime(18446744073709551557ULL));  // largest prime below 2^64
  EXPECT_FALSE(isPrime(18446744073709551615ULL)); // 2^64-1
  EXPECT_FALSE(isPrime(3825123056546413051ULL));  // strong pseudoprime to 2..23
  EXPECT_FALSE(isPrime(341550071728321ULL));      // strong pseudoprime to 2..17
  EXPECT_FALSE(isPrime(4294967297ULL));           // F5 = 641 * 6700417
  EXPECT_FALSE(isPrime(561));                     // Carmichael
  EXPECT_FALSE(isPrime(4611686014132420609ULL));  // (2^31-1)^2
  EXPECT_EQ(nextPrime(16000000 - 1), 16000057u);
}

TEST(EngramPrimes, ReleasedConfig) {
  checkConfig(sharedPath("models/deepseek-v4.1-flash/inference_config.json"));
  auto p = drawEngramPrimes(16000000, 2, 4, 8);
  // models README: layer 1 primes 16000057…16000463, layer 14 16000477…16000889.
  EXPECT_EQ(p[0][0][0], 16000057);
  EXPECT_EQ(p[0][2][7], 16000463);
  EXPECT_EQ(p[1][0][0], 16000477);
  EXPECT_EQ(p[1][2][7], 16000889);
  EXPECT_EQ(engramNumEmbeddings(flattenEngramPrimes(p[0])), 384006168);
  EXPECT_EQ(engramNumEmbeddings(flattenEngramPrimes(p[1])), 384016682);
}

TEST(EngramPrimes, GoldenConfigs) {
  checkConfig(sharedPath("golden/tiny40/config.json")); // [660, 864]
  checkConfig(sharedPath("golden/tiny6/config.json"));  // [1854, 2194]
  // Hand-derived: vocab 101, n=2 heads take 101, 103; n=3 restarts at 100 and
  // skips them: 107, 109; n=4: 113, 127.
  auto p = drawEngramPrimes(101, 2, 4, 2);
  EXPECT_EQ(flattenEngramPrimes(p[0]), (std::vector<int64_t>{101, 103, 107, 109, 113, 127}));
  EXPECT_EQ(engramOffsets(flattenEngramPrimes(p[0])),
            (std::vector<int64_t>{0, 101, 204, 311, 420, 533}));
}

TEST(EngramPrimes, NeverReused) {
  auto p = drawEngramPrimes(1000, 5, 5, 7);
  std::set<int64_t> all;
  size_t count = 0;
  for (auto &layer : p)
    for (auto &row : layer)
      for (int64_t q : row) {
        EXPECT_TRUE(isPrime(uint64_t(q)));
        EXPECT_GT(q, 999);
        all.insert(q), ++count;
      }
  EXPECT_EQ(all.size(), count);
}
