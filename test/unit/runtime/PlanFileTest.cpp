//===- PlanFileTest.cpp - Plan files: round trip, verifier, hostile input -===//
//
// A hand-built plan using every field kind round-trips through bytes and
// through a file, compared field by field. verifyPlan rejects each semantic
// error with a message naming the place. parsePlan rejects empty, truncated,
// foreign and wrong-version buffers and survives random corruption.
// writePlanFile is all-or-nothing.
//===----------------------------------------------------------------------===//
#include "dsc/runtime/PlanFile.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <unistd.h>

using namespace dsc::runtime;
using ::testing::HasSubstr;

namespace {

namespace fs = std::filesystem;

/// A valid plan that sets every field, most to non-default values.
Plan makePlan() {
  Plan plan;
  PlanFacts &m = plan.model;
  m.name = "tiny6/config.json";
  m.nLayers = 6;
  m.nMtpLayers = 1;
  m.dim = 256;
  m.vocabSize = 1024;
  m.hcMult = 4;
  m.headDim = 128;
  m.ropeHeadDim = 32;
  m.nHeads = 8;
  m.windowSize = 16;
  m.indexHeadDim = 64;
  m.indexNHeads = 16;
  m.indexTopk = 16;
  m.cedSplitLayer = 3;
  m.maxSeqLen = 256;
  m.maxBatch = 2;
  m.cedMode = "bounded";
  m.layerBoundaries = true;
  m.engramTokenMap = {0, 1, 2, 3, 3, 4};
  m.engramCompressedVocabSize = 5;
  m.cedReplayTokens = 16;

  plan.tensors = {
      {"embed.weight", DType::BF16, {1024, 256}, TensorKind::Weight, 0, std::nullopt},
      {"layers.0.attn.wo_a.weight", DType::BF16, {256, 256}, TensorKind::Weight, 0,
       DType::F8_E4M3},
      {"layers.0.ffn.experts.{e}.w1.weight", DType::I8, {8, 128, 128}, TensorKind::Fp4Packed, 8,
       std::nullopt},
      {"layers.0.ffn.experts.{e}.w1.scale", DType::F8_E8M0, {8, 128, 8}, TensorKind::Scale, 8,
       std::nullopt},
      {"layers.0.hc_attn_fn", DType::F32, {24, 1024}, TensorKind::Weight, 0, std::nullopt},
  };

  StateBuffer window;
  window.name = "layers.0.window_kv";
  window.kind = StateKind::WindowRing;
  window.layer = 0;
  window.capacity = 16;
  window.layout = {128, 32, /*E4M3*/ 1, /*UE8M0*/ 1, 128, 4, 132, 64, /*PagePlanar*/ 1};
  StateBuffer mainKv;
  mainKv.name = "layers.1.main_kv";
  mainKv.kind = StateKind::MainKv;
  mainKv.layer = 1;
  mainKv.ratio = 2;
  mainKv.capacity = 128;
  mainKv.layout = {128, 16, /*E2M1*/ 0, /*E4M3*/ 0, 64, 8, 72, 64, 0};
  StateBuffer compressor;
  compressor.name = "layers.1.compressor";
  compressor.kind = StateKind::CompressorState;
  compressor.layer = 1;
  compressor.ratio = 2;
  compressor.capacity = 2;
  compressor.dim = 128;
  StateBuffer history;
  history.name = "engram.history";
  history.kind = StateKind::EngramHistory;
  history.capacity = 256;
  plan.states = {window, mainKv, compressor, history};

  KernelSpec embed;
  embed.name = "test_embed"; // outside the vocabulary: no signature check
  embed.module = 0;
  plan.modules = {{"embed", {0x7f, 'E', 'L', 'F', 0, 255}, ".version 8.0\n.target sm_90a\n"}};
  KernelSpec norm;
  norm.name = "test_norm";
  KernelSpec linear;
  linear.name = "linear_fp8";
  // Kernels of the vocabulary (not launched: no signature check) carry every
  // kind of typed parameter: scalars, bools, an enum, a Rope, arrays.
  dsc::abi::RopeParams rope;
  rope.rope = {64, 10000.0, 4096, 16.0, 32.0, 1.0};
  rope.position_stride = 2;
  rope.inverse = true;
  dsc::abi::EngramHashParams hash;
  hash.max_ngram = 3;
  hash.heads = 2;
  hash.pad_id = 7;
  hash.compressed_vocab_size = 1 << 20;
  hash.layers = {0, 2};
  hash.multipliers = {2, 4};
  hash.primes = {4, 1};
  KernelSpec hashSpec = KernelSpec::of(hash);
  hashSpec.constants = {1, 5, 11, 13, 101, -3};
  dsc::abi::LinearParams quant;
  quant.quant = dsc::abi::LinearQuant::fp4;
  dsc::abi::MoeGateParams gate;
  gate.topk = 6;
  gate.route_scale = 2.5;
  gate.temperature = 1e-20;
  gate.normalize = true;
  plan.kernels = {embed, norm, norm /* duplicate kernels are allowed */, linear,
                  KernelSpec::of(rope), hashSpec, KernelSpec::of(quant), KernelSpec::of(gate)};

  Program prefill;
  prefill.name = "prefill";
  auto value = [](ValueKind kind, DType dtype, std::vector<int64_t> shape, std::string name,
                  int64_t tensor = -1, int64_t state = -1, int64_t ratio = 0) {
    ValueSlot v;
    v.kind = kind;
    v.dtype = dtype;
    v.shape = std::move(shape);
    v.name = std::move(name);
    v.tensor = tensor;
    v.state = state;
    v.ratio = ratio;
    return v;
  };
  prefill.values = {
      value(ValueKind::Input, DType::I32, {kTokens}, "input_ids"),                    // 0
      value(ValueKind::Weight, DType::BF16, {1024, 256}, "embed.weight", 0),          // 1
      value(ValueKind::Activation, DType::BF16, {kTokens, 4, 256}, "embed.out"),      // 2
      value(ValueKind::State, DType::U8, {16, 132}, "layers.0.window_kv", -1, 0),     // 3
      value(ValueKind::Activation, DType::BF16, {kTokens, 4, 256}, "layers.0.out"),   // 4
      value(ValueKind::Activation, DType::F32, {kTokens, 4}, "layers.0.pre_mix"),     // 5
      value(ValueKind::Activation, DType::BF16, {kCompressedTokens, 128},
            "layers.0.compressed", -1, -1, 2),                                         // 6
      value(ValueKind::Activation, DType::F32, {kTokens, 1024}, "logits"),            // 7
      value(ValueKind::Weight, DType::I8, {8, 128, 128}, "experts.w1", 2),            // 8
      value(ValueKind::Weight, DType::F32, {24, 1024}, "hc_attn_fn", 4),              // 9
      value(ValueKind::State, DType::U8, {kCompressedLength, 72}, "layers.1.main_kv", -1, 1,
            2),                                                                        // 10
  };
  prefill.inputs = {0};
  prefill.outputs = {7};
  prefill.launches = {
      {0, {0, 1}, {2}, -1},
      {1, {2, 3, 9}, {4, 3}, 0, false, /*fusion*/ 0},
      {2, {4, 8}, {5, 6}, 0, false, /*fusion*/ 0},
      {3, {4, 5, 6, 10}, {7, 10}, -1},
  };
  prefill.boundaries = {{0, 4, 5, 2}};
  prefill.fusions = {{"test_fused", 0}};

  Program decode;
  decode.name = "decode";
  decode.values = {
      value(ValueKind::Input, DType::I32, {1}, "token"),
      value(ValueKind::Input, DType::I64, {1}, "start_pos"),
      value(ValueKind::Weight, DType::BF16, {1024, 256}, "embed.weight", 0),
      value(ValueKind::Activation, DType::BF16, {1, 256}, "embed.out"),
  };
  decode.inputs = {0, 1};
  decode.outputs = {3};
  decode.launches = {{0, {0, 2, 1}, {3}, -1}};
  plan.programs = {prefill, decode};
  return plan;
}

/// Field-by-field comparison (each mismatch reported with its place).
void expectSamePlan(const Plan &a, const Plan &b) {
  EXPECT_EQ(a.version, b.version);
  const PlanFacts &x = a.model, &y = b.model;
  EXPECT_EQ(x.name, y.name);
  EXPECT_EQ(x.nLayers, y.nLayers);
  EXPECT_EQ(x.nMtpLayers, y.nMtpLayers);
  EXPECT_EQ(x.dim, y.dim);
  EXPECT_EQ(x.vocabSize, y.vocabSize);
  EXPECT_EQ(x.hcMult, y.hcMult);
  EXPECT_EQ(x.headDim, y.headDim);
  EXPECT_EQ(x.ropeHeadDim, y.ropeHeadDim);
  EXPECT_EQ(x.nHeads, y.nHeads);
  EXPECT_EQ(x.windowSize, y.windowSize);
  EXPECT_EQ(x.indexHeadDim, y.indexHeadDim);
  EXPECT_EQ(x.indexNHeads, y.indexNHeads);
  EXPECT_EQ(x.indexTopk, y.indexTopk);
  EXPECT_EQ(x.cedSplitLayer, y.cedSplitLayer);
  EXPECT_EQ(x.maxSeqLen, y.maxSeqLen);
  EXPECT_EQ(x.maxBatch, y.maxBatch);
  EXPECT_EQ(x.cedMode, y.cedMode);
  EXPECT_EQ(x.layerBoundaries, y.layerBoundaries);
  EXPECT_EQ(x.engramTokenMap, y.engramTokenMap);
  EXPECT_EQ(x.engramCompressedVocabSize, y.engramCompressedVocabSize);
  EXPECT_EQ(x.cedReplayTokens, y.cedReplayTokens);
  EXPECT_EQ(x.prefillChunk, y.prefillChunk);

  ASSERT_EQ(a.tensors.size(), b.tensors.size());
  for (size_t i = 0; i < a.tensors.size(); ++i) {
    const TensorBinding &s = a.tensors[i], &t = b.tensors[i];
    SCOPED_TRACE("tensor " + std::to_string(i));
    EXPECT_EQ(s.name, t.name);
    EXPECT_EQ(s.dtype, t.dtype);
    EXPECT_EQ(s.shape, t.shape);
    EXPECT_EQ(s.kind, t.kind);
    EXPECT_EQ(s.experts, t.experts);
    EXPECT_EQ(s.alternativeDType, t.alternativeDType);
  }
  ASSERT_EQ(a.states.size(), b.states.size());
  for (size_t i = 0; i < a.states.size(); ++i) {
    const StateBuffer &s = a.states[i], &t = b.states[i];
    SCOPED_TRACE("state " + std::to_string(i));
    EXPECT_EQ(s.name, t.name);
    EXPECT_EQ(s.kind, t.kind);
    EXPECT_EQ(s.layer, t.layer);
    EXPECT_EQ(s.ratio, t.ratio);
    EXPECT_EQ(s.capacity, t.capacity);
    EXPECT_EQ(s.layout.valuesPerEntry, t.layout.valuesPerEntry);
    EXPECT_EQ(s.layout.valuesPerTile, t.layout.valuesPerTile);
    EXPECT_EQ(s.layout.valueType, t.layout.valueType);
    EXPECT_EQ(s.layout.scaleType, t.layout.scaleType);
    EXPECT_EQ(s.layout.dataBytes, t.layout.dataBytes);
    EXPECT_EQ(s.layout.scaleBytes, t.layout.scaleBytes);
    EXPECT_EQ(s.layout.entryBytes, t.layout.entryBytes);
    EXPECT_EQ(s.layout.tokensPerPage, t.layout.tokensPerPage);
    EXPECT_EQ(s.layout.pageOrder, t.layout.pageOrder);
  }
  ASSERT_EQ(a.kernels.size(), b.kernels.size());
  for (size_t i = 0; i < a.kernels.size(); ++i) {
    const KernelSpec &s = a.kernels[i], &t = b.kernels[i];
    SCOPED_TRACE("kernel " + std::to_string(i));
    EXPECT_EQ(s.name, t.name);
    EXPECT_EQ(s.params.index(), t.params.index());
    EXPECT_TRUE(s.params == t.params);
    EXPECT_EQ(s.constants, t.constants);
    EXPECT_EQ(s.module, t.module);
  }
  ASSERT_EQ(a.modules.size(), b.modules.size());
  for (size_t i = 0; i < a.modules.size(); ++i) {
    EXPECT_EQ(a.modules[i].templateName, b.modules[i].templateName);
    EXPECT_EQ(a.modules[i].cubin, b.modules[i].cubin);
    EXPECT_EQ(a.modules[i].ptx, b.modules[i].ptx);
  }
  ASSERT_EQ(a.programs.size(), b.programs.size());
  for (size_t i = 0; i < a.programs.size(); ++i) {
    const Program &s = a.programs[i], &t = b.programs[i];
    SCOPED_TRACE("program " + s.name);
    EXPECT_EQ(s.name, t.name);
    ASSERT_EQ(s.values.size(), t.values.size());
    for (size_t j = 0; j < s.values.size(); ++j) {
      const ValueSlot &v = s.values[j], &w = t.values[j];
      SCOPED_TRACE("value " + std::to_string(j));
      EXPECT_EQ(v.kind, w.kind);
      EXPECT_EQ(v.dtype, w.dtype);
      EXPECT_EQ(v.shape, w.shape);
      EXPECT_EQ(v.ratio, w.ratio);
      EXPECT_EQ(v.tensor, w.tensor);
      EXPECT_EQ(v.state, w.state);
      EXPECT_EQ(v.name, w.name);
    }
    EXPECT_EQ(s.inputs, t.inputs);
    EXPECT_EQ(s.outputs, t.outputs);
    ASSERT_EQ(s.launches.size(), t.launches.size());
    for (size_t j = 0; j < s.launches.size(); ++j) {
      SCOPED_TRACE("launch " + std::to_string(j));
      EXPECT_EQ(s.launches[j].kernel, t.launches[j].kernel);
      EXPECT_EQ(s.launches[j].inputs, t.launches[j].inputs);
      EXPECT_EQ(s.launches[j].outputs, t.launches[j].outputs);
      EXPECT_EQ(s.launches[j].layer, t.launches[j].layer);
      EXPECT_EQ(s.launches[j].replay, t.launches[j].replay);
      EXPECT_EQ(s.launches[j].fusion, t.launches[j].fusion);
    }
    EXPECT_EQ(s.peakBytes, t.peakBytes);
    EXPECT_EQ(s.peakBytesUntiled, t.peakBytesUntiled);
    ASSERT_EQ(s.fusions.size(), t.fusions.size());
    for (size_t j = 0; j < s.fusions.size(); ++j) {
      EXPECT_EQ(s.fusions[j].kernel, t.fusions[j].kernel);
      EXPECT_EQ(s.fusions[j].layer, t.fusions[j].layer);
      EXPECT_EQ(s.fusions[j].tileRows, t.fusions[j].tileRows);
    }
    ASSERT_EQ(s.boundaries.size(), t.boundaries.size());
    for (size_t j = 0; j < s.boundaries.size(); ++j) {
      SCOPED_TRACE("boundary " + std::to_string(j));
      EXPECT_EQ(s.boundaries[j].layer, t.boundaries[j].layer);
      EXPECT_EQ(s.boundaries[j].stream, t.boundaries[j].stream);
      EXPECT_EQ(s.boundaries[j].mix, t.boundaries[j].mix);
      EXPECT_EQ(s.boundaries[j].afterLaunch, t.boundaries[j].afterLaunch);
    }
  }
}

/// True iff every field compares equal (used where a mismatch is not an error).
bool samePlan(const Plan &a, const Plan &b) {
  return serializePlan(a) == serializePlan(b);
}

/// verifyPlan must fail; returns its message.
std::string verifyError(const Plan &plan) {
  Status s = verifyPlan(plan);
  EXPECT_FALSE(s.isOk()) << "verifyPlan accepted the plan";
  return s.message();
}

std::string parseError(std::span<const uint8_t> bytes, StatusCode code) {
  Expected<Plan> p = parsePlan(bytes, "test.dscp");
  EXPECT_FALSE(p.hasValue());
  if (p.hasValue())
    return {};
  EXPECT_EQ(p.status().code(), code) << p.status().message();
  EXPECT_THAT(p.status().message(), HasSubstr("test.dscp: "));
  return p.status().message();
}

/// A fresh empty directory, removed with its contents at the end.
class TempDir {
public:
  explicit TempDir(const std::string &tag) {
    path_ = fs::temp_directory_path() /
            ("dsc_plan_" + std::to_string(::getpid()) + "_" + tag);
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TempDir() { fs::remove_all(path_); }
  std::string file(const std::string &name) const { return (path_ / name).string(); }
  std::vector<std::string> entries() const {
    std::vector<std::string> out;
    for (const auto &e : fs::directory_iterator(path_))
      out.push_back(e.path().filename().string());
    std::sort(out.begin(), out.end());
    return out;
  }
  const fs::path &path() const { return path_; }

private:
  fs::path path_;
};

} // namespace

//===----------------------------------------------------------------------===//
// Round trips
//===----------------------------------------------------------------------===//

TEST(PlanFile, HandBuiltPlanIsValid) {
  Plan plan = makePlan();
  Status s = verifyPlan(plan);
  EXPECT_TRUE(s.isOk()) << s.message();
}

TEST(PlanFile, RoundTripThroughBytes) {
  const Plan plan = [] {
    Plan p = makePlan();
    p.programs[0].launches.back().replay = true; // a CED replayed launch
    return p;
  }();
  const std::vector<uint8_t> bytes = serializePlan(plan);
  ASSERT_GE(bytes.size(), 8u);
  EXPECT_EQ(std::string(bytes.begin() + 4, bytes.begin() + 8), "DSCP");
  Expected<Plan> back = parsePlan(bytes, "mem");
  ASSERT_TRUE(back.hasValue()) << back.status().message();
  expectSamePlan(plan, *back);
  // Every field kind survives: spot-check the typed parameters.
  const dsc::abi::RopeParams *rope = back->kernels[4].as<dsc::abi::RopeParams>();
  ASSERT_NE(rope, nullptr);
  EXPECT_EQ(rope->rope.dim, 64);
  EXPECT_EQ(rope->rope.theta, 10000.0);
  EXPECT_EQ(rope->rope.original_seq_len, 4096);
  EXPECT_EQ(rope->rope.factor, 16.0);
  EXPECT_EQ(rope->position_stride, 2);
  EXPECT_TRUE(rope->inverse);
  const dsc::abi::EngramHashParams *hash = back->kernels[5].as<dsc::abi::EngramHashParams>();
  ASSERT_NE(hash, nullptr);
  EXPECT_EQ(hash->pad_id, 7);
  EXPECT_EQ(hash->compressed_vocab_size, 1 << 20);
  EXPECT_EQ(std::vector<int64_t>(back->kernels[5].array(hash->multipliers).begin(),
                                 back->kernels[5].array(hash->multipliers).end()),
            (std::vector<int64_t>{11, 13, 101, -3}));
  EXPECT_EQ(back->kernels[6].as<dsc::abi::LinearParams>()->quant, dsc::abi::LinearQuant::fp4);
  EXPECT_EQ(back->kernels[7].as<dsc::abi::MoeGateParams>()->temperature, 1e-20);
  EXPECT_TRUE(back->kernels[7].as<dsc::abi::MoeGateParams>()->normalize);
  EXPECT_EQ(back->kernels[0].params.index(), 0u); // outside the vocabulary: none
  EXPECT_EQ(back->tensors[1].alternativeDType, DType::F8_E4M3);
  EXPECT_FALSE(back->tensors[0].alternativeDType.has_value());
  // Serialisation is deterministic.
  EXPECT_EQ(serializePlan(*back), bytes);
}

TEST(PlanFile, RoundTripDefaultsAndEmptyPlan) {
  Plan plan; // all defaults: version, maxBatch 1, cedMode "full", nothing else
  Expected<Plan> back = parsePlan(serializePlan(plan), "mem");
  ASSERT_TRUE(back.hasValue()) << back.status().message();
  expectSamePlan(plan, *back);
  EXPECT_EQ(back->model.maxBatch, 1);
  EXPECT_EQ(back->model.cedMode, "full");

  // Values equal to the schema defaults (elided on the wire) come back.
  Plan p = makePlan();
  p.programs[0].values[2].tensor = -1;
  p.programs[0].launches[0].layer = -1;
  p.tensors[0].kind = TensorKind::Weight;
  p.model.maxBatch = 1;
  p.model.layerBoundaries = false;
  Expected<Plan> q = parsePlan(serializePlan(p), "mem");
  ASSERT_TRUE(q.hasValue()) << q.status().message();
  expectSamePlan(p, *q);
}

TEST(PlanFile, RoundTripEveryEnumValue) {
  Plan plan = makePlan();
  const DType dtypes[] = {DType::BF16, DType::F16,  DType::F32,  DType::F64,
                          DType::I8,   DType::U8,   DType::I16,  DType::I32,
                          DType::I64,  DType::Bool, DType::F8_E4M3, DType::F8_E8M0};
  for (size_t i = 0; i < std::size(dtypes); ++i) {
    TensorBinding t{"extra." + std::to_string(i), dtypes[i], {2}, TensorKind::Scale, 0,
                    dtypes[(i + 1) % std::size(dtypes)]};
    plan.tensors.push_back(t);
  }
  StateBuffer ring = plan.states[0];
  ring.name = "mtp.0.dspark_ring";
  ring.kind = StateKind::DSparkRing;
  plan.states.push_back(ring);
  StateBuffer keys = plan.states[1];
  keys.name = "layers.1.index_keys";
  keys.kind = StateKind::IndexKeys;
  keys.layout = {64, 32, 0, 1, 32, 2, 34, 256, 0};
  plan.states.push_back(keys);
  ASSERT_TRUE(verifyPlan(plan).isOk()) << verifyPlan(plan).message();
  Expected<Plan> back = parsePlan(serializePlan(plan), "mem");
  ASSERT_TRUE(back.hasValue()) << back.status().message();
  expectSamePlan(plan, *back);
}

TEST(PlanFile, ParsesAnUnalignedBuffer) {
  const std::vector<uint8_t> bytes = serializePlan(makePlan());
  std::vector<uint8_t> shifted(bytes.size() + 3);
  std::copy(bytes.begin(), bytes.end(), shifted.begin() + 3);
  Expected<Plan> back =
      parsePlan(std::span<const uint8_t>(shifted.data() + 3, bytes.size()), "shifted");
  ASSERT_TRUE(back.hasValue()) << back.status().message();
  expectSamePlan(makePlan(), *back);
}

TEST(PlanFile, RoundTripThroughFile) {
  TempDir dir("roundtrip");
  const std::string path = dir.file("tiny6.dscp");
  const Plan plan = makePlan();
  Status w = writePlanFile(path, plan);
  ASSERT_TRUE(w.isOk()) << w.message();
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"tiny6.dscp"}); // no temp file left
  Expected<Plan> back = readPlanFile(path);
  ASSERT_TRUE(back.hasValue()) << back.status().message();
  expectSamePlan(plan, *back);

  // Overwriting replaces the file as a whole.
  Plan other = makePlan();
  other.model.name = "other";
  ASSERT_TRUE(writePlanFile(path, other).isOk());
  Expected<Plan> again = readPlanFile(path);
  ASSERT_TRUE(again.hasValue()) << again.status().message();
  EXPECT_EQ(again->model.name, "other");
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"tiny6.dscp"});
}

