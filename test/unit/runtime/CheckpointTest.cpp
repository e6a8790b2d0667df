//===- CheckpointTest.cpp - Checkpoints: forms, binding checks, gathering -===//
//
// The tiny6 golden checkpoint is read independently (its JSON header parsed
// here with nlohmann, bytes read with std::ifstream) and compared with what
// Checkpoint::gather returns. A sharded copy of it written by the test gives
// identical gathers. Mismatch messages name the file, the tensor and both
// sides. An fp8 + scale `attn.wo_a` written from known codes is dequantised
// to bf16 and fp32 and compared with hand-computed values.
//===----------------------------------------------------------------------===//
#include "dsc/runtime/Checkpoint.h"
#include "test/unit/support/SharedDir.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <unistd.h>

using namespace dsc::runtime;
using ::testing::HasSubstr;

namespace {

namespace fs = std::filesystem;

std::string tiny6() { return dsc::test::sharedPath("golden/tiny6/model.safetensors"); }

/// One tensor as stored: header fields and raw bytes.
struct RawTensor {
  std::string name, dtype;
  std::vector<int64_t> shape;
  std::string bytes;
};

/// Reads a safetensors file without the runtime's reader.
std::map<std::string, RawTensor> readRaw(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  uint64_t n = 0;
  unsigned char len[8];
  in.read(reinterpret_cast<char *>(len), 8);
  for (int i = 7; i >= 0; --i)
    n = (n << 8) | len[i];
  std::string header(n, '\0');
  in.read(header.data(), static_cast<std::streamsize>(n));
  const nlohmann::json json = nlohmann::json::parse(header);
  std::map<std::string, RawTensor> out;
  for (const auto &[name, entry] : json.items()) {
    if (name == "__metadata__")
      continue;
    RawTensor t;
    t.name = name;
    t.dtype = entry["dtype"].get<std::string>();
    t.shape = entry["shape"].get<std::vector<int64_t>>();
    const uint64_t begin = entry["data_offsets"][0].get<uint64_t>();
    const uint64_t end = entry["data_offsets"][1].get<uint64_t>();
    t.bytes.resize(end - begin);
    in.seekg(static_cast<std::streamoff>(8 + n + begin));
    in.read(t.bytes.data(), static_cast<std::streamsize>(end - begin));
    out.emplace(name, std::move(t));
  }
  return out;
}

/// Writes tensors as a safetensors file (header padded to 8 bytes).
void writeSafetensors(const std::string &path, const std::vector<const RawTensor *> &tensors) {
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  uint64_t offset = 0;
  for (const RawTensor *t : tensors) {
    header[t->name] = {{"dtype", t->dtype},
                       {"shape", t->shape},
                       {"data_offsets", {offset, offset + t->bytes.size()}}};
    offset += t->bytes.size();
  }
  std::string text = header.dump();
  while (text.size() % 8 != 0)
    text += ' ';
  std::ofstream out(path, std::ios::binary);
  const uint64_t n = text.size();
  for (int i = 0; i < 8; ++i)
    out.put(static_cast<char>((n >> (8 * i)) & 0xff));
  out << text;
  for (const RawTensor *t : tensors)
    out << t->bytes;
}

std::string bytesOf(const std::vector<std::byte> &v) {
  return std::string(reinterpret_cast<const char *>(v.data()), v.size());
}

class TempDir {
public:
  explicit TempDir(const std::string &tag) {
    path_ = fs::temp_directory_path() /
            ("dsc_ckpt_" + std::to_string(::getpid()) + "_" + tag);
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TempDir() { fs::remove_all(path_); }
  std::string file(const std::string &name) const { return (path_ / name).string(); }
  const fs::path &path() const { return path_; }

private:
  fs::path path_;
};

// Bindings of real tiny6 tensors (shapes from its header).
const TensorBinding kWqA{"layers.1.attn.wq_a.weight", DType::F8_E4M3, {128, 256},
                         TensorKind::Weight, 0, std::nullopt};
const TensorBinding kWqAScale{"layers.1.attn.wq_a.scale", DType::F8_E8M0, {4, 8},
                              TensorKind::Scale, 0, std::nullopt};
const TensorBinding kExpertsW1{"layers.1.ffn.experts.{e}.w1.weight", DType::I8, {8, 128, 128},
                               TensorKind::Fp4Packed, 8, std::nullopt};
const TensorBinding kExpertsW1Scale{"layers.1.ffn.experts.{e}.w1.scale", DType::F8_E8M0,
                                    {8, 128, 8}, TensorKind::Scale, 8, std::nullopt};
const TensorBinding kWoA{"layers.1.attn.wo_a.weight", DType::BF16, {256, 256},
                         TensorKind::Weight, 0, DType::F8_E4M3};
const TensorBinding kEmbed{"embed.weight", DType::BF16, {1024, 256}, TensorKind::Weight, 0,
                           std::nullopt};
const TensorBinding kHcFn{"layers.1.hc_attn_fn", DType::F32, {24, 1024}, TensorKind::Weight, 0,
                          std::nullopt};

std::vector<TensorBinding> tiny6Bindings() {
  return {kWqA, kWqAScale, kExpertsW1, kExpertsW1Scale, kWoA, kEmbed, kHcFn};
}

/// The bytes a binding should gather, from the independent reader.
std::string expectedBytes(const std::map<std::string, RawTensor> &raw, const TensorBinding &b) {
  if (b.experts == 0)
    return raw.at(b.name).bytes;
  std::string out;
  for (int64_t e = 0; e < b.experts; ++e)
    out += raw.at(Checkpoint::expertName(b.name, e)).bytes;
  return out;
}

Checkpoint openOrDie(const std::string &path) {
  Expected<Checkpoint> c = Checkpoint::open(path);
  EXPECT_TRUE(c.hasValue()) << c.status().message();
  if (!c.hasValue())
    std::abort();
  return std::move(c).value();
}

std::string checkError(const Checkpoint &c, const TensorBinding &b, StatusCode code) {
  Status s = c.check(b);
  EXPECT_FALSE(s.isOk()) << b.name << " unexpectedly matched";
  EXPECT_EQ(s.code(), code) << s.message();
  // gather() reports the same problem.
  Expected<std::vector<std::byte>> g = c.gather(b);
  EXPECT_FALSE(g.hasValue());
  if (!g.hasValue()) {
    EXPECT_EQ(g.status().message(), s.message());
  }
  return s.message();
}

} // namespace

//===----------------------------------------------------------------------===//
// Single file
//===----------------------------------------------------------------------===//

TEST(Checkpoint, OpensTheGoldenFileAndItsDirectory) {
  Checkpoint file = openOrDie(tiny6());
  EXPECT_FALSE(file.isSharded());
  EXPECT_EQ(file.path(), tiny6());
  EXPECT_EQ(file.numTensors(), readRaw(tiny6()).size());
  const std::vector<std::string> names = file.tensorNames();
  EXPECT_EQ(names.size(), file.numTensors());
  EXPECT_TRUE(std::is_sorted(names.begin(), names.end()));

  Checkpoint dir = openOrDie(dsc::test::sharedPath("golden/tiny6"));
  EXPECT_FALSE(dir.isSharded());
  EXPECT_EQ(fs::path(dir.path()).filename(), "model.safetensors");
  EXPECT_EQ(dir.numTensors(), file.numTensors());
  const TensorView *t = dir.find("layers.1.attn.wq_a.weight");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->dtype, DType::F8_E4M3);
  EXPECT_EQ(t->shape, (std::vector<int64_t>{128, 256}));
  EXPECT_EQ(dir.find("no.such.tensor"), nullptr);
}

