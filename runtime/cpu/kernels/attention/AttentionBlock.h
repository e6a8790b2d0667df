//===- AttentionBlock.h - One layer's CSA2 attention up to o (CPU driver) -===//
//
// What: Attention.forward of the reference (reference-spec §9.1-§9.8 up to
// and including the inverse RoPE of §9.8 step 1) for one layer, composing
// Rope.h, WindowKv.h, Compressor.h, Indexer.h and SparseAttention.h:
//   qr = q_norm(wq_a(x)) (FP8 GEMM, RMSNorm); q = wq_b(qr) [S, H, Dh] + RoPE;
//   kv = kv_norm(wkv(x)) + RoPE -> window ring records (FP8) and idx;
//   ratio > 0: a KV source runs its compressor (latents pre-RoPE), publishes
//     its main KV; an index source runs the indexer (owners write and
//     publish their keys on EVERY forward, the golden cases' fixed
//     behaviour, §15.1), publishes top-k (and candidates when it is the
//     candidate source); a Reuse layer takes the published top-k; a
//     source's latents are then RoPE'd, FP4-QDQ'd and written to its main KV;
//   o = sparse_attn(q, cat(window, compressed), sink, cat(idx)) then inverse
//     RoPE at the query positions. The grouped output projection (wo_a
//     einsum + wo_b) is the dense kernels' (GroupedOutput.h).
// The shared slots mirror SharedAttentionRuntime (§9.9): one slot each for
// compressed KV, index keys, top-k and candidates, written by sources and
// read by later layers, never reset between forwards.
// Rounding points: those of the composed kernels (their headers).
// Call shapes: prefill (startPos 0, any S) or decode (startPos > 0, S = 1).
//===----------------------------------------------------------------------===//
#ifndef DSC_RUNTIME_CPU_KERNELS_ATTENTION_ATTENTIONBLOCK_H
#define DSC_RUNTIME_CPU_KERNELS_ATTENTION_ATTENTIONBLOCK_H

#include "runtime/cpu/kernels/attention/Compressor.h"
#include "runtime/cpu/kernels/attention/KvRecords.h"
#include "runtime/cpu/kernels/attention/Rope.h"

#include <cstdint>
#include <vector>

namespace dsc::cpu {

/// One layer's attention shape and role (from the model config).
struct AttentionLayerConfig {
  int64_t layer = 0;
  int64_t dim = 0, nHeads = 0, headDim = 0, ropeDim = 0, qLoraRank = 0, window = 0;
  int64_t ratio = 0;         ///< compress ratio; 0 = sliding window only
  bool kvSource = false;     ///< owns a compressor, main KV and index keys
  bool indexSource = false;  ///< runs an indexer (Full or Reindex)
  bool candidateSource = false;
  bool usesCandidates = false; ///< 0 <= candidate_source_layer < layer
  int64_t indexNHeads = 0, indexHeadDim = 0, indexTopk = 0;
  int64_t candidateTopkBlocks = 0, candidateBlockSize = 0;
  float normEps = 1e-20f;
};

/// Checkpoint tensors (raw pointers, checkpoint layouts; null when the role
/// does not have them).
struct AttentionLayerWeights {
  const uint8_t *wqA = nullptr, *wqAScale = nullptr; ///< E4M3 [qLoraRank, dim] + UE8M0
  const uint16_t *qNorm = nullptr;                   ///< bf16 [qLoraRank]
  const uint8_t *wqB = nullptr, *wqBScale = nullptr; ///< E4M3 [H*Dh, qLoraRank]
  const uint8_t *wkv = nullptr, *wkvScale = nullptr; ///< E4M3 [Dh, dim]
  const uint16_t *kvNorm = nullptr;                  ///< bf16 [Dh]
  const float *attnSink = nullptr;                   ///< fp32 [H]
  // compressor (KV sources)
  const uint16_t *cmpWkv = nullptr, *cmpWgate = nullptr, *cmpNorm = nullptr;
  // indexer (index sources; wk / kNorm for owners)
  const uint8_t *idxWqB = nullptr, *idxWqBScale = nullptr;
  const uint16_t *idxWeightsProj = nullptr, *idxWk = nullptr, *idxKNorm = nullptr;
};

/// Page layouts of the three record pools (page size and order are data).
struct AttentionPageConfig {
  int32_t windowTokensPerPage = 64, mainTokensPerPage = 64, indexTokensPerPage = 64;
  numerics::KvPageOrder windowOrder = numerics::KvPageOrder::TokenInterleaved;
  numerics::KvPageOrder mainOrder = numerics::KvPageOrder::TokenInterleaved;
  numerics::KvPageOrder indexOrder = numerics::KvPageOrder::PagePlanar;
};

/// One layer's state across calls (one sequence).
struct AttentionLayerState {
  KvRecordStore window;        ///< swaKvFormat(headDim), `window` slots
  CompressorState compressor;  ///< ratio > 1 KV sources
  KvRecordStore mainKv;        ///< KV sources: mainKvFormat(headDim), maxSeqLen/ratio
  KvRecordStore indexKeys;     ///< KV sources: indexKeyFormat(indexHeadDim)
};

/// Allocates a layer's state for sequences up to maxSeqLen tokens.
AttentionLayerState makeAttentionLayerState(const AttentionLayerConfig &cfg, int64_t maxSeqLen,
                                            const AttentionPageConfig &pages = {});

/// SharedAttentionRuntime (§9.9) for one sequence.
struct SharedAttentionSlots {
  const KvRecordPool *compressKv = nullptr; ///< latest KV source's main KV
  int64_t compressKvRatio = 0;
  const KvRecordPool *indexKeys = nullptr;  ///< latest owner's index keys
  int64_t indexKeysRatio = 0;
  std::vector<int32_t> topkIdxs;            ///< [S, topkWidth], offset included
  int64_t topkWidth = 0;
  std::vector<uint8_t> candidates;          ///< [S, candidatesWidth]
  int64_t candidatesWidth = 0;
};

/// Optional outputs for tests and dumps.
struct AttentionTrace {
  std::vector<uint16_t> qr;       ///< [S, qLoraRank]
  std::vector<int32_t> idx;       ///< [S, idxWidth] full list (window + compressed)
  int64_t idxWidth = 0;
  int64_t latents = 0;            ///< latents emitted by this layer's compressor
};

/// x: attn_norm output bf16 [S, dim]; o: bf16 [S, nHeads, headDim] after the
/// inverse RoPE. `freqs` is the layer's RoPE table.
void attentionForward(const AttentionLayerConfig &cfg, const AttentionLayerWeights &w,
                      const RopeFreqs &freqs, AttentionLayerState &state,
                      SharedAttentionSlots &shared, const uint16_t *x, int64_t S,
                      int64_t startPos, uint16_t *o, AttentionTrace *trace = nullptr);

} // namespace dsc::cpu

#endif // DSC_RUNTIME_CPU_KERNELS_ATTENTION_ATTENTIONBLOCK_H
