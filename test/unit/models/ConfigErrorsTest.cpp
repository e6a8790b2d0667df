//===- ConfigErrorsTest.cpp - One test per rejected config ----------------===//
//
// Each test mutates the released config in memory and checks the exact
// message: file, key (as the file spells it, with the list index), layer and
// expected value. docs/model-spec.md lists the rules.
//===----------------------------------------------------------------------===//
#include "ConfigTestUtil.h"

#include <gtest/gtest.h>

using namespace dsc::test;
using llvm::json::Array;
using llvm::json::Object;

namespace {

std::string infError(const std::function<void(Object &)> &mutate) {
  return errorAfter(kReleasedInference, mutate);
}
std::string hfError(const std::function<void(Object &)> &mutate) {
  return errorAfter(kReleasedHF, mutate);
}
Object &text(Object &root) { return *root.getObject("text_config"); }

// --- Parsing, format detection, types ----------------------------------------

TEST(ConfigErrors, InvalidJson) {
  llvm::Expected<dsc::models::ModelSpec> spec =
      dsc::models::importConfigText("{\"dim\": 5120,", "config.json");
  ASSERT_FALSE(bool(spec));
  std::string msg = llvm::toString(spec.takeError());
  EXPECT_EQ(msg.rfind("config.json: invalid JSON: ", 0), 0u) << msg;
}

TEST(ConfigErrors, NotAnObject) {
  llvm::Expected<dsc::models::ModelSpec> spec =
      dsc::models::importConfigText("[1, 2]", "config.json");
  ASSERT_FALSE(bool(spec));
  EXPECT_EQ(llvm::toString(spec.takeError()),
            "config.json: expected a JSON object at the top level, got array");
}

TEST(ConfigErrors, UnknownFormat) {
  llvm::Expected<dsc::models::ModelSpec> spec =
      dsc::models::importConfigText("{\"hello\": 1}", "model.json");
  ASSERT_FALSE(bool(spec));
  EXPECT_EQ(llvm::toString(spec.takeError()),
            "model.json: not a DeepSeek-V4.1 config: expected a "
            "'text_config' object (HF config.json) or the reference keys "
            "'dim' and 'n_layers' (inference/config.json)");
}

TEST(ConfigErrors, BothFormats) {
  EXPECT_EQ(hfError([](Object &o) { o["dim"] = 5120; }),
            "config.json: cannot tell the config format: it has both HF keys "
            "('text_config') and reference keys ('dim'/'n_layers'); expected "
            "one format");
}

TEST(ConfigErrors, MistypedKey) {
  EXPECT_EQ(infError([](Object &o) { o["dim"] = "5120"; }),
            "config.json: key 'dim': expected an integer, got string");
}

TEST(ConfigErrors, MistypedKeyHf) {
  EXPECT_EQ(hfError([](Object &o) { text(o)["hidden_size"] = "5120"; }),
            "config.json: key 'text_config.hidden_size': expected an "
            "integer, got string");
}

TEST(ConfigErrors, NestedHfKeyMistyped) {
  EXPECT_EQ(hfError([](Object &o) {
              (*text(o).getObject("rope_scaling"))["factor"] = "16";
            }),
            "config.json: key 'text_config.rope_scaling.factor': expected a "
            "number, got string");
}

TEST(ConfigErrors, FractionalInteger) {
  EXPECT_EQ(infError([](Object &o) { o["n_heads"] = 64.5; }),
            "config.json: key 'n_heads': expected an integer, got number 64.5");
}

TEST(ConfigErrors, MistypedBoolean) {
  EXPECT_EQ(infError([](Object &o) { o["norm_topk_prob"] = 1; }),
            "config.json: key 'norm_topk_prob': expected a boolean, got "
            "number 1");
}

TEST(ConfigErrors, MistypedListEntry) {
  EXPECT_EQ(infError([](Object &o) { arrayAt(o, "compress_ratios")[3] = "2"; }),
            "config.json: key 'compress_ratios[3]': expected an integer, got "
            "string");
}

TEST(ConfigErrors, ListExpected) {
  EXPECT_EQ(infError([](Object &o) { o["kv_source_layers"] = 2; }),
            "config.json: key 'kv_source_layers': expected a list of "
            "integers, got number 2");
}

TEST(ConfigErrors, MissingRequiredKey) {
  EXPECT_EQ(infError([](Object &o) { o.erase("dim"); }),
            "config.json: key 'dim': missing; expected an integer (required)");
}

TEST(ConfigErrors, MissingRequiredKeyHf) {
  EXPECT_EQ(hfError([](Object &o) { text(o).erase("kv_source_layer_ids"); }),
            "config.json: key 'text_config.kv_source_layer_ids': missing; "
            "expected a list of integers (required)");
}

TEST(ConfigErrors, MissingEngramKey) {
  EXPECT_EQ(infError([](Object &o) { o.erase("engram_head_dim"); }),
            "config.json: key 'engram_head_dim': missing; expected an "
            "integer (required when engram_layer_ids is not empty)");
}

TEST(ConfigErrors, MissingDSparkKey) {
  EXPECT_EQ(infError([](Object &o) { o.erase("dspark_target_layer_ids"); }),
            "config.json: key 'dspark_target_layer_ids': missing; expected a "
            "list of integers (required when n_mtp_layers > 0)");
}

TEST(ConfigErrors, UnknownInferenceKey) {
  EXPECT_EQ(infError([](Object &o) { o["kv_source_layer"] = intArray({2}); }),
            "config.json: key 'kv_source_layer': unknown key; expected a "
            "reference ModelArgs field (see docs/model-spec.md)");
}

TEST(ConfigErrors, HfHardCodedFacts) {
  EXPECT_EQ(hfError([](Object &o) { text(o)["num_key_value_heads"] = 2; }),
            "config.json: key 'text_config.num_key_value_heads': 2; expected "
            "1 (the latent KV is a single head shared by all query heads)");
  EXPECT_EQ(hfError([](Object &o) {
              (*o.getObject("quantization_config"))["weight_block_size"] =
                  intArray({128, 128});
            }),
            "config.json: key 'quantization_config.weight_block_size': "
            "expected [32, 32] (FP8 weights carry one scale per 32x32 block)");
  EXPECT_EQ(hfError([](Object &o) {
              (*text(o).getObject("rope_scaling"))["rope_type"] = "linear";
            }),
            "config.json: key 'text_config.rope_scaling.rope_type': "
            "\"linear\"; expected \"yarn\" (ratio > 0 layers use YaRN)");
}

// --- Sizes, formats, divisibility --------------------------------------------

TEST(ConfigErrors, NonPositiveSize) {
  EXPECT_EQ(infError([](Object &o) { o["hc_mult"] = 0; }),
            "config.json: key 'hc_mult': 0; expected a positive integer");
}

// Issue 15: sizes far beyond any model compiled to nonsense (a 768 GiB
// activation peak, negative parameter counts) or never finished (a
// 3000-gram Engram's prime search); each has an upper limit, named with the
// key in the message.
TEST(ConfigErrors, SizesBeyondTheirLimits) {
  const std::pair<const char *, int64_t> cases[] = {
      {"engram_max_ngram_size", 3000},          {"candidate_topk_blocks", (1LL << 32) + 1},
      {"engram_head_dim", 1LL << 62},           {"index_n_heads", (1LL << 32) + 1},
      {"window_size", 1LL << 62},               {"hc_sinkhorn_iters", 1000000000},
      {"dim", 1LL << 62},                       {"n_routed_experts", 100000000},
      {"vocab_size", (1LL << 24) + 1},          {"n_layers", 1025}};
  const std::pair<const char *, int64_t> limits[] = {
      {"engram_max_ngram_size", 16},       {"candidate_topk_blocks", 1LL << 20},
      {"engram_head_dim", 4096},           {"index_n_heads", 1024},
      {"window_size", 1LL << 20},          {"hc_sinkhorn_iters", 1000},
      {"dim", 1LL << 16},                  {"n_routed_experts", 1LL << 16},
      {"vocab_size", 1LL << 24},           {"n_layers", 1024}};
  for (size_t i = 0; i < std::size(cases); ++i) {
    const auto [key, value] = cases[i];
    EXPECT_EQ(infError([&](Object &o) { o[key] = value; }),
              std::string("config.json: key '") + key + "': " + std::to_string(value) +
                  " is too large; expected at most " + std::to_string(limits[i].second) +
                  " (dsc's limit for this size, far above the released model)");
  }
  // The HF spelling names the key as that file writes it.
  EXPECT_EQ(hfError([](Object &o) { text(o)["num_attention_heads"] = 5000; }),
            "config.json: key 'text_config.num_attention_heads': 5000 is too large; expected "
            "at most 1024 (dsc's limit for this size, far above the released model)");
}

TEST(ConfigErrors, TooManyActivatedExperts) {
  EXPECT_EQ(infError([](Object &o) { o["n_activated_experts"] = 385; }),
            "config.json: key 'n_activated_experts': 385 exceeds "
            "n_routed_experts 384; expected at most 384");
}

TEST(ConfigErrors, DenseDtype) {
  EXPECT_EQ(infError([](Object &o) { o["dtype"] = "bf16"; }),
            "config.json: key 'dtype': \"bf16\"; expected \"fp8\" (dsc "
            "compiles FP8 dense weights only)");
}

TEST(ConfigErrors, DenseDtypeHf) {
  EXPECT_EQ(hfError([](Object &o) {
              (*o.getObject("quantization_config"))["quant_method"] = "bf16";
            }),
            "config.json: key 'quantization_config.quant_method': \"bf16\"; "
            "expected \"fp8\" (dsc compiles FP8 dense weights only)");
}

TEST(ConfigErrors, ScoreFunc) {
  EXPECT_EQ(infError([](Object &o) { o["score_func"] = "softmax"; }),
            "config.json: key 'score_func': \"softmax\"; expected "
            "\"sqrtsoftplus\" (the only gate score dsc implements)");
}

TEST(ConfigErrors, SharedExperts) {
  EXPECT_EQ(infError([](Object &o) { o["n_shared_experts"] = 2; }),
            "config.json: key 'n_shared_experts': 2; expected 1 (the "
            "reference builds exactly one shared expert)");
}

TEST(ConfigErrors, DimNotMultipleOf32) {
  EXPECT_EQ(infError([](Object &o) { o["dim"] = 5104; }),
            "config.json: key 'dim': 5104 is not a multiple of 32; expected "
            "a multiple of 32 (K of the FP8/FP4 GEMMs wq_a, wkv, shared and "
            "routed experts w1/w3 is quantised in blocks of 32)");
}

TEST(ConfigErrors, QLoraRankNotMultipleOf32) {
  EXPECT_EQ(infError([](Object &o) { o["q_lora_rank"] = 1290; }),
            "config.json: key 'q_lora_rank': 1290 is not a multiple of 32; "
            "expected a multiple of 32 (K of the FP8 GEMMs wq_b and indexer "
            "wq_b is quantised in blocks of 32)");
}

TEST(ConfigErrors, MoeInterDimNotMultipleOf32) {
  EXPECT_EQ(infError([](Object &o) { o["moe_inter_dim"] = 2320; }),
            "config.json: key 'moe_inter_dim': 2320 is not a multiple of 32; "
            "expected a multiple of 32 (K of the expert w2 GEMMs is quantised "
            "in blocks of 32)");
}

TEST(ConfigErrors, HeadDimNotMultipleOf32) {
  EXPECT_EQ(infError([](Object &o) { o["head_dim"] = 528; }),
            "config.json: key 'head_dim': 528 is not a multiple of 32; "
            "expected a multiple of 32 (window KV is FP8-quantised in blocks "
            "of 32 over all head_dim channels, compressed KV in FP4 blocks of "
            "16)");
}

TEST(ConfigErrors, IndexHeadDimNotMultipleOf32) {
  EXPECT_EQ(infError([](Object &o) { o["index_head_dim"] = 112; }),
            "config.json: key 'index_head_dim': 112 is not a multiple of 32; "
            "expected a multiple of 32 (indexer queries and keys are "
            "FP4-quantised in blocks of 32)");
}

TEST(ConfigErrors, HeadsNotDivisibleByGroups) {
  EXPECT_EQ(infError([](Object &o) { o["o_groups"] = 7; }),
            "config.json: key 'o_groups': n_heads 64 is not divisible by "
            "o_groups 7; expected a divisor of n_heads (each output group "
            "takes whole heads)");
}

TEST(ConfigErrors, OutputWidthNotMultipleOf32) {
  EXPECT_EQ(infError([](Object &o) { o["o_lora_rank"] = 1022; }),
            "config.json: key 'o_lora_rank': o_groups*o_lora_rank = 8*1022 = "
            "8176 is not a multiple of 32; expected a multiple of 32 (K of "
            "the FP8 GEMM wo_b is quantised in blocks of 32)");
}

TEST(ConfigErrors, RopeHeadDimOdd) {
  EXPECT_EQ(infError([](Object &o) { o["rope_head_dim"] = 63; }),
            "config.json: key 'rope_head_dim': 63 is odd; expected an even "
            "number (RoPE rotates interleaved pairs)");
}

TEST(ConfigErrors, RopeHeadDimAboveHeadDim) {
  EXPECT_EQ(infError([](Object &o) { o["rope_head_dim"] = 576; }),
            "config.json: key 'rope_head_dim': 576 exceeds head_dim 512; "
            "expected at most 512 (RoPE rotates the last rope_head_dim "
            "channels of a head)");
}

TEST(ConfigErrors, RopeHeadDimAboveIndexHeadDim) {
  EXPECT_EQ(infError([](Object &o) { o["rope_head_dim"] = 160; }),
            "config.json: key 'index_head_dim': 128 is smaller than "
            "rope_head_dim 160; expected at least 160 (the indexer rotates "
            "the last rope_head_dim channels)");
}

TEST(ConfigErrors, YarnBeta) {
  EXPECT_EQ(infError([](Object &o) { o["beta_slow"] = 0; }),
            "config.json: key 'beta_slow': 0; expected a number > 0 "
            "(YaRN takes log(original_seq_len / (2 pi beta)))");
}

// --- CSA2 schedule --------------------------------------------------------------

TEST(ConfigErrors, CompressRatiosLength) {
  EXPECT_EQ(infError([](Object &o) { arrayAt(o, "compress_ratios").pop_back(); }),
            "config.json: key 'compress_ratios': expected 43 entries "
            "(n_layers 40 + n_mtp_layers 3), got 42");
}

TEST(ConfigErrors, NegativeRatio) {
  EXPECT_EQ(infError([](Object &o) { arrayAt(o, "compress_ratios")[5] = -1; }),
            "config.json: key 'compress_ratios[5]': layer 5 has "
            "compress_ratio -1; expected 0 (window only) or a positive ratio");
}

TEST(ConfigErrors, DSparkStageRatio) {
  EXPECT_EQ(infError([](Object &o) { arrayAt(o, "compress_ratios")[41] = 2; }),
            "config.json: key 'compress_ratios[41]': DSpark stage layer 41 "
            "has compress_ratio 2; expected 0 (DSpark stages attend over "
            "their window only)");
}

TEST(ConfigErrors, KvSourceOfOtherRatio) {
  EXPECT_EQ(infError([](Object &o) { arrayAt(o, "compress_ratios")[5] = 1; }),
            "config.json: key 'compress_ratios[5]': layer 5 has "
            "compress_ratio 1 but its kv source layer 2 has ratio 2; expected "
            "compress_ratio 2 (a CSA2 layer reads the compressed KV of the "
            "nearest kv source at or below it)");
}

TEST(ConfigErrors, KvSourceOfOtherRatioHf) {
  EXPECT_EQ(hfError([](Object &o) {
              (*text(o).getArray("compress_ratios"))[5] = 1;
            }),
            "config.json: key 'text_config.compress_ratios[5]': layer 5 has "
            "compress_ratio 1 but its kv source layer 2 has ratio 2; expected "
            "compress_ratio 2 (a CSA2 layer reads the compressed KV of the "
            "nearest kv source at or below it)");
}

TEST(ConfigErrors, NoKvSourceBelow) {
  EXPECT_EQ(infError([](Object &o) { arrayAt(o, "compress_ratios")[1] = 2; }),
            "config.json: key 'compress_ratios[1]': layer 1 has "
            "compress_ratio 2 but no kv source at or below it; expected 0 or "
            "a kv_source_layers entry <= 1 with compress_ratio 2");
}

TEST(ConfigErrors, KvSourcesNotSorted) {
  EXPECT_EQ(infError([](Object &o) {
              o["kv_source_layers"] = intArray({2, 14, 8, 20});
            }),
            "config.json: key 'kv_source_layers[2]': layer 8 does not follow "
            "layer 14; expected a strictly increasing list");
}

TEST(ConfigErrors, KvSourceOutOfRange) {
  EXPECT_EQ(infError([](Object &o) {
              o["kv_source_layers"] = intArray({2, 8, 14, 20, 41});
            }),
            "config.json: key 'kv_source_layers[4]': layer 41 is out of "
            "range; expected a backbone layer id in [0, 40)");
}

TEST(ConfigErrors, KvSourceWithRatioZero) {
  EXPECT_EQ(infError([](Object &o) {
              o["kv_source_layers"] = intArray({1, 2, 8, 14, 20});
            }),
            "config.json: key 'kv_source_layers[0]': layer 1 has "
            "compress_ratio 0; expected a layer with compress_ratio > 0 (a kv "
            "source compresses its own KV)");
}

TEST(ConfigErrors, IndexSourcesNotSorted) {
  EXPECT_EQ(infError([](Object &o) {
              o["index_source_layers"] =
                  intArray({2, 8, 14, 20, 28, 24, 32, 36});
            }),
            "config.json: key 'index_source_layers[5]': layer 24 does not "
            "follow layer 28; expected a strictly increasing list");
}

TEST(ConfigErrors, IndexSourceWithRatioZero) {
  EXPECT_EQ(infError([](Object &o) {
              o["index_source_layers"] =
                  intArray({2, 8, 14, 20, 24, 28, 32, 36, 40});
            }),
            "config.json: key 'index_source_layers[8]': layer 40 is out of "
            "range; expected a backbone layer id in [0, 40)");
  EXPECT_EQ(infError([](Object &o) {
              o["index_source_layers"] =
                  intArray({0, 2, 8, 14, 20, 24, 28, 32, 36});
            }),
            "config.json: key 'index_source_layers[0]': layer 0 has "
            "compress_ratio 0; expected a layer with compress_ratio > 0 (an "
            "index source scores compressed positions)");
}

TEST(ConfigErrors, KvSourceNotIndexSource) {
  EXPECT_EQ(infError([](Object &o) {
              o["index_source_layers"] = intArray({2, 14, 20, 24, 28, 32, 36});
            }),
            "config.json: key 'index_source_layers': kv source layer 8 is "
            "missing; expected every kv source to be an index source too (it "
            "computes the index keys)");
}

TEST(ConfigErrors, IndexSourceWithoutKvSource) {
  EXPECT_EQ(infError([](Object &o) {
              arrayAt(o, "compress_ratios")[1] = 2;
              o["index_source_layers"] =
                  intArray({1, 2, 8, 14, 20, 24, 28, 32, 36});
            }),
            "config.json: key 'index_source_layers[0]': index source layer 1 "
            "has no kv source at or below it; expected a kv_source_layers "
            "entry <= 1 with compress_ratio 2");
}

TEST(ConfigErrors, IndexSourceOfOtherRatioThanKvSource) {
  EXPECT_EQ(infError([](Object &o) {
              o["kv_source_layers"] = intArray({2, 8, 14});
            }),
            "config.json: key 'index_source_layers[3]': index source layer 20 "
            "has compress_ratio 1 but its kv source layer 14 has ratio 2; "
            "expected compress_ratio 2 (an index source scores the keys of "
            "the nearest kv source at or below it)");
}

// --- Candidate pool ---------------------------------------------------------------

TEST(ConfigErrors, CandidateSourceOutOfRange) {
  EXPECT_EQ(infError([](Object &o) { o["candidate_source_layer"] = 40; }),
            "config.json: key 'candidate_source_layer': layer 40 is out of "
            "range; expected -1 (off) or a backbone layer id in [0, 40)");
}

TEST(ConfigErrors, CandidateSourceNotFull) {
  EXPECT_EQ(infError([](Object &o) { o["candidate_source_layer"] = 24; }),
            "config.json: key 'candidate_source_layer': layer 24 is not a "
            "full layer (it is an index source but no kv source); expected a "
            "layer in both kv_source_layers and index_source_layers");
}

TEST(ConfigErrors, CandidateSourceInEncoder) {
  EXPECT_EQ(infError([](Object &o) { o["candidate_source_layer"] = 14; }),
            "config.json: key 'candidate_source_layer': layer 14 is an "
            "encoder layer; expected a decoder layer (id >= n_layers/2 = 20)");
}

TEST(ConfigErrors, CandidateConsumerOfOtherRatio) {
  // Layers 28..39 at ratio 2 with a new Full layer 28: index source 28 would
  // mask ratio-2 scores with layer 20's ratio-1 pool.
  EXPECT_EQ(infError([](Object &o) {
              Array &r = arrayAt(o, "compress_ratios");
              for (int i = 28; i < 40; ++i)
                r[i] = 2;
              o["kv_source_layers"] = intArray({2, 8, 14, 20, 28});
            }),
            "config.json: key 'index_source_layers[5]': index source layer 28 "
            "has compress_ratio 2 but scores inside the candidate pool of "
            "layer 20 with ratio 1; expected compress_ratio 1 (every index "
            "source after the candidate source masks its scores with that "
            "pool)");
}

TEST(ConfigErrors, CandidateBlocks) {
  EXPECT_EQ(infError([](Object &o) { o["candidate_block_size"] = 0; }),
            "config.json: key 'candidate_block_size': 0; expected a positive "
            "integer");
}

// --- Engram -------------------------------------------------------------------------

TEST(ConfigErrors, EngramLayerOutOfRange) {
  EXPECT_EQ(infError([](Object &o) { o["engram_layer_ids"] = intArray({1, 40}); }),
            "config.json: key 'engram_layer_ids[1]': layer 40 is out of "
            "range; expected a backbone layer id in [0, 40)");
}

TEST(ConfigErrors, EngramNumEmbeddingsLength) {
  EXPECT_EQ(infError([](Object &o) {
              o["engram_num_embeddings"] = intArray({384006168});
            }),
            "config.json: key 'engram_num_embeddings': expected 2 entries "
            "(one per engram_layer_ids entry), got 1");
}

TEST(ConfigErrors, EngramNumEmbeddingsValue) {
  EXPECT_EQ(infError([](Object &o) {
              o["engram_num_embeddings"] = intArray({384006168, 384016683});
            }),
            "config.json: key 'engram_num_embeddings[1]': Engram layer 14 has "
            "384016683 table rows; expected 384016682 (the sum of its 24 "
            "drawn primes)");
}

TEST(ConfigErrors, EngramNumEmbeddingsValueHf) {
  EXPECT_EQ(hfError([](Object &o) {
              text(o)["engram_num_embeddings"] = intArray({1, 384016682});
            }),
            "config.json: key 'text_config.engram_num_embeddings[0]': Engram "
            "layer 1 has 1 table rows; expected 384006168 (the sum of its 24 "
            "drawn primes)");
}

TEST(ConfigErrors, EngramHeadDim) {
  EXPECT_EQ(infError([](Object &o) { o["engram_head_dim"] = 250; }),
            "config.json: key 'engram_head_dim': 250 is not a multiple of 32; "
            "expected a multiple of 32 (Engram table rows carry one scale per "
            "32 values)");
}

TEST(ConfigErrors, EngramNgram) {
  EXPECT_EQ(infError([](Object &o) { o["engram_max_ngram_size"] = 1; }),
            "config.json: key 'engram_max_ngram_size': 1; expected at least 2 "
            "(Engram hashes 2-grams and longer)");
}

TEST(ConfigErrors, EngramPadId) {
  EXPECT_EQ(infError([](Object &o) { o["engram_pad_id"] = 129280; }),
            "config.json: key 'engram_pad_id': token 129280 is out of range; "
            "expected a token id in [0, 129280)");
}

// --- DSpark, vision, limits ---------------------------------------------------------

TEST(ConfigErrors, DSparkTargetOutOfRange) {
  EXPECT_EQ(infError([](Object &o) {
              o["dspark_target_layer_ids"] = intArray({37, 38, 40});
            }),
            "config.json: key 'dspark_target_layer_ids[2]': layer 40 is out "
            "of range; expected a backbone layer id in [0, 40)");
}

TEST(ConfigErrors, DSparkWithoutTargets) {
  EXPECT_EQ(infError([](Object &o) { o["dspark_target_layer_ids"] = Array(); }),
            "config.json: key 'dspark_target_layer_ids': empty; expected at "
            "least one backbone layer when n_mtp_layers is 3 (DSpark stage 0 "
            "projects their hidden states)");
}

TEST(ConfigErrors, DSparkBlockSize) {
  EXPECT_EQ(infError([](Object &o) { o["dspark_block_size"] = 0; }),
            "config.json: key 'dspark_block_size': 0; expected a positive "
            "integer");
}

TEST(ConfigErrors, DSparkExperts) {
  EXPECT_EQ(infError([](Object &o) { o["dspark_n_activated_experts"] = 129; }),
            "config.json: key 'dspark_n_activated_experts': 129 exceeds the "
            "DSpark stages' 128 routed experts; expected at most 128");
}

TEST(ConfigErrors, ImageTokenOutOfRange) {
  EXPECT_EQ(infError([](Object &o) { o["image_token_id"] = 200000; }),
            "config.json: key 'image_token_id': token 200000 is out of range; "
            "expected a token id in [0, 129280)");
}

TEST(ConfigErrors, MaxSeqLenHf) {
  EXPECT_EQ(hfError([](Object &o) { text(o)["max_position_embeddings"] = 0; }),
            "config.json: key 'text_config.max_position_embeddings': 0; "
            "expected a positive integer");
}

// --- Remaining rules, one message each ------------------------------------------

TEST(ConfigErrors, TextConfigNotObject) {
  EXPECT_EQ(hfError([](Object &o) { o["text_config"] = 1; }),
            "config.json: key 'text_config': expected an object, got number 1");
}

TEST(ConfigErrors, NegativeMtpLayers) {
  EXPECT_EQ(infError([](Object &o) { o["n_mtp_layers"] = -1; }),
            "config.json: key 'n_mtp_layers': -1; expected an integer >= 0");
}

TEST(ConfigErrors, ExpertDtype) {
  EXPECT_EQ(infError([](Object &o) { o["expert_dtype"] = "fp8"; }),
            "config.json: key 'expert_dtype': \"fp8\"; expected \"fp4\" (dsc "
            "compiles FP4 routed experts only)");
}

TEST(ConfigErrors, GateTemp) {
  EXPECT_EQ(infError([](Object &o) { o["gate_temp"] = 0; }),
            "config.json: key 'gate_temp': 0; expected a number > 0 (gate "
            "scores are divided by it)");
}

TEST(ConfigErrors, NegativeSwigluLimit) {
  EXPECT_EQ(infError([](Object &o) { o["swiglu_limit"] = -1.5; }),
            "config.json: key 'swiglu_limit': -1.5; expected a number >= 0 (0 "
            "turns the SwiGLU clamp off)");
}

TEST(ConfigErrors, RopeTheta) {
  EXPECT_EQ(infError([](Object &o) { o["compress_rope_theta"] = -1; }),
            "config.json: key 'compress_rope_theta': -1; expected a number > 0 "
            "(the RoPE base of ratio > 0 layers)");
}

TEST(ConfigErrors, NegativeOriginalSeqLen) {
  EXPECT_EQ(infError([](Object &o) { o["original_seq_len"] = -1; }),
            "config.json: key 'original_seq_len': -1; expected an integer >= "
            "0");
}

TEST(ConfigErrors, HfTiedEmbeddingsAndActivation) {
  EXPECT_EQ(hfError([](Object &o) { text(o)["tie_word_embeddings"] = true; }),
            "config.json: key 'text_config.tie_word_embeddings': true; "
            "expected false (head.weight is separate from embed.weight)");
  EXPECT_EQ(hfError([](Object &o) { text(o)["hidden_act"] = "gelu"; }),
            "config.json: key 'text_config.hidden_act': \"gelu\"; expected "
            "\"silu\" (experts are clamped SwiGLU)");
  EXPECT_EQ(hfError([](Object &o) { text(o)["topk_method"] = "greedy"; }),
            "config.json: key 'text_config.topk_method': \"greedy\"; expected "
            "\"noaux_tc\" (the gate bias picks experts, scores weight them)");
  EXPECT_EQ(hfError([](Object &o) {
              (*o.getObject("quantization_config"))["scale_fmt"] = "fp32";
            }),
            "config.json: key 'quantization_config.scale_fmt': \"fp32\"; "
            "expected \"ue8m0\" (power-of-two E8M0 scales)");
}

TEST(ConfigErrors, EngramLayersNotSorted) {
  EXPECT_EQ(infError([](Object &o) {
              o["engram_layer_ids"] = intArray({14, 1});
            }),
            "config.json: key 'engram_layer_ids[1]': layer 1 does not follow "
            "layer 14; expected a strictly increasing list");
}

TEST(ConfigErrors, EngramCompressedVocab) {
  EXPECT_EQ(infError([](Object &o) { o["engram_compressed_vocab_size"] = 0; }),
            "config.json: key 'engram_compressed_vocab_size': 0; expected a "
            "positive integer");
}

TEST(ConfigErrors, DSparkTargetsNotSorted) {
  EXPECT_EQ(infError([](Object &o) {
              o["dspark_target_layer_ids"] = intArray({37, 39, 38});
            }),
            "config.json: key 'dspark_target_layer_ids[2]': layer 38 does not "
            "follow layer 39; expected a strictly increasing list");
}

TEST(ConfigErrors, DSparkNoiseToken) {
  EXPECT_EQ(infError([](Object &o) { o["dspark_noise_token_id"] = -1; }),
            "config.json: key 'dspark_noise_token_id': token -1 is out of "
            "range; expected a token id in [0, 129280)");
}

TEST(ConfigErrors, VisionLayers) {
  EXPECT_EQ(infError([](Object &o) { o["vision_n_layers"] = -2; }),
            "config.json: key 'vision_n_layers': -2; expected an integer >= 0");
}

TEST(ConfigErrors, InferenceLimits) {
  EXPECT_EQ(infError([](Object &o) { o["max_batch_size"] = 0; }),
            "config.json: key 'max_batch_size': 0; expected a positive "
            "integer");
  EXPECT_EQ(infError([](Object &o) { o["temperature"] = -0.5; }),
            "config.json: key 'temperature': -0.5; expected a number >= 0 (0 "
            "samples greedily)");
}

TEST(ConfigErrors, VisionTowerKeyMistyped) {
  EXPECT_EQ(infError([](Object &o) { o["vision_max_wh_ratio"] = "wide"; }),
            "config.json: key 'vision_max_wh_ratio': expected an integer or "
            "null, got string");
}

} // namespace
