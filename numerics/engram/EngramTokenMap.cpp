//===- EngramTokenMap.cpp - Engram compressed token map -------------------===//
#include "dsc/numerics/EngramTokenMap.h"

#include <nlohmann/json.hpp>
#include <unicode/normalizer2.h>
#include <unicode/uchar.h>
#include <unicode/unistr.h>
#include <unicode/ustring.h>
#include <unicode/utf16.h>

#include <array>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <unordered_map>

namespace dsc::numerics {
namespace {

void setError(std::string *error, std::string msg) {
  if (error)
    *error = std::move(msg);
}

void appendUtf8(std::string &out, char32_t c) {
  if (c < 0x80) {
    out += char(c);
  } else if (c < 0x800) {
    out += char(0xC0 | (c >> 6));
    out += char(0x80 | (c & 0x3F));
  } else if (c < 0x10000) {
    out += char(0xE0 | (c >> 12));
    out += char(0x80 | ((c >> 6) & 0x3F));
    out += char(0x80 | (c & 0x3F));
  } else {
    out += char(0xF0 | (c >> 18));
    out += char(0x80 | ((c >> 12) & 0x3F));
    out += char(0x80 | ((c >> 6) & 0x3F));
    out += char(0x80 | (c & 0x3F));
  }
}

// Decodes well-formed UTF-8 into code points; false if ill-formed.
bool decodeUtf8(std::string_view s, std::u32string *out) {
  size_t i = 0;
  const size_t n = s.size();
  while (i < n) {
    const uint8_t b0 = uint8_t(s[i]);
    char32_t c;
    size_t len;
    if (b0 < 0x80) {
      c = b0;
      len = 1;
    } else if (b0 >= 0xC2 && b0 <= 0xDF) {
      c = b0 & 0x1F;
      len = 2;
    } else if (b0 >= 0xE0 && b0 <= 0xEF) {
      c = b0 & 0x0F;
      len = 3;
    } else if (b0 >= 0xF0 && b0 <= 0xF4) {
      c = b0 & 0x07;
      len = 4;
    } else {
      return false;
    }
    if (i + len > n)
      return false;
    for (size_t k = 1; k < len; ++k) {
      const uint8_t b = uint8_t(s[i + k]);
      if ((b & 0xC0) != 0x80)
        return false;
      c = (c << 6) | (b & 0x3F);
    }
    // Overlongs, surrogates and values above U+10FFFF are ill-formed.
    if ((len == 3 && c < 0x800) || (len == 4 && c < 0x10000) ||
        (c >= 0xD800 && c <= 0xDFFF) || c > 0x10FFFF)
      return false;
    if (out)
      out->push_back(c);
    i += len;
  }
  return true;
}

bool isMark(UChar32 c) {
  const int8_t t = u_charType(c);
  return t == U_NON_SPACING_MARK || t == U_ENCLOSING_MARK ||
         t == U_COMBINING_SPACING_MARK;
}

// Full lowercase mapping of one code point, context-free (as Rust's
// char::to_lowercase): ICU's root-locale string lowercasing of the code point
// on its own.
void appendLower(std::u32string &out, UChar32 c) {
  UChar src[2];
  int32_t srcLen = 0;
  U16_APPEND_UNSAFE(src, srcLen, c);
  UChar dst[16];
  UErrorCode st = U_ZERO_ERROR;
  const int32_t n = u_strToLower(dst, 16, src, srcLen, "", &st);
  if (U_FAILURE(st)) { // cannot happen for one code point; keep it unchanged
    out.push_back(char32_t(c));
    return;
  }
  for (int32_t i = 0; i < n;) {
    UChar32 d;
    U16_NEXT(dst, i, n, d);
    out.push_back(char32_t(d));
  }
}

bool isAsciiSpaceClass(char32_t c) { // the regex class [ \t\r\n]
  return c == U' ' || c == U'\t' || c == U'\r' || c == U'\n';
}

constexpr char32_t kSentinel = 0xE000;

const std::array<char32_t, 256> &byteLevelTable() {
  static const std::array<char32_t, 256> table = [] {
    std::array<char32_t, 256> t{};
    char32_t next = 256;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= 0x21 && b <= 0x7E) ||
                             (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
      t[size_t(b)] = printable ? char32_t(b) : next++;
    }
    return t;
  }();
  return table;
}

const std::map<char32_t, uint8_t> &byteLevelInverse() {
  static const std::map<char32_t, uint8_t> inv = [] {
    std::map<char32_t, uint8_t> m;
    for (int b = 0; b < 256; ++b)
      m[byteLevelTable()[size_t(b)]] = uint8_t(b);
    return m;
  }();
  return inv;
}

std::string byteLevelDecode(const std::string &token) {
  std::u32string cps;
  if (!decodeUtf8(token, &cps))
    return token;
  const auto &inv = byteLevelInverse();
  std::string bytes;
  for (char32_t c : cps) {
    auto it = inv.find(c);
    if (it == inv.end())
      return token; // a char outside the alphabet: the token's own bytes
    bytes += char(it->second);
  }
  return bytes;
}

std::optional<std::string> readFile(const std::string &path, std::string *error) {
  // Only a regular file of bounded size (a FIFO or a device would block or
  // never end): checked before it is opened.
  constexpr std::uintmax_t kMaxBytes = 1ull << 30;
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    setError(error, path + (ec ? ": cannot open: " + ec.message()
                               : ": not a regular file (it must be a file, not a FIFO, a "
                                 "device or a directory)"));
    return std::nullopt;
  }
  if (const std::uintmax_t size = std::filesystem::file_size(path, ec); ec || size > kMaxBytes) {
    setError(error, path + (ec ? ": cannot read its size: " + ec.message()
                               : ": " + std::to_string(size) + " bytes, more than the " +
                                     std::to_string(kMaxBytes) + " accepted"));
    return std::nullopt;
  }
  std::ifstream f(path, std::ios::binary);
  if (!f) {
    setError(error, path + ": cannot open");
    return std::nullopt;
  }
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// Which decoder the tokenizer applies to a single token.
enum class DecoderKind { None, ByteLevel };

std::optional<DecoderKind> decoderKind(const nlohmann::json &dec, std::string *why) {
  if (dec.is_null())
    return DecoderKind::None;
  const std::string type = dec.value("type", "");
  if (type == "ByteLevel")
    return DecoderKind::ByteLevel;
  if (type == "Sequence" && dec.contains("decoders") && dec["decoders"].is_array()) {
    DecoderKind kind = DecoderKind::None;
    for (const auto &d : dec["decoders"]) {
      auto k = decoderKind(d, why);
      if (!k)
        return std::nullopt;
      if (*k == DecoderKind::ByteLevel) {
        if (kind == DecoderKind::ByteLevel) {
          *why = "Sequence decoder with two ByteLevel decoders";
          return std::nullopt;
        }
        kind = DecoderKind::ByteLevel;
      }
    }
    return kind;
  }
  *why = "unsupported decoder type '" + type + "' (only ByteLevel or none)";
  return std::nullopt;
}

} // namespace