//===----------------------------------------------------------------------===//
// Writing and reading files
//===----------------------------------------------------------------------===//

TEST(PlanFile, WriteIntoMissingDirectoryLeavesNothing) {
  TempDir dir("missing");
  const fs::path target = dir.path() / "no_such_dir" / "plan.dscp";
  Status s = writePlanFile(target.string(), makePlan());
  ASSERT_FALSE(s.isOk());
  EXPECT_EQ(s.code(), StatusCode::NotFound);
  EXPECT_THAT(s.message(), HasSubstr(target.string() + ": cannot create a temporary file"));
  EXPECT_FALSE(fs::exists(target));
  EXPECT_FALSE(fs::exists(target.parent_path()));
  EXPECT_TRUE(dir.entries().empty());
}

TEST(PlanFile, FailedRenameLeavesNoTempFile) {
  TempDir dir("rename");
  fs::create_directories(dir.path() / "plan.dscp" / "occupied"); // a non-empty directory
  Status s = writePlanFile(dir.file("plan.dscp"), makePlan());
  ASSERT_FALSE(s.isOk());
  EXPECT_THAT(s.message(), HasSubstr("cannot rename"));
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"plan.dscp"});
  EXPECT_TRUE(fs::is_directory(dir.path() / "plan.dscp"));
}

