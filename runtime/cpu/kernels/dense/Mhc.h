//===- Mhc.h - CPU reference single-pass mHC (hyper-connections) ----------===//
//
// What: the residual stream's hc_mult copies (reference-spec §5.4-5.7, §8,
// §15.3; model Block.hc_mixes / hc_pre / hc_post, make_identity_pre_mix,
// Transformer.forward's h.mean(dim=2)).
// Layout: h [S, hc, D] bf16 (token-major, copy, channel); pre/post [S, hc]
// fp32; comb [S, hc, hc] fp32 with comb[s][i][j], i = SOURCE copy (row,
// softmaxed over j), j = destination copy.
// Tokens are independent (parallelFor over S); no cross-token reduction.
//===----------------------------------------------------------------------===//
#ifndef DSC_RUNTIME_CPU_KERNELS_DENSE_MHC_H
#define DSC_RUNTIME_CPU_KERNELS_DENSE_MHC_H

#include <cstdint>

namespace dsc::cpu {

/// hc_mixes (spec §8.1): per token, xf = flatten(h[s]) in fp32 [hc*D];
/// r = rsqrt(mean(xf^2) + normEps) (Norm.h rmsRsqrt rule; normEps = norm_eps =
/// 1e-20, NOT hc_eps); mixes[k] = (xf . fn[k])_fp32 * r  (GEMM first, then the
/// scale: exact products summed in double, rounded once to fp32, then * r);
/// then numerics::hcSplitSinkhorn(mixes, scale, base, hc, iters, hcEps).
/// fn: fp32 [(2+hc)*hc, hc*D]; scale fp32 [3]; base fp32 [(2+hc)*hc].
/// Outputs pre [S,hc], post [S,hc], comb [S,hc,hc].
void hcMixes(const uint16_t *h, int64_t S, int64_t hc, int64_t D, const float *fn,
             const float *scale, const float *base, int iters, float normEps, float hcEps,
             float *pre, float *post, float *comb);

/// hc_pre (spec §8.2): y[s] = bf16( sum_c pre[s,c] * h[s,c]_f32 ), the sum
/// over c in ascending order in fp32, one bf16 rounding. y [S, D].
void hcPre(const uint16_t *h, int64_t S, int64_t hc, int64_t D, const float *pre, uint16_t *y);

/// hc_post (spec §8.2): out[s,j] = bf16( post[s,j]*x[s] + sum_i comb[s,i,j]*res[s,i] ),
/// all fp32: the i-sum in ascending i (starting from comb[0][j]*res[0]), then
/// post*x + sum, one bf16 rounding. x bf16 [S, D] (sublayer output), res bf16
/// [S, hc, D], out bf16 [S, hc, D] (must not alias res).
void hcPost(const uint16_t *x, const uint16_t *res, const float *post, const float *comb,
            int64_t S, int64_t hc, int64_t D, uint16_t *out);

/// Expand (spec §5.4): h[s, c] = x[s] for every copy c. x [S, D] -> h [S, hc, D].
void hcExpand(const uint16_t *x, int64_t S, int64_t hc, int64_t D, uint16_t *h);

/// Identity pre-mix (spec §5.5, §15.3): fp32 one-hot, pre[s, 0] = 1, others 0,
/// no eps. pre [S, hc].
void hcIdentityPreMix(int64_t S, int64_t hc, float *pre);

/// DSpark capture (spec §5.6.2): y[s] = h[s].mean(copies) as torch computes a
/// bf16 mean on CPU: cast to fp32, sum over c ascending in fp32, divide by hc
/// in fp32, one bf16 rounding (ATen mean_out: "cast_fp32 -> sum -> div ->
/// cast_bf16"). y [S, D].
void hcCopyMean(const uint16_t *h, int64_t S, int64_t hc, int64_t D, uint16_t *y);

} // namespace dsc::cpu

#endif // DSC_RUNTIME_CPU_KERNELS_DENSE_MHC_H
