//===- Indexer.h - CSA2 indexer: keys, queries, scores, selection (CPU) ---===//
//
// What: the reference's Indexer.forward and select_candidate_blocks
// (reference-spec §9.5, §9.6, §15.1, §15.2, §15.8, §15.11).
//   - keys (index-key owners = KV sources): k = k_norm(wk(latent)) (bf16
//     F.linear: linearBf16, RMSNorm), RoPE on the last ropeDim channels at
//     j*ratio, FP4 QDQ with UE8M0 scales per 32 (numerics::indexKeyFormat),
//     stored as index-key record j. Every owner publishes its own keys on
//     every forward (the golden cases' fixed behaviour, §15.1).
//   - queries: q = wq_b(qr) (FP8 GEMM: linearFp8) -> [S, Hi, Dk] bf16, RoPE
//     at the query positions, FP4 QDQ (UE8M0 per 32 along Dk).
//   - weights: w = bf16( fp32(bf16 linear(x, weights_proj)) * fp32(Dk^-1/2 *
//     Hi^-1/2) ), the scalar computed in double and rounded to fp32 once (a
//     python float times a bf16 tensor: torch multiplies in fp32 opmath).
//   - scores, bf16 tensor math at every step, as torch on the CPU computes
//     einsum("bshd,btd->bsht") -> relu_ -> * w -> sum(dim=2):
//       e[s,h,t] = bf16( sum_d q*k ), fp32 accumulation (torch's bf16 bmm
//                  accumulates in fp32 and rounds once; with FP4-QDQ q and k
//                  every product and partial sum is exact in fp32, so the
//                  summation order does not matter);
//       p[s,h,t] = bf16( relu(e) * w[s,h] ) (bf16*bf16 product in fp32, one
//                  rounding);
//       score[s,t] = bf16( sum_h p ) with an fp32 accumulator in head order
//                  (torch's cascade sum: acc_type<BFloat16> = float,
//                  multi_row_sum adds the H rows in order for vectorised
//                  column blocks; its ILP-4 row_sum, used for leftover
//                  columns, adds rows {h%4 == k} first -- the two orders can
//                  only differ when the fp32 sum of H bf16 values is
//                  inexact, i.e. their exponents span > ~16 binades);
//       one bf16 rounding at the end (output filled with 0, then += acc).
//   - visibility: compressed j is visible to the query at absolute position
//     t iff j < (t+1)//ratio (decode: (start_pos+1)//ratio); others -inf.
//   - candidates (candidate source): numerics::selectCandidateBlockIds per
//     row (the picked block ids, not a mask); level two (later index sources
//     of the ratio): positions outside those blocks -inf.
//   - top-k: numerics::indexerTopK (k = min(index_topk, width), sorted
//     ascending, j + offset if visible else -1; ties: lower index wins).
// Rows are independent (parallelFor over query rows).
//===----------------------------------------------------------------------===//
#ifndef DSC_RUNTIME_CPU_KERNELS_ATTENTION_INDEXER_H
#define DSC_RUNTIME_CPU_KERNELS_ATTENTION_INDEXER_H

#include "runtime/cpu/kernels/attention/KvRecords.h"
#include "runtime/cpu/kernels/attention/Rope.h"

#include <cstdint>

namespace dsc::cpu {

/// Owner keys of latents [n, headDim] (pre-RoPE) into index-key records
/// j0..j0+n-1 of `keys`. wk bf16 [indexHeadDim, headDim], kNorm bf16
/// [indexHeadDim].
void indexKeysWrite(const uint16_t *latents, int64_t n, int64_t j0, int64_t ratio,
                    int64_t headDim, const uint16_t *wk, const uint16_t *kNorm,
                    int64_t indexHeadDim, float eps, const RopeFreqs &freqs,
                    const KvRecordPool &keys);

/// Query QDQ values q [S, nHeads, indexHeadDim] (fp32 holding bf16 values)
/// from qr bf16 [S, qLoraRank]; wqB E4M3 [nHeads*indexHeadDim, qLoraRank]
/// with UE8M0 32x32 scales.
void indexQueries(const uint16_t *qr, int64_t S, int64_t qLoraRank, const uint8_t *wqB,
                  const uint8_t *wqBScale, int64_t nHeads, int64_t indexHeadDim,
                  const RopeFreqs &freqs, int64_t startPos, float *q);

/// The fp32 scalar Dk^-1/2 * Hi^-1/2 (computed in double, rounded once).
float indexWeightScale(int64_t nHeads, int64_t indexHeadDim);

/// Head weights w bf16 [S, nHeads] from x bf16 [S, dim]; weightsProj bf16
/// [nHeads, dim].
void indexWeights(const uint16_t *x, int64_t S, int64_t dim, const uint16_t *weightsProj,
                  int64_t nHeads, int64_t indexHeadDim, uint16_t *w);

/// Scores [S, width] (fp32 holding bf16 values) of queries q [S, nHeads, Dk]
/// against decoded keys [width, Dk] with weights w bf16 [S, nHeads]. No
/// masking.
void indexScores(const float *q, const uint16_t *w, int64_t S, int64_t nHeads,
                 int64_t indexHeadDim, const float *keys, int64_t width, float *scores);

/// compress_len of query row s: (startPos + s + 1) / ratio (prefill: (t+1)//r;
/// decode (S = 1): (start_pos+1)//r).
int64_t indexCompressLen(int64_t startPos, int64_t s, int64_t ratio);

/// Visibility: scores[s, j] = -inf for j >= indexCompressLen(s).
void indexMaskInvisible(float *scores, int64_t S, int64_t width, int64_t startPos, int64_t ratio);

/// Level one (candidate source): block ids [S, topkBlocks] (ascending, -1
/// padded).
void indexSelectCandidates(const float *scores, int64_t S, int64_t width, int64_t startPos,
                           int64_t ratio, int64_t topkBlocks, int64_t blockSize,
                           int32_t *candidates);

/// Level two: scores outside the candidate blocks [S, topkBlocks] become -inf.
void indexMaskCandidates(float *scores, const int32_t *candidates, int64_t topkBlocks,
                         int64_t blockSize, int64_t S, int64_t width);

/// Width of the top-k list: min(indexTopk, width).
int64_t indexTopKWidth(int64_t indexTopk, int64_t width);

/// Top-k lists idx [S, indexTopKWidth] (int32): ascending positions, +offset,
/// -1 where j >= compress_len of the row.
void indexTopK(const float *scores, int64_t S, int64_t width, int64_t startPos, int64_t ratio,
               int64_t indexTopk, int64_t offset, int32_t *idx);

} // namespace dsc::cpu

#endif // DSC_RUNTIME_CPU_KERNELS_ATTENTION_INDEXER_H
