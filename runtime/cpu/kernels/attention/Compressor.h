//===- Compressor.h - KV compressor and compressed-KV records (CPU) -------===//
//
// What: the reference's Compressor.forward and the compressed half of
// Attention._compress_kv (reference-spec §9.4, §15.7, §15.12), for KV
// sources only.
//   - ratio r > 1 (ratio 2 in V4.1): xf = fp32(x); kv = xf.wkv^T and
//     s = xf.wgate^T in fp32 (bf16 checkpoint weights upcast: linearF32);
//     groups {j*r .. j*r+r-1}; per channel softmax over the r tokens,
//     m = max, e = exp(s - m), sum = ((0 + e0) + e1) + ..., w = e / sum (true
//     division, torch's non-last-dim softmax); pooled = sum_r kv_r * w_r in
//     fp32 (index order); bf16 cast, THEN RMSNorm (compressor.norm) -> bf16.
//     Any call (prefill, a prefill chunk, decode) writes token p to state
//     slot p % r and emits one latent when (p+1) % r == 0, pooled from the
//     whole group; the slots of an unfinished group stay for the next call.
//   - ratio 1: latent = RMSNorm(bf16 linear(x, wkv)) (linearBf16), one per
//     token, no gate, no state.
//   - latent j stands for position j*r; the latents returned here are
//     pre-RoPE (the indexer consumes them).
//   - compressKvWrite: RoPE on the last ropeDim channels at position j*r,
//     then FP4 QDQ with E4M3 scales per 16 (numerics::mainKvFormat) written
//     as the record of entry j of the source's main-KV pool.
// State: fp32 kv [r, headDim] zeros, score [r, headDim] -inf, per sequence.
// Rounding points: linearF32 (fp32 result), exp/div of the softmax (fp32),
// pooled products and sums (fp32), bf16 cast, RMSNorm (bf16), RoPE (bf16),
// FP4 record encode.
//===----------------------------------------------------------------------===//
#ifndef DSC_RUNTIME_CPU_KERNELS_ATTENTION_COMPRESSOR_H
#define DSC_RUNTIME_CPU_KERNELS_ATTENTION_COMPRESSOR_H

#include "runtime/cpu/kernels/attention/KvRecords.h"
#include "runtime/cpu/kernels/attention/Rope.h"

#include <cstdint>
#include <vector>

namespace dsc::cpu {

/// Partial-group state of a ratio > 1 compressor, one sequence.
struct CompressorState {
  int64_t ratio = 0, headDim = 0;
  std::vector<float> kv;    ///< [ratio, headDim], zeros initially
  std::vector<float> score; ///< [ratio, headDim], -inf initially
  void reset(int64_t ratio, int64_t headDim);
};

struct CompressorWeights {
  int64_t ratio = 0;               ///< >= 1
  int64_t dim = 0, headDim = 0;
  const uint16_t *wkv = nullptr;   ///< bf16 [headDim, dim]
  const uint16_t *wgate = nullptr; ///< bf16 [headDim, dim], ratio > 1 only
  const uint16_t *norm = nullptr;  ///< bf16 [headDim]
  float eps = 1e-20f;
};

/// Latents emitted by a call: (startPos + S) / r - startPos / r (S / r in
/// prefill, 0 or 1 in decode), S for r == 1. The first is group startPos / r.
int64_t compressorLatentCount(int64_t ratio, int64_t startPos, int64_t S);

/// x: bf16 [S, dim] (attn_norm output). Writes compressorLatentCount(...)
/// pre-RoPE bf16 latents [n, headDim] and returns n. `state` is required
/// for ratio > 1 (ignored for ratio 1). Call shapes: (0, S) or (p > 0, 1).
int64_t compressorForward(const CompressorWeights &w, const uint16_t *x, int64_t S,
                          int64_t startPos, CompressorState *state, uint16_t *latents);

/// RoPE (at (j0+i)*ratio) + FP4/E4M3 QDQ of latents [n, headDim] (copied,
/// not modified) into records j0..j0+n-1 of `mainKv`.
void compressKvWrite(const uint16_t *latents, int64_t n, int64_t j0, int64_t ratio,
                     int64_t headDim, const RopeFreqs &freqs, const KvRecordPool &mainKv);

} // namespace dsc::cpu

#endif // DSC_RUNTIME_CPU_KERNELS_ATTENTION_COMPRESSOR_H
