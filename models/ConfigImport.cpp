//===- ConfigImport.cpp - Read either config format into a ModelSpec ------===//
//
// One table (kKeys) lists every reference `ModelArgs` key the importer reads,
// its HF `config.json` spelling, its JSON type and whether it is required or
// takes the ModelArgs default (reference-spec §2.1, §2.3, §2.4). The reader
// resolves a reference key to the value in either format, so the rest of the
// importer is format-free. docs/model-spec.md has the same table for humans.
//
// The format is recognised by content: a `text_config` object, or HF
// spellings (`hidden_size`, `num_hidden_layers`) at the top level, mean HF;
// `dim` / `n_layers` mean the reference inference/config.json. A file with
// markers of both is rejected rather than guessed.
//===----------------------------------------------------------------------===//
#include "models/ConfigImport.h"
#include "models/Validate.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <string>
#include <vector>

using llvm::StringRef;
namespace json = llvm::json;

namespace dsc::models {
namespace {

enum class Type { Int, Number, Bool, String, IntList, IntOrNull };

/// When a key may be absent.
enum class Need {
  Required,      ///< a size or schedule list: absent is an error
  Default,       ///< absent takes the ModelArgs default
  IfEngram,      ///< required when engram_layer_ids is not empty
  IfCandidates,  ///< required when candidate_source_layer >= 0
  IfDSpark,      ///< required when n_mtp_layers > 0
  Limit,         ///< runtime limit: absent stays unset
  Unused,        ///< accepted and type-checked, not stored (vision tower)
};

struct KeyInfo {
  const char *ref; ///< reference ModelArgs / inference/config.json key
  const char *hf;  ///< HF spelling: "text_config." is implied unless the
                   ///< path starts with '/' (top level); nullptr: not in HF
  Type type;
  Need need;
};

// clang-format off
const KeyInfo kKeys[] = {
  // Runtime limits (plan options, reference-spec §2.1).
  {"max_batch_size", nullptr, Type::Int, Need::Limit},
  {"max_seq_len", "max_position_embeddings", Type::Int, Need::Limit},
  {"temperature", nullptr, Type::Number, Need::Limit},
  // Weight formats.
  {"dtype", "/quantization_config.quant_method", Type::String, Need::Default},
  {"expert_dtype", "/quantization_config.expert_dtype", Type::String, Need::Default},
  // Backbone sizes.
  {"vocab_size", "vocab_size", Type::Int, Need::Required},
  {"dim", "hidden_size", Type::Int, Need::Required},
  {"moe_inter_dim", "moe_intermediate_size", Type::Int, Need::Required},
  {"n_layers", "num_hidden_layers", Type::Int, Need::Required},
  {"n_mtp_layers", "num_nextn_predict_layers", Type::Int, Need::Required},
  {"n_heads", "num_attention_heads", Type::Int, Need::Required},
  // MoE.
  {"n_routed_experts", "n_routed_experts", Type::Int, Need::Required},
  {"n_shared_experts", "n_shared_experts", Type::Int, Need::Default},
  {"n_activated_experts", "num_experts_per_tok", Type::Int, Need::Required},
  {"score_func", "scoring_func", Type::String, Need::Default},
  {"gate_temp", "gate_temp", Type::Number, Need::Default},
  {"norm_topk_prob", "norm_topk_prob", Type::Bool, Need::Default},
  {"route_scale", "routed_scaling_factor", Type::Number, Need::Default},
  {"swiglu_limit", "swiglu_limit", Type::Number, Need::Default},
  // Attention.
  {"q_lora_rank", "q_lora_rank", Type::Int, Need::Required},
  {"head_dim", "head_dim", Type::Int, Need::Required},
  {"rope_head_dim", "qk_rope_head_dim", Type::Int, Need::Required},
  {"norm_eps", "rms_norm_eps", Type::Number, Need::Default},
  {"o_groups", "o_groups", Type::Int, Need::Required},
  {"o_lora_rank", "o_lora_rank", Type::Int, Need::Required},
  {"window_size", "sliding_window", Type::Int, Need::Required},
  // CSA2 schedule.
  {"compress_ratios", "compress_ratios", Type::IntList, Need::Required},
  {"kv_source_layers", "kv_source_layer_ids", Type::IntList, Need::Required},
  {"index_source_layers", "index_source_layer_ids", Type::IntList, Need::Required},
  // RoPE / YaRN.
  {"compress_rope_theta", "compress_rope_theta", Type::Number, Need::Default},
  {"original_seq_len", "rope_scaling.original_max_position_embeddings", Type::Int, Need::Default},
  {"rope_theta", "rope_theta", Type::Number, Need::Default},
  {"rope_factor", "rope_scaling.factor", Type::Number, Need::Default},
  {"beta_fast", "rope_scaling.beta_fast", Type::Number, Need::Default},
  {"beta_slow", "rope_scaling.beta_slow", Type::Number, Need::Default},
  // Indexer and candidate pool.
  {"index_n_heads", "index_n_heads", Type::Int, Need::Required},
  {"index_head_dim", "index_head_dim", Type::Int, Need::Required},
  {"index_topk", "index_topk", Type::Int, Need::Required},
  {"candidate_source_layer", "candidate_source_layer_id", Type::Int, Need::Default},
  {"candidate_topk_blocks", "candidate_topk_blocks", Type::Int, Need::IfCandidates},
  {"candidate_block_size", "candidate_block_size", Type::Int, Need::IfCandidates},
  // mHC.
  {"hc_mult", "hc_mult", Type::Int, Need::Required},
  {"hc_sinkhorn_iters", "hc_sinkhorn_iters", Type::Int, Need::Default},
  {"hc_eps", "hc_eps", Type::Number, Need::Default},
  // Engram.
  {"engram_layer_ids", "engram_layer_ids", Type::IntList, Need::Default},
  {"engram_num_embeddings", "engram_num_embeddings", Type::IntList, Need::IfEngram},
  {"engram_max_ngram_size", "engram_max_ngram_size", Type::Int, Need::IfEngram},
  {"engram_vocab_size", "engram_vocab_size", Type::Int, Need::IfEngram},
  {"engram_n_heads", "engram_n_heads", Type::Int, Need::IfEngram},
  {"engram_head_dim", "engram_head_dim", Type::Int, Need::IfEngram},
  {"engram_pad_id", "engram_pad_token_id", Type::Int, Need::Default},
  {"engram_compressed_vocab_size", "engram_compressed_vocab_size", Type::Int, Need::IfEngram},
  // Vision (only what the language model needs).
  {"vision_n_layers", "/vision_config.num_hidden_layers", Type::Int, Need::Default},
  {"image_token_id", "/image_token_id", Type::Int, Need::Default},
  {"vision_dim", nullptr, Type::Int, Need::Unused},
  {"vision_n_heads", nullptr, Type::Int, Need::Unused},
  {"vision_inter_dim", nullptr, Type::Int, Need::Unused},
  {"vision_patch_size", nullptr, Type::Int, Need::Unused},
  {"vision_rope_theta", nullptr, Type::Number, Need::Unused},
  {"vision_downsample_ratio", nullptr, Type::Int, Need::Unused},
  {"vision_max_n_token", nullptr, Type::Int, Need::Unused},
  {"vision_min_pixels", nullptr, Type::Int, Need::Unused},
  {"vision_max_wh_ratio", nullptr, Type::IntOrNull, Need::Unused},
  // DSpark.
  {"dspark_block_size", "dspark_block_size", Type::Int, Need::IfDSpark},
  {"dspark_noise_token_id", "dspark_noise_token_id", Type::Int, Need::IfDSpark},
  {"dspark_target_layer_ids", "dspark_target_layer_ids", Type::IntList, Need::IfDSpark},
  {"dspark_markov_rank", "dspark_markov_rank", Type::Int, Need::Default},
  {"dspark_n_routed_experts", "dspark_n_routed_experts", Type::Int, Need::Default},
  {"dspark_n_activated_experts", "dspark_num_experts_per_tok", Type::Int, Need::Default},
};
// clang-format on

const KeyInfo *findKey(StringRef ref) {
  for (const KeyInfo &k : kKeys)
    if (ref == k.ref)
      return &k;
  return nullptr;
}

/// "a.b.c" -> {"a","b","c"}.
std::vector<std::string> splitPath(StringRef path) {
  llvm::SmallVector<StringRef> parts;
  path.split(parts, '.');
  return std::vector<std::string>(parts.begin(), parts.end());
}

const char *kindName(const json::Value &v) {
  switch (v.kind()) {
  case json::Value::Null:
    return "null";
  case json::Value::Boolean:
    return "boolean";
  case json::Value::Number:
    return "number";
  case json::Value::String:
    return "string";
  case json::Value::Array:
    return "array";
  case json::Value::Object:
    return "object";
  }
  return "value";
}

std::string showNumber(double v) {
  std::ostringstream os;
  os.precision(17);
  os << v;
  return os.str();
}

/// "got string", "got number 2.5".
std::string gotWhat(const json::Value &v) {
  std::string s = "got ";
  s += kindName(v);
  if (auto d = v.getAsNumber()) {
    s += ' ';
    s += showNumber(*d);
  }
  return s;
}

/// Resolves reference keys to values of one parsed file and converts them,
/// remembering the first error.
class Reader {
public:
  Reader(const json::Object &root, ConfigFormat format, bool nested,
         StringRef file)
      : root(root), format(format), nested(nested), file(file.str()) {}

