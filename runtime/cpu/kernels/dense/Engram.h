//===- Engram.h - CPU reference Engram lookup and gate --------------------===//
//
// What: reference-spec §7.5 (model ParallelEngramEmbedding.forward,
// Engram.forward). Hashing (§7.1-7.4) lives in engram/ (dsc_engram).
//
// Lookup (§7.5.1): for each of the `cols` hash ids of a token, the table row
//   bf16( e4m3(table[id, i]) * ue8m0(scale[id, i/32]) )  (fp32 product, exact,
//   then bf16 RNE), concatenated to [S, cols*hd]. An id outside [0, rows)
//   yields a zero row, as the reference's shard mask does.
// kv = wkv(rows): FP8 linear (Linear.h linearFp8) -> bf16 [S, (hc+1)*D];
//   key = kv[:, :hc*D] as [hc, D] fp32, value = kv[:, hc*D:] fp32.
// Gate (§7.5.2), fp32 per (token, copy c):
//   w[c] = q_weight[c]_f32 * k_weight[c]_f32 (exact);
//   rstd = rsqrt(mean_d(h^2)+eps) * rsqrt(mean_d(key^2)+eps) (Norm.h rmsRsqrt
//     rule for each factor; eps = norm_eps);
//   dot = (sum_d (h*w)*key) * rstd * fp32(D^-0.5), left to right; each
//     elementwise product rounded to fp32, the sum accumulated in double and
//     rounded once to fp32 (torch's reduction order is not reproducible);
//   gate = sigmoid(copysign(sqrt(max(|dot|, fp32(1e-6))), dot))  (copysign,
//     as the reference: dot = +-0 gives +-1e-3, not 0);
//   masked tokens (tokenMask[s] == 0) get gate 0.
// Output (§7.5.3): h_out[s,c] = bf16( h[s,c] + gate[c] * value ), value shared.
//===----------------------------------------------------------------------===//
#ifndef DSC_RUNTIME_CPU_KERNELS_DENSE_ENGRAM_H
#define DSC_RUNTIME_CPU_KERNELS_DENSE_ENGRAM_H

#include <cstdint>

namespace dsc::cpu {

/// hashIds: token s's `cols` ids start at hashIds + s*hashStride. table E4M3
/// [rows, hd], tableScale UE8M0 [rows, hd/32]. out bf16 [S, cols*hd].
void engramLookup(const int64_t *hashIds, int64_t S, int64_t cols, int64_t hashStride,
                  const uint8_t *table, const uint8_t *tableScale, int64_t rows, int64_t hd,
                  uint16_t *out);

/// The gates alone: gate fp32 [S, hc] (0 for masked tokens).
void engramGates(const uint16_t *h, int64_t S, int64_t hc, int64_t D, const uint16_t *kv,
                 const uint16_t *qW, const uint16_t *kW, float normEps, const uint8_t *tokenMask,
                 float *gate);

/// The gate and residual update. h bf16 [S, hc, D]; kv bf16 [S, (hc+1)*D];
/// qW, kW bf16 [hc, D]; tokenMask [S] (nonzero = apply) or null; hOut bf16
/// [S, hc, D] (may alias h).
void engramGate(const uint16_t *h, int64_t S, int64_t hc, int64_t D, const uint16_t *kv,
                const uint16_t *qW, const uint16_t *kW, float normEps, const uint8_t *tokenMask,
                uint16_t *hOut);

struct EngramWeights {
  const uint8_t *table = nullptr, *tableScale = nullptr; // [rows, hd], [rows, hd/32]
  int64_t tableRows = 0, headDim = 0;
  const uint8_t *wkv = nullptr, *wkvScale = nullptr; // [(hc+1)*D, cols*hd] E4M3 + UE8M0
  const uint16_t *qWeight = nullptr, *kWeight = nullptr; // [hc, D] bf16
};

/// Lookup + wkv + gate (Engram.forward).
void engram(const uint16_t *h, int64_t S, int64_t hc, int64_t D, const int64_t *hashIds,
            int64_t cols, int64_t hashStride, const EngramWeights &w, float normEps,
            const uint8_t *tokenMask, uint16_t *hOut);

} // namespace dsc::cpu

#endif // DSC_RUNTIME_CPU_KERNELS_DENSE_ENGRAM_H
