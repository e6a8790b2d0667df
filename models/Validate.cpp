//===- Validate.cpp - Every rule a config must satisfy --------------------===//
//
// Rules come from what the reference forward pass (inference/model.py) needs
// to run and mean one thing, plus the few restrictions dsc adds on purpose
// (weight formats, score function, candidate source placement for the CED
// split). docs/model-spec.md lists each rule with its reason; the comments
// here cite the same reason briefly. The first broken rule is reported:
//
//   <file>: key '<key as the file spells it>[<index>]': <what is wrong>;
//   expected <what would be right> (<why>)
//
// The CSA2 schedule rules follow from the reference's single shared slot per
// kind (SharedAttentionRuntime, reference-spec §9.9): a layer with ratio > 0
// reads the compressed KV last published, i.e. by the nearest kv source at or
// below it, whatever that source's ratio; likewise top-k and index keys.
// Reading a source of another ratio indexes a cache of the wrong length, so
// we require the ratios to match.
//===----------------------------------------------------------------------===//
#include "models/Validate.h"

#include <algorithm>
#include <sstream>
#include <tuple>

using llvm::StringRef;

namespace dsc::models {

int64_t nearestAtOrBelow(const std::vector<int64_t> &sortedIds, int64_t id) {
  auto it = std::upper_bound(sortedIds.begin(), sortedIds.end(), id);
  return it == sortedIds.begin() ? -1 : *std::prev(it);
}

namespace {

std::string str(int64_t v) { return std::to_string(v); }
std::string num(double v) {
  std::ostringstream os;
  os.precision(17);
  os << v;
  return os.str();
}

bool contains(const std::vector<int64_t> &v, int64_t x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

class Checker {
public:
  Checker(const ModelSpec &s, StringRef file, const KeySpelling &spell)
      : s(s), file(file.str()), spell(spell) {}

  llvm::Error run() {
    checkSizes();
    checkFormats();
    checkDivisibility();
    checkRope();
    checkSchedule();
    checkCandidates();
    checkEngram();
    checkDSpark();
    checkVisionAndLimits();
    if (error.empty())
      return llvm::Error::success();
    return llvm::createStringError(llvm::inconvertibleErrorCode(), error);
  }

private:
  const ModelSpec &s;
  std::string file;
  const KeySpelling &spell;
  std::string error;

  bool ok() const { return error.empty(); }

  /// Records the first failure: "<file>: key '<spelled key><suffix>': msg".
  void fail(StringRef ref, const std::string &suffix, const std::string &msg) {
    if (error.empty())
      error = file + ": key '" + spell(ref) + suffix + "': " + msg;
  }
  static std::string at(size_t i) {
    std::string s = "[";
    s += std::to_string(i);
    s += "]";
    return s;
  }

  void positive(StringRef ref, int64_t v) {
    if (v < 1)
      fail(ref, "", str(v) + "; expected a positive integer");
  }
  void nonNegative(StringRef ref, int64_t v) {
    if (v < 0)
      fail(ref, "", str(v) + "; expected an integer >= 0");
  }
  /// dsc's upper limits on sizes (issue 15: a config of 2^62-wide heads or a
  /// 3000-gram Engram compiled to nonsense or never finished): each far above
  /// the released model and small enough that every product the compiler
  /// forms of them (parameter counts, activation and KV bytes) stays below
  /// 2^63. docs/model-spec.md §3.1 lists them. max_seq_len's and
  /// vocab_size's 2^24 is the runtime's kMaxCount (dsc/runtime/Plan.h), which
  /// verifyPlan holds a plan to (this library does not see the runtime).
  void atMost(StringRef ref, int64_t v, int64_t max) {
    if (ok() && v > max)
      fail(ref, "",
           str(v) + " is too large; expected at most " + str(max) +
               " (dsc's limit for this size, far above the released model)");
  }
  void multipleOf32(StringRef ref, int64_t v, const char *why) {
    if (v % 32 != 0)
      fail(ref, "",
           str(v) + " is not a multiple of 32; expected a multiple of 32 (" +
               why + ")");
  }
  void positiveNumber(StringRef ref, double v, const char *why) {
    if (!(v > 0))
      fail(ref, "", num(v) + "; expected a number > 0 (" + why +
                        ")");
  }

  std::string backboneRange() const {
    return "[0, " + str(s.nLayers) + ")";
  }

  /// A layer-id list: every entry a backbone layer, strictly increasing.
  void layerList(StringRef ref, const std::vector<int64_t> &ids) {
    for (size_t i = 0; i < ids.size() && ok(); ++i) {
      if (ids[i] < 0 || ids[i] >= s.nLayers)
        fail(ref, at(i),
             "layer " + str(ids[i]) +
                 " is out of range; expected a backbone layer id in " +
                 backboneRange());
      else if (i > 0 && ids[i] <= ids[i - 1])
        fail(ref, at(i),
             "layer " + str(ids[i]) + " does not follow layer " +
                 str(ids[i - 1]) + "; expected a strictly increasing list");
    }
  }

  int64_t ratio(int64_t layer) const { return s.compressRatios[layer]; }

  void checkSizes() {
    positive("n_layers", s.nLayers);
    nonNegative("n_mtp_layers", s.nMtpLayers);
    for (auto [ref, v] : std::initializer_list<std::pair<StringRef, int64_t>>{
             {"vocab_size", s.vocabSize},
             {"dim", s.dim},
             {"moe_inter_dim", s.moeInterDim},
             {"n_heads", s.nHeads},
             {"head_dim", s.headDim},
             {"rope_head_dim", s.ropeHeadDim},
             {"q_lora_rank", s.qLoraRank},
             {"o_groups", s.oGroups},
             {"o_lora_rank", s.oLoraRank},
             {"window_size", s.windowSize},
             {"n_routed_experts", s.nRoutedExperts},
             {"n_activated_experts", s.nActivatedExperts},
             {"index_n_heads", s.indexNHeads},
             {"index_head_dim", s.indexHeadDim},
             {"index_topk", s.indexTopk},
             {"hc_mult", s.hcMult}})
      positive(ref, v);
    nonNegative("hc_sinkhorn_iters", s.hcSinkhornIters);
    for (auto [ref, v, max] : std::initializer_list<std::tuple<StringRef, int64_t, int64_t>>{
             {"n_layers", s.nLayers, 1024},
             {"n_mtp_layers", s.nMtpLayers, 64},
             {"vocab_size", s.vocabSize, int64_t(1) << 24},
             {"dim", s.dim, int64_t(1) << 16},
             {"moe_inter_dim", s.moeInterDim, int64_t(1) << 16},
             {"n_heads", s.nHeads, 1024},
             {"head_dim", s.headDim, 4096},
             {"rope_head_dim", s.ropeHeadDim, 4096},
             {"q_lora_rank", s.qLoraRank, int64_t(1) << 16},
             {"o_groups", s.oGroups, 1024},
             {"o_lora_rank", s.oLoraRank, int64_t(1) << 16},
             {"window_size", s.windowSize, int64_t(1) << 20},
             {"n_routed_experts", s.nRoutedExperts, int64_t(1) << 16},
             {"n_activated_experts", s.nActivatedExperts, 1024},
             {"index_n_heads", s.indexNHeads, 1024},
             {"index_head_dim", s.indexHeadDim, 4096},
             {"index_topk", s.indexTopk, int64_t(1) << 20},
             {"hc_mult", s.hcMult, 64},
             {"hc_sinkhorn_iters", s.hcSinkhornIters, 1000},
             {"candidate_topk_blocks", s.candidateTopkBlocks, int64_t(1) << 20},
             {"candidate_block_size", s.candidateBlockSize, int64_t(1) << 16},
             {"engram_max_ngram_size", s.engramMaxNgramSize, 16},
             {"engram_n_heads", s.engramNHeads, 1024},
             {"engram_head_dim", s.engramHeadDim, 4096},
             {"engram_vocab_size", s.engramVocabSize, int64_t(1) << 40},
             {"engram_compressed_vocab_size", s.engramCompressedVocabSize, int64_t(1) << 24},
             {"dspark_block_size", s.dsparkBlockSize, 1024},
             {"dspark_markov_rank", s.dsparkMarkovRank, int64_t(1) << 16},
             {"dspark_n_routed_experts", s.dsparkNRoutedExperts, int64_t(1) << 16},
             {"dspark_n_activated_experts", s.dsparkNActivatedExperts, 1024},
             {"vision_n_layers", s.visionNLayers, 1024}})
      atMost(ref, v, max);
    if (s.limits.maxSeqLen)
      atMost("max_seq_len", *s.limits.maxSeqLen, int64_t(1) << 24);
    if (s.limits.maxBatchSize)
      atMost("max_batch_size", *s.limits.maxBatchSize, int64_t(1) << 16);
    if (ok() && s.nActivatedExperts > s.nRoutedExperts)
      fail("n_activated_experts", "",
           str(s.nActivatedExperts) + " exceeds n_routed_experts " +
               str(s.nRoutedExperts) + "; expected at most " +
               str(s.nRoutedExperts));
  }

  void checkFormats() {
    // dsc compiles the released weight formats only: FP8 dense weights with
    // 32x32 E8M0 blocks and FP4 routed experts (reference-spec §3.4). The
    // reference also runs bf16 dense weights; dsc does not.
    if (s.dtype != "fp8")
      fail("dtype", "",
           "\"" + s.dtype + "\"; expected \"fp8\" (dsc compiles FP8 dense "
                            "weights only)");
    if (s.expertDtype != "fp4")
      fail("expert_dtype", "",
           "\"" + s.expertDtype + "\"; expected \"fp4\" (dsc compiles FP4 "
                                  "routed experts only)");
    // The reference also has softmax and sigmoid gates; V4.1 uses
    // sqrt(softplus) and that is the one dsc's MoE gate implements (§10).
    if (s.scoreFunc != "sqrtsoftplus")
      fail("score_func", "",
           "\"" + s.scoreFunc + "\"; expected \"sqrtsoftplus\" (the only "
                                "gate score dsc implements)");
    // MoE.__init__ asserts n_shared_experts == 1.
    if (s.nSharedExperts != 1)
      fail("n_shared_experts", "",
           str(s.nSharedExperts) + "; expected 1 (the reference builds "
                                   "exactly one shared expert)");
    positiveNumber("gate_temp", s.gateTemp, "gate scores are divided by it");
    if (s.swigluLimit < 0)
      fail("swiglu_limit", "",
           num(s.swigluLimit) +
               "; expected a number >= 0 (0 turns the SwiGLU clamp off)");
    if (s.normEps < 0)
      fail("norm_eps", "", "negative; expected a number >= 0");
    if (s.hcEps < 0)
      fail("hc_eps", "", "negative; expected a number >= 0");
  }

  void checkDivisibility() {
    if (!ok())
      return;
    // Every FP8/FP4 GEMM quantises its activation per (row, 32 K-channels)
    // and its weight per 32 along K (reference-spec §3.2, §3.4): K must be a
    // multiple of 32.
    multipleOf32("dim", s.dim,
                 "K of the FP8/FP4 GEMMs wq_a, wkv, shared and routed "
                 "experts w1/w3 is quantised in blocks of 32");
    multipleOf32("q_lora_rank", s.qLoraRank,
                 "K of the FP8 GEMMs wq_b and indexer wq_b is quantised in "
                 "blocks of 32");
    multipleOf32("moe_inter_dim", s.moeInterDim,
                 "K of the expert w2 GEMMs is quantised in blocks of 32");
    // Window KV: act_quant over all head_dim channels in blocks of 32
    // (§3.5); compressed KV: FP4 in blocks of 16 (implied by 32).
    multipleOf32("head_dim", s.headDim,
                 "window KV is FP8-quantised in blocks of 32 over all "
                 "head_dim channels, compressed KV in FP4 blocks of 16");
    // Indexer q and k: FP4 in blocks of 32 over index_head_dim (§3.5).
    multipleOf32("index_head_dim", s.indexHeadDim,
                 "indexer queries and keys are FP4-quantised in blocks of "
                 "32");
    if (!ok())
      return;
    // wo_a groups whole heads: o.view(b, s, o_groups, -1).
    if (s.nHeads % s.oGroups != 0)
      fail("o_groups", "",
           "n_heads " + str(s.nHeads) + " is not divisible by o_groups " +
               str(s.oGroups) +
               "; expected a divisor of n_heads (each output group takes "
               "whole heads)");
    // wo_b is an FP8 GEMM with K = o_groups * o_lora_rank.
    __int128 oWidth = (__int128)s.oGroups * s.oLoraRank;
    if (ok() && oWidth % 32 != 0)
      fail("o_lora_rank", "",
           "o_groups*o_lora_rank = " + str(s.oGroups) + "*" +
               str(s.oLoraRank) + " = " + str(int64_t(oWidth)) +
               " is not a multiple of 32; expected a multiple of 32 (K of "
               "the FP8 GEMM wo_b is quantised in blocks of 32)");
    // RoPE rotates interleaved pairs of the last rope_head_dim channels of a
    // head (§9.2), in the main heads and in the indexer heads.
    if (ok() && s.ropeHeadDim % 2 != 0)
      fail("rope_head_dim", "",
           str(s.ropeHeadDim) + " is odd; expected an even number (RoPE "
                                "rotates interleaved pairs)");
    if (ok() && s.ropeHeadDim > s.headDim)
      fail("rope_head_dim", "",
           str(s.ropeHeadDim) + " exceeds head_dim " + str(s.headDim) +
               "; expected at most " + str(s.headDim) +
               " (RoPE rotates the last rope_head_dim channels of a head)");
    if (ok() && s.ropeHeadDim > s.indexHeadDim)
      fail("index_head_dim", "",
           str(s.indexHeadDim) + " is smaller than rope_head_dim " +
               str(s.ropeHeadDim) + "; expected at least " +
               str(s.ropeHeadDim) +
               " (the indexer rotates the last rope_head_dim channels)");
  }

  void checkRope() {
    if (!ok())
      return;
    positiveNumber("rope_theta", s.ropeTheta, "the RoPE base");
    positiveNumber("compress_rope_theta", s.compressRopeTheta,
                   "the RoPE base of ratio > 0 layers");
    nonNegative("original_seq_len", s.originalSeqLen);
    if (s.originalSeqLen > 0) { // YaRN on (§9.2)
      positiveNumber("rope_factor", s.ropeFactor,
                     "YaRN divides low frequencies by it");
      positiveNumber("beta_fast", s.betaFast,
                     "YaRN takes log(original_seq_len / (2 pi beta))");
      positiveNumber("beta_slow", s.betaSlow,
                     "YaRN takes log(original_seq_len / (2 pi beta))");
    }
  }

  void checkSchedule() {
    if (!ok())
      return;
    int64_t total = s.nLayers + s.nMtpLayers;
    if (int64_t(s.compressRatios.size()) != total) {
      fail("compress_ratios", "",
           "expected " + str(total) + " entries (n_layers " + str(s.nLayers) +
               " + n_mtp_layers " + str(s.nMtpLayers) + "), got " +
               str(s.compressRatios.size()));
      return;
    }
    for (int64_t i = 0; i < total && ok(); ++i) {
      int64_t r = ratio(i);
      if (r < 0)
        fail("compress_ratios", at(i),
             "layer " + str(i) + " has compress_ratio " + str(r) +
                 "; expected 0 (window only) or a positive ratio");
      else if (i >= s.nLayers && r != 0)
        // DSparkAttention asserts compress_ratio == 0.
        fail("compress_ratios", at(i),
             "DSpark stage layer " + str(i) + " has compress_ratio " +
                 str(r) + "; expected 0 (DSpark stages attend over their "
                          "window only)");
    }

    // Source lists: backbone layers (the reference ignores MTP ids), strictly
    // increasing, ratio > 0 (a ratio-0 source would size its cache
    // max_seq_len // 0).
    for (auto [ref, ids, what] :
         std::initializer_list<
             std::tuple<StringRef, const std::vector<int64_t> *, const char *>>{
             {"kv_source_layers", &s.kvSourceLayers,
              "a kv source compresses its own KV"},
             {"index_source_layers", &s.indexSourceLayers,
              "an index source scores compressed positions"}}) {
      layerList(ref, *ids);
      for (size_t k = 0; k < ids->size() && ok(); ++k)
        if (ratio((*ids)[k]) == 0)
          fail(ref, at(k),
               "layer " + str((*ids)[k]) +
                   " has compress_ratio 0; expected a layer with "
                   "compress_ratio > 0 (" +
                   what + ")");
    }
    if (!ok())
      return;

    // A kv source owns the index keys (Indexer.owns_k): without an indexer
    // of its own nobody computes them and the layer would read the top-k
    // of an older index source.
    for (int64_t kv : s.kvSourceLayers)
      if (ok() && !contains(s.indexSourceLayers, kv))
        fail("index_source_layers", "",
             "kv source layer " + str(kv) +
                 " is missing; expected every kv source to be an index "
                 "source too (it computes the index keys)");

    // An index source scores the keys of the nearest kv source at or below
    // it (the shared index_k slot).
    for (size_t k = 0; k < s.indexSourceLayers.size() && ok(); ++k) {
      int64_t id = s.indexSourceLayers[k];
      int64_t kv = nearestAtOrBelow(s.kvSourceLayers, id);
      if (kv < 0)
        fail("index_source_layers", at(k),
             "index source layer " + str(id) +
                 " has no kv source at or below it; expected a "
                 "kv_source_layers entry <= " +
                 str(id) + " with compress_ratio " + str(ratio(id)));
      else if (ratio(kv) != ratio(id))
        fail("index_source_layers", at(k),
             "index source layer " + str(id) + " has compress_ratio " +
                 str(ratio(id)) + " but its kv source layer " + str(kv) +
                 " has ratio " + str(ratio(kv)) + "; expected compress_ratio " +
                 str(ratio(kv)) +
                 " (an index source scores the keys of the nearest kv "
                 "source at or below it)");
    }

    // Every other CSA2 layer reads the compressed KV and the top-k last
    // published: the nearest kv / index source at or below it.
    for (int64_t i = 0; i < s.nLayers && ok(); ++i) {
      int64_t r = ratio(i);
      if (r == 0 || contains(s.indexSourceLayers, i))
        continue;
      int64_t kv = nearestAtOrBelow(s.kvSourceLayers, i);
      int64_t ix = nearestAtOrBelow(s.indexSourceLayers, i);
      if (kv < 0)
        fail("compress_ratios", at(i),
             "layer " + str(i) + " has compress_ratio " + str(r) +
                 " but no kv source at or below it; expected 0 or a "
                 "kv_source_layers entry <= " +
                 str(i) + " with compress_ratio " + str(r));
      else if (ratio(kv) != r)
        fail("compress_ratios", at(i),
             "layer " + str(i) + " has compress_ratio " + str(r) +
                 " but its kv source layer " + str(kv) + " has ratio " +
                 str(ratio(kv)) + "; expected compress_ratio " +
                 str(ratio(kv)) +
                 " (a CSA2 layer reads the compressed KV of the nearest kv "
                 "source at or below it)");
      // Unreachable once every kv source is an index source (the nearest
      // index source then lies between the kv source and the layer); kept
      // so the invariant is checked here rather than assumed.
      else if (ix < 0 || ratio(ix) != r)
        fail("compress_ratios", at(i),
             "layer " + str(i) + " has compress_ratio " + str(r) +
                 " but its index source layer " + str(ix) + " has ratio " +
                 (ix < 0 ? std::string("none") : str(ratio(ix))) +
                 "; expected compress_ratio " + str(r) +
                 " (a CSA2 layer reuses the top-k of the nearest index "
                 "source at or below it)");
    }
  }

  void checkCandidates() {
    if (!ok() || s.candidateSourceLayer < 0)
      return;
    int64_t c = s.candidateSourceLayer;
    int64_t ced = s.nLayers / 2;
    if (c >= s.nLayers) {
      fail("candidate_source_layer", "",
           "layer " + str(c) +
               " is out of range; expected -1 (off) or a backbone layer id "
               "in " +
               backboneRange());
      return;
    }
    // The candidate pool is published by an indexer (select_candidate_blocks
    // runs on the source's own scores). dsc further requires a Full layer in
    // the decoder half: the CED split computes the decoder's first kv source
    // (compressor + index keys) for every prompt token, and the candidate
    // pool with it, before the decoder replays the tail.
    if (!contains(s.kvSourceLayers, c) || !contains(s.indexSourceLayers, c)) {
      fail("candidate_source_layer", "",
           "layer " + str(c) + " is not a full layer (" +
               (ratio(c) == 0 ? std::string("it has compress_ratio 0")
                : contains(s.indexSourceLayers, c)
                    ? std::string("it is an index source but no kv source")
                    : std::string("it is no kv source")) +
               "); expected a layer in both kv_source_layers and "
               "index_source_layers");
      return;
    }
    if (c < ced) {
      fail("candidate_source_layer", "",
           "layer " + str(c) +
               " is an encoder layer; expected a decoder layer (id >= "
               "n_layers/2 = " +
               str(ced) + ")");
      return;
    }
    positive("candidate_topk_blocks", s.candidateTopkBlocks);
    positive("candidate_block_size", s.candidateBlockSize);
    // Indexer.uses_candidates = 0 <= candidate_source_layer < layer_id: every
    // later index source masks its scores with the pool, whose width is the
    // candidate source's compressed length.
    for (size_t k = 0; k < s.indexSourceLayers.size() && ok(); ++k) {
      int64_t id = s.indexSourceLayers[k];
      if (id > c && ratio(id) != ratio(c))
        fail("index_source_layers", at(k),
             "index source layer " + str(id) + " has compress_ratio " +
                 str(ratio(id)) + " but scores inside the candidate pool of "
                                  "layer " +
                 str(c) + " with ratio " + str(ratio(c)) +
                 "; expected compress_ratio " + str(ratio(c)) +
                 " (every index source after the candidate source masks its "
                 "scores with that pool)");
    }
  }

  void checkEngram() {
    if (!ok())
      return;
    layerList("engram_layer_ids", s.engramLayerIds);
    if (ok() && s.engramNumEmbeddings.size() != s.engramLayerIds.size())
      fail("engram_num_embeddings", "",
           "expected " + str(s.engramLayerIds.size()) +
               " entries (one per engram_layer_ids entry), got " +
               str(s.engramNumEmbeddings.size()));
    if (!ok() || !s.hasEngram())
      return;
    // One n-gram size at least (2-grams): (max-1)*heads hash columns.
    if (s.engramMaxNgramSize < 2)
      fail("engram_max_ngram_size", "",
           str(s.engramMaxNgramSize) +
               "; expected at least 2 (Engram hashes 2-grams and longer)");
    positive("engram_n_heads", s.engramNHeads);
    positive("engram_head_dim", s.engramHeadDim);
    if (ok())
      // Table rows are FP8 with one E8M0 scale per 32 (§7.5).
      multipleOf32("engram_head_dim", s.engramHeadDim,
                   "Engram table rows carry one scale per 32 values");
    positive("engram_vocab_size", s.engramVocabSize);
    // The multiplier bound is INT64_MAX // engram_compressed_vocab_size.
    positive("engram_compressed_vocab_size", s.engramCompressedVocabSize);
    // NgramHashState: pad_id = token_map[engram_pad_id].
    if (ok() && (s.engramPadId < 0 || s.engramPadId >= s.vocabSize))
      fail("engram_pad_id", "",
           "token " + str(s.engramPadId) +
               " is out of range; expected a token id in [0, " +
               str(s.vocabSize) + ")");
  }

  void checkDSpark() {
    if (!ok())
      return;
    // Forward collects main_hiddens in layer order; main_proj expects
    // len(dspark_target_layer_ids) of them.
    layerList("dspark_target_layer_ids", s.dsparkTargetLayerIds);
    if (!ok() || !s.hasDSpark())
      return;
    // Without a block size the reference builds no DSpark stage at all.
    positive("dspark_block_size", s.dsparkBlockSize);
    if (ok() && s.dsparkTargetLayerIds.empty())
      fail("dspark_target_layer_ids", "",
           "empty; expected at least one backbone layer when n_mtp_layers "
           "is " +
               str(s.nMtpLayers) +
               " (DSpark stage 0 projects their hidden states)");
    positive("dspark_markov_rank", s.dsparkMarkovRank);
    if (ok() && (s.dsparkNoiseTokenId < 0 ||
                 s.dsparkNoiseTokenId >= s.vocabSize))
      fail("dspark_noise_token_id", "",
           "token " + str(s.dsparkNoiseTokenId) +
               " is out of range; expected a token id in [0, " +
               str(s.vocabSize) + ")");
    nonNegative("dspark_n_routed_experts", s.dsparkNRoutedExperts);
    nonNegative("dspark_n_activated_experts", s.dsparkNActivatedExperts);
    // get_moe_config: 0 falls back to the backbone's counts.
    int64_t routed = s.dsparkNRoutedExperts ? s.dsparkNRoutedExperts
                                            : s.nRoutedExperts;
    int64_t active = s.dsparkNActivatedExperts ? s.dsparkNActivatedExperts
                                               : s.nActivatedExperts;
    if (ok() && active > routed)
      fail("dspark_n_activated_experts", "",
           str(active) + " exceeds the DSpark stages' " + str(routed) +
               " routed experts; expected at most " + str(routed));
  }

  void checkVisionAndLimits() {
    if (!ok())
      return;
    nonNegative("vision_n_layers", s.visionNLayers);
    if (ok() && s.visionNLayers > 0 &&
        (s.imageTokenId < 0 || s.imageTokenId >= s.vocabSize))
      fail("image_token_id", "",
           "token " + str(s.imageTokenId) +
               " is out of range; expected a token id in [0, " +
               str(s.vocabSize) + ")");
    if (s.limits.maxSeqLen)
      positive("max_seq_len", *s.limits.maxSeqLen);
    if (s.limits.maxBatchSize)
      positive("max_batch_size", *s.limits.maxBatchSize);
    if (s.limits.temperature && *s.limits.temperature < 0)
      fail("temperature", "",
           num(*s.limits.temperature) +
               "; expected a number >= 0 (0 samples greedily)");
  }
};

} // namespace

llvm::Error validateModelSpec(const ModelSpec &spec, StringRef displayName,
                              const KeySpelling &spell) {
  return Checker(spec, displayName, spell).run();
}

llvm::Error finalizeModelSpec(ModelSpec &spec, StringRef displayName,
                              const KeySpelling &spell) {
  spec.layers.clear();
  spec.engram.clear();
  spec.cedSplitLayer = 0;
  if (llvm::Error err = validateModelSpec(spec, displayName, spell))
    return err;

  // engram_num_embeddings must be the table sizes the drawn primes imply
  // (reference-spec §7.2): every hash lands in [0, sum of the layer's primes).
  std::vector<EngramLayerLayout> layout = computeEngramLayout(spec);
  for (size_t i = 0; i < layout.size(); ++i)
    if (layout[i].tableRows != spec.engramNumEmbeddings[i])
      return llvm::createStringError(
          llvm::inconvertibleErrorCode(),
          displayName.str() + ": key '" + spell("engram_num_embeddings") +
              "[" + std::to_string(i) + "]': Engram layer " +
              std::to_string(layout[i].layerId) + " has " +
              std::to_string(spec.engramNumEmbeddings[i]) +
              " table rows; expected " + std::to_string(layout[i].tableRows) +
              " (the sum of its " +
              std::to_string(spec.engramHashColumns()) + " drawn primes)");

  spec.engram = std::move(layout);
  deriveLayers(spec);
  return llvm::Error::success();
}

} // namespace dsc::models