bool isValidUtf8(std::string_view bytes) { return decodeUtf8(bytes, nullptr); }

std::string engramNormalizeText(std::string_view utf8) {
  UErrorCode st = U_ZERO_ERROR;
  const icu::Normalizer2 *nfkc = icu::Normalizer2::getNFKCInstance(st);
  const icu::Normalizer2 *nfd = icu::Normalizer2::getNFDInstance(st);
  if (U_FAILURE(st))
    return std::string(utf8);
  icu::UnicodeString s = icu::UnicodeString::fromUTF8(
      icu::StringPiece(utf8.data(), int32_t(utf8.size())));
  s = nfkc->normalize(s, st);
  s = nfd->normalize(s, st);
  if (U_FAILURE(st))
    return std::string(utf8);

  // StripAccents, then Lowercase, code point by code point.
  std::u32string t;
  for (int32_t i = 0; i < s.length();) {
    const UChar32 c = s.char32At(i);
    i += U16_LENGTH(c);
    if (isMark(c))
      continue;
    appendLower(t, c);
  }
  // Replace `[ \t\r\n]+` with one space.
  std::u32string u;
  for (size_t i = 0; i < t.size();) {
    if (isAsciiSpaceClass(t[i])) {
      while (i < t.size() && isAsciiSpaceClass(t[i]))
        ++i;
      u.push_back(U' ');
    } else {
      u.push_back(t[i++]);
    }
  }
  // `^ $` -> sentinel: the whole text is exactly one space (no newline is
  // left after the collapse, so line anchors equal text anchors).
  if (u == U" ")
    u = std::u32string(1, kSentinel);
  // Strip White_Space at both ends.
  size_t b = 0, e = u.size();
  while (b < e && u_isUWhiteSpace(UChar32(u[b])))
    ++b;
  while (e > b && u_isUWhiteSpace(UChar32(u[e - 1])))
    --e;
  std::string out;
  for (size_t i = b; i < e; ++i)
    appendUtf8(out, u[i] == kSentinel ? U' ' : u[i]);
  if (out.empty())
    return std::string(utf8);
  return out;
}