TEST(Checkpoint, GatherEqualsTheFileBytes) {
  const auto raw = readRaw(tiny6());
  Checkpoint c = openOrDie(tiny6());
  Status all = c.check(tiny6Bindings());
  ASSERT_TRUE(all.isOk()) << all.message();
  for (const TensorBinding &b : tiny6Bindings()) {
    SCOPED_TRACE(b.name);
    Expected<std::vector<std::byte>> g = c.gather(b);
    ASSERT_TRUE(g.hasValue()) << g.status().message();
    EXPECT_EQ(g->size(), Checkpoint::gatheredBytes(b));
    EXPECT_TRUE(bytesOf(*g) == expectedBytes(raw, b));
  }
  // Stacked experts: expert e's bytes sit at e * (per-expert bytes).
  Expected<std::vector<std::byte>> w1 = c.gather(kExpertsW1);
  ASSERT_TRUE(w1.hasValue());
  EXPECT_EQ(w1->size(), 8u * 128 * 128);
  EXPECT_EQ(bytesOf(*w1).substr(3 * 128 * 128, 128 * 128),
            raw.at("layers.1.ffn.experts.3.w1.weight").bytes);
}

TEST(Checkpoint, GatherIntoCallerMemory) {
  Checkpoint c = openOrDie(tiny6());
  std::vector<std::byte> buffer(Checkpoint::gatheredBytes(kWqA));
  ASSERT_TRUE(c.gatherInto(kWqA, buffer).isOk());
  EXPECT_TRUE(bytesOf(buffer) == readRaw(tiny6()).at(kWqA.name).bytes);
  std::vector<std::byte> small(10);
  Status s = c.gatherInto(kWqA, small);
  EXPECT_EQ(s.code(), StatusCode::InvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("gather needs 32768 bytes, the buffer has 10"));
}