TEST(PlanFile, WriteRefusesAnInvalidPlan) {
  TempDir dir("invalid");
  Plan plan = makePlan();
  plan.programs[0].launches[1].kernel = 42;
  Status s = writePlanFile(dir.file("bad.dscp"), plan);
  ASSERT_FALSE(s.isOk());
  EXPECT_THAT(s.message(), HasSubstr("refusing to write an invalid plan"));
  EXPECT_THAT(s.message(), HasSubstr("kernel index 42 is out of range"));
  EXPECT_TRUE(dir.entries().empty());
}

TEST(PlanFile, ReadMissingFile) {
  Expected<Plan> p = readPlanFile("/nonexistent/dir/plan.dscp");
  ASSERT_FALSE(p.hasValue());
  EXPECT_EQ(p.status().code(), StatusCode::NotFound);
  EXPECT_THAT(p.status().message(), HasSubstr("/nonexistent/dir/plan.dscp: cannot open plan"));
}

TEST(PlanFile, ReadForeignFile) {
  TempDir dir("foreign");
  const std::string path = dir.file("model.safetensors");
  std::string bytes(8, '\0');
  bytes[0] = 16;
  bytes += "{\"a\":1}         "; // a safetensors file with a 16-byte header
  std::ofstream(path, std::ios::binary) << bytes;
  Expected<Plan> p = readPlanFile(path);
  ASSERT_FALSE(p.hasValue());
  EXPECT_THAT(p.status().message(), HasSubstr(path + ": not a dsc plan (file identifier"));
}