std::string engramTokenKey(const EngramTokenText &token) {
  static constexpr std::string_view kReplacement = "\xEF\xBF\xBD"; // U+FFFD
  if (!isValidUtf8(token.decodedBytes) ||
      token.decodedBytes.find(kReplacement) != std::string::npos)
    return token.rawToken;
  return engramNormalizeText(token.decodedBytes);
}

EngramTokenMap buildEngramTokenMap(const std::vector<EngramTokenText> &tokens) {
  EngramTokenMap map;
  std::unordered_map<std::string, int64_t> ids;
  map.lookup.reserve(tokens.size());
  for (const auto &tok : tokens) {
    auto [it, inserted] = ids.emplace(engramTokenKey(tok), int64_t(ids.size()));
    map.lookup.push_back(it->second);
  }
  map.compressedVocabSize = int64_t(ids.size());
  return map;
}

char32_t byteLevelCharForByte(uint8_t b) { return byteLevelTable()[b]; }

std::optional<std::vector<EngramTokenText>>
decodeTokenizerJson(const std::string &path, std::string *error) {
  auto text = readFile(path, error);
  if (!text)
    return std::nullopt;
  nlohmann::json j = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object() || !j.contains("model") ||
      !j["model"].is_object() || !j["model"].contains("vocab") ||
      !j["model"]["vocab"].is_object()) {
    setError(error, path + ": not a tokenizer.json with model.vocab");
    return std::nullopt;
  }
  std::string why;
  auto kind = decoderKind(j.value("decoder", nlohmann::json()), &why);
  if (!kind) {
    setError(error, path + ": " + why);
    return std::nullopt;
  }
  std::map<int64_t, std::string> modelTokens, addedTokens;
  std::map<std::string, int64_t> modelIds;
  for (const auto &[tok, id] : j["model"]["vocab"].items()) {
    if (!id.is_number_integer() || id.get<int64_t>() < 0) {
      setError(error, path + ": model.vocab entry '" + tok + "' has no valid id");
      return std::nullopt;
    }
    modelTokens[id.get<int64_t>()] = tok;
    modelIds[tok] = id.get<int64_t>();
  }
  size_t addedNotInModel = 0;
  if (j.contains("added_tokens") && j["added_tokens"].is_array()) {
    for (const auto &a : j["added_tokens"]) {
      if (!a.is_object() || !a.contains("id") || !a["id"].is_number_integer() ||
          !a.contains("content") || !a["content"].is_string()) {
        setError(error, path + ": malformed added_tokens entry");
        return std::nullopt;
      }
      const std::string content = a["content"].get<std::string>();
      addedTokens[a["id"].get<int64_t>()] = content;
      if (!modelIds.count(content))
        ++addedNotInModel;
    }
  }
  // len(tokenizer) = get_vocab_size(with_added_tokens=True).
  const size_t count = modelTokens.size() + addedNotInModel;
  std::vector<EngramTokenText> out(count);
  for (size_t id = 0; id < count; ++id) {
    std::string tok;
    bool present = true;
    if (auto a = addedTokens.find(int64_t(id)); a != addedTokens.end())
      tok = a->second;
    else if (auto m = modelTokens.find(int64_t(id)); m != modelTokens.end())
      tok = m->second;
    else
      present = false; // a hole: decode gives "", id_to_token None
    out[id].rawToken = tok;
    if (present)
      out[id].decodedBytes = *kind == DecoderKind::ByteLevel ? byteLevelDecode(tok) : tok;
  }
  return out;
}

