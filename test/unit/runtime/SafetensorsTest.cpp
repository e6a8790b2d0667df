//===- SafetensorsTest.cpp - The safetensors reader -----------------------===//
//
// Golden files: names, shapes, dtypes and first bytes read independently
// (python3 `json` on the header) are checked against the reader. Crafted bad
// files: each rejection names the file and the tensor and says what is wrong.
//===----------------------------------------------------------------------===//
#include "dsc/runtime/Safetensors.h"
#include "test/unit/support/SharedDir.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <unistd.h>

using namespace dsc::runtime;
using ::testing::HasSubstr;

namespace {

std::string hexPrefix(const TensorView &t, size_t n) {
  static const char *digits = "0123456789abcdef";
  std::string s;
  for (size_t i = 0; i < n && i < t.bytes.size(); ++i) {
    unsigned v = std::to_integer<unsigned>(t.bytes[i]);
    s += digits[v >> 4];
    s += digits[v & 15];
  }
  return s;
}

/// Writes <8-byte LE length><header><data> to a fresh temp file.
class TempFile {
public:
  TempFile(const std::string &tag, const std::string &header,
           size_t dataBytes, std::optional<uint64_t> lengthField = {}) {
    path_ = (std::filesystem::temp_directory_path() /
             ("dsc_st_" + std::to_string(::getpid()) + "_" + tag +
              ".safetensors"))
                .string();
    std::ofstream out(path_, std::ios::binary);
    uint64_t n = lengthField.value_or(header.size());
    for (int i = 0; i < 8; ++i)
      out.put(static_cast<char>((n >> (8 * i)) & 0xff));
    out << header;
    for (size_t i = 0; i < dataBytes; ++i)
      out.put(static_cast<char>(i & 0xff));
  }
  /// Raw bytes, for files shorter than the length field.
  TempFile(const std::string &tag, const std::string &raw) {
    path_ = (std::filesystem::temp_directory_path() /
             ("dsc_st_" + std::to_string(::getpid()) + "_" + tag +
              ".safetensors"))
                .string();
    std::ofstream out(path_, std::ios::binary);
    out << raw;
  }
  ~TempFile() { std::filesystem::remove(path_); }
  const std::string &path() const { return path_; }

private:
  std::string path_;
};

/// Opens and expects failure; returns the message.
std::string openError(const std::string &path, StatusCode code) {
  auto file = SafetensorsFile::open(path);
  EXPECT_FALSE(file.hasValue()) << path << " unexpectedly opened";
  if (file.hasValue())
    return {};
  EXPECT_EQ(file.status().code(), code) << file.status().message();
  EXPECT_THAT(file.status().message(), HasSubstr(path));
  return file.status().message();
}

} // namespace

TEST(Safetensors, DTypeTable) {
  EXPECT_EQ(dtypeSize(DType::BF16), 2u);
  EXPECT_EQ(dtypeSize(DType::F8_E8M0), 1u);
  EXPECT_EQ(dtypeSize(DType::I64), 8u);
  EXPECT_EQ(parseDType("F8_E4M3"), DType::F8_E4M3);
  EXPECT_EQ(parseDType("BOOL"), DType::Bool);
  EXPECT_FALSE(parseDType("F4").has_value());
  EXPECT_STREQ(dtypeName(DType::I8), "I8");
}

