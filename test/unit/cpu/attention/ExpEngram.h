// TEMPORARY experiment (not to be kept): engram gate with torch-like sum orders.
#pragma once
#include "runtime/cpu/kernels/dense/Engram.h"
#include "runtime/cpu/kernels/dense/Linear.h"
#include "runtime/cpu/kernels/dense/Norm.h"
#include "dsc/numerics/ScalarCodecs.h"
#include <cmath>
#include <cstdlib>
#include <vector>
namespace expe {
namespace nx = dsc::numerics;
// torch inner fp32 sum of n contiguous values with L lanes (AVX2: 8, AVX512: 16)
inline float torchInnerSum(const float *x, int64_t n, int L) {
  int64_t vecSize = n / L;
  std::vector<float> partial(4 * L, 0.0f);
  int64_t sizeIlp = vecSize / 4;
  // multi_row_sum over sizeIlp rows of 4 vectors (assume sizeIlp < 16: plain loop)
  for (int64_t i = 0; i < sizeIlp; ++i)
    for (int k = 0; k < 4; ++k)
      for (int l = 0; l < L; ++l) partial[k * L + l] += x[(i * 4 + k) * L + l];
  for (int64_t i = sizeIlp * 4; i < vecSize; ++i)
    for (int l = 0; l < L; ++l) partial[l] += x[i * L + l];
  for (int k = 1; k < 4; ++k)
    for (int l = 0; l < L; ++l) partial[l] += partial[k * L + l];
  float fin = 0.0f;
  for (int64_t k = vecSize * L; k < n; ++k) fin += x[k];
  for (int l = 0; l < L; ++l) fin += partial[l];
  return fin;
}
inline void engram(const uint16_t *h, int64_t S, int64_t hc, int64_t D, const int64_t *hashIds,
                   int64_t cols, int64_t hashStride, const dsc::cpu::EngramWeights &w, float normEps,
                   uint16_t *hOut) {
  int mode = std::getenv("DSC_ENG") ? std::atoi(std::getenv("DSC_ENG")) : 0;
  if (mode == 0) { dsc::cpu::engram(h, S, hc, D, hashIds, cols, hashStride, w, normEps, nullptr, hOut); return; }
  const int64_t K = cols * w.headDim;
  std::vector<uint16_t> rows(S * K), kv(S * (hc + 1) * D);
  dsc::cpu::engramLookup(hashIds, S, cols, hashStride, w.table, w.tableScale, w.tableRows, w.headDim, rows.data());
  dsc::cpu::linearFp8(rows.data(), S, K, w.wkv, w.wkvScale, (hc + 1) * D, kv.data());
  int L = mode == 1 ? 8 : 16;
  std::vector<float> hf(D), key(D), value(D), prod(D), sq(D);
  const float invSqrtD = static_cast<float>(std::pow((double)D, -0.5));
  for (int64_t s = 0; s < S; ++s) {
    const uint16_t *kvs = kv.data() + s * (hc + 1) * D;
    for (int64_t d = 0; d < D; ++d) value[d] = nx::bf16ToFloat(kvs[hc * D + d]);
    float gate[16];
    for (int64_t c = 0; c < hc; ++c) {
      for (int64_t d = 0; d < D; ++d) { hf[d] = nx::bf16ToFloat(h[(s * hc + c) * D + d]); key[d] = nx::bf16ToFloat(kvs[c * D + d]); }
      for (int64_t d = 0; d < D; ++d) sq[d] = hf[d] * hf[d];
      float m1 = torchInnerSum(sq.data(), D, L) / (float)D;
      for (int64_t d = 0; d < D; ++d) sq[d] = key[d] * key[d];
      float m2 = torchInnerSum(sq.data(), D, L) / (float)D;
      float r1 = 1.0f / std::sqrt(m1 + normEps), r2 = 1.0f / std::sqrt(m2 + normEps);
      float rstd = r1 * r2;
      for (int64_t d = 0; d < D; ++d) { float wq = nx::bf16ToFloat(w.qWeight[c*D+d]) * nx::bf16ToFloat(w.kWeight[c*D+d]); prod[d] = (hf[d] * wq) * key[d]; }
      float dot = torchInnerSum(prod.data(), D, L) * rstd * invSqrtD;
      float a = std::fabs(dot); float mag = std::sqrt(a < 1e-6f ? 1e-6f : a);
      float x = std::copysign(mag, dot);
      gate[c] = 1.0f / (1.0f + std::exp(-x));
    }
    for (int64_t c = 0; c < hc; ++c)
      for (int64_t d = 0; d < D; ++d) {
        int64_t i = (s * hc + c) * D + d;
        hOut[i] = nx::bf16FromFloat(nx::bf16ToFloat(h[i]) + gate[c] * value[d]);
      }
  }
}
}
