//===- Rope.h - RoPE inverse frequencies with YaRN (host reference) -------===//
//
// What: the per-pair inverse frequencies of the reference's
// precompute_freqs_cis (reference-spec §9.2), YaRN included.
// Why: angles are fp32 products p * invFreq[k] (§15.5), so the table must be
// the reference's fp32 values bit for bit.
// Rules (d = rope_head_dim, k = 0..d/2-1):
//   invFreq[k] = 1 / base^(fp32(2k)/d)                       (all fp32)
//   YaRN only when originalSeqLen > 0:
//     corr(r) = d*ln(originalSeqLen/(2*pi*r)) / (2*ln(base))  (double)
//     low = max(floor(corr(betaFast)), 0); high = min(ceil(corr(betaSlow)), d-1)
//     ramp[k] = clamp((k - low) / max(high - low, 1e-3), 0, 1)  (fp32)
//     smooth = 1 - ramp; invFreq = invFreq/factor*(1 - smooth) + invFreq*smooth
//   No attention/mscale factor. Released (d 64, base 160000, orig 65536,
//   beta 32/1): low 15, high 25. Tiny goldens: low 0, high 2 (d 16, orig 32)
//   and high 4 (d 32, orig 64).
// Host-only (uses <cmath>). base^x is the correctly rounded fp32 power
// (computed in double, rounded once). torch evaluates it with a vectorised
// fp32 pow (Sleef, <= 1 ulp), numpy's array pow likewise; either may differ
// from the correctly rounded value by 1 ulp on some entries -- an inherent
// ambiguity of the reference, worth <= 1 ulp of the RoPE angle.
//===----------------------------------------------------------------------===//
#ifndef DSC_NUMERICS_ROPE_H
#define DSC_NUMERICS_ROPE_H

#if defined(__CUDACC_RTC__)
#error "Rope.h is host-only"
#endif

#include <cstdint>
#include <vector>

namespace dsc::numerics {

struct YarnRange {
  int low = 0;
  int high = 0;
};

/// YaRN correction range (reference-spec §9.2).
YarnRange yarnCorrectionRange(int ropeDim, double base, int64_t originalSeqLen,
                              double betaFast, double betaSlow);

/// The d/2 inverse frequencies; YaRN applies when originalSeqLen > 0.
std::vector<float> ropeInvFreq(int ropeDim, double base, int64_t originalSeqLen = 0,
                               double factor = 1.0, double betaFast = 32.0,
                               double betaSlow = 1.0);

/// The rotation angle of pair k at position p: fp32(p) * invFreq[k].
inline float ropeAngle(int64_t position, float invFreq) {
  return static_cast<float>(position) * invFreq;
}

} // namespace dsc::numerics

#endif // DSC_NUMERICS_ROPE_H