//===----------------------------------------------------------------------===//
// Hostile buffers
//===----------------------------------------------------------------------===//

TEST(PlanFile, RejectsEmptyBuffer) {
  EXPECT_THAT(parseError({}, StatusCode::DataLoss),
              HasSubstr("test.dscp: not a dsc plan (0 bytes, too short"));
  const uint8_t few[5] = {1, 2, 3, 4, 5};
  EXPECT_THAT(parseError(few, StatusCode::DataLoss), HasSubstr("(5 bytes, too short"));
}

TEST(PlanFile, RejectsWrongIdentifier) {
  std::vector<uint8_t> bytes = serializePlan(makePlan());
  bytes[4] = 'X';
  bytes[5] = 'Y';
  bytes[6] = 'Z';
  bytes[7] = 0x01;
  EXPECT_THAT(parseError(bytes, StatusCode::InvalidArgument),
              HasSubstr("test.dscp: not a dsc plan (file identifier 'XYZ\\x01', expected "
                        "'DSCP')"));
}

TEST(PlanFile, RejectsWrongVersion) {
  Plan plan = makePlan();
  plan.version = 7;
  EXPECT_EQ(parseError(serializePlan(plan), StatusCode::FailedPrecondition),
            "test.dscp: plan schema version 7, this runtime reads 3");
}

TEST(PlanFile, ParseRunsTheSemanticVerifier) {
  Plan plan = makePlan();
  plan.programs[1].launches[0].kernel = 9;
  EXPECT_THAT(parseError(serializePlan(plan), StatusCode::InvalidArgument),
              HasSubstr("test.dscp: program 'decode': launch 0: kernel index 9 is out of "
                        "range (the plan has 8 kernels)"));
}

TEST(PlanFile, EveryTruncationIsRejected) {
  const Plan plan = makePlan();
  const std::vector<uint8_t> bytes = serializePlan(plan);
  size_t accepted = 0;
  for (size_t n = 0; n < bytes.size(); ++n) {
    // A fresh allocation of exactly n bytes, so that reading past it is a
    // real out-of-bounds access for sanitizers.
    std::vector<uint8_t> prefix(bytes.begin(), bytes.begin() + static_cast<long>(n));
    Expected<Plan> p = parsePlan(prefix, "prefix");
    if (p.hasValue()) {
      // Only trailing alignment padding may be cut: the content is complete.
      ++accepted;
      EXPECT_GE(n, bytes.size() - 8) << "a prefix of " << n << " bytes parsed";
      EXPECT_TRUE(samePlan(plan, *p)) << "prefix of " << n << " bytes";
    } else {
      EXPECT_FALSE(p.status().message().empty());
    }
  }
  EXPECT_LE(accepted, 7u);
}