// Values below were read with python3 `json` + `struct` from the header.
TEST(Safetensors, GoldenTiny6Model) {
  auto file = SafetensorsFile::open(dsc::test::sharedPath("golden/tiny6/model.safetensors"));
  ASSERT_TRUE(file.hasValue()) << file.status().message();
  EXPECT_EQ(file->tensors().size(), 572u);
  EXPECT_EQ(file->fileSize(), 8u + 77960u + 11399528u);

  const TensorView *embed = file->find("embed.weight");
  ASSERT_NE(embed, nullptr);
  EXPECT_EQ(embed->dtype, DType::BF16);
  EXPECT_EQ(embed->shape, (std::vector<int64_t>{1024, 256}));
  EXPECT_EQ(embed->dataBegin, 1378216u);
  EXPECT_EQ(embed->dataEnd, 1902504u);
  EXPECT_EQ(hexPrefix(*embed, 8), "2fbf393d233e4b3f");
  EXPECT_EQ(embed->as<uint16_t>().size(), 1024u * 256u);

  const TensorView *w1 = file->find("layers.0.ffn.experts.0.w1.weight");
  ASSERT_NE(w1, nullptr);
  EXPECT_EQ(w1->dtype, DType::I8);
  EXPECT_EQ(w1->shape, (std::vector<int64_t>{128, 128}));
  EXPECT_EQ(hexPrefix(*w1, 8), "62679c9005b6b4f0");

  const TensorView *w1s = file->find("layers.0.ffn.experts.0.w1.scale");
  ASSERT_NE(w1s, nullptr);
  EXPECT_EQ(w1s->dtype, DType::F8_E8M0);
  EXPECT_EQ(w1s->shape, (std::vector<int64_t>{128, 8}));
  EXPECT_EQ(hexPrefix(*w1s, 8), "7a7a7a7a7a7a7a7a");

  const TensorView *wq = file->find("layers.0.attn.wq_a.weight");
  ASSERT_NE(wq, nullptr);
  EXPECT_EQ(wq->dtype, DType::F8_E4M3);
  EXPECT_EQ(wq->shape, (std::vector<int64_t>{128, 256}));
  EXPECT_EQ(hexPrefix(*wq, 8), "62fb6c6d627662f1");

  const TensorView *sink = file->find("layers.0.attn.attn_sink");
  ASSERT_NE(sink, nullptr);
  EXPECT_EQ(sink->dtype, DType::F32);
  EXPECT_EQ(sink->numElements(), 8);

  EXPECT_EQ(file->find("no.such.tensor"), nullptr);
  EXPECT_EQ(file->metadata().size(), 5u);
  ASSERT_TRUE(file->metadata().count("config.json"));
  EXPECT_THAT(file->metadata().at("case.json"), HasSubstr("tiny6"));

  // tensors() is in byte order.
  for (size_t i = 1; i < file->tensors().size(); ++i)
    EXPECT_LE(file->tensors()[i - 1].dataBegin, file->tensors()[i].dataBegin);
}

TEST(Safetensors, GoldenTiny6ExpectedZeroSize) {
  auto file = SafetensorsFile::open(dsc::test::sharedPath("golden/tiny6/expected.safetensors"));
  ASSERT_TRUE(file.hasValue()) << file.status().message();
  EXPECT_EQ(file->tensors().size(), 225u);

  const TensorView *ids = file->find("input_ids");
  ASSERT_NE(ids, nullptr);
  EXPECT_EQ(ids->dtype, DType::I32);
  EXPECT_EQ(ids->shape, (std::vector<int64_t>{155}));
  EXPECT_EQ(ids->as<int32_t>()[0], 0x2ff);
  EXPECT_EQ(ids->as<int32_t>()[1], 0x325);

  // P = 150 is even, so the ratio-2 compressor carries no partial group.
  const TensorView *state = file->find("prefill.cache.1.compressor_kv_state");
  ASSERT_NE(state, nullptr);
  EXPECT_EQ(state->dtype, DType::F32);
  EXPECT_EQ(state->shape, (std::vector<int64_t>{0, 128}));
  EXPECT_EQ(state->numElements(), 0);
  EXPECT_TRUE(state->bytes.empty());

  const TensorView *ckv = file->find("prefill.cache.3.compress_kv");
  ASSERT_NE(ckv, nullptr);
  EXPECT_EQ(ckv->dtype, DType::BF16);
  EXPECT_EQ(ckv->shape, (std::vector<int64_t>{150, 128}));
  EXPECT_EQ(hexPrefix(*ckv, 8), "d0be1c409c3f503f");
  EXPECT_THAT(file->metadata().at("case.json"), HasSubstr("\"prompt_len\": 150"));
}