  bool failed() const { return !error.empty(); }
  std::string takeError() { return std::move(error); }

  void fail(const std::string &key, const std::string &msg) {
    if (error.empty())
      error = file + ": key '" + key + "': " + msg;
  }

  std::string spell(StringRef ref) const {
    return format == ConfigFormat::HuggingFace ? huggingFaceSpelling(ref, nested)
                                               : referenceSpelling(ref);
  }

  /// The value at a spelled path, or nullptr when absent (a null object on
  /// the way, e.g. "rope_scaling": null, counts as absent).
  const json::Value *at(const std::string &spelled) {
    const json::Object *obj = &root;
    std::vector<std::string> parts = splitPath(spelled);
    std::string walked;
    for (size_t i = 0; i < parts.size(); ++i) {
      const json::Value *v = obj->get(parts[i]);
      walked += (i ? "." : "") + parts[i];
      if (!v)
        return nullptr;
      if (i + 1 == parts.size())
        return v;
      if (v->kind() == json::Value::Null)
        return nullptr;
      obj = v->getAsObject();
      if (!obj) {
        fail(walked, "expected an object, " + gotWhat(*v));
        return nullptr;
      }
    }
    return nullptr;
  }

  /// The value of a reference key in this file (nullptr when absent or when
  /// the format has no spelling for it); `missing` says whether that is an
  /// error and why.
  const json::Value *lookup(const KeyInfo &k, bool required,
                            const char *why) {
    if (format == ConfigFormat::HuggingFace && !k.hf)
      return nullptr;
    std::string key = spell(k.ref);
    const json::Value *v = at(key);
    if (!v && required && !failed())
      fail(key, std::string("missing; expected ") + expectedPhrase(k.type) +
                    " (" + why + ")");
    return v;
  }

