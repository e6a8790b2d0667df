//===- PlanJsonTest.cpp - Schema-driven plan JSON and embedded includes ---===//
//
// compiler/PlanJson.h: schemas that include each other resolve among the
// embedded files only (nested includes, a missing include is an error naming
// it, never a file on disk); hostile buffers are refused, not printed; the
// embedded set is exactly runtime/schema/*.fbs; a plan's JSON names the
// schema's fields, empties kernel binaries and converts back to the same plan.
//===----------------------------------------------------------------------===//
#include "compiler/PlanJson.h"
#include "dsc/runtime/PlanFile.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <unistd.h>

using namespace dsc::compiler;
using namespace dsc::runtime;
using ::testing::HasSubstr;
using ::testing::Not;

namespace {

// root.fbs includes mid.fbs, which includes leaf.fbs: a table of each.
constexpr std::string_view kLeaf = R"(namespace t;
table Leaf { code: int = 7; label: string; }
)";
constexpr std::string_view kMid = R"(include "leaf.fbs";
namespace t;
enum Colour : ubyte { Red = 0, Green = 1 }
table Mid { leaves: [Leaf]; colour: Colour = Red; }
)";
constexpr std::string_view kRoot = R"(include "mid.fbs";
namespace t;
file_identifier "TST1";
table Root { mid: Mid; sizes: [long]; }
root_type Root;
)";
const std::vector<SchemaFile> kFiles = {
    {"leaf.fbs", kLeaf}, {"mid.fbs", kMid}, {"root.fbs", kRoot}};

TEST(PlanJson, NestedIncludesResolveAmongTheGivenFiles) {
  std::string_view json = R"({"mid": {"leaves": [{"code": 3, "label": "a"}, {"label": "b"}],
                              "colour": "Green"}, "sizes": [1, -2]})";
  Expected<std::vector<uint8_t>> bytes = jsonToFlatbuffer(json, kFiles, "root.fbs");
  ASSERT_TRUE(bytes) << bytes.status().message();
  Expected<std::string> text = flatbufferToJson(*bytes, kFiles, "root.fbs");
  ASSERT_TRUE(text) << text.status().message();
  // Defaults printed (code 7 of the second leaf), enums by name; it fits
  // on one line.
  EXPECT_EQ(*text, "{\"mid\": {\"leaves\": [{\"code\": 3, \"label\": \"a\"}, {\"code\": 7, "
                   "\"label\": \"b\"}], \"colour\": \"Green\"}, \"sizes\": [1, -2]}\n");
  // And back: the same buffer contents.
  Expected<std::vector<uint8_t>> again = jsonToFlatbuffer(*text, kFiles, "root.fbs");
  ASSERT_TRUE(again) << again.status().message();
  Expected<std::string> text2 = flatbufferToJson(*again, kFiles, "root.fbs");
  ASSERT_TRUE(text2);
  EXPECT_EQ(*text2, *text);
}

TEST(PlanJson, IncludesNeverReadTheDisk) {
  // A leaf.fbs in the working directory must not stand in for a missing one.
  std::string dir = ::testing::TempDir() + "dsc_plan_json_" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/leaf.fbs") << kLeaf;
  std::filesystem::path old = std::filesystem::current_path();
  std::filesystem::current_path(dir);
  std::vector<SchemaFile> noLeaf = {{"mid.fbs", kMid}, {"root.fbs", kRoot}};
  Expected<std::string> text = flatbufferToJson(std::vector<uint8_t>(64, 0), noLeaf, "root.fbs");
  std::filesystem::current_path(old);
  std::filesystem::remove_all(dir);
  ASSERT_FALSE(text);
  EXPECT_THAT(text.status().message(), HasSubstr("root.fbs does not parse"));
  EXPECT_THAT(text.status().message(), HasSubstr("leaf.fbs"));
}

TEST(PlanJson, UnknownRootAndBadJsonAreErrors) {
  Expected<std::string> text = flatbufferToJson({}, kFiles, "plan.fbs");
  ASSERT_FALSE(text);
  EXPECT_THAT(text.status().message(),
              HasSubstr("schema 'plan.fbs' is not embedded (embedded: leaf.fbs, mid.fbs, root.fbs)"));
  Expected<std::vector<uint8_t>> bytes = jsonToFlatbuffer(R"({"nope": 1})", kFiles, "root.fbs");
  ASSERT_FALSE(bytes);
  EXPECT_THAT(bytes.status().message(), HasSubstr("JSON does not match root.fbs"));
  EXPECT_THAT(bytes.status().message(), HasSubstr("nope"));
}

TEST(PlanJson, HostileBuffersAreRefused) {
  Expected<std::vector<uint8_t>> bytes =
      jsonToFlatbuffer(R"({"mid": {"leaves": [{"label": "x"}]}, "sizes": [5]})", kFiles,
                       "root.fbs");
  ASSERT_TRUE(bytes);
  EXPECT_EQ(flatbufferToJson(std::span(bytes->data(), 4), kFiles, "root.fbs").status().code(),
            StatusCode::DataLoss);
  // Every truncation: refused, or (only trailing padding cut) the same
  // JSON; an offset pointing far out: refused.
  Expected<std::string> whole = flatbufferToJson(*bytes, kFiles, "root.fbs");
  ASSERT_TRUE(whole);
  size_t refused = 0;
  for (size_t n = 0; n < bytes->size(); ++n) {
    std::vector<uint8_t> prefix(bytes->begin(), bytes->begin() + long(n));
    Expected<std::string> text = flatbufferToJson(prefix, kFiles, "root.fbs");
    if (text)
      EXPECT_EQ(*text, *whole) << n << " bytes";
    else
      ++refused;
  }
  EXPECT_GE(refused, bytes->size() - 8);
  std::vector<uint8_t> bad = *bytes;
  bad[0] = 0xff;
  bad[1] = 0xff;
  Expected<std::string> text = flatbufferToJson(bad, kFiles, "root.fbs");
  ASSERT_FALSE(text);
  EXPECT_THAT(text.status().message(), HasSubstr("not a valid root.fbs buffer"));
}