TEST(PlanFile, RandomSingleByteCorruptionNeverCrashes) {
  const std::vector<uint8_t> bytes = serializePlan(makePlan());
  std::mt19937 rng(20240611);
  std::uniform_int_distribution<size_t> where(0, bytes.size() - 1);
  std::uniform_int_distribution<int> flip(1, 255);
  int failed = 0, parsed = 0;
  for (int i = 0; i < 1000; ++i) {
    std::vector<uint8_t> copy = bytes;
    copy[where(rng)] ^= static_cast<uint8_t>(flip(rng));
    Expected<Plan> p = parsePlan(copy, "fuzz");
    if (p.hasValue()) {
      ++parsed;
      // Whatever parses is a plan the semantic verifier accepts.
      EXPECT_TRUE(verifyPlan(*p).isOk());
    } else {
      ++failed;
      EXPECT_THAT(p.status().message(), HasSubstr("fuzz: "));
    }
  }
  EXPECT_EQ(failed + parsed, 1000);
  EXPECT_GT(failed, 0);
  RecordProperty("failed", failed);
  RecordProperty("parsed", parsed);
}

//===----------------------------------------------------------------------===//
// verifyPlan: one test per rule
//===----------------------------------------------------------------------===//

TEST(VerifyPlan, DuplicateKernelsAreAllowed) {
  Plan plan = makePlan();
  ASSERT_EQ(plan.kernels[1].name, plan.kernels[2].name);
  plan.programs[1].launches.push_back({1, {3}, {3}, -1});
  plan.programs[1].launches.push_back({2, {3}, {3}, -1});
  EXPECT_TRUE(verifyPlan(plan).isOk()) << verifyPlan(plan).message();
}

TEST(VerifyPlan, Version) {
  Plan plan = makePlan();
  plan.version = 2; // before typed kernel parameters (kernel_params.fbs)
  EXPECT_EQ(verifyError(plan), "plan schema version 2, this runtime reads 3");
}

TEST(VerifyPlan, ModelFacts) {
  Plan plan = makePlan();
  plan.model.cedMode = "sometimes";
  EXPECT_EQ(verifyError(plan), "model: cedMode 'sometimes' is not full, bounded or exact");
  plan = makePlan();
  plan.model.engramTokenMap[3] = 5;
  EXPECT_EQ(verifyError(plan), "model: engramTokenMap maps token 3 to 5, outside [0, 5) "
                               "(engramCompressedVocabSize)");
  plan = makePlan();
  plan.model.dim = -256;
  EXPECT_EQ(verifyError(plan), "model: dim is -256, must not be negative");
  plan = makePlan();
  plan.model.maxBatch = 0;
  EXPECT_EQ(verifyError(plan), "model: maxBatch is 0, must be at least 1");
}

TEST(VerifyPlan, KernelIndexOutOfRange) {
  Plan plan = makePlan();
  plan.programs[0].launches[1].kernel = 8;
  EXPECT_EQ(verifyError(plan),
            "program 'prefill': launch 1: kernel index 8 is out of range (the plan has 8 "
            "kernels)");
  plan.programs[0].launches[1].kernel = -1;
  EXPECT_THAT(verifyError(plan), HasSubstr("kernel index -1 is out of range"));
}

TEST(VerifyPlan, LaunchValueIndexOutOfRange) {
  Plan plan = makePlan();
  plan.programs[0].launches[2].inputs[1] = 11;
  EXPECT_EQ(verifyError(plan), "program 'prefill': launch 2 (kernel 2 'test_norm'): input 1 is "
                               "value 11, out of range (the program has 11 values)");
  plan = makePlan();
  plan.programs[0].launches[2].outputs[0] = -1;
  EXPECT_EQ(verifyError(plan), "program 'prefill': launch 2 (kernel 2 'test_norm'): output 0 is "
                               "value -1, out of range (the program has 11 values)");
}

TEST(VerifyPlan, WeightValueNeedsTensor) {
  Plan plan = makePlan();
  plan.programs[0].values[1].tensor = -1;
  EXPECT_EQ(verifyError(plan), "program 'prefill': value 1 'embed.weight': a Weight value needs "
                               "a tensor; tensor index -1 is out of range (the plan has 5 "
                               "tensors)");
  plan.programs[0].values[1].tensor = 5;
  EXPECT_THAT(verifyError(plan), HasSubstr("tensor index 5 is out of range"));
}

TEST(VerifyPlan, StateValueNeedsState) {
  Plan plan = makePlan();
  plan.programs[0].values[3].state = 4;
  EXPECT_EQ(verifyError(plan), "program 'prefill': value 3 'layers.0.window_kv': a State value "
                               "needs a state; state index 4 is out of range (the plan has 4 "
                               "states)");
}

TEST(VerifyPlan, ValueKindsConsistent) {
  Plan plan = makePlan();
  plan.programs[0].values[2].tensor = 0;
  EXPECT_EQ(verifyError(plan), "program 'prefill': value 2 'embed.out': an Activation value "
                               "names tensor 0 (only Weight values do)");
  plan = makePlan();
  plan.programs[0].values[1].state = 0;
  EXPECT_EQ(verifyError(plan), "program 'prefill': value 1 'embed.weight': a Weight value names "
                               "state 0 (only State values do)");
}

TEST(VerifyPlan, ValueShapes) {
  Plan plan = makePlan();
  plan.programs[0].values[4].shape = {kTokens, 0, 256};
  EXPECT_THAT(verifyError(plan),
              HasSubstr("value 4 'layers.0.out': shape [-1, 0, 256] has dimension 0"));
  plan = makePlan();
  plan.programs[0].values[6].ratio = 0;
  EXPECT_EQ(verifyError(plan), "program 'prefill': value 6 'layers.0.compressed': shape [-2, "
                               "128] has compressed or window dimensions but ratio is 0 (must "
                               "be positive: the compress ratio, or the window W of "
                               "kWindowRows)");
  plan = makePlan();
  plan.programs[0].values[3].shape = {kWindowRows, 132};
  EXPECT_THAT(verifyError(plan), HasSubstr("shape [-4, 132] has compressed or window "
                                           "dimensions but ratio is 0"));
  plan.programs[0].values[3].ratio = 16;
  EXPECT_TRUE(verifyPlan(plan).isOk()) << verifyPlan(plan).message();
  plan.programs[0].values[3].shape = {-6, 132};
  EXPECT_THAT(verifyError(plan), HasSubstr("shape [-6, 132] has dimension -6"));
  // kReplayTokens only in a plan that replays (a CED plan).
  plan.programs[0].values[3].shape = {kReplayTokens, 132};
  plan.model.cedReplayTokens = 0;
  EXPECT_THAT(verifyError(plan), HasSubstr("shape [-5, 132] has kReplayTokens (-5) but the plan "
                                           "replays nothing"));
  plan.model.cedReplayTokens = 48;
  EXPECT_TRUE(verifyPlan(plan).isOk()) << verifyPlan(plan).message();
}

// Fuzzing (issue 15, test/fuzz/corpus/plan/regress-value-dim-int64-max.dscp):
// a value dimension of INT64_MAX passed the verifier and overflowed the
// launch checks' arithmetic (KernelSignatures: ceil(D / 32)). Every positive
// dimension is at most kMaxDim (2^31), so a product of two fits int64.
TEST(VerifyPlan, ValueDimensionsAreCapped) {
  Plan plan = makePlan();
  plan.programs[0].values[4].shape = {kTokens, INT64_MAX};
  EXPECT_THAT(verifyError(plan),
              HasSubstr("value 4 'layers.0.out': shape [-1, 9223372036854775807] has dimension "
                        "9223372036854775807, above the limit of 2147483648 (2^31, Plan.h "
                        "kMaxDim)"));
  plan.programs[0].values[4].shape = {kTokens, kMaxDim + 1};
  EXPECT_THAT(verifyError(plan), HasSubstr("has dimension 2147483649, above the limit"));
}