TEST(Checkpoint, ShapeMismatchNamesTensorAndBothShapes) {
  Checkpoint c = openOrDie(tiny6());
  TensorBinding b = kWqA;
  b.shape = {1280, 5120};
  EXPECT_EQ(checkError(c, b, StatusCode::FailedPrecondition),
            tiny6() + ": tensor 'layers.1.attn.wq_a.weight' has shape [128, 256], the plan "
                      "expects [1280, 5120]");
}

TEST(Checkpoint, DTypeMismatchNamesBothDTypes) {
  Checkpoint c = openOrDie(tiny6());
  TensorBinding b = kWqA;
  b.dtype = DType::BF16;
  EXPECT_EQ(checkError(c, b, StatusCode::FailedPrecondition),
            tiny6() + ": tensor 'layers.1.attn.wq_a.weight' has dtype F8_E4M3, the plan "
                      "expects BF16");
  b.alternativeDType = DType::F32;
  EXPECT_THAT(checkError(c, b, StatusCode::FailedPrecondition),
              HasSubstr("has dtype F8_E4M3, the plan expects BF16 (or F32)"));
}

TEST(Checkpoint, StackedMismatchNamesTheExpert) {
  Checkpoint c = openOrDie(tiny6());
  TensorBinding b = kExpertsW1;
  b.shape = {8, 128, 64};
  EXPECT_EQ(checkError(c, b, StatusCode::FailedPrecondition),
            tiny6() + ": tensor 'layers.1.ffn.experts.0.w1.weight' (expert 0 of "
                      "'layers.1.ffn.experts.{e}.w1.weight') has shape [128, 128], the plan "
                      "expects [128, 64] (per expert)");
  b = kExpertsW1;
  b.experts = 9;
  b.shape[0] = 9;
  EXPECT_EQ(checkError(c, b, StatusCode::NotFound),
            tiny6() + ": tensor 'layers.1.ffn.experts.8.w1.weight' (expert 8 of "
                      "'layers.1.ffn.experts.{e}.w1.weight') is missing");
  b.shape[0] = 8; // inconsistent binding
  EXPECT_THAT(checkError(c, b, StatusCode::InvalidArgument),
              HasSubstr("binding 'layers.1.ffn.experts.{e}.w1.weight': stacked over 9 experts"));
}

TEST(Checkpoint, MissingTensor) {
  Checkpoint c = openOrDie(tiny6());
  TensorBinding b = kEmbed;
  b.name = "layers.7.attn.wq_a.weight";
  EXPECT_EQ(checkError(c, b, StatusCode::NotFound),
            tiny6() + ": tensor 'layers.7.attn.wq_a.weight' is missing");
}