std::optional<std::vector<EngramTokenText>>
readTokenVocabList(const std::string &path, std::string *error) {
  auto text = readFile(path, error);
  if (!text)
    return std::nullopt;
  nlohmann::json j = nlohmann::json::parse(*text, nullptr, false);
  if (j.is_discarded() || !j.is_array()) {
    setError(error, path + ": not a JSON list of token strings");
    return std::nullopt;
  }
  std::vector<EngramTokenText> out;
  out.reserve(j.size());
  for (size_t i = 0; i < j.size(); ++i) {
    if (!j[i].is_string()) {
      setError(error, path + ": entry " + std::to_string(i) + " is not a string");
      return std::nullopt;
    }
    const std::string s = j[i].get<std::string>();
    out.push_back({s, s});
  }
  return out;
}

std::optional<EngramTokenMap>
buildEngramTokenMapFromFile(const std::string &path, std::string *error) {
  auto text = readFile(path, error);
  if (!text)
    return std::nullopt;
  nlohmann::json j = nlohmann::json::parse(*text, nullptr, false);
  std::optional<std::vector<EngramTokenText>> tokens;
  if (!j.is_discarded() && j.is_array())
    tokens = readTokenVocabList(path, error);
  else
    tokens = decodeTokenizerJson(path, error);
  if (!tokens)
    return std::nullopt;
  return buildEngramTokenMap(*tokens);
}

std::string engramTokenMapToJson(const EngramTokenMap &map, EngramMapJsonStyle style) {
  const std::string size = std::to_string(map.compressedVocabSize);
  std::string s;
  if (style == EngramMapJsonStyle::Compact) {
    s = "{\"lookup\": [";
    for (size_t i = 0; i < map.lookup.size(); ++i) {
      if (i)
        s += ", ";
      s += std::to_string(map.lookup[i]);
    }
    return s + "], \"compressed_vocab_size\": " + size + "}";
  }
  s = "{\n \"lookup\": [";
  for (size_t i = 0; i < map.lookup.size(); ++i) {
    s += i ? ",\n  " : "\n  ";
    s += std::to_string(map.lookup[i]);
  }
  s += map.lookup.empty() ? "]" : "\n ]";
  return s + ",\n \"compressed_vocab_size\": " + size + "\n}\n";
}

bool writeEngramTokenMap(const std::string &path, const EngramTokenMap &map,
                         std::string *error, EngramMapJsonStyle style) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  const std::string s = engramTokenMapToJson(map, style);
  f.write(s.data(), std::streamsize(s.size()));
  if (!f) {
    setError(error, path + ": cannot write");
    return false;
  }
  return true;
}

std::optional<EngramTokenMap> parseEngramTokenMap(std::string_view json,
                                                  std::string *error) {
  nlohmann::json j = nlohmann::json::parse(json.begin(), json.end(), nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("lookup") ||
      !j["lookup"].is_array() || !j.contains("compressed_vocab_size") ||
      !j["compressed_vocab_size"].is_number_integer()) {
    setError(error, "engram token map: expected {\"lookup\": [...], "
                    "\"compressed_vocab_size\": N}");
    return std::nullopt;
  }
  EngramTokenMap map;
  map.compressedVocabSize = j["compressed_vocab_size"].get<int64_t>();
  map.lookup.reserve(j["lookup"].size());
  for (size_t i = 0; i < j["lookup"].size(); ++i) {
    const auto &v = j["lookup"][i];
    if (!v.is_number_integer() || v.get<int64_t>() < 0 ||
        v.get<int64_t>() >= map.compressedVocabSize) {
      setError(error, "engram token map: lookup[" + std::to_string(i) +
                          "] is not an id in [0, " +
                          std::to_string(map.compressedVocabSize) + ")");
      return std::nullopt;
    }
    map.lookup.push_back(v.get<int64_t>());
  }
  return map;
}

std::optional<EngramTokenMap> readEngramTokenMap(const std::string &path,
                                                 std::string *error) {
  auto text = readFile(path, error);
  if (!text)
    return std::nullopt;
  auto m = parseEngramTokenMap(*text, error);
  if (!m && error)
    *error = path + ": " + *error;
  return m;
}

std::string engramCompressedSizeError(int64_t built, int64_t configured) {
  if (built == configured)
    return "";
  return "engram token map has " + std::to_string(built) +
         " compressed ids but the config's engram_compressed_vocab_size is " +
         std::to_string(configured);
}

} // namespace dsc::numerics