TEST(VerifyPlan, ReadBeforeWrite) {
  Plan plan = makePlan();
  plan.programs[0].launches[1].inputs.push_back(5); // written by launch 2
  EXPECT_EQ(verifyError(plan), "program 'prefill': launch 1 (kernel 1 'test_norm'): input 3 "
                               "reads value 5 'layers.0.pre_mix', an Activation no earlier "
                               "launch writes");
  // A launch's own output is not available to it.
  plan = makePlan();
  plan.programs[0].launches[2].inputs.push_back(6);
  EXPECT_THAT(verifyError(plan), HasSubstr("launch 2 (kernel 2 'test_norm'): input 2 reads "
                                           "value 6 'layers.0.compressed'"));
}

TEST(VerifyPlan, LaunchWritesReadOnlyValue) {
  Plan plan = makePlan();
  plan.programs[0].launches[1].outputs.push_back(1);
  EXPECT_EQ(verifyError(plan), "program 'prefill': launch 1 (kernel 1 'test_norm'): output 2 "
                               "writes value 1 'embed.weight', a Weight value (read-only)");
  plan = makePlan();
  plan.programs[0].launches[1].outputs.push_back(0);
  EXPECT_THAT(verifyError(plan), HasSubstr("writes value 0 'input_ids', an Input value"));
}

TEST(VerifyPlan, ProgramInputs) {
  Plan plan = makePlan();
  plan.programs[0].inputs = {0, 1};
  EXPECT_EQ(verifyError(plan), "program 'prefill': input 1 is value 1 'embed.weight', a Weight "
                               "value, not an Input");
  plan.programs[0].inputs = {0, 0};
  EXPECT_EQ(verifyError(plan), "program 'prefill': value 0 'input_ids' appears twice among the "
                               "program inputs");
  plan.programs[0].inputs = {11};
  EXPECT_EQ(verifyError(plan), "program 'prefill': input 0 is value 11, out of range (the "
                               "program has 11 values)");
  plan.programs[0].inputs = {};
  EXPECT_EQ(verifyError(plan), "program 'prefill': value 0 'input_ids' is an Input value but "
                               "not among the program inputs");
}

TEST(VerifyPlan, ProgramOutputs) {
  Plan plan = makePlan();
  ValueSlot unwritten;
  unwritten.name = "never";
  plan.programs[0].values.push_back(unwritten);
  plan.programs[0].outputs = {11};
  EXPECT_EQ(verifyError(plan), "program 'prefill': output 0 is value 11 'never', an Activation "
                               "no launch writes");
  plan.programs[0].outputs = {12};
  EXPECT_EQ(verifyError(plan), "program 'prefill': output 0 is value 12, out of range (the "
                               "program has 12 values)");
  plan.programs[0].outputs = {7, 7};
  EXPECT_THAT(verifyError(plan), HasSubstr("value 7 'logits' appears twice among the program "
                                           "outputs"));
}

TEST(VerifyPlan, BoundaryValuesWrittenByTheLayer) {
  Plan plan = makePlan();
  plan.programs[0].boundaries[0].stream = 2; // written by launch 0, outside layers
  EXPECT_EQ(verifyError(plan), "program 'prefill': boundary 0 (layer 0): stream is value 2 "
                               "'embed.out', which no launch of layer 0 writes");
  plan = makePlan();
  plan.programs[0].boundaries[0].mix = 1;
  EXPECT_EQ(verifyError(plan), "program 'prefill': boundary 0 (layer 0): mix is value 1 "
                               "'embed.weight', which no launch of layer 0 writes");
  plan = makePlan();
  plan.programs[0].boundaries[0].mix = -1;
  EXPECT_EQ(verifyError(plan), "program 'prefill': boundary 0 (layer 0): mix is value -1, out "
                               "of range (the program has 11 values)");
}

TEST(VerifyPlan, BoundaryAfterLaunch) {
  Plan plan = makePlan();
  plan.programs[0].boundaries[0].afterLaunch = 1;
  EXPECT_EQ(verifyError(plan), "program 'prefill': boundary 0 (layer 0): afterLaunch 1 is not "
                               "the layer's last launch (launch 2 is)");
  plan.programs[0].boundaries[0].afterLaunch = 3;
  EXPECT_EQ(verifyError(plan), "program 'prefill': boundary 0 (layer 0): afterLaunch 3 is a "
                               "launch of layer -1, not 0");
  plan.programs[0].boundaries[0].afterLaunch = 4;
  EXPECT_EQ(verifyError(plan), "program 'prefill': boundary 0 (layer 0): afterLaunch 4 is out "
                               "of range (the program has 4 launches)");
}

TEST(VerifyPlan, BoundaryLayerTwice) {
  Plan plan = makePlan();
  plan.programs[0].boundaries.push_back(plan.programs[0].boundaries[0]);
  EXPECT_EQ(verifyError(plan), "program 'prefill': boundary 1 (layer 0): layer 0 already has "
                               "boundary 0");
}

TEST(VerifyPlan, RecordLayoutEntryBytes) {
  Plan plan = makePlan();
  plan.states[0].layout.entryBytes = 133;
  EXPECT_EQ(verifyError(plan), "state 0 'layers.0.window_kv' (WindowRing): record layout: "
                               "entryBytes 133 != dataBytes 128 + scaleBytes 4");
}

TEST(VerifyPlan, RecordLayoutTiles) {
  Plan plan = makePlan();
  plan.states[0].layout.valuesPerTile = 48;
  EXPECT_EQ(verifyError(plan), "state 0 'layers.0.window_kv' (WindowRing): record layout: "
                               "valuesPerEntry 128 is not a multiple of valuesPerTile 48");
  plan.states[0].layout.valuesPerTile = 0;
  EXPECT_THAT(verifyError(plan), HasSubstr("valuesPerEntry 128 and valuesPerTile 0 must be "
                                           "positive"));
}

TEST(VerifyPlan, RecordLayoutSizes) {
  Plan plan = makePlan();
  plan.states[1].layout.dataBytes = 128;
  plan.states[1].layout.entryBytes = 136;
  EXPECT_EQ(verifyError(plan), "state 1 'layers.1.main_kv' (MainKv): record layout: dataBytes "
                               "128 for 128 E2M1 values, expected 64");
  plan = makePlan();
  plan.states[1].layout.scaleBytes = 4;
  plan.states[1].layout.entryBytes = 68;
  EXPECT_THAT(verifyError(plan), HasSubstr("scaleBytes 4 for 8 tiles, expected 8"));
}

TEST(VerifyPlan, RecordLayoutTypes) {
  Plan plan = makePlan();
  plan.states[0].layout.scaleType = 0; // E4M3 values with E4M3 scales
  EXPECT_THAT(verifyError(plan), HasSubstr("E4M3 values need UE8M0 scales"));
  plan = makePlan();
  plan.states[0].layout.valueType = 2;
  EXPECT_THAT(verifyError(plan), HasSubstr("valueType 2 is not a KvValueType"));
  plan = makePlan();
  plan.states[0].layout.pageOrder = 2;
  EXPECT_THAT(verifyError(plan), HasSubstr("pageOrder 2 is not a KvPageOrder"));
  plan = makePlan();
  plan.states[0].layout.tokensPerPage = -64;
  EXPECT_THAT(verifyError(plan), HasSubstr("tokensPerPage -64 must be positive"));
}

