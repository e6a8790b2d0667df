//===- Engram.cpp - CPU reference Engram lookup and gate ------------------===//
#include "runtime/cpu/kernels/dense/Engram.h"
#include "runtime/cpu/kernels/dense/TorchReduce.h"

#include "runtime/cpu/ParallelFor.h"
#include "runtime/cpu/kernels/dense/DenseUtil.h"
#include "runtime/cpu/kernels/dense/Linear.h"
#include "runtime/cpu/kernels/dense/Norm.h"

#include "dsc/numerics/Quantize.h"

#include <cmath>
#include <cstring>
#include <vector>

namespace dsc::cpu {

namespace nx = dsc::numerics;

void engramLookup(const int64_t *hashIds, int64_t S, int64_t cols, int64_t hashStride,
                  const uint8_t *table, const uint8_t *tableScale, int64_t rows, int64_t hd,
                  uint16_t *out) {
  const int64_t nb = hd / nx::kFp8ActBlock;
  for (int64_t s = 0; s < S; ++s)
    for (int64_t c = 0; c < cols; ++c) {
      const int64_t id = hashIds[s * hashStride + c];
      uint16_t *dst = out + (s * cols + c) * hd;
      if (id < 0 || id >= rows) {
        std::memset(dst, 0, static_cast<size_t>(hd) * sizeof(uint16_t));
        continue;
      }
      for (int64_t i = 0; i < hd; ++i)
        dst[i] = nx::bf16FromFloat(nx::e4m3ToFloat(table[id * hd + i]) *
                                   nx::ue8m0ToFloat(tableScale[id * nb + i / 32]));
    }
}

void engramGates(const uint16_t *h, int64_t S, int64_t hc, int64_t D, const uint16_t *kv,
                 const uint16_t *qW, const uint16_t *kW, float normEps, const uint8_t *tokenMask,
                 float *gate) {
  std::vector<float> w(static_cast<size_t>(hc * D));
  for (int64_t i = 0; i < hc * D; ++i)
    w[i] = nx::bf16ToFloat(qW[i]) * nx::bf16ToFloat(kW[i]);
  // self.dim ** -0.5 is a Python float; multiplying an fp32 tensor by it
  // rounds it to fp32 first.
  const float invSqrtD = static_cast<float>(1.0 / std::sqrt(static_cast<double>(D)));
  const float clampMin = 1e-6f;
  parallelFor(S, 4, [&](int64_t b, int64_t e) {
    std::vector<float> hf(static_cast<size_t>(D)), key(static_cast<size_t>(D)),
        products(static_cast<size_t>(D));
    for (int64_t s = b; s < e; ++s) {
      const uint16_t *kvs = kv + s * (hc + 1) * D;
      for (int64_t c = 0; c < hc; ++c) {
        float &g = gate[s * hc + c];
        if (tokenMask && !tokenMask[s]) {
          g = 0.0f;
          continue;
        }
        for (int64_t d = 0; d < D; ++d) {
          hf[d] = nx::bf16ToFloat(h[(s * hc + c) * D + d]);
          key[d] = nx::bf16ToFloat(kvs[c * D + d]);
        }
        const float rstd = rmsRsqrt(hf.data(), D, normEps) * rmsRsqrt(key.data(), D, normEps);
        // (h * w * key).sum(-1): fp32 products, torch's fp32 sum order.
        const float *wc = w.data() + c * D;
        for (int64_t d = 0; d < D; ++d)
          products[d] = (hf[d] * wc[d]) * key[d];
        const float dot = torchSumF32(products.data(), D) * rstd * invSqrtD;
        const float a = std::fabs(dot);
        const float mag = std::sqrt(a < clampMin ? clampMin : a);
        g = sigmoidF32(std::copysign(mag, dot));
      }
    }
  });
}

void engramGate(const uint16_t *h, int64_t S, int64_t hc, int64_t D, const uint16_t *kv,
                const uint16_t *qW, const uint16_t *kW, float normEps, const uint8_t *tokenMask,
                uint16_t *hOut) {
  std::vector<float> gate(static_cast<size_t>(S * hc));
  engramGates(h, S, hc, D, kv, qW, kW, normEps, tokenMask, gate.data());
  for (int64_t s = 0; s < S; ++s) {
    const uint16_t *value = kv + s * (hc + 1) * D + hc * D;
    for (int64_t c = 0; c < hc; ++c)
      for (int64_t d = 0; d < D; ++d) {
        const int64_t i = (s * hc + c) * D + d;
        hOut[i] = nx::bf16FromFloat(nx::bf16ToFloat(h[i]) + gate[s * hc + c] * nx::bf16ToFloat(value[d]));
      }
  }
}

void engram(const uint16_t *h, int64_t S, int64_t hc, int64_t D, const int64_t *hashIds,
            int64_t cols, int64_t hashStride, const EngramWeights &w, float normEps,
            const uint8_t *tokenMask, uint16_t *hOut) {
  const int64_t K = cols * w.headDim;
  std::vector<uint16_t> rows(static_cast<size_t>(S * K)), kv(static_cast<size_t>(S * (hc + 1) * D));
  engramLookup(hashIds, S, cols, hashStride, w.table, w.tableScale, w.tableRows, w.headDim,
               rows.data());
  linearFp8(rows.data(), S, K, w.wkv, w.wkvScale, (hc + 1) * D, kv.data());
  engramGate(h, S, hc, D, kv.data(), w.qWeight, w.kWeight, normEps, tokenMask, hOut);
}

} // namespace dsc::cpu