  static const char *expectedPhrase(Type t) {
    switch (t) {
    case Type::Int:
      return "an integer";
    case Type::Number:
      return "a number";
    case Type::Bool:
      return "a boolean";
    case Type::String:
      return "a string";
    case Type::IntList:
      return "a list of integers";
    case Type::IntOrNull:
      return "an integer or null";
    }
    return "a value";
  }

  bool required(const KeyInfo &k, const char *&why) const {
    switch (k.need) {
    case Need::Required:
      why = "required";
      return true;
    case Need::IfEngram:
      why = "required when engram_layer_ids is not empty";
      return engramOn;
    case Need::IfCandidates:
      why = "required when candidate_source_layer >= 0";
      return candidatesOn;
    case Need::IfDSpark:
      why = "required when n_mtp_layers > 0";
      return dsparkOn;
    default:
      why = "";
      return false;
    }
  }

  // Typed reads: leave `out` untouched when the key is absent (the caller
  // set the ModelArgs default) and report a type error otherwise.
  void read(StringRef ref, int64_t &out) {
    const KeyInfo &k = *findKey(ref);
    const char *why;
    bool req = required(k, why);
    if (const json::Value *v = lookup(k, req, why))
      readInt(spell(ref), *v, out);
  }
  void read(StringRef ref, std::optional<int64_t> &out) {
    int64_t value = 0;
    const KeyInfo &k = *findKey(ref);
    const char *why;
    bool req = required(k, why);
    if (const json::Value *v = lookup(k, req, why))
      if (readInt(spell(ref), *v, value))
        out = value;
  }
  void read(StringRef ref, double &out) {
    const KeyInfo &k = *findKey(ref);
    const char *why;
    bool req = required(k, why);
    if (const json::Value *v = lookup(k, req, why))
      readNumber(spell(ref), *v, out);
  }
  void read(StringRef ref, std::optional<double> &out) {
    double value = 0;
    const KeyInfo &k = *findKey(ref);
    const char *why;
    bool req = required(k, why);
    if (const json::Value *v = lookup(k, req, why))
      if (readNumber(spell(ref), *v, value))
        out = value;
  }
  void read(StringRef ref, bool &out) {
    const KeyInfo &k = *findKey(ref);
    const char *why;
    bool req = required(k, why);
    if (const json::Value *v = lookup(k, req, why)) {
      if (auto b = v->getAsBoolean())
        out = *b;
      else
        fail(spell(ref), "expected a boolean, " + gotWhat(*v));
    }
  }
  void read(StringRef ref, std::string &out) {
    const KeyInfo &k = *findKey(ref);
    const char *why;
    bool req = required(k, why);
    if (const json::Value *v = lookup(k, req, why)) {
      if (auto s = v->getAsString())
        out = s->str();
      else
        fail(spell(ref), "expected a string, " + gotWhat(*v));
    }
  }
  void read(StringRef ref, std::vector<int64_t> &out) {
    const KeyInfo &k = *findKey(ref);
    const char *why;
    bool req = required(k, why);
    const json::Value *v = lookup(k, req, why);
    if (!v)
      return;
    std::string key = spell(ref);
    const json::Array *arr = v->getAsArray();
    if (!arr) {
      fail(key, "expected a list of integers, " + gotWhat(*v));
      return;
    }
    out.clear();
    for (size_t i = 0; i < arr->size(); ++i) {
      int64_t x = 0;
      if (!readInt(key + "[" + std::to_string(i) + "]", (*arr)[i], x))
        return;
      out.push_back(x);
    }
  }

