//===- EngramTokenMap.h - Engram compressed token map (host) --------------===//
//
// reference-spec §7.1 [engram: build_compressed_token_map]. For every token id
// 0..len(tokenizer)-1 the reference decodes the id alone
// (skip_special_tokens=False) and derives a key:
//   - if the decoded text contains U+FFFD (the bytes were not valid UTF-8, or
//     the token really is U+FFFD), the key is the raw token string
//     (id_to_token);
//   - else the key is the text through NFKC -> NFD -> StripAccents (drop
//     General_Category Mark) -> Lowercase (per code point, full mapping) ->
//     `[ \t\r\n]+` -> " " -> `^ $` -> U+E000 -> Strip (White_Space both ends)
//     -> U+E000 -> " "; an empty result falls back to the decoded text.
// Compressed ids are given to keys in first-seen order. Normalisation uses
// ICU. Host only; no exceptions cross this API (errors come back as text).
//===----------------------------------------------------------------------===//
#ifndef DSC_NUMERICS_ENGRAMTOKENMAP_H
#define DSC_NUMERICS_ENGRAMTOKENMAP_H

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dsc::numerics {

/// token id -> compressed id, and the number of compressed ids.
struct EngramTokenMap {
  std::vector<int64_t> lookup;
  int64_t compressedVocabSize = 0;

  bool operator==(const EngramTokenMap &) const = default;
};

/// One token as the reference's decode sees it.
struct EngramTokenText {
  std::string decodedBytes; ///< decode([id]) before lossy UTF-8 conversion
  std::string rawToken;     ///< id_to_token(id)
};

/// The normaliser chain on valid UTF-8 text (no U+FFFD fallback; the empty
/// result falls back to `utf8`).
std::string engramNormalizeText(std::string_view utf8);

/// True iff `bytes` is well-formed UTF-8 (no overlongs, surrogates or code
/// points above U+10FFFF), as Rust's String::from_utf8 decides.
bool isValidUtf8(std::string_view bytes);

/// The key of one token: raw token when the lossy decode would contain U+FFFD,
/// else engramNormalizeText(decodedBytes).
std::string engramTokenKey(const EngramTokenText &token);

/// First-seen compression of the keys of tokens 0..n-1.
EngramTokenMap buildEngramTokenMap(const std::vector<EngramTokenText> &tokens);

/// GPT-2 byte-level alphabet: the code point that stands for byte b.
char32_t byteLevelCharForByte(uint8_t b);

/// Decodes every id of a HF tokenizer.json (ids 0..len-1, len =
/// model vocab + added tokens not in it) as the Rust backend does for a single
/// id: the added token or model token string, then the decoder (ByteLevel:
/// chars -> bytes through the GPT-2 table, or the token's own UTF-8 bytes if a
/// char is outside it; none: the token itself). nullopt + *error on failure.
std::optional<std::vector<EngramTokenText>>
decodeTokenizerJson(const std::string &path, std::string *error = nullptr);

/// A plain JSON list of token strings (token id = index; decode(id) and
/// id_to_token(id) are both the string), e.g. the goldens' tokenizer_vocab.json.
std::optional<std::vector<EngramTokenText>>
readTokenVocabList(const std::string &path, std::string *error = nullptr);

/// Builds the map from either file kind (a JSON list or a tokenizer.json).
std::optional<EngramTokenMap>
buildEngramTokenMapFromFile(const std::string &path, std::string *error = nullptr);

/// Layouts of `{"lookup": [...], "compressed_vocab_size": N}` as Python's
/// json module writes them: Indented = json.dump(indent=1) plus a trailing
/// newline (the tiny goldens' files); Compact = json.dumps defaults, no
/// newline (golden/tokenizer-bytelevel's file).
enum class EngramMapJsonStyle { Indented, Compact };
std::string engramTokenMapToJson(const EngramTokenMap &map,
                                 EngramMapJsonStyle style = EngramMapJsonStyle::Indented);
bool writeEngramTokenMap(const std::string &path, const EngramTokenMap &map,
                         std::string *error = nullptr,
                         EngramMapJsonStyle style = EngramMapJsonStyle::Indented);
/// Reads that format; checks every id is in [0, compressed_vocab_size).
std::optional<EngramTokenMap> parseEngramTokenMap(std::string_view json,
                                                  std::string *error = nullptr);
std::optional<EngramTokenMap> readEngramTokenMap(const std::string &path,
                                                 std::string *error = nullptr);

/// "" when built == configured, else a message naming both numbers (the
/// reference asserts the size equals engram_compressed_vocab_size).
std::string engramCompressedSizeError(int64_t built, int64_t configured);

} // namespace dsc::numerics

#endif // DSC_NUMERICS_ENGRAMTOKENMAP_H