// Issue 15: an inflated state capacity made Session::reset try to allocate
// 68-132 GiB; each kind is bounded by the model facts (makePlan: maxSeqLen
// 256, windowSize 16), and maxSeqLen by the config's limit.
TEST(VerifyPlan, StateCapacitiesAreBoundedByTheModel) {
  Plan plan = makePlan();
  plan.states[1].capacity = 129; // main KV at ratio 2: 256 / 2 entries
  EXPECT_EQ(verifyError(plan), "state 1 'layers.1.main_kv' (MainKv): capacity 129 exceeds the "
                               "128 the model allows (maxSeqLen 256 / ratio 2)");
  plan = makePlan();
  plan.states[0].capacity = int64_t(1) << 40;
  EXPECT_EQ(verifyError(plan),
            "state 0 'layers.0.window_kv' (WindowRing): capacity 1099511627776 exceeds the 256 "
            "the model allows (the larger of windowSize 16 and maxSeqLen 256)");
  plan = makePlan();
  plan.states[3].capacity = 257;
  EXPECT_EQ(verifyError(plan), "state 3 'engram.history' (EngramHistory): capacity 257 exceeds "
                               "the 256 the model allows (maxSeqLen 256)");
  plan = makePlan();
  plan.model.maxSeqLen = (int64_t(1) << 24) + 1;
  EXPECT_EQ(verifyError(plan), "model: maxSeqLen is 16777217, expected at most 16777216");
  EXPECT_TRUE(verifyPlan(makePlan()).isOk()); // the limits themselves are allowed
}

TEST(VerifyPlan, StateFields) {
  Plan plan = makePlan();
  plan.states[2].capacity = 0;
  EXPECT_EQ(verifyError(plan), "state 2 'layers.1.compressor' (CompressorState): capacity 0 "
                               "must be positive");
  plan = makePlan();
  plan.states[1].ratio = 0;
  EXPECT_EQ(verifyError(plan), "state 1 'layers.1.main_kv' (MainKv): ratio 0 must be positive");
  plan = makePlan();
  plan.states[3].name = "layers.1.compressor";
  EXPECT_EQ(verifyError(plan), "state 3 'layers.1.compressor' (EngramHistory): the name is "
                               "also used by state 2");
}

TEST(VerifyPlan, TensorShapesPositive) {
  Plan plan = makePlan();
  plan.tensors[0].shape = {1024, 0};
  EXPECT_EQ(verifyError(plan), "tensor 0 'embed.weight': shape [1024, 0] has a dimension that "
                               "is not positive");
  plan.tensors[0].shape = {-1, 256};
  EXPECT_THAT(verifyError(plan), HasSubstr("shape [-1, 256] has a dimension"));
}

TEST(VerifyPlan, StackedTensorNeedsPattern) {
  Plan plan = makePlan();
  plan.tensors[2].name = "layers.0.ffn.experts.0.w1.weight";
  EXPECT_EQ(verifyError(plan), "tensor 2 'layers.0.ffn.experts.0.w1.weight': stacked over 8 "
                               "experts but the name has no '{e}'");
}

TEST(VerifyPlan, PatternNeedsExperts) {
  Plan plan = makePlan();
  plan.tensors[2].experts = 0;
  EXPECT_EQ(verifyError(plan), "tensor 2 'layers.0.ffn.experts.{e}.w1.weight': the name has "
                               "'{e}' but experts is 0 (not a stacked tensor)");
}

TEST(VerifyPlan, StackedLeadingDimension) {
  Plan plan = makePlan();
  plan.tensors[3].shape[0] = 7;
  EXPECT_EQ(verifyError(plan), "tensor 3 'layers.0.ffn.experts.{e}.w1.scale': stacked over 8 "
                               "experts but shape [7, 128, 8] does not start with 8");
}

TEST(VerifyPlan, UniqueTensorNames) {
  Plan plan = makePlan();
  plan.tensors[4].name = "embed.weight";
  EXPECT_EQ(verifyError(plan), "tensor 4 'embed.weight': the name is also used by tensor 0");
}

TEST(VerifyPlan, UniqueProgramNames) {
  Plan plan = makePlan();
  plan.programs[1].name = "prefill";
  EXPECT_EQ(verifyError(plan), "program 1 'prefill': the name is also used by program 0");
  plan.programs[1].name = "";
  EXPECT_EQ(verifyError(plan), "program 1 has an empty name");
}

TEST(VerifyPlan, ModulesAndExecutables) {
  Plan plan = makePlan();
  plan.kernels[1].module = 1;
  EXPECT_EQ(verifyError(plan), "kernel 1 'test_norm': module 1 is out of range (the plan has 1 "
                               "modules; -1: none)");
  plan = makePlan();
  plan.modules[0].templateName.clear();
  EXPECT_EQ(verifyError(plan), "module 0 has an empty template name");
  plan = makePlan();
  plan.programs[0].fusions[0].executable = "no_such_executable";
  EXPECT_EQ(verifyError(plan), "program 'prefill': fusion 0 ('test_fused'): executable "
                               "'no_such_executable' is not a native executable of this runtime "
                               "(NativeExecutables.def)");
  plan = makePlan();
  plan.programs[0].fusions[0].executable = "attention_inverse_rope";
  EXPECT_EQ(verifyError(plan), "program 'prefill': fusion 0 ('test_fused'): executable "
                               "'attention_inverse_rope' runs 'attention' groups");
  plan = makePlan();
  plan.programs[0].fusions[0].module = 3;
  EXPECT_EQ(verifyError(plan), "program 'prefill': fusion 0 ('test_fused'): module 3 is out of "
                               "range (the plan has 1 modules; -1: none)");
  plan = makePlan();
  plan.programs[0].fusions[0].internal = {6}; // read by launch 3, outside the fusion
  EXPECT_EQ(verifyError(plan), "program 'prefill': fusion 0 ('test_fused'): internal value 6 "
                               "'layers.0.compressed' is used by launch 3 outside the fusion");
  plan = makePlan();
  plan.programs[0].fusions[0].internal = {7}; // written by launch 3 only
  EXPECT_EQ(verifyError(plan), "program 'prefill': fusion 0 ('test_fused'): internal value 7 "
                               "'logits' is used by launch 3 outside the fusion");
  plan = makePlan();
  plan.programs[0].fusions[0].internal = {1}; // a weight
  EXPECT_EQ(verifyError(plan), "program 'prefill': fusion 0 ('test_fused'): internal value 1 is "
                               "not an Activation value of the program");
  plan = makePlan();
  plan.programs[0].fusions[0].internal = {5}; // the boundary mix
  EXPECT_EQ(verifyError(plan), "program 'prefill': fusion 0 ('test_fused'): internal value 5 "
                               "'layers.0.pre_mix' is used by launch 3 outside the fusion");
}

