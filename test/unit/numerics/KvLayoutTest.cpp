//===- KvLayoutTest.cpp - Record formats and page layouts -----------------===//
//
// Byte offsets are checked against hand tables; a fuzz test writes tokens of
// several layers into one shared pool through shuffled page tables, with a
// distinct scale pattern per (layer, token, tile), and reads every token back
// (most of them beyond the first page) in both layouts and page sizes 64 and
// 256. Aliasing of scales between layers, pages or tokens shows up as a
// wrong scale byte, a byte written twice, or a value mismatch; conversions
// between layouts must round-trip byte for byte.
//===----------------------------------------------------------------------===//
#include "dsc/numerics/KvLayout.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <vector>

using namespace dsc::numerics;

TEST(NumericsKvRecordFormat, ReleasedSizes) {
  EXPECT_EQ(kMainKvRecord.entryBytes, 288);
  EXPECT_EQ(kMainKvRecord.dataBytes, 256);
  EXPECT_EQ(kMainKvRecord.scaleBytes, 32);
  EXPECT_EQ(kMainKvRecord.valuesPerTile, 16);
  EXPECT_EQ(kMainKvRecord.scaleType, KvScaleType::E4M3);
  EXPECT_EQ(kIndexKeyRecord.entryBytes, 68);
  EXPECT_EQ(kIndexKeyRecord.valuesPerTile, 32);
  EXPECT_EQ(kIndexKeyRecord.scaleType, KvScaleType::UE8M0);
  EXPECT_EQ(kSwaKvRecord.entryBytes, 528);
  EXPECT_EQ(kSwaKvRecord.dataBytes, 512);
  EXPECT_EQ(kSwaKvRecord.valueType, KvValueType::E4M3);
  // 890 B/token of global KV (reference-spec §3.5): three ratio-2 sources
  // (x 1/2) plus layer 20, for main KV + index keys.
  EXPECT_EQ(3 * (288 + 68) / 2 + (288 + 68), 890);
  // Tiny configs scale the value count.
  EXPECT_EQ(mainKvFormat(64).entryBytes, 32 + 4);
  EXPECT_EQ(indexKeyFormat(32).entryBytes, 16 + 1);
  EXPECT_EQ(swaKvFormat(128).entryBytes, 128 + 4);
}

TEST(NumericsKvRecordFormat, Validation) {
  KvRecordFormat f = kMainKvRecord;
  EXPECT_TRUE(f.isValid());
  f.entryBytes = 287;
  EXPECT_FALSE(f.isValid());
  EXPECT_FALSE(makeKvRecordFormat(100, 16, KvValueType::E2M1, KvScaleType::E4M3).isValid());
  EXPECT_FALSE(makeKvRecordFormat(64, 32, KvValueType::E4M3, KvScaleType::E4M3).isValid());
  std::vector<float> v(512, 1.0f);
  std::vector<uint8_t> d(600), s(64);
  EXPECT_FALSE(encodeKvRecord(f, v.data(), d.data(), s.data()));
  EXPECT_FALSE((KvPageLayout{kMainKvRecord, 0, KvPageOrder::PagePlanar}.isValid()));
}

