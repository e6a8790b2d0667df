//===- Indexer.cpp - CSA2 indexer -----------------------------------------===//
#include "runtime/cpu/kernels/attention/Indexer.h"

#include "dsc/numerics/Quantize.h"
#include "dsc/numerics/ScalarCodecs.h"
#include "dsc/numerics/SparseSelect.h"
#include "runtime/cpu/ParallelFor.h"
#include "runtime/cpu/kernels/dense/Linear.h"
#include "runtime/cpu/kernels/dense/Norm.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <vector>

namespace dsc::cpu {

using numerics::bf16FromFloat;
using numerics::bf16ToFloat;
using numerics::roundToBf16;

void indexKeysWrite(const uint16_t *latents, int64_t n, int64_t j0, int64_t ratio,
                    int64_t headDim, const uint16_t *wk, const uint16_t *kNorm,
                    int64_t indexHeadDim, float eps, const RopeFreqs &freqs,
                    const KvRecordPool &keys) {
  if (n <= 0)
    return;
  assert(keys.values() == indexHeadDim);
  std::vector<uint16_t> k(static_cast<size_t>(n * indexHeadDim));
  linearBf16(latents, n, headDim, wk, indexHeadDim, k.data());
  rmsNorm(k.data(), n, indexHeadDim, kNorm, eps, k.data());
  applyRope(k.data(), n, 1, indexHeadDim, freqs, j0 * ratio, ratio, false);
  std::vector<float> row(static_cast<size_t>(indexHeadDim));
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t c = 0; c < indexHeadDim; ++c)
      row[static_cast<size_t>(c)] = bf16ToFloat(k[static_cast<size_t>(i * indexHeadDim + c)]);
    keys.write(j0 + i, row.data());
  }
}

void indexQueries(const uint16_t *qr, int64_t S, int64_t qLoraRank, const uint8_t *wqB,
                  const uint8_t *wqBScale, int64_t nHeads, int64_t indexHeadDim,
                  const RopeFreqs &freqs, int64_t startPos, float *q) {
  const int64_t width = nHeads * indexHeadDim;
  std::vector<uint16_t> qb(static_cast<size_t>(S * width));
  linearFp8(qr, S, qLoraRank, wqB, wqBScale, width, qb.data());
  applyRope(qb.data(), S, nHeads, indexHeadDim, freqs, startPos, 1, false);
  // fp4_act_quant(q, 32, inplace): blocks of 32 along the last (Dk) axis.
  std::vector<float> in(static_cast<size_t>(indexHeadDim));
  for (int64_t v = 0; v < S * nHeads; ++v) {
    for (int64_t c = 0; c < indexHeadDim; ++c)
      in[static_cast<size_t>(c)] = bf16ToFloat(qb[static_cast<size_t>(v * indexHeadDim + c)]);
    numerics::qdqFp4E8M0Row(in.data(), static_cast<int>(indexHeadDim), numerics::kFp4E8M0Block,
                            q + v * indexHeadDim);
  }
}

float indexWeightScale(int64_t nHeads, int64_t indexHeadDim) {
  return static_cast<float>(std::pow(static_cast<double>(indexHeadDim), -0.5) *
                            std::pow(static_cast<double>(nHeads), -0.5));
}

void indexWeights(const uint16_t *x, int64_t S, int64_t dim, const uint16_t *weightsProj,
                  int64_t nHeads, int64_t indexHeadDim, uint16_t *w) {
  linearBf16(x, S, dim, weightsProj, nHeads, w);
  const float scale = indexWeightScale(nHeads, indexHeadDim);
  for (int64_t i = 0; i < S * nHeads; ++i)
    w[i] = bf16FromFloat(bf16ToFloat(w[i]) * scale);
}

void indexScores(const float *q, const uint16_t *w, int64_t S, int64_t nHeads,
                 int64_t indexHeadDim, const float *keys, int64_t width, float *scores) {
  const int64_t D = indexHeadDim;
  parallelFor(S, 1, [&](int64_t begin, int64_t end) {
    std::vector<float> wh(static_cast<size_t>(nHeads));
    for (int64_t s = begin; s < end; ++s) {
      for (int64_t h = 0; h < nHeads; ++h)
        wh[static_cast<size_t>(h)] = bf16ToFloat(w[s * nHeads + h]);
      const float *qs = q + s * nHeads * D;
      for (int64_t t = 0; t < width; ++t) {
        const float *kt = keys + t * D;
        float acc = 0.0f;
        for (int64_t h = 0; h < nHeads; ++h) {
          const float *qh = qs + h * D;
          float dot = 0.0f;
          for (int64_t d = 0; d < D; ++d)
            dot += qh[d] * kt[d];
          float e = roundToBf16(dot);             // einsum output, bf16
          e = e > 0.0f ? e : 0.0f;                // relu_
          const float p = roundToBf16(e * wh[static_cast<size_t>(h)]); // * weights, bf16
          acc += p;                               // sum(dim=2), fp32 accumulator
        }
        scores[s * width + t] = roundToBf16(acc);
      }
    }
  });
}

int64_t indexCompressLen(int64_t startPos, int64_t s, int64_t ratio) {
  return (startPos + s + 1) / ratio;
}

void indexMaskInvisible(float *scores, int64_t S, int64_t width, int64_t startPos, int64_t ratio) {
  for (int64_t s = 0; s < S; ++s)
    numerics::maskInvisible(scores + s * width, width, indexCompressLen(startPos, s, ratio));
}

void indexSelectCandidates(const float *scores, int64_t S, int64_t width, int64_t startPos,
                           int64_t ratio, int64_t topkBlocks, int64_t blockSize,
                           int32_t *candidates) {
  for (int64_t s = 0; s < S; ++s) {
    const std::vector<int32_t> ids = numerics::selectCandidateBlockIds(
        scores + s * width, width, indexCompressLen(startPos, s, ratio), topkBlocks, blockSize);
    std::copy(ids.begin(), ids.end(), candidates + s * topkBlocks);
  }
}

void indexMaskCandidates(float *scores, const int32_t *candidates, int64_t topkBlocks,
                         int64_t blockSize, int64_t S, int64_t width) {
  for (int64_t s = 0; s < S; ++s) {
    const std::vector<uint8_t> mask = numerics::candidateMaskFromBlocks(
        candidates + s * topkBlocks, topkBlocks, blockSize, width);
    numerics::maskNonCandidates(scores + s * width, mask.data(), width);
  }
}

int64_t indexTopKWidth(int64_t indexTopk, int64_t width) { return std::min(indexTopk, width); }

void indexTopK(const float *scores, int64_t S, int64_t width, int64_t startPos, int64_t ratio,
               int64_t indexTopk, int64_t offset, int32_t *idx) {
  const int64_t k = indexTopKWidth(indexTopk, width);
  parallelFor(S, 8, [&](int64_t begin, int64_t end) {
    for (int64_t s = begin; s < end; ++s) {
      const std::vector<int32_t> row = numerics::indexerTopK(
          scores + s * width, width, indexCompressLen(startPos, s, ratio), indexTopk, offset);
      assert(static_cast<int64_t>(row.size()) == k);
      std::copy(row.begin(), row.end(), idx + s * k);
    }
  });
}

} // namespace dsc::cpu