TEST(Safetensors, GoldenTiny40Both) {
  for (const char *name : {"model.safetensors", "expected.safetensors"}) {
    auto file = SafetensorsFile::open(dsc::test::sharedPath(std::string("golden/tiny40/") + name));
    ASSERT_TRUE(file.hasValue()) << file.status().message();
    EXPECT_GT(file->tensors().size(), 1000u) << name;
  }
  auto expected = SafetensorsFile::open(dsc::test::sharedPath("golden/tiny40/expected.safetensors"));
  ASSERT_TRUE(expected.hasValue());
  const TensorView *ring = expected->find("prefill.cache.20.window_kv");
  ASSERT_NE(ring, nullptr);
  EXPECT_EQ(ring->shape, (std::vector<int64_t>{8, 64}));
  // The move constructor keeps views valid.
  SafetensorsFile moved = std::move(*expected);
  EXPECT_EQ(moved.find("prefill.cache.20.window_kv"), ring);
}

TEST(Safetensors, SmallValidFileWithGapAndZeroSize) {
  TempFile f("valid",
             R"({"__metadata__":{"k":"v"},"b":{"dtype":"F32","shape":[2],"data_offsets":[8,16]},)"
             R"("a":{"dtype":"U8","shape":[3],"data_offsets":[0,3]},)"
             R"("z":{"dtype":"BF16","shape":[4,0],"data_offsets":[16,16]}})",
             16);
  auto file = SafetensorsFile::open(f.path());
  ASSERT_TRUE(file.hasValue()) << file.status().message();
  ASSERT_EQ(file->tensors().size(), 3u);
  EXPECT_EQ(file->tensors()[0].name, "a");
  EXPECT_EQ(file->tensors()[1].name, "b");
  EXPECT_EQ(file->tensors()[2].name, "z");
  EXPECT_EQ(file->metadata().at("k"), "v");
  EXPECT_EQ(std::to_integer<int>(file->find("a")->bytes[2]), 2);
}

TEST(Safetensors, MissingFile) {
  std::string msg = openError("/nonexistent/dir/x.safetensors", StatusCode::NotFound);
  EXPECT_THAT(msg, HasSubstr("cannot open"));
}

TEST(Safetensors, TooShortForLength) {
  TempFile f("short", std::string("\x05\x00\x00", 3));
  EXPECT_THAT(openError(f.path(), StatusCode::DataLoss), HasSubstr("too short"));
}

TEST(Safetensors, HeaderLengthBeyondFile) {
  TempFile f("badlen", R"({"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}})", 1, 1u << 20);
  std::string msg = openError(f.path(), StatusCode::DataLoss);
  EXPECT_THAT(msg, HasSubstr("bad header length 1048576"));
}

TEST(Safetensors, HeaderLengthAbsurd) {
  TempFile f("hugelen", "{}", 0, ~0ull);
  EXPECT_THAT(openError(f.path(), StatusCode::DataLoss), HasSubstr("bad header length"));
}

TEST(Safetensors, TruncatedData) {
  // The header promises 64 bytes of F32 data; only 40 are present.
  TempFile f("trunc", R"({"w":{"dtype":"F32","shape":[4,4],"data_offsets":[0,64]}})", 40);
  std::string msg = openError(f.path(), StatusCode::DataLoss);
  EXPECT_THAT(msg, HasSubstr("tensor 'w'"));
  EXPECT_THAT(msg, HasSubstr("truncated"));
}

TEST(Safetensors, NotJson) {
  TempFile f("notjson", R"({"w":{"dtype":"F32",)", 0);
  EXPECT_THAT(openError(f.path(), StatusCode::DataLoss), HasSubstr("not valid JSON"));
}

TEST(Safetensors, NotAnObject) {
  TempFile f("array", "[1,2]", 0);
  EXPECT_THAT(openError(f.path(), StatusCode::DataLoss), HasSubstr("not a JSON object"));
}

TEST(Safetensors, OverlappingOffsets) {
  TempFile f("overlap",
             R"({"first":{"dtype":"F32","shape":[4],"data_offsets":[0,16]},)"
             R"("second":{"dtype":"F32","shape":[4],"data_offsets":[8,24]}})",
             24);
  std::string msg = openError(f.path(), StatusCode::DataLoss);
  EXPECT_THAT(msg, HasSubstr("'second'"));
  EXPECT_THAT(msg, HasSubstr("overlaps tensor 'first'"));
}