TEST(NumericsKvPageLayout, OffsetTables) {
  // Main KV, 64 tokens per page: pages of 18432 B.
  const KvPageLayout inter{kMainKvRecord, 64, KvPageOrder::TokenInterleaved};
  const KvPageLayout planar{kMainKvRecord, 64, KvPageOrder::PagePlanar};
  EXPECT_EQ(inter.pageBytes(), 18432);
  EXPECT_EQ(planar.pageBytes(), 18432);
  EXPECT_EQ(inter.dataOffset(0), 0);
  EXPECT_EQ(inter.scaleOffset(0), 256);
  EXPECT_EQ(inter.dataOffset(1), 288);
  EXPECT_EQ(inter.scaleOffset(63), 63 * 288 + 256);
  EXPECT_EQ(planar.dataOffset(1), 256);
  EXPECT_EQ(planar.scaleOffset(0), 64 * 256);
  EXPECT_EQ(planar.scaleOffset(5), 64 * 256 + 5 * 32);
  // Index keys, TRT-LLM page footer [64 x 64 B data][64 x 4 B scales].
  const KvPageLayout footer{kIndexKeyRecord, 64, KvPageOrder::PagePlanar};
  EXPECT_EQ(footer.pageBytes(), 64 * 68);
  EXPECT_EQ(footer.scaleOffset(0), 4096);
  EXPECT_EQ(footer.scaleOffset(63), 4096 + 252);
  // Token 70 with page size 64 lives in logical page 1, slot 6.
  EXPECT_EQ(footer.tokenDataOffset(70), 64 * 68 + 6 * 64);
  EXPECT_EQ(footer.tokenScaleOffset(70), 64 * 68 + 4096 + 6 * 4);
  const int32_t table[2] = {5, 2};
  EXPECT_EQ(footer.tokenScaleOffset(70, table), 2 * 64 * 68 + 4096 + 6 * 4);
  // SWA, 256 tokens per page.
  const KvPageLayout swa{kSwaKvRecord, 256, KvPageOrder::PagePlanar};
  EXPECT_EQ(swa.pageBytes(), 256 * 528);
  EXPECT_EQ(swa.scaleOffset(1), 256 * 512 + 16);
}