TEST(VerifyPlan, KernelParameters) {
  Plan plan = makePlan();
  plan.kernels[0].params = dsc::abi::RmsNormParams{};
  EXPECT_EQ(verifyError(plan), "kernel 0 'test_embed' carries the parameters of 'rms_norm', "
                               "expected none (a kernel outside the vocabulary)");
  plan = makePlan();
  plan.kernels[6].params = dsc::abi::RmsNormParams{};
  EXPECT_EQ(verifyError(plan), "kernel 6 'linear' carries the parameters of 'rms_norm', "
                               "expected its own");
  plan = makePlan();
  plan.kernels[6].params = std::monostate{};
  EXPECT_EQ(verifyError(plan), "kernel 6 'linear' carries the parameters of no kernel, "
                               "expected its own");
  plan = makePlan();
  plan.kernels[5].constants.pop_back(); // multipliers [2, 6) no longer fit
  EXPECT_EQ(verifyError(plan), "kernel 5 'engram_hash': array parameter 'multipliers' (offset 2, "
                               "count 4) lies outside the kernel's 5 constants");
  plan = makePlan();
  plan.kernels[3].name.clear();
  EXPECT_EQ(verifyError(plan), "kernel 3 has an empty name");
}

TEST(LaunchesByLayer, FusionCountsOnce) {
  Plan plan = makePlan();
  // prefill: launch 0 (layer -1), launches 1-2 fused (layer 0), launch 3.
  EXPECT_EQ(launchesByLayer(plan.programs[0]), (std::map<int64_t, int64_t>{{-1, 2}, {0, 1}}));
  plan.programs[0].launches[2].fusion = -1;
  EXPECT_EQ(launchesByLayer(plan.programs[0]), (std::map<int64_t, int64_t>{{-1, 2}, {0, 2}}));
}

TEST(VerifyPlan, Fusions) {
  Plan plan = makePlan();
  plan.programs[0].launches[2].fusion = 1;
  EXPECT_EQ(verifyError(plan), "program 'prefill': launch 2: fusion 1 is out of range (the "
                               "program has 1 fusions)");
  plan = makePlan();
  plan.programs[0].launches[1].fusion = -3;
  EXPECT_EQ(verifyError(plan), "program 'prefill': launch 1: fusion -3 is invalid (-1: none)");
  plan = makePlan();
  plan.programs[0].fusions[0].kernel.clear();
  EXPECT_EQ(verifyError(plan), "program 'prefill': fusion 0: the kernel name is empty");
  plan = makePlan();
  plan.programs[0].fusions[0].layer = 1;
  EXPECT_EQ(verifyError(plan), "program 'prefill': launch 1: layer 0 differs from fusion 0 "
                               "('test_fused') of layer 1");
  plan = makePlan();
  plan.programs[0].launches[2].replay = true;
  EXPECT_EQ(verifyError(plan), "program 'prefill': launch 2: fusion 0 ('test_fused') mixes "
                               "replayed and full-prompt launches");
  // Launch 3 (layer -1) rejoining fusion 0 after launch 2 left it.
  plan = makePlan();
  plan.programs[0].launches[2].fusion = -1;
  plan.programs[0].launches[3].fusion = 0;
  EXPECT_EQ(verifyError(plan), "program 'prefill': launch 3: fusion 0 ('test_fused') resumes "
                               "after launch 1; its launches must be consecutive");
}

TEST(VerifyPlan, RowTiledFusions) {
  Plan plan = makePlan();
  plan.programs[0].fusions[0].tileRows = -1;
  EXPECT_EQ(verifyError(plan), "program 'prefill': fusion 0 ('test_fused'): tileRows is -1, must "
                               "not be negative");
  plan.programs[0].fusions[0].tileRows = 16; // its steps are test kernels
  EXPECT_EQ(verifyError(plan), "program 'prefill': launch 1: kernel 'test_norm' is not "
                               "row-independent, so it cannot be a step of the row-tiled fusion "
                               "0 ('test_fused')");
}

TEST(VerifyPlan, PrefillChunk) {
  Plan plan = makePlan(); // window 16, CED replay 16, conformance plan
  plan.model.prefillChunk = 31;
  EXPECT_EQ(verifyError(plan), "model: prefillChunk is 31, expected 0 (no chunking) or at least "
                               "2 x windowSize = 32");
  plan.model.cedReplayTokens = 20;
  plan.model.prefillChunk = 32;
  EXPECT_EQ(verifyError(plan), "model: prefillChunk is 32, expected at least 2 x cedReplayTokens "
                               "= 40 (the last chunk holds the CED replay)");
  plan.model.prefillChunk = 40;
  EXPECT_EQ(verifyError(plan), "model: prefillChunk is 40 in a conformance plan (layerBoundaries), "
                               "expected 0: boundary dumps cover the whole prompt");
  plan.model.layerBoundaries = false;
  plan.programs[0].boundaries.clear();
  EXPECT_TRUE(verifyPlan(plan).isOk()) << verifyPlan(plan).message();
  plan.model.prefillChunk = -1;
  EXPECT_EQ(verifyError(plan), "model: prefillChunk is -1, must not be negative");
}

// Fuzzing (issue 15, test/fuzz/corpus/plan/regress-window-int64-max.dscp): a
// windowSize of INT64_MAX in a chunked plan overflowed 2 x windowSize. Every
// model count but the chunk is held to kMaxCount (2^24), as maxSeqLen was.
TEST(VerifyPlan, ModelCountsAreCapped) {
  Plan plan = makePlan();
  plan.model.layerBoundaries = false;
  plan.programs[0].boundaries.clear();
  plan.model.prefillChunk = 64;
  ASSERT_TRUE(verifyPlan(plan).isOk()) << verifyPlan(plan).message();
  plan.model.windowSize = INT64_MAX;
  EXPECT_EQ(verifyError(plan), "model: windowSize is 9223372036854775807, expected at most 16777216");
  plan = makePlan();
  plan.model.cedReplayTokens = kMaxCount + 1;
  EXPECT_EQ(verifyError(plan), "model: cedReplayTokens is 16777217, expected at most 16777216");
  plan = makePlan();
  plan.model.maxSeqLen = INT64_MAX;
  EXPECT_EQ(verifyError(plan), "model: maxSeqLen is 9223372036854775807, expected at most 16777216");
  plan = makePlan(); // the chunk is not a config size: only its own rules bound it
  plan.model.layerBoundaries = false;
  plan.programs[0].boundaries.clear();
  plan.model.prefillChunk = INT64_MAX;
  EXPECT_TRUE(verifyPlan(plan).isOk()) << verifyPlan(plan).message();
}

TEST(PlanFile, RoundTripsChunkAndTiles) {
  Plan plan = makePlan();
  plan.model.layerBoundaries = false;
  plan.programs[0].boundaries.clear();
  plan.model.prefillChunk = 64;
  plan.programs[0].fusions[0].tileRows = 0;
  plan.programs[0].fusions.push_back({"indexer", 3, 128}); // unused: still round-trips
  plan.programs[0].peakBytes = 1u << 20;
  plan.programs[0].peakBytesUntiled = (1ull << 40) + 64;
  Expected<Plan> back = parsePlan(serializePlan(plan), "test.dscp");
  ASSERT_TRUE(back.hasValue()) << back.status().message();
  expectSamePlan(plan, *back);
}

TEST(VerifyPlan, LaunchLayer) {
  Plan plan = makePlan();
  plan.programs[1].launches[0].layer = -2;
  EXPECT_EQ(verifyError(plan), "program 'decode': launch 0 (kernel 0 'test_embed'): layer -2 is "
                               "invalid (-1: outside blocks)");
}