TEST(Checkpoint, CheckReportsEveryProblem) {
  Checkpoint c = openOrDie(tiny6());
  std::vector<TensorBinding> bindings = tiny6Bindings();
  bindings[0].shape = {1, 2};
  bindings[5].dtype = DType::F32;
  bindings[6].name = "absent";
  Status s = c.check(bindings);
  ASSERT_FALSE(s.isOk());
  EXPECT_EQ(s.code(), StatusCode::FailedPrecondition);
  EXPECT_THAT(s.message(), HasSubstr("the checkpoint does not match the plan (3 problems):"));
  EXPECT_THAT(s.message(), HasSubstr("'layers.1.attn.wq_a.weight' has shape [128, 256]"));
  EXPECT_THAT(s.message(), HasSubstr("'embed.weight' has dtype BF16, the plan expects F32"));
  EXPECT_THAT(s.message(), HasSubstr("'absent' is missing"));
}

TEST(Checkpoint, OpenErrors) {
  Expected<Checkpoint> none = Checkpoint::open("/nonexistent/ckpt");
  ASSERT_FALSE(none.hasValue());
  EXPECT_EQ(none.status().code(), StatusCode::NotFound);
  EXPECT_THAT(none.status().message(), HasSubstr("/nonexistent/ckpt: no such checkpoint"));

  TempDir dir("empty");
  Expected<Checkpoint> empty = Checkpoint::open(dir.path().string());
  ASSERT_FALSE(empty.hasValue());
  EXPECT_THAT(empty.status().message(),
              HasSubstr("the directory holds neither model.safetensors.index.json nor "
                        "model.safetensors"));

  std::ofstream(dir.file("model.safetensors.index.json")) << R"({"metadata": {}})";
  Expected<Checkpoint> noMap = Checkpoint::open(dir.path().string());
  ASSERT_FALSE(noMap.hasValue());
  EXPECT_THAT(noMap.status().message(), HasSubstr("index has no \"weight_map\" object"));

  std::ofstream(dir.file("model.safetensors.index.json"))
      << R"({"weight_map": {"a": "../outside.safetensors"}})";
  Expected<Checkpoint> escape = Checkpoint::open(dir.path().string());
  ASSERT_FALSE(escape.hasValue());
  EXPECT_THAT(escape.status().message(), HasSubstr("not a relative path inside"));
}

//===----------------------------------------------------------------------===//
// Sharded
//===----------------------------------------------------------------------===//

namespace {

/// Splits tiny6 into two shards (alternating pairs in name order, so the
/// experts of one stacked binding straddle shards) and writes the index.
/// Returns the weight_map.
nlohmann::json writeSharded(const TempDir &dir, const std::map<std::string, RawTensor> &raw) {
  std::vector<const RawTensor *> shards[2];
  nlohmann::json map = nlohmann::json::object();
  const char *names[2] = {"model-00001-of-00002.safetensors",
                          "model-00002-of-00002.safetensors"};
  size_t i = 0;
  for (const auto &[name, t] : raw) {
    const size_t shard = (i % 4) / 2; // pairs alternate: expert e and e+1 differ
    shards[shard].push_back(&t);
    map[name] = names[shard];
    ++i;
  }
  writeSafetensors(dir.file(names[0]), shards[0]);
  writeSafetensors(dir.file(names[1]), shards[1]);
  std::ofstream(dir.file("model.safetensors.index.json"))
      << nlohmann::json{{"metadata", {{"total_size", 0}}}, {"weight_map", map}}.dump(1);
  return map;
}

} // namespace