namespace {

/// Values for (layer, token) whose tile t has amax 2^e(layer, token, t) so
/// that every tile's scale byte differs from its neighbours in layer, token
/// and tile.
std::vector<float> tokenValues(const KvRecordFormat &f, int layer, int64_t token,
                               std::mt19937 &rng) {
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> v(f.valuesPerEntry);
  for (int t = 0; t < f.tiles(); ++t) {
    const int e = static_cast<int>((layer * 7 + token * 3 + t * 5) % 23) - 11;
    for (int i = 0; i < f.valuesPerTile; ++i)
      v[t * f.valuesPerTile + i] = std::ldexp(u(rng), e);
    v[t * f.valuesPerTile] = std::ldexp(1.0f, e); // pin the amax
  }
  return v;
}

std::vector<float> qdqRow(const KvRecordFormat &f, const std::vector<float> &v) {
  std::vector<float> y(v.size());
  if (f.valueType == KvValueType::E4M3)
    qdqFp8Row(v.data(), f.valuesPerEntry, f.valuesPerTile, y.data());
  else if (f.scaleType == KvScaleType::UE8M0)
    qdqFp4E8M0Row(v.data(), f.valuesPerEntry, f.valuesPerTile, y.data());
  else
    qdqFp4E4M3Row(v.data(), f.valuesPerEntry, f.valuesPerTile, y.data());
  return y;
}

struct Pool {
  KvPageLayout layout;
  int layers = 0;
  int64_t pagesPerLayer = 0;
  std::vector<std::vector<int32_t>> pageTables; // per layer, into the shared pool
  std::vector<uint8_t> bytes;
  int64_t physicalPages() const { return layers * pagesPerLayer; }
};

/// A shared pool: the pages of all layers interleaved in a shuffled order.
Pool makePool(const KvPageLayout &layout, int layers, int64_t tokens, uint32_t seed) {
  Pool p;
  p.layout = layout;
  p.layers = layers;
  p.pagesPerLayer = kvPagesFor(layout, tokens);
  std::vector<int32_t> phys(static_cast<size_t>(p.physicalPages()));
  std::iota(phys.begin(), phys.end(), 0);
  std::shuffle(phys.begin(), phys.end(), std::mt19937(seed));
  for (int l = 0; l < layers; ++l)
    p.pageTables.emplace_back(phys.begin() + l * p.pagesPerLayer,
                              phys.begin() + (l + 1) * p.pagesPerLayer);
  p.bytes.assign(static_cast<size_t>(p.physicalPages() * layout.pageBytes()), 0xa5);
  return p;
}

void runFuzz(const KvRecordFormat &format, int32_t pageSize, KvPageOrder order) {
  const int layers = 3;
  const int64_t tokens = 2 * pageSize + pageSize / 2 + 3; // 3 pages, last partial
  const KvPageLayout layout{format, pageSize, order};
  ASSERT_TRUE(layout.isValid());
  Pool pool = makePool(layout, layers, tokens, 99 + pageSize);

  // Write, counting how often every byte is written.
  std::vector<uint8_t> writes(pool.bytes.size(), 0);
  std::vector<std::vector<std::vector<float>>> expected(layers);
  std::vector<std::vector<std::vector<uint8_t>>> expectedScales(layers);
  std::mt19937 rng(7);
  std::vector<uint8_t> data(format.dataBytes), scales(format.scaleBytes);
  for (int l = 0; l < layers; ++l) {
    for (int64_t t = 0; t < tokens; ++t) {
      const std::vector<float> v = tokenValues(format, l, t, rng);
      ASSERT_TRUE(encodeKvRecord(format, v.data(), data.data(), scales.data()));
      const int64_t d = layout.tokenDataOffset(t, pool.pageTables[l].data());
      const int64_t s = layout.tokenScaleOffset(t, pool.pageTables[l].data());
      for (int i = 0; i < format.dataBytes; ++i) {
        pool.bytes[d + i] = data[i];
        ++writes[d + i];
      }
      for (int i = 0; i < format.scaleBytes; ++i) {
        pool.bytes[s + i] = scales[i];
        ++writes[s + i];
      }
      expected[l].push_back(qdqRow(format, v));
      expectedScales[l].push_back(scales);
    }
  }
  // No byte written twice; the written bytes are exactly the tokens' bytes.
  int64_t written = 0;
  for (uint8_t w : writes) {
    ASSERT_LE(w, 1);
    written += w;
  }
  EXPECT_EQ(written, layers * tokens * format.entryBytes);

  // Distinct scale patterns: neighbouring tiles, tokens and layers differ.
  EXPECT_NE(expectedScales[0][pageSize][0], expectedScales[1][pageSize][0]);
  EXPECT_NE(expectedScales[0][pageSize][0], expectedScales[0][pageSize + 1][0]);
  if (format.tiles() > 1) {
    EXPECT_NE(expectedScales[0][pageSize][0], expectedScales[0][pageSize][1]);
  }

  auto readBack = [&](const Pool &p, const char *what) {
    std::vector<float> out(format.valuesPerEntry);
    for (int l = 0; l < layers; ++l) {
      for (int64_t t = 0; t < tokens; ++t) {
        const uint8_t *d = p.bytes.data() + p.layout.tokenDataOffset(t, p.pageTables[l].data());
        const uint8_t *s = p.bytes.data() + p.layout.tokenScaleOffset(t, p.pageTables[l].data());
        ASSERT_TRUE(std::equal(s, s + format.scaleBytes, expectedScales[l][t].begin()))
            << what << ": scales of layer " << l << " token " << t;
        ASSERT_TRUE(decodeKvRecord(format, d, s, out.data()));
        for (int i = 0; i < format.valuesPerEntry; ++i)
          ASSERT_EQ(floatBits(out[i]), floatBits(expected[l][t][i]))
              << what << ": layer " << l << " token " << t << " value " << i;
      }
    }
  };
  readBack(pool, "original");

  // Convert each layer to the other order and the other page size, read back,
  // then convert back and compare the bytes of every token.
  const KvPageLayout other{format, pageSize == 64 ? 256 : 64,
                           order == KvPageOrder::PagePlanar ? KvPageOrder::TokenInterleaved
                                                            : KvPageOrder::PagePlanar};
  Pool converted = makePool(other, layers, tokens, 1234);
  for (int l = 0; l < layers; ++l)
    ASSERT_EQ(convertKvPages(layout, pool.bytes.data(), pool.pageTables[l].data(), other,
                             converted.bytes.data(), converted.pageTables[l].data(), tokens),
              "");
  readBack(converted, "converted");

  Pool back = makePool(layout, layers, tokens, 99 + pageSize); // same tables as `pool`
  for (int l = 0; l < layers; ++l)
    ASSERT_EQ(convertKvPages(other, converted.bytes.data(), converted.pageTables[l].data(),
                             layout, back.bytes.data(), back.pageTables[l].data(), tokens),
              "");
  for (size_t i = 0; i < pool.bytes.size(); ++i)
    if (writes[i]) {
      ASSERT_EQ(back.bytes[i], pool.bytes[i]) << "round trip, byte " << i;
    }

  // Reading planar pages with the wrong page size is detected beyond the
  // first page (the fuzz would catch a layout that ignores tokensPerPage).
  // Interleaved pages stored contiguously are page-size agnostic (token t at
  // t*entryBytes), so there the wrong size must read back correctly. Layer 0
  // is first copied to contiguous pages so the wrong layout needs no table.
  std::vector<uint8_t> contiguous(static_cast<size_t>(pool.pagesPerLayer * layout.pageBytes()));
  ASSERT_EQ(convertKvPages(layout, pool.bytes.data(), pool.pageTables[0].data(), layout,
                           contiguous.data(), nullptr, tokens),
            "");
  const KvPageLayout wrong{format, pageSize == 64 ? 256 : 64, order};
  int64_t bad = 0;
  std::vector<float> out(format.valuesPerEntry);
  for (int64_t t = pageSize; t < std::min<int64_t>(tokens, 64 + pageSize); ++t) {
    const int64_t d = wrong.tokenDataOffset(t);
    const int64_t s = wrong.tokenScaleOffset(t);
    if (d + format.dataBytes > static_cast<int64_t>(contiguous.size()) ||
        s + format.scaleBytes > static_cast<int64_t>(contiguous.size())) {
      ++bad;
      continue;
    }
    decodeKvRecord(format, contiguous.data() + d, contiguous.data() + s, out.data());
    bad += !std::equal(out.begin(), out.end(), expected[0][t].begin(),
                       [](float a, float b) { return floatBits(a) == floatBits(b); });
  }
  if (order == KvPageOrder::PagePlanar) {
    EXPECT_GT(bad, 0);
  } else {
    EXPECT_EQ(bad, 0);
  }
}

} // namespace