TEST(Safetensors, UnknownDType) {
  TempFile f("dtype", R"({"w":{"dtype":"F4_E2M1","shape":[2],"data_offsets":[0,1]}})", 1);
  std::string msg = openError(f.path(), StatusCode::DataLoss);
  EXPECT_THAT(msg, HasSubstr("tensor 'w'"));
  EXPECT_THAT(msg, HasSubstr("unknown dtype 'F4_E2M1'"));
}

TEST(Safetensors, ShapeOffsetMismatch) {
  TempFile f("mismatch", R"({"w":{"dtype":"BF16","shape":[3,5],"data_offsets":[0,32]}})", 32);
  std::string msg = openError(f.path(), StatusCode::DataLoss);
  EXPECT_THAT(msg, HasSubstr("tensor 'w'"));
  EXPECT_THAT(msg, HasSubstr("needs 30 bytes"));
  EXPECT_THAT(msg, HasSubstr("hold 32"));
}

TEST(Safetensors, ShapeOverflow) {
  TempFile f("overflow",
             R"({"w":{"dtype":"F64","shape":[4294967296,4294967296],"data_offsets":[0,8]}})", 8);
  std::string msg = openError(f.path(), StatusCode::DataLoss);
  EXPECT_THAT(msg, HasSubstr("tensor 'w'"));
  EXPECT_THAT(msg, HasSubstr("more than 2^64"));
}

TEST(Safetensors, NegativeShape) {
  TempFile f("negshape", R"({"w":{"dtype":"U8","shape":[-1],"data_offsets":[0,0]}})", 0);
  std::string msg = openError(f.path(), StatusCode::DataLoss);
  EXPECT_THAT(msg, HasSubstr("tensor 'w'"));
  EXPECT_THAT(msg, HasSubstr("not a non-negative integer"));
}

TEST(Safetensors, BeginAfterEnd) {
  TempFile f("beginend", R"({"w":{"dtype":"U8","shape":[0],"data_offsets":[4,2]}})", 8);
  EXPECT_THAT(openError(f.path(), StatusCode::DataLoss), HasSubstr("begin > end"));
}

TEST(Safetensors, DuplicateName) {
  TempFile f("dup",
             R"({"w":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},)"
             R"("w":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}})",
             2);
  std::string msg = openError(f.path(), StatusCode::DataLoss);
  EXPECT_THAT(msg, HasSubstr("tensor 'w' appears more than once"));
}

TEST(Safetensors, DuplicateNameSpelledWithEscapes) {
  // "w" and "\u0077" are one key once parsed: still a duplicate, not a
  // silently dropped tensor.
  TempFile f("dupesc",
             R"({"w":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},)"
             R"("\u0077":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}})",
             2);
  EXPECT_THAT(openError(f.path(), StatusCode::DataLoss),
              HasSubstr("2 top-level keys are written but 1 are distinct: tensor 'w' appears "
                        "twice"));
}

// Fuzzing (issue 15, test/fuzz/corpus/safetensors/regress-nul-tail-*): the
// JSON parser takes a NUL byte for the end of its input, so a header
// `{...}<NUL>,{"k":...` parsed as `{...}` while the key scan counted the tail's
// keys too, and naming the "duplicate" re-parsed a raw tail key that is not
// JSON: an uncaught exception, std::terminate. A NUL anywhere in the header
// is refused first.
TEST(Safetensors, NulByteInHeaderIsRefused) {
  const std::string w = R"({"w":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}})";
  TempFile tail("nultail", w + std::string(1, '\0') + ",{\"x\x1a\":1,\"y\":2}", 1);
  EXPECT_THAT(openError(tail.path(), StatusCode::DataLoss),
              HasSubstr("header has a NUL byte at byte " + std::to_string(w.size())));
  TempFile padded("nulpad", w + std::string(6, '\0'), 1);
  EXPECT_THAT(openError(padded.path(), StatusCode::DataLoss), HasSubstr("NUL byte"));
  TempFile spaces("spacepad", w + std::string(6, ' '), 1); // the format's padding
  auto file = SafetensorsFile::open(spaces.path());
  ASSERT_TRUE(file.hasValue()) << file.status().message();
  EXPECT_NE(file->find("w"), nullptr);
}