TEST(Checkpoint, ShardedGathersEqualSingleFile) {
  const auto raw = readRaw(tiny6());
  TempDir dir("sharded");
  const nlohmann::json map = writeSharded(dir, raw);
  // The experts of one stacked binding really are spread over both shards.
  EXPECT_NE(map["layers.1.ffn.experts.0.w1.weight"], map["layers.1.ffn.experts.1.w1.weight"]);

  Checkpoint single = openOrDie(tiny6());
  for (const std::string &path :
       {dir.path().string(), dir.file("model.safetensors.index.json")}) {
    SCOPED_TRACE(path);
    Checkpoint sharded = openOrDie(path);
    EXPECT_TRUE(sharded.isSharded());
    EXPECT_EQ(sharded.path(), dir.file("model.safetensors.index.json"));
    EXPECT_EQ(sharded.files().size(), 2u);
    EXPECT_EQ(sharded.numTensors(), single.numTensors());
    EXPECT_EQ(sharded.tensorNames(), single.tensorNames());
    Status s = sharded.check(tiny6Bindings());
    ASSERT_TRUE(s.isOk()) << s.message();
    for (const TensorBinding &b : tiny6Bindings()) {
      SCOPED_TRACE(b.name);
      Expected<std::vector<std::byte>> a = single.gather(b);
      Expected<std::vector<std::byte>> c = sharded.gather(b);
      ASSERT_TRUE(a.hasValue() && c.hasValue());
      EXPECT_TRUE(*a == *c);
    }
    // Messages name the shard that holds the tensor.
    TensorBinding wrong = kWqA;
    wrong.shape = {1280, 5120};
    const std::string shard = map[kWqA.name].get<std::string>();
    EXPECT_EQ(checkError(sharded, wrong, StatusCode::FailedPrecondition),
              dir.file(shard) + ": tensor 'layers.1.attn.wq_a.weight' has shape [128, 256], "
                                "the plan expects [1280, 5120]");
  }
}

TEST(Checkpoint, MissingShardNamesShardAndTensor) {
  const auto raw = readRaw(tiny6());
  TempDir dir("missing_shard");
  writeSharded(dir, raw);
  fs::remove(dir.file("model-00002-of-00002.safetensors"));
  Expected<Checkpoint> c = Checkpoint::open(dir.path().string());
  ASSERT_FALSE(c.hasValue());
  EXPECT_EQ(c.status().code(), StatusCode::NotFound);
  const std::string m = c.status().message();
  EXPECT_THAT(m, HasSubstr(dir.file("model.safetensors.index.json") +
                           ": shard 'model-00002-of-00002.safetensors' (holding tensor '"));
  EXPECT_THAT(m, HasSubstr("cannot be opened: " + dir.file("model-00002-of-00002.safetensors")));
  // The tensor named is one the index really puts in that shard.
  const std::string tensor = m.substr(m.find("holding tensor '") + 16);
  const std::string name = tensor.substr(0, tensor.find('\''));
  EXPECT_EQ(raw.count(name), 1u);
}

TEST(Checkpoint, TensorMissingFromIndex) {
  const auto raw = readRaw(tiny6());
  TempDir dir("partial_index");
  std::vector<const RawTensor *> all;
  for (const auto &[name, t] : raw)
    all.push_back(&t);
  writeSafetensors(dir.file("model-00001-of-00001.safetensors"), all);
  // The index lists only the embedding.
  std::ofstream(dir.file("model.safetensors.index.json"))
      << R"({"weight_map": {"embed.weight": "model-00001-of-00001.safetensors"}})";
  Checkpoint c = openOrDie(dir.path().string());
  EXPECT_EQ(c.numTensors(), 1u);
  EXPECT_TRUE(c.check(kEmbed).isOk());
  EXPECT_EQ(checkError(c, kWqA, StatusCode::NotFound),
            dir.file("model.safetensors.index.json") +
                ": tensor 'layers.1.attn.wq_a.weight' is not in the weight_map");
}

TEST(Checkpoint, IndexEntryInTheWrongShard) {
  const auto raw = readRaw(tiny6());
  TempDir dir("wrong_shard");
  writeSafetensors(dir.file("a.safetensors"), {&raw.at("embed.weight")});
  writeSafetensors(dir.file("b.safetensors"), {&raw.at(kWqA.name)});
  std::ofstream(dir.file("model.safetensors.index.json"))
      << nlohmann::json{{"weight_map",
                         {{"embed.weight", "b.safetensors"}, {kWqA.name, "b.safetensors"}}}}
             .dump();
  Expected<Checkpoint> c = Checkpoint::open(dir.path().string());
  ASSERT_FALSE(c.hasValue());
  EXPECT_EQ(c.status().message(), dir.file("model.safetensors.index.json") +
                                      ": weight_map puts tensor 'embed.weight' in shard "
                                      "'b.safetensors', which does not hold it");
}