class NumericsKvLayoutFuzz
    : public ::testing::TestWithParam<std::tuple<int /*format*/, int32_t, KvPageOrder>> {};

TEST_P(NumericsKvLayoutFuzz, NoAliasingAndRoundTrip) {
  const KvRecordFormat formats[] = {kMainKvRecord, kIndexKeyRecord, kSwaKvRecord,
                                    mainKvFormat(64), indexKeyFormat(32), swaKvFormat(128)};
  const auto [fi, pageSize, order] = GetParam();
  runFuzz(formats[fi], pageSize, order);
}

INSTANTIATE_TEST_SUITE_P(
    AllFormats, NumericsKvLayoutFuzz,
    ::testing::Combine(::testing::Range(0, 6), ::testing::Values(64, 256),
                       ::testing::Values(KvPageOrder::TokenInterleaved,
                                         KvPageOrder::PagePlanar)));

TEST(NumericsKvPageLayout, ConvertRejectsMismatchedFormats) {
  const KvPageLayout a{kMainKvRecord, 64, KvPageOrder::PagePlanar};
  const KvPageLayout b{kIndexKeyRecord, 64, KvPageOrder::PagePlanar};
  std::vector<uint8_t> x(a.pageBytes()), y(b.pageBytes());
  const std::string err = convertKvPages(a, x.data(), nullptr, b, y.data(), nullptr, 64);
  EXPECT_NE(err.find("record formats differ"), std::string::npos) << err;
  EXPECT_EQ(describe(a), "E2M1/E4M3x16 288 B (256+32) x 64 tokens, planar");
}
