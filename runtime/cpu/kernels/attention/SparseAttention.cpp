//===- SparseAttention.cpp - Sparse single-KV-head attention with sink ----===//
#include "runtime/cpu/kernels/attention/SparseAttention.h"

#include "dsc/numerics/ScalarCodecs.h"
#include "runtime/cpu/ParallelFor.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <limits>
#include <vector>

namespace dsc::cpu {

float sparseAttnScale(int64_t headDim) {
  return static_cast<float>(std::pow(static_cast<double>(headDim), -0.5));
}

void sparseAttention(const uint16_t *q, int64_t S, int64_t H, int64_t D, const float *kv,
                     int64_t nKv, const float *sink, const int32_t *idx, int64_t K, float scale,
                     uint16_t *o) {
  const float negInf = -std::numeric_limits<float>::infinity();
  (void)nKv; // bounds are asserted in debug builds
  parallelFor(S * H, 1, [&](int64_t begin, int64_t end) {
    std::vector<float> qf(static_cast<size_t>(D)), acc(static_cast<size_t>(D)),
        pv(static_cast<size_t>(D));
    float logit[kSparseAttnBlock], p[kSparseAttnBlock];
    for (int64_t sh = begin; sh < end; ++sh) {
      const int64_t s = sh / H, h = sh % H;
      const uint16_t *qrow = q + sh * D;
      for (int64_t d = 0; d < D; ++d)
        qf[static_cast<size_t>(d)] = numerics::bf16ToFloat(qrow[d]);
      std::fill(acc.begin(), acc.end(), 0.0f);
      const int32_t *list = idx + s * K;
      float m = -1e30f, denom = 0.0f;
      for (int64_t b0 = 0; b0 < K; b0 += kSparseAttnBlock) {
        const int64_t n = std::min(kSparseAttnBlock, K - b0);
        float blockMax = negInf;
        for (int64_t k = 0; k < n; ++k) {
          const int32_t j = list[b0 + k];
          if (j < 0) {
            logit[k] = negInf;
            continue;
          }
          assert(j < nKv);
          const float *row = kv + int64_t(j) * D;
          float dot = 0.0f;
          for (int64_t d = 0; d < D; ++d)
            dot += qf[static_cast<size_t>(d)] * row[d];
          logit[k] = dot * scale;
          blockMax = std::max(blockMax, logit[k]);
        }
        const float mNew = std::max(m, blockMax);
        const float c = std::exp(m - mNew);
        float psum = 0.0f;
        for (int64_t k = 0; k < n; ++k) {
          p[k] = std::exp(logit[k] - mNew);
          psum += p[k];
        }
        denom = denom * c + psum;
        // acc = acc*c + (P_bf16 . V_block): the block product is its own
        // fp32 sum (an einsum in the reference), then added.
        std::fill(pv.begin(), pv.end(), 0.0f);
        for (int64_t k = 0; k < n; ++k) {
          const int32_t j = list[b0 + k];
          if (j < 0)
            continue; // p = 0 and the reference zeroes the row
          const float pb = numerics::roundToBf16(p[k]);
          const float *row = kv + int64_t(j) * D;
          for (int64_t d = 0; d < D; ++d)
            pv[static_cast<size_t>(d)] += pb * row[d];
        }
        for (int64_t d = 0; d < D; ++d)
          acc[static_cast<size_t>(d)] = acc[static_cast<size_t>(d)] * c + pv[static_cast<size_t>(d)];
        m = mNew;
      }
      denom += std::exp(sink[h] - m);
      uint16_t *orow = o + sh * D;
      for (int64_t d = 0; d < D; ++d)
        orow[d] = numerics::bf16FromFloat(acc[static_cast<size_t>(d)] / denom);
    }
  });
}

} // namespace dsc::cpu