//===----------------------------------------------------------------------===//
// The fp8 alternative of attn.wo_a
//===----------------------------------------------------------------------===//

namespace {

// A [40, 48] F8_E4M3 weight: 2 x 2 blocks of 32 x 32 (the last ones partial).
constexpr int64_t kN = 40, kK = 48;

struct Fp8Case {
  int64_t n, k;
  uint8_t code;
  float value;      ///< code * block scale, by hand
  uint16_t bf16;    ///< its bf16 bits, by hand
};
// Block scales (UE8M0): [0][0] 2^0, [0][1] 2^1, [1][0] 2^-1, [1][1] 2^3.
constexpr uint8_t kScales[4] = {127, 128, 126, 130};
constexpr Fp8Case kCases[] = {
    {0, 0, 0x38, 1.0f, 0x3F80},          // 1.0 * 1
    {0, 33, 0x38, 2.0f, 0x4000},         // 1.0 * 2
    {0, 47, 0x7E, 896.0f, 0x4460},       // 448 * 2
    {31, 31, 0x01, 0x1p-9f, 0x3B00},     // min subnormal 2^-9 * 1
    {32, 31, 0x4D, 3.25f, 0x4050},       // 6.5 * 0.5
    {33, 0, 0xB8, -0.5f, 0xBF00},        // -1.0 * 0.5
    {39, 47, 0x7E, 3584.0f, 0x4560},     // 448 * 8
};

void writeFp8WoA(const std::string &path, bool withScale, std::vector<int64_t> scaleShape = {2, 2}) {
  RawTensor w{"layers.0.attn.wo_a.weight", "F8_E4M3", {kN, kK}, std::string(kN * kK, '\0')};
  for (const Fp8Case &c : kCases)
    w.bytes[static_cast<size_t>(c.n * kK + c.k)] = static_cast<char>(c.code);
  RawTensor s{"layers.0.attn.wo_a.scale", "F8_E8M0", scaleShape,
              std::string(reinterpret_cast<const char *>(kScales), 4)};
  s.bytes.resize(static_cast<size_t>(scaleShape[0] * scaleShape[1]), '\x7f');
  if (withScale)
    writeSafetensors(path, {&w, &s});
  else
    writeSafetensors(path, {&w});
}

const TensorBinding kFp8WoA{"layers.0.attn.wo_a.weight", DType::BF16, {kN, kK},
                            TensorKind::Weight, 0, DType::F8_E4M3};

} // namespace

TEST(Checkpoint, Fp8WoADequantisedToBf16) {
  TempDir dir("fp8");
  writeFp8WoA(dir.file("model.safetensors"), true);
  Checkpoint c = openOrDie(dir.path().string());
  ASSERT_TRUE(c.check(kFp8WoA).isOk()) << c.check(kFp8WoA).message();
  Expected<std::vector<std::byte>> g = c.gather(kFp8WoA);
  ASSERT_TRUE(g.hasValue()) << g.status().message();
  ASSERT_EQ(g->size(), static_cast<size_t>(kN * kK * 2));
  std::vector<uint16_t> bits(kN * kK);
  std::memcpy(bits.data(), g->data(), g->size());
  std::vector<uint16_t> expected(kN * kK, 0); // code 0 is +0 in every block
  for (const Fp8Case &k : kCases)
    expected[static_cast<size_t>(k.n * kK + k.k)] = k.bf16;
  for (int64_t i = 0; i < kN * kK; ++i)
    ASSERT_EQ(bits[static_cast<size_t>(i)], expected[static_cast<size_t>(i)])
        << "element (" << i / kK << ", " << i % kK << ")";
}

