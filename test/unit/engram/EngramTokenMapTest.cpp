//===- EngramTokenMapTest.cpp - Compressed token map ----------------------===//
//
// The goldens' engram_token_map.json (written by the official reference's
// build_compressed_token_map) reproduced byte for byte from the stub
// vocabularies and from a real byte-level BPE tokenizer.json.
//===----------------------------------------------------------------------===//
#include "EngramTestUtil.h"

#include "dsc/numerics/EngramTokenMap.h"

#include <gtest/gtest.h>

using namespace dsc::numerics;
using dsc::test::sharedPath;
using dsc::test::engram::readJson;
using dsc::test::engram::readText;

namespace {

void checkAgainstGolden(const std::string &source, const std::string &goldenMap,
                        int64_t configuredSize, EngramMapJsonStyle style) {
  SCOPED_TRACE(source);
  std::string err;
  auto built = buildEngramTokenMapFromFile(sharedPath(source), &err);
  ASSERT_TRUE(built) << err;
  auto golden = readEngramTokenMap(sharedPath(goldenMap), &err);
  ASSERT_TRUE(golden) << err;
  EXPECT_EQ(built->compressedVocabSize, golden->compressedVocabSize);
  ASSERT_EQ(built->lookup.size(), golden->lookup.size());
  for (size_t i = 0; i < built->lookup.size(); ++i)
    EXPECT_EQ(built->lookup[i], golden->lookup[i]) << "token id " << i;
  // The writer reproduces the reference's file byte for byte.
  EXPECT_EQ(engramTokenMapToJson(*built, style), readText(sharedPath(goldenMap)));
  EXPECT_EQ(engramCompressedSizeError(built->compressedVocabSize, configuredSize), "");
}

} // namespace

TEST(EngramTokenMap, GoldenTiny40) {
  int64_t n = readJson(sharedPath("golden/tiny40/config.json"))["engram_compressed_vocab_size"];
  checkAgainstGolden("golden/tiny40/tokenizer_vocab.json", "golden/tiny40/engram_token_map.json", n,
                     EngramMapJsonStyle::Indented);
}

TEST(EngramTokenMap, GoldenTiny6) {
  int64_t n = readJson(sharedPath("golden/tiny6/config.json"))["engram_compressed_vocab_size"];
  checkAgainstGolden("golden/tiny6/tokenizer_vocab.json", "golden/tiny6/engram_token_map.json", n,
                     EngramMapJsonStyle::Indented);
}

TEST(EngramTokenMap, GoldenByteLevelTokenizer) {
  checkAgainstGolden("golden/tokenizer-bytelevel/tokenizer.json",
                     "golden/tokenizer-bytelevel/engram_token_map.json", 535,
                     EngramMapJsonStyle::Compact);
  std::string err;
  auto toks = decodeTokenizerJson(sharedPath("golden/tokenizer-bytelevel/tokenizer.json"), &err);
  ASSERT_TRUE(toks) << err;
  ASSERT_EQ(toks->size(), 665u);
  size_t partial = 0;
  for (const auto &t : *toks)
    partial += !isValidUtf8(t.decodedBytes);
  EXPECT_EQ(partial, 237u); // golden README: 237 partial UTF-8 byte tokens
  EXPECT_EQ((*toks)[0].decodedBytes, "<pad>");
}

TEST(EngramTokenMap, NormaliserChain) {
  EXPECT_EQ(engramNormalizeText("CAFÉ"), "cafe");
  EXPECT_EQ(engramNormalizeText(" Café"), "cafe");
  EXPECT_EQ(engramNormalizeText("\xEF\xAC\x81le"), "file");          // ﬁ ligature
  EXPECT_EQ(engramNormalizeText("\xEF\xBC\xA6\xEF\xBC\xB5"), "fu");  // full-width ＦＵ
  EXPECT_EQ(engramNormalizeText("Straße"), "straße");                // ß stays
  EXPECT_EQ(engramNormalizeText("\xCE\xA3\xCE\x91\xCE\xA3"), "\xCF\x83\xCE\xB1\xCF\x83"); // ΣΑΣ: no final sigma
  EXPECT_EQ(engramNormalizeText("\xC4\xB0"), "i");                   // İ: NFD, mark stripped
  EXPECT_EQ(engramNormalizeText("\xE2\x84\xAA"), "k");               // Kelvin sign
  // Whitespace: single spaces survive via the sentinel, runs collapse.
  EXPECT_EQ(engramNormalizeText(" "), " ");
  EXPECT_EQ(engramNormalizeText("  "), " ");
  EXPECT_EQ(engramNormalizeText("\t"), " ");
  EXPECT_EQ(engramNormalizeText(" \n "), " ");
  EXPECT_EQ(engramNormalizeText("\r\n"), " ");
  EXPECT_EQ(engramNormalizeText("\xC2\xA0"), " ");  // NBSP -> NFKC space
  EXPECT_EQ(engramNormalizeText(" a  b "), "a b");
  EXPECT_EQ(engramNormalizeText("\xE3\x80\x80x"), "x"); // ideographic space stripped
  // Strip removes other White_Space too, but the regex class is ASCII only.
  EXPECT_EQ(engramNormalizeText("a\xE2\x80\xA8"), "a");   // U+2028 at the end
  EXPECT_EQ(engramNormalizeText("\xE2\x80\xA8"), "\xE2\x80\xA8"); // empty -> raw
  // A lone combining mark strips to nothing: the raw text is the key.
  EXPECT_EQ(engramNormalizeText("\xCC\x81"), "\xCC\x81");
  // HF StripAccents drops every General_Category Mark, spacing marks (Mc) too:
  // DEVANAGARI KA + VOWEL SIGN I (U+093F, Mc).
  EXPECT_EQ(engramNormalizeText("\xE0\xA4\x95\xE0\xA4\xBF"), "\xE0\xA4\x95");
  // U+E000 in the text itself also becomes a space (the last Replace).
  EXPECT_EQ(engramNormalizeText("a\xEE\x80\x80" "b"), "a b");
}