  /// Type-checks a key that is accepted but not stored.
  void check(const KeyInfo &k) {
    const json::Value *v = lookup(k, false, "");
    if (!v)
      return;
    int64_t i;
    double d;
    std::string key = spell(k.ref);
    if (k.type == Type::Int)
      readInt(key, *v, i);
    else if (k.type == Type::Number)
      readNumber(key, *v, d);
    else if (k.type == Type::IntOrNull && v->kind() != json::Value::Null &&
             !v->getAsInteger())
      fail(key, "expected an integer or null, " + gotWhat(*v));
  }

  /// HF keys with one value the reference hard-codes: checked when present.
  void expectInt(const std::string &key, int64_t want, const char *why) {
    const json::Value *v = at(key);
    int64_t got = 0;
    if (v && readInt(key, *v, got) && got != want)
      fail(key, std::to_string(got) + "; expected " + std::to_string(want) +
                    " (" + why + ")");
  }
  void expectString(const std::string &key, StringRef want, const char *why) {
    const json::Value *v = at(key);
    if (!v)
      return;
    auto s = v->getAsString();
    if (!s)
      fail(key, "expected a string, " + gotWhat(*v));
    else if (*s != want)
      fail(key, (llvm::Twine("\"") + *s + "\"; expected \"" + want + "\" (" +
                 why + ")")
                    .str());
  }
  void expectBool(const std::string &key, bool want, const char *why) {
    const json::Value *v = at(key);
    if (!v)
      return;
    auto b = v->getAsBoolean();
    if (!b)
      fail(key, "expected a boolean, " + gotWhat(*v));
    else if (*b != want)
      fail(key, std::string(*b ? "true" : "false") + "; expected " +
                    (want ? "true" : "false") + " (" + why + ")");
  }