TEST(Checkpoint, Fp8WoADequantisedToF32) {
  TempDir dir("fp8_f32");
  writeFp8WoA(dir.file("model.safetensors"), true);
  Checkpoint c = openOrDie(dir.path().string());
  TensorBinding b = kFp8WoA;
  b.dtype = DType::F32;
  Expected<std::vector<std::byte>> g = c.gather(b);
  ASSERT_TRUE(g.hasValue()) << g.status().message();
  std::vector<float> values(kN * kK);
  std::memcpy(values.data(), g->data(), g->size());
  for (const Fp8Case &k : kCases)
    EXPECT_EQ(values[static_cast<size_t>(k.n * kK + k.k)], k.value)
        << "(" << k.n << ", " << k.k << ")";
  EXPECT_EQ(values[1], 0.0f);
}

TEST(Checkpoint, Fp8WithoutAlternativeIsADTypeMismatch) {
  TempDir dir("fp8_noalt");
  writeFp8WoA(dir.file("model.safetensors"), true);
  Checkpoint c = openOrDie(dir.path().string());
  TensorBinding b = kFp8WoA;
  b.alternativeDType.reset();
  EXPECT_THAT(checkError(c, b, StatusCode::FailedPrecondition),
              HasSubstr("tensor 'layers.0.attn.wo_a.weight' has dtype F8_E4M3, the plan "
                        "expects BF16"));
}

TEST(Checkpoint, Fp8ScaleMissingOrWrong) {
  TempDir dir("fp8_noscale");
  writeFp8WoA(dir.file("model.safetensors"), false);
  Checkpoint c = openOrDie(dir.path().string());
  EXPECT_EQ(checkError(c, kFp8WoA, StatusCode::NotFound),
            dir.file("model.safetensors") +
                ": tensor 'layers.0.attn.wo_a.weight' is stored as F8_E4M3 but its scale "
                "tensor 'layers.0.attn.wo_a.scale' is missing");

  TempDir dir2("fp8_badscale");
  writeFp8WoA(dir2.file("model.safetensors"), true, {2, 1});
  Checkpoint c2 = openOrDie(dir2.path().string());
  EXPECT_EQ(checkError(c2, kFp8WoA, StatusCode::FailedPrecondition),
            dir2.file("model.safetensors") +
                ": scale tensor 'layers.0.attn.wo_a.scale' has shape [2, 1], expected [2, 2] "
                "(32x32 blocks of the [40, 48] weight)");
}

TEST(Checkpoint, UnsupportedConversionIsRejected) {
  Checkpoint c = openOrDie(tiny6());
  TensorBinding b = kWqA; // stored F8_E4M3
  b.dtype = DType::I8;
  b.alternativeDType = DType::F8_E4M3;
  EXPECT_THAT(checkError(c, b, StatusCode::FailedPrecondition),
              HasSubstr("is stored as F8_E4M3; the loader cannot convert F8_E4M3 to I8"));
}

TEST(Checkpoint, Bf16AlternativeUpcastToF32) {
  const auto raw = readRaw(tiny6());
  Checkpoint c = openOrDie(tiny6());
  TensorBinding b = kEmbed;
  b.dtype = DType::F32;
  b.alternativeDType = DType::BF16;
  Expected<std::vector<std::byte>> g = c.gather(b);
  ASSERT_TRUE(g.hasValue()) << g.status().message();
  const std::string &src = raw.at("embed.weight").bytes;
  ASSERT_EQ(g->size(), src.size() * 2);
  for (size_t i = 0; i < src.size() / 2; i += 97) {
    uint32_t bits = 0;
    std::memcpy(&bits, g->data() + 4 * i, 4);
    uint16_t half = 0;
    std::memcpy(&half, src.data() + 2 * i, 2);
    EXPECT_EQ(bits, static_cast<uint32_t>(half) << 16) << i;
  }
}

TEST(Checkpoint, NameHelpers) {
  EXPECT_EQ(Checkpoint::expertName("layers.1.ffn.experts.{e}.w1.weight", 17),
            "layers.1.ffn.experts.17.w1.weight");
  EXPECT_EQ(Checkpoint::scaleName("layers.1.attn.wo_a.weight"), "layers.1.attn.wo_a.scale");
  EXPECT_EQ(Checkpoint::scaleName("x"), "x.scale");
}