TEST(EngramTokenMap, ReplacementCharacterKeysOnRawToken) {
  // Invalid bytes (what a lossy decode turns into U+FFFD) and a real U+FFFD
  // both key on the raw token string.
  EXPECT_EQ(engramTokenKey({"\xC3", "Ã"}), "Ã");
  EXPECT_EQ(engramTokenKey({"X\xEF\xBF\xBD", "X\xEF\xBF\xBD"}), "X\xEF\xBF\xBD");
  EXPECT_EQ(engramTokenKey({"ABC", "raw"}), "abc");
  EXPECT_FALSE(isValidUtf8("\xED\xA0\x80"));     // surrogate
  EXPECT_FALSE(isValidUtf8("\xC0\xAF"));         // overlong
  EXPECT_FALSE(isValidUtf8("\xF4\x90\x80\x80")); // > U+10FFFF
  EXPECT_TRUE(isValidUtf8("\xF0\x9F\x98\x80"));
}

TEST(EngramTokenMap, FirstSeenOrder) {
  auto m = buildEngramTokenMap({{"b", "b"}, {"A", "A"}, {"B", "B"}, {"a", "a"}, {" ", " "}, {"  ", "  "}});
  EXPECT_EQ(m.lookup, (std::vector<int64_t>{0, 1, 0, 1, 2, 2}));
  EXPECT_EQ(m.compressedVocabSize, 3);
}

TEST(EngramTokenMap, ByteLevelAlphabet) {
  EXPECT_EQ(byteLevelCharForByte(' '), U'\u0120');
  EXPECT_EQ(byteLevelCharForByte('\n'), U'\u010A');
  EXPECT_EQ(byteLevelCharForByte('A'), U'A');
  EXPECT_EQ(byteLevelCharForByte(0xAD), U'\u0143');
  EXPECT_EQ(byteLevelCharForByte(0xFF), U'\u00FF');
}

TEST(EngramTokenMap, ReaderWriterAndSizeError) {
  EngramTokenMap m{{0, 1, 1, 0, 2}, 3};
  std::string err;
  for (auto style : {EngramMapJsonStyle::Indented, EngramMapJsonStyle::Compact}) {
    auto back = parseEngramTokenMap(engramTokenMapToJson(m, style), &err);
    ASSERT_TRUE(back) << err;
    EXPECT_EQ(*back, m);
  }
  EXPECT_EQ(engramTokenMapToJson({{}, 0}, EngramMapJsonStyle::Indented),
            "{\n \"lookup\": [],\n \"compressed_vocab_size\": 0\n}\n");
  EXPECT_EQ(engramTokenMapToJson({{}, 0}, EngramMapJsonStyle::Compact),
            "{\"lookup\": [], \"compressed_vocab_size\": 0}");
  EXPECT_FALSE(parseEngramTokenMap(R"({"lookup": [0, 3], "compressed_vocab_size": 3})", &err));
  EXPECT_NE(err.find("lookup[1]"), std::string::npos) << err;
  EXPECT_FALSE(parseEngramTokenMap(R"({"lookup": [0]})", &err));
  EXPECT_FALSE(parseEngramTokenMap("[", &err));
  EXPECT_EQ(engramCompressedSizeError(99092, 99092), "");
  std::string e = engramCompressedSizeError(362, 99092);
  EXPECT_NE(e.find("362"), std::string::npos);
  EXPECT_NE(e.find("99092"), std::string::npos);
  EXPECT_FALSE(buildEngramTokenMapFromFile("/nonexistent/tokenizer.json", &err));
  EXPECT_NE(err.find("/nonexistent/tokenizer.json"), std::string::npos);
}
