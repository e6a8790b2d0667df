//===- HyperConnection.h - mHC mix split and Sinkhorn (host reference) ----===//
//
// What: hc_split_sinkhorn of the reference (reference-spec §8.1 steps 4-5;
// kcpu hc_split_sinkhorn): splits one token's (2+hc)*hc fp32 mixes into
// pre[hc], post[hc] and the Sinkhorn-normalised comb[hc][hc].
// Why: the CPU backend's single-pass mHC (§8, §15.3) needs the exact fp32
// operation order; kernels mirror it.
// Rules (all fp32, eps = hc_eps):
//   pre[c]  = sigmoid(m[c]*scale[0] + base[c]) + eps
//   post[c] = 2 * sigmoid(m[hc+c]*scale[1] + base[hc+c])
//   comb[i][j] = m[2hc + hc*i + j]*scale[2] + base[2hc + hc*i + j]
//   comb = exp(comb - max_j) / sum_j + eps          (row softmax, i = source)
//   comb = comb / (sum_i comb + eps)                (column normalisation)
//   then iters-1 rounds of {row: / (sum_j + eps); column: / (sum_i + eps)}.
// Sums run in index order. sigmoid(x) = 1/(1+exp(-x)); exp is the host
// libm's, so results may differ from torch/CUDA in the last fp32 ulp
// (the reference port says the same of its own exp).
// Host-only (uses <cmath>).
//===----------------------------------------------------------------------===//
#ifndef DSC_NUMERICS_HYPERCONNECTION_H
#define DSC_NUMERICS_HYPERCONNECTION_H

#if defined(__CUDACC_RTC__)
#error "HyperConnection.h is host-only"
#endif

namespace dsc::numerics {

/// Splits one token's mixes[(2+hcMult)*hcMult]. scale[3], base[(2+hc)*hc].
/// Outputs pre[hc], post[hc], comb[hc*hc] (row-major, comb[i*hc+j], i the
/// source copy). iters >= 1.
void hcSplitSinkhorn(const float *mixes, const float *scale, const float *base, int hcMult,
                     int iters, float eps, float *pre, float *post, float *comb);

} // namespace dsc::numerics

#endif // DSC_NUMERICS_HYPERCONNECTION_H
