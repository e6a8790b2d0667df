//===- Mhc.cpp - CPU reference single-pass mHC ----------------------------===//
#include "runtime/cpu/kernels/dense/Mhc.h"

#include "runtime/cpu/ParallelFor.h"
#include "runtime/cpu/kernels/dense/DenseUtil.h"
#include "runtime/cpu/kernels/dense/Norm.h"

#include "dsc/numerics/HyperConnection.h"

#include <vector>

namespace dsc::cpu {

namespace nx = dsc::numerics;

void hcMixes(const uint16_t *h, int64_t S, int64_t hc, int64_t D, const float *fn,
             const float *scale, const float *base, int iters, float normEps, float hcEps,
             float *pre, float *post, float *comb) {
  const int64_t width = hc * D, nmix = (2 + hc) * hc;
  parallelFor(S, 1, [&](int64_t b, int64_t e) {
    std::vector<float> xf(static_cast<size_t>(width)), mixes(static_cast<size_t>(nmix));
    for (int64_t s = b; s < e; ++s) {
      for (int64_t i = 0; i < width; ++i)
        xf[i] = nx::bf16ToFloat(h[s * width + i]);
      const float r = rmsRsqrt(xf.data(), width, normEps);
      for (int64_t k = 0; k < nmix; ++k)
        mixes[k] = static_cast<float>(dotF64(xf.data(), fn + k * width, width)) * r;
      nx::hcSplitSinkhorn(mixes.data(), scale, base, static_cast<int>(hc), iters, hcEps,
                          pre + s * hc, post + s * hc, comb + s * hc * hc);
    }
  });
}

void hcPre(const uint16_t *h, int64_t S, int64_t hc, int64_t D, const float *pre, uint16_t *y) {
  parallelFor(S, 16, [&](int64_t b, int64_t e) {
    for (int64_t s = b; s < e; ++s) {
      const float *p = pre + s * hc;
      const uint16_t *hs = h + s * hc * D;
      for (int64_t d = 0; d < D; ++d) {
        float acc = 0.0f;
        for (int64_t c = 0; c < hc; ++c)
          acc += p[c] * nx::bf16ToFloat(hs[c * D + d]);
        y[s * D + d] = nx::bf16FromFloat(acc);
      }
    }
  });
}

void hcPost(const uint16_t *x, const uint16_t *res, const float *post, const float *comb,
            int64_t S, int64_t hc, int64_t D, uint16_t *out) {
  parallelFor(S, 16, [&](int64_t b, int64_t e) {
    for (int64_t s = b; s < e; ++s) {
      const float *po = post + s * hc;
      const float *cb = comb + s * hc * hc;
      const uint16_t *rs = res + s * hc * D;
      for (int64_t j = 0; j < hc; ++j)
        for (int64_t d = 0; d < D; ++d) {
          float sum = 0.0f;
          for (int64_t i = 0; i < hc; ++i)
            sum += cb[i * hc + j] * nx::bf16ToFloat(rs[i * D + d]);
          const float v = po[j] * nx::bf16ToFloat(x[s * D + d]) + sum;
          out[(s * hc + j) * D + d] = nx::bf16FromFloat(v);
        }
    }
  });
}

void hcExpand(const uint16_t *x, int64_t S, int64_t hc, int64_t D, uint16_t *h) {
  for (int64_t s = 0; s < S; ++s)
    for (int64_t c = 0; c < hc; ++c)
      for (int64_t d = 0; d < D; ++d)
        h[(s * hc + c) * D + d] = x[s * D + d];
}

void hcIdentityPreMix(int64_t S, int64_t hc, float *pre) {
  for (int64_t s = 0; s < S; ++s)
    for (int64_t c = 0; c < hc; ++c)
      pre[s * hc + c] = c == 0 ? 1.0f : 0.0f;
}

void hcCopyMean(const uint16_t *h, int64_t S, int64_t hc, int64_t D, uint16_t *y) {
  const float n = static_cast<float>(hc);
  for (int64_t s = 0; s < S; ++s)
    for (int64_t d = 0; d < D; ++d) {
      float acc = 0.0f;
      for (int64_t c = 0; c < hc; ++c)
        acc += nx::bf16ToFloat(h[(s * hc + c) * D + d]);
      y[s * D + d] = nx::bf16FromFloat(acc / n);
    }
}

} // namespace dsc::cpu