  const json::Object &root;
  ConfigFormat format;
  bool nested;
  std::string file;
  std::string error;
  bool engramOn = false, candidatesOn = false, dsparkOn = false;

private:
  bool readInt(const std::string &key, const json::Value &v, int64_t &out) {
    if (auto i = v.getAsInteger()) {
      out = *i;
      return true;
    }
    fail(key, "expected an integer, " + gotWhat(v));
    return false;
  }
  bool readNumber(const std::string &key, const json::Value &v, double &out) {
    auto d = v.getAsNumber();
    if (d && std::isfinite(*d)) {
      out = *d;
      return true;
    }
    fail(key, "expected a number, " + gotWhat(v));
    return false;
  }
};

/// Sets every field to its reference ModelArgs default (reference-spec
/// §2.4); the importer then overwrites what the file names.
void setReferenceDefaults(ModelSpec &s) {
  s.dtype = "fp8";
  s.expertDtype = "fp4";
  s.nSharedExperts = 1;
  s.scoreFunc = "sqrtsoftplus";
  s.gateTemp = 1.0;
  s.normTopkProb = true;
  s.routeScale = 1.0;
  s.swigluLimit = 0.0;
  s.normEps = 1e-20;
  s.compressRopeTheta = 40000.0;
  s.originalSeqLen = 0;
  s.ropeTheta = 10000.0;
  s.ropeFactor = 40;
  s.betaFast = 32;
  s.betaSlow = 1;
  s.candidateSourceLayer = -1;
  s.candidateTopkBlocks = 0;
  s.candidateBlockSize = 0;
  s.hcSinkhornIters = 20;
  s.hcEps = 1e-6;
  s.engramLayerIds.clear();
  s.engramNumEmbeddings.clear();
  s.engramMaxNgramSize = 1;
  s.engramVocabSize = 0;
  s.engramNHeads = 0;
  s.engramHeadDim = 0;
  s.engramPadId = 2;
  s.engramCompressedVocabSize = 0;
  s.visionNLayers = 0;
  s.imageTokenId = 129264;
  s.dsparkBlockSize = 0;
  s.dsparkNoiseTokenId = 0;
  s.dsparkTargetLayerIds.clear();
  s.dsparkMarkovRank = 256;
  s.dsparkNRoutedExperts = 0;
  s.dsparkNActivatedExperts = 0;
}

llvm::Error makeError(const std::string &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

/// Reads every key of the table into `s` (format-free through Reader).
void readAll(Reader &r, ModelSpec &s) {
  // Feature switches first: they decide which keys are required.
  r.read("n_layers", s.nLayers);
  r.read("n_mtp_layers", s.nMtpLayers);
  r.read("engram_layer_ids", s.engramLayerIds);
  r.read("candidate_source_layer", s.candidateSourceLayer);
  if (r.failed())
    return;
  r.engramOn = !s.engramLayerIds.empty();
  r.candidatesOn = s.candidateSourceLayer >= 0;
  r.dsparkOn = s.nMtpLayers > 0;

  r.read("max_seq_len", s.limits.maxSeqLen);
  r.read("max_batch_size", s.limits.maxBatchSize);
  r.read("temperature", s.limits.temperature);
  r.read("dtype", s.dtype);
  r.read("expert_dtype", s.expertDtype);
  r.read("vocab_size", s.vocabSize);
  r.read("dim", s.dim);
  r.read("moe_inter_dim", s.moeInterDim);
  r.read("n_heads", s.nHeads);
  r.read("n_routed_experts", s.nRoutedExperts);
  r.read("n_shared_experts", s.nSharedExperts);
  r.read("n_activated_experts", s.nActivatedExperts);
  r.read("score_func", s.scoreFunc);
  r.read("gate_temp", s.gateTemp);
  r.read("norm_topk_prob", s.normTopkProb);
  r.read("route_scale", s.routeScale);
  r.read("swiglu_limit", s.swigluLimit);
  r.read("q_lora_rank", s.qLoraRank);
  r.read("head_dim", s.headDim);
  r.read("rope_head_dim", s.ropeHeadDim);
  r.read("norm_eps", s.normEps);
  r.read("o_groups", s.oGroups);
  r.read("o_lora_rank", s.oLoraRank);
  r.read("window_size", s.windowSize);
  r.read("compress_ratios", s.compressRatios);
  r.read("kv_source_layers", s.kvSourceLayers);
  r.read("index_source_layers", s.indexSourceLayers);
  r.read("compress_rope_theta", s.compressRopeTheta);
  r.read("original_seq_len", s.originalSeqLen);
  r.read("rope_theta", s.ropeTheta);
  r.read("rope_factor", s.ropeFactor);
  r.read("beta_fast", s.betaFast);
  r.read("beta_slow", s.betaSlow);
  r.read("index_n_heads", s.indexNHeads);
  r.read("index_head_dim", s.indexHeadDim);
  r.read("index_topk", s.indexTopk);
  r.read("candidate_topk_blocks", s.candidateTopkBlocks);
  r.read("candidate_block_size", s.candidateBlockSize);
  r.read("hc_mult", s.hcMult);
  r.read("hc_sinkhorn_iters", s.hcSinkhornIters);
  r.read("hc_eps", s.hcEps);
  r.read("engram_num_embeddings", s.engramNumEmbeddings);
  r.read("engram_max_ngram_size", s.engramMaxNgramSize);
  r.read("engram_vocab_size", s.engramVocabSize);
  r.read("engram_n_heads", s.engramNHeads);
  r.read("engram_head_dim", s.engramHeadDim);
  r.read("engram_pad_id", s.engramPadId);
  r.read("engram_compressed_vocab_size", s.engramCompressedVocabSize);
  r.read("vision_n_layers", s.visionNLayers);
  r.read("image_token_id", s.imageTokenId);
  r.read("dspark_block_size", s.dsparkBlockSize);
  r.read("dspark_noise_token_id", s.dsparkNoiseTokenId);
  r.read("dspark_target_layer_ids", s.dsparkTargetLayerIds);
  r.read("dspark_markov_rank", s.dsparkMarkovRank);
  r.read("dspark_n_routed_experts", s.dsparkNRoutedExperts);
  r.read("dspark_n_activated_experts", s.dsparkNActivatedExperts);
  for (const KeyInfo &k : kKeys)
    if (k.need == Need::Unused)
      r.check(k);

  // A negative candidate_source_layer turns the pool off (ModelArgs: "< 0
  // turns it off"); one spelling of "off" keeps both formats equal.
  if (s.candidateSourceLayer < 0)
    s.candidateSourceLayer = -1;
}

/// HF-only keys whose value the reference hard-codes (checked if present).
void checkHuggingFaceFacts(Reader &r) {
  std::string t = r.nested ? "text_config." : "";
  r.expectInt(t + "num_key_value_heads", 1,
              "the latent KV is a single head shared by all query heads");
  r.expectBool(t + "tie_word_embeddings", false,
               "head.weight is separate from embed.weight");
  r.expectString(t + "hidden_act", "silu", "experts are clamped SwiGLU");
  r.expectString(t + "topk_method", "noaux_tc",
                 "the gate bias picks experts, scores weight them");
  r.expectString(t + "rope_scaling.rope_type", "yarn",
                 "ratio > 0 layers use YaRN");
  r.expectString("quantization_config.scale_fmt", "ue8m0",
                 "power-of-two E8M0 scales");
  if (const json::Value *v = r.at("quantization_config.weight_block_size")) {
    const json::Array *a = v->getAsArray();
    bool ok = a && a->size() == 2 && (*a)[0].getAsInteger() == 32 &&
              (*a)[1].getAsInteger() == 32;
    if (!ok)
      r.fail("quantization_config.weight_block_size",
             "expected [32, 32] (FP8 weights carry one scale per 32x32 "
             "block)");
  }
}

/// Reference keys of inference/config.json: ModelArgs(**config) rejects any
/// other key, and so do we (a misspelt optional key would otherwise silently
/// take its default).
void checkUnknownInferenceKeys(Reader &r) {
  std::vector<std::string> unknown;
  for (const auto &kv : r.root)
    if (!findKey(kv.first))
      unknown.push_back(kv.first.str());
  std::sort(unknown.begin(), unknown.end()); // json::Object is unordered
  if (!unknown.empty())
    r.fail(unknown.front(), "unknown key; expected a reference ModelArgs "
                            "field (see docs/model-spec.md)");
}

} // namespace

std::string referenceSpelling(StringRef referenceKey) {
  return referenceKey.str();
}

std::string huggingFaceSpelling(StringRef referenceKey, bool nested) {
  const KeyInfo *k = findKey(referenceKey);
  if (!k || !k->hf)
    return referenceKey.str();
  StringRef hf = k->hf;
  if (hf.consume_front("/"))
    return hf.str();
  return (nested ? "text_config." : "") + hf.str();
}

/// A config's JSON checked before it is parsed (issue 15): nesting at most
/// kMaxConfigDepth deep (the recursive parser would overflow the stack on a
/// 50,000-deep text) and no key twice in one object (the parser keeps one
/// silently). Strings are skipped with their escapes; what is not JSON is
/// left for the parser to report. Returns the problem, or "" when none.
constexpr int kMaxConfigDepth = 32;
std::string checkConfigJson(StringRef text) {
  std::vector<std::vector<std::string>> keys; // per open container: its keys (objects)
  std::vector<bool> isObject;
  bool expectKey = false; // the next string in the current object is a key
  auto shown = [](const std::string &k) {
    return k.size() > 64 ? k.substr(0, 64) + "..." : k;
  };
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '"') {
      std::string value;
      size_t j = i + 1;
      for (; j < text.size() && text[j] != '"'; ++j) {
        if (text[j] == '\\' && j + 1 < text.size())
          value += text[j++];
        value += text[j];
      }
      if (expectKey && !isObject.empty() && isObject.back()) {
        std::vector<std::string> &seen = keys.back();
        if (std::find(seen.begin(), seen.end(), value) != seen.end())
          return "key '" + shown(value) + "' appears twice in one object (at byte " +
                 std::to_string(i) + ")";
        seen.push_back(value);
        expectKey = false;
      }
      i = j;
    } else if (c == '{' || c == '[') {
      if (int(isObject.size()) >= kMaxConfigDepth)
        return "nesting deeper than " + std::to_string(kMaxConfigDepth) + " levels at byte " +
               std::to_string(i);
      isObject.push_back(c == '{');
      keys.emplace_back();
      expectKey = c == '{';
    } else if (c == '}' || c == ']') {
      if (!isObject.empty()) {
        isObject.pop_back();
        keys.pop_back();
      }
      expectKey = false;
    } else if (c == ',') {
      expectKey = !isObject.empty() && isObject.back();
    }
  }
  return "";
}

