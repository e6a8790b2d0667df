//===- EngramHashTest.cpp - N-gram hashing against the goldens ------------===//
//
// The goldens' engram_hash_ids (official reference, prefill then every decode
// step) reproduced exactly from input_ids with state carried across calls;
// masked (DEAD) positions against a hand-worked example and a plain
// transcription of reference-spec §7.4; chunked and rewound forwards.
//===----------------------------------------------------------------------===//
#include "EngramTestUtil.h"

#include "dsc/numerics/EngramHash.h"
#include "dsc/numerics/EngramHasher.h"
#include "dsc/numerics/EngramTokenMap.h"
#include "dsc/runtime/Safetensors.h"

#include <gtest/gtest.h>

#include <random>

using namespace dsc::numerics;
using dsc::runtime::DType;
using dsc::runtime::SafetensorsFile;
using dsc::test::sharedPath;
using dsc::test::engram::readJson;

namespace {

EngramHasher hasherForCase(const std::string &caseName) {
  nlohmann::json c = readJson(sharedPath("golden/" + caseName + "/config.json"));
  EngramLayout layout = EngramLayout::make(
      c["engram_layer_ids"].get<std::vector<int64_t>>(), c["engram_vocab_size"],
      c["engram_max_ngram_size"], c["engram_n_heads"], c["engram_compressed_vocab_size"]);
  EXPECT_EQ(layout.numEmbeddings, c["engram_num_embeddings"].get<std::vector<int64_t>>());
  std::string err;
  auto map = readEngramTokenMap(sharedPath("golden/" + caseName + "/engram_token_map.json"), &err);
  EXPECT_TRUE(map) << err;
  return EngramHasher(std::move(layout), map ? map->lookup : std::vector<int64_t>(1, 0),
                      c["engram_pad_id"]);
}

void checkRun(const std::string &caseName, const std::string &file) {
  SCOPED_TRACE(caseName + "/" + file);
  auto st = SafetensorsFile::open(sharedPath("golden/" + caseName + "/" + file));
  ASSERT_TRUE(st) << st.status().message();
  nlohmann::json meta = nlohmann::json::parse(st->metadata().at("case.json"));
  const int64_t P = meta["prompt_len"], D = meta["decode_steps"];

  const auto *ids = st->find("input_ids");
  ASSERT_NE(ids, nullptr);
  ASSERT_EQ(ids->dtype, DType::I32);
  ASSERT_EQ(ids->numElements(), P + D);
  auto idSpan = ids->as<int32_t>();

  EngramHasher hasher = hasherForCase(caseName);
  const int64_t L = hasher.numLayers(), C = hasher.numColumns();

  auto expect = [&](const std::string &name, const std::vector<int64_t> &got, int64_t S) {
    const auto *t = st->find(name);
    ASSERT_NE(t, nullptr) << name;
    ASSERT_EQ(t->dtype, DType::I64) << name;
    ASSERT_EQ(t->shape, (std::vector<int64_t>{S, L, C})) << name;
    auto want = t->as<int64_t>();
    ASSERT_EQ(got.size(), want.size()) << name;
    for (size_t i = 0; i < got.size(); ++i)
      ASSERT_EQ(got[i], want[i]) << name << " flat index " << i << " (position "
                                 << int64_t(i) / (L * C) << ")";
  };
  expect("prefill.engram_hash_ids", hasher.prefill(idSpan.subspan(0, size_t(P))), P);
  for (int64_t i = 0; i < D; ++i) {
    ASSERT_EQ(hasher.position(), P + i);
    expect("decode" + std::to_string(i) + ".engram_hash_ids",
           hasher.decode(idSpan[size_t(P + i)]), 1);
  }
}

// reference-spec §7.4 transcribed literally over a full cache.
std::vector<int64_t> naiveHash(const EngramLayout &L, const std::vector<int64_t> &lookup,
                               int64_t pad, const std::vector<int64_t> &ids,
                               const std::vector<uint8_t> &mask) {
  std::vector<int64_t> cache(ids.size());
  for (size_t p = 0; p < ids.size(); ++p)
    cache[p] = mask[p] ? lookup[size_t(ids[p])] : -1;
  std::vector<int64_t> out;
  for (size_t p = 0; p < ids.size(); ++p)
    for (int64_t l = 0; l < L.numLayers(); ++l) {
      std::vector<int64_t> prod;
      bool blocked = false;
      for (int64_t k = 0; k < L.maxNgram; ++k) {
        int64_t src = cache[size_t(std::max<int64_t>(int64_t(p) - k, 0))];
        blocked = blocked || int64_t(p) < k || src == -1;
        prod.push_back((blocked ? pad : src) * L.multipliers[size_t(l)][size_t(k)]);
      }
      int64_t r = prod[0];
      for (int64_t n = 2; n <= L.maxNgram; ++n) {
        r ^= prod[size_t(n - 1)];
        for (int64_t h = 0; h < L.numHeads; ++h) {
          size_t col = size_t((n - 2) * L.numHeads + h);
          out.push_back(r % L.primes[size_t(l)][col] + L.offsets[size_t(l)][col]);
        }
      }
    }
  return out;
}

} // namespace