// Fuzzing (issue 15, test/fuzz/corpus/safetensors/regress-zero-size-huge-dims.*):
// a zero-size tensor whose other dimensions multiply past INT64_MAX is
// accepted (the safetensors library does too: the unsigned product does not
// overflow), and numElements() multiplied them in int64 first: signed overflow.
TEST(Safetensors, ZeroSizeTensorWithHugeDimensions) {
  TempFile f("zerohuge",
             R"({"z":{"dtype":"U8","shape":[9223372036854775807,2,0],"data_offsets":[0,0]},)"
             R"("w":{"dtype":"BF16","shape":[2,3],"data_offsets":[0,12]}})",
             12);
  auto file = SafetensorsFile::open(f.path());
  ASSERT_TRUE(file.hasValue()) << file.status().message();
  ASSERT_NE(file->find("z"), nullptr);
  EXPECT_EQ(file->find("z")->numElements(), 0);
  EXPECT_TRUE(file->find("z")->bytes.empty());
  EXPECT_EQ(file->find("w")->numElements(), 6);
}

// Issue 15: a 100,000-deep value under the header size cap overflowed the
// stack in the parser; nesting is refused from the text, before parsing
// ({ at 0, { at 16, the first [ at 21 is level 3, so level 9 opens at 27).
TEST(Safetensors, DeepNestingIsRefusedBeforeParsing) {
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  TempFile f("deep",
             R"({"__metadata__":{"a":)" + deep +
                 R"(},"w":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}})",
             1);
  EXPECT_THAT(openError(f.path(), StatusCode::DataLoss),
              HasSubstr("header nests deeper than 8 levels (at byte 27 of the header)"));
  // Brackets inside a string are text, not nesting.
  TempFile quoted("deepquoted",
                  R"({"__metadata__":{"a":")" + deep +
                      R"("},"w":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}})",
                  1);
  auto file = SafetensorsFile::open(quoted.path());
  ASSERT_TRUE(file.hasValue()) << file.status().message();
  EXPECT_EQ(file->metadata().at("a"), deep);
}

// Issue 15: 100,000 tensors took 30 s (the header was parsed in O(n^2));
// every one of them is found.
TEST(Safetensors, ManyTensorsAreAllIndexed) {
  constexpr int kTensors = 100000;
  std::string header = "{";
  for (int i = 0; i < kTensors; ++i)
    header += (i ? "," : "") + std::string("\"t") + std::to_string(i) +
              R"(":{"dtype":"U8","shape":[1],"data_offsets":[)" + std::to_string(i) + "," +
              std::to_string(i + 1) + "]}";
  header += "}";
  TempFile f("many", header, kTensors);
  auto file = SafetensorsFile::open(f.path());
  ASSERT_TRUE(file.hasValue()) << file.status().message();
  ASSERT_EQ(file->tensors().size(), size_t(kTensors));
  for (int i : {0, 1, 77777, kTensors - 1}) {
    const TensorView *t = file->find("t" + std::to_string(i));
    ASSERT_NE(t, nullptr) << i;
    EXPECT_EQ(t->dataBegin, uint64_t(i));
    EXPECT_EQ(std::to_integer<unsigned>(t->bytes[0]), unsigned(i & 0xff));
  }
}

TEST(Safetensors, MissingAndUnknownFields) {
  TempFile missing("missing", R"({"w":{"dtype":"U8","shape":[1]}})", 1);
  EXPECT_THAT(openError(missing.path(), StatusCode::DataLoss),
              HasSubstr("tensor 'w': needs the fields"));
  TempFile extra("extra", R"({"w":{"dtype":"U8","shape":[1],"data_offsets":[0,1],"x":1}})", 1);
  EXPECT_THAT(openError(extra.path(), StatusCode::DataLoss), HasSubstr("unknown field 'x'"));
}

TEST(Safetensors, BadMetadata) {
  TempFile f("meta", R"({"__metadata__":{"n":3}})", 0);
  EXPECT_THAT(openError(f.path(), StatusCode::DataLoss),
              HasSubstr("__metadata__ entry 'n' is not a string"));
}