llvm::Expected<ModelSpec> importConfigText(StringRef text,
                                           StringRef displayName) {
  std::string file = displayName.str();
  if (std::string problem = checkConfigJson(text); !problem.empty())
    return makeError(file + ": " + problem);
  llvm::Expected<json::Value> parsed = json::parse(text);
  if (!parsed)
    return makeError(file + ": invalid JSON: " +
                     llvm::toString(parsed.takeError()));
  const json::Object *root = parsed->getAsObject();
  if (!root)
    return makeError(file + ": expected a JSON object at the top level, " +
                     gotWhat(*parsed));

  // Recognise the format by content.
  const json::Value *textConfig = root->get("text_config");
  bool hfFlat = root->get("hidden_size") || root->get("num_hidden_layers") ||
                root->get("num_attention_heads");
  bool inference = root->get("dim") || root->get("n_layers");
  if (textConfig && !textConfig->getAsObject())
    return makeError(file + ": key 'text_config': expected an object, " +
                     gotWhat(*textConfig));
  if ((textConfig || hfFlat) && inference)
    return makeError(
        file + ": cannot tell the config format: it has both HF keys (" +
        (textConfig ? "'text_config'" : "'hidden_size'/'num_hidden_layers'") +
        ") and reference keys ('dim'/'n_layers'); expected one format");
  if (!textConfig && !hfFlat && !inference)
    return makeError(file + ": not a DeepSeek-V4.1 config: expected a "
                            "'text_config' object (HF config.json) or the "
                            "reference keys 'dim' and 'n_layers' "
                            "(inference/config.json)");

  ModelSpec spec;
  spec.sourcePath = file;
  spec.format = inference ? ConfigFormat::Inference : ConfigFormat::HuggingFace;
  setReferenceDefaults(spec);

  Reader reader(*root, spec.format, textConfig != nullptr, file);
  if (spec.format == ConfigFormat::Inference)
    checkUnknownInferenceKeys(reader);
  else
    checkHuggingFaceFacts(reader);
  if (!reader.failed())
    readAll(reader, spec);
  if (reader.failed())
    return makeError(reader.takeError());

  bool nested = textConfig != nullptr;
  KeySpelling spell = referenceSpelling;
  if (spec.format == ConfigFormat::HuggingFace)
    spell = [nested](StringRef ref) { return huggingFaceSpelling(ref, nested); };
  if (llvm::Error err = finalizeModelSpec(spec, file, spell))
    return std::move(err);
  return spec;
}

llvm::Expected<ModelSpec> importConfigFile(StringRef path) {
  // Only a regular file of bounded size is read: a FIFO or a device given
  // as the config would block the open or never end.
  constexpr uint64_t kMaxConfigBytes = 16ull << 20;
  llvm::sys::fs::file_status status;
  if (std::error_code ec = llvm::sys::fs::status(path, status))
    return makeError(path.str() + ": cannot read the file: " + ec.message());
  if (status.type() != llvm::sys::fs::file_type::regular_file)
    return makeError(path.str() +
                     ": not a regular file (the config must be a file, not a FIFO, a device or "
                     "a directory)");
  if (status.getSize() > kMaxConfigBytes)
    return makeError(path.str() + ": " + std::to_string(status.getSize()) +
                     " bytes, more than the " + std::to_string(kMaxConfigBytes) +
                     " a config may hold");
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> buffer =
      llvm::MemoryBuffer::getFile(path, /*IsText=*/true);
  if (!buffer)
    return makeError(path.str() + ": cannot read the file: " +
                     buffer.getError().message());
  return importConfigText((*buffer)->getBuffer(), path);
}

} // namespace dsc::models