TEST(PlanJson, EmbedsEverySchemaFileOfRuntimeSchema) {
  std::vector<std::string> onDisk, embedded;
  for (const auto &entry :
       std::filesystem::directory_iterator(std::string(DSC_SOURCE_DIR) + "/runtime/schema"))
    if (entry.path().extension() == ".fbs")
      onDisk.push_back(entry.path().filename().string());
  std::sort(onDisk.begin(), onDisk.end());
  for (const SchemaFile &file : embeddedPlanSchemas()) {
    embedded.emplace_back(file.name);
    std::ifstream in(std::string(DSC_SOURCE_DIR) + "/runtime/schema/" + std::string(file.name));
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    EXPECT_EQ(file.text, text) << file.name << " is stale: rebuild";
  }
  EXPECT_EQ(embedded, onDisk);
  EXPECT_THAT(embedded, ::testing::Contains("plan.fbs"));
}

Plan smallPlan() {
  Plan plan;
  plan.model.name = "cfg.json";
  plan.model.nLayers = 1;
  plan.model.cedMode = "exact";
  plan.model.cedReplayTokens = 32;
  plan.model.windowSize = 16; // the ring's capacity (verifyPlan bounds it by the facts)
  plan.model.maxSeqLen = 64;
  plan.tensors = {{"embed.weight", DType::BF16, {16, 8}, TensorKind::Weight, 0, std::nullopt}};
  StateBuffer ring;
  ring.name = "layers.0.window";
  ring.kind = StateKind::WindowRing;
  ring.layer = 0;
  ring.capacity = 16;
  ring.layout = {128, 32, 1, 1, 128, 4, 132, 64, 0}; // numerics::swaKvFormat(128)
  plan.states = {ring};
  KernelSpec embed;
  embed.name = "test_kernel"; // outside the vocabulary: no signature to meet
  embed.module = 0;
  dsc::abi::RmsNormParams norm;
  norm.eps = 1e-6;
  plan.kernels = {embed, KernelSpec::of(norm)}; // the second not launched
  plan.modules = {{"test_kernel", std::vector<uint8_t>(4096, 0x7f), ".version 8.0 // ptx text"}};
  Program p;
  p.name = "prefill";
  p.values.resize(2);
  p.values[0].kind = ValueKind::Input;
  p.values[0].dtype = DType::I32;
  p.values[0].shape = {kTokens};
  p.values[1].shape = {kTokens, 8};
  p.values[1].name = "embed";
  p.inputs = {0};
  p.outputs = {1};
  Launch launch;
  launch.kernel = 0;
  launch.inputs = {0};
  launch.outputs = {1};
  launch.layer = 0;
  launch.replay = true;
  launch.fusion = 0;
  p.launches = {launch};
  p.fusions = {{"entry", 0, 0}};
  plan.programs = {p};
  return plan;
}

TEST(PlanJson, PlanFieldsBinariesEmptiedAndBackToTheSamePlan) {
  Plan plan = smallPlan();
  Expected<std::string> json = planToJson(plan);
  ASSERT_TRUE(json) << json.status().message();
  EXPECT_THAT(*json, HasSubstr("\"ced_mode\": \"exact\""));
  EXPECT_THAT(*json, HasSubstr("\"ced_replay_tokens\": 32"));
  EXPECT_THAT(*json, HasSubstr("{\"kernel\": 0, \"inputs\": [0], \"outputs\": [1], \"layer\": 0, "
                               "\"replay\": true, \"fusion\": 0}"));
  EXPECT_THAT(*json, HasSubstr("{\"kernel\": \"entry\", \"layer\": 0, \"tile_rows\": 0, \"module\": -1, \"internal\": []}"));
  EXPECT_THAT(*json, HasSubstr("\"kind\": \"WindowRing\""));
  EXPECT_THAT(*json, HasSubstr("\"shape\": [-1, 8]"));
  EXPECT_THAT(*json, HasSubstr("\"cubin\": []"));
  EXPECT_THAT(*json, HasSubstr("\"ptx\": \"\""));
  EXPECT_THAT(*json, Not(HasSubstr("127")));
  EXPECT_THAT(*json, Not(HasSubstr("ptx text")));

  // The JSON through the embedded schema is a plan file again: the loader
  // reads it back to the plan without its binaries.
  Expected<std::vector<uint8_t>> bytes = jsonToFlatbuffer(*json, embeddedPlanSchemas(), "plan.fbs");
  ASSERT_TRUE(bytes) << bytes.status().message();
  Expected<Plan> back = parsePlan(*bytes, "from-json");
  ASSERT_TRUE(back) << back.status().message();
  Plan expected = plan;
  expected.modules[0].cubin.clear();
  expected.modules[0].ptx.clear();
  EXPECT_EQ(serializePlan(*back), serializePlan(expected));
  Expected<std::string> again = planToJson(*back);
  ASSERT_TRUE(again);
  EXPECT_EQ(*again, *json);
}

} // namespace