TEST(EngramHash, GoldenTiny40) {
  checkRun("tiny40", "expected.safetensors");
  checkRun("tiny40", "expected_short.safetensors");
}

TEST(EngramHash, GoldenTiny6) {
  checkRun("tiny6", "expected.safetensors");
  checkRun("tiny6", "expected_short.safetensors");
}

TEST(EngramHash, HandWorkedDeadBlocking) {
  // max n-gram 3, one head, mult {3,5,7}, primes {11,13}, pad 2; compressed
  // ids 4, DEAD, 6, 1 (worked by hand from §7.4).
  EngramLayout L;
  L.layerIds = {0};
  L.maxNgram = 3;
  L.numHeads = 1;
  L.compressedVocabSize = 10;
  L.multipliers = {{3, 5, 7}};
  L.primes = {{11, 13}};
  L.offsets = {{0, 11}};
  L.numEmbeddings = {24};
  std::vector<int64_t> identity(10);
  for (int i = 0; i < 10; ++i)
    identity[size_t(i)] = i;
  EngramHasher h(L, identity, 2);
  std::vector<int64_t> ids = {4, 9, 6, 1};
  std::vector<uint8_t> mask = {1, 0, 1, 1};
  EXPECT_EQ(h.prefill(std::span<const int64_t>(ids), mask),
            (std::vector<int64_t>{6, 19, 1, 13, 2, 20, 7, 17}));
  EXPECT_EQ(h.cache(), (std::vector<int64_t>{4, kEngramDead, 6, 1}));
  // The window form of the device function agrees.
  int64_t window[3] = {1, 6, kEngramDead}, out[2];
  engramHashPosition(window, 3, 2, L.multipliers[0].data(), 3, L.primes[0].data(),
                     L.offsets[0].data(), 1, out);
  EXPECT_EQ(out[0], 7);
  EXPECT_EQ(out[1], 17);
}

TEST(EngramHash, MasksChunksAndRewindMatchSpecTranscription) {
  EngramLayout L = EngramLayout::make({1, 14}, 16000000, 4, 8, 99092);
  std::mt19937_64 rng(7);
  std::vector<int64_t> lookup(129280);
  for (auto &v : lookup)
    v = int64_t(rng() % 99092);
  const int64_t padToken = 2;
  EngramHasher h(L, lookup, padToken);
  for (int trial = 0; trial < 20; ++trial) {
    const size_t n = 1 + rng() % 300;
    std::vector<int64_t> ids(n);
    std::vector<uint8_t> mask(n);
    for (size_t i = 0; i < n; ++i) {
      ids[i] = int64_t(rng() % lookup.size());
      mask[i] = (rng() % 5) != 0; // ~20% masked, runs included
    }
    auto want = naiveHash(L, lookup, lookup[padToken], ids, mask);
    EXPECT_EQ(h.prefill(std::span<const int64_t>(ids), mask), want);
    // Random chunks, then one-token decodes, carrying state.
    h.reset();
    std::vector<int64_t> got;
    size_t pos = 0;
    while (pos < n) {
      size_t len = pos < n / 2 ? 1 + rng() % 17 : 1;
      len = std::min(len, n - pos);
      std::vector<int64_t> part;
      if (len == 1)
        part = h.decode(ids[pos], mask[pos] != 0);
      else
        part = h.forward(std::span<const int64_t>(ids).subspan(pos, len), int64_t(pos),
                         std::span<const uint8_t>(mask).subspan(pos, len));
      got.insert(got.end(), part.begin(), part.end());
      pos += len;
    }
    EXPECT_EQ(got, want);
    // Rewind to a random start and redo the tail.
    const size_t start = rng() % n;
    auto tail = h.forward(std::span<const int64_t>(ids).subspan(start), int64_t(start),
                          std::span<const uint8_t>(mask).subspan(start));
    const size_t row = size_t(L.numLayers() * L.numColumns());
    EXPECT_EQ(tail, std::vector<int64_t>(want.begin() + long(start * row), want.end()));
  }
}

TEST(EngramHash, RejectsBadInput) {
  EngramLayout L = EngramLayout::make({1}, 101, 3, 2, 10);
  std::vector<int64_t> lookup = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
  EXPECT_THROW(EngramHasher(L, lookup, 10), std::invalid_argument);
  EngramHasher h(L, lookup, 2);
  std::vector<int64_t> bad = {1, 10};
  EXPECT_THROW(h.prefill(std::span<const int64_t>(bad)), std::invalid_argument);
  EXPECT_EQ(h.position(), 0);
  std::vector<int64_t> ok = {1, 2};
  EXPECT_THROW(h.forward(std::span<const int64_t>(ok), 1), std::invalid_argument);
  std::vector<uint8_t> shortMask = {1};
  EXPECT_THROW(h.forward(std::span<const int64_t>(ok), 0, shortMask), std::invalid_argument);
}
