//===- Norm.h - CPU reference RMSNorm -------------------------------------===//
//
// What: the reference RMSNorm (reference-spec §6, §15.4; model RMSNorm.forward):
//   y = bf16( w * (x_f32 * rsqrt(mean(x_f32^2) + eps)) )
// Rounding points (fp32 unless said): x^2 per element; the sum of squares is
// accumulated in double in index order and rounded once to fp32 (torch's
// vectorised cascade sum is within an ulp of the exact sum; its exact order
// is not reproducible); mean = sum / n; rsqrt = 1 / sqrt(var + eps) (two
// correctly rounded ops, as torch's CPU rsqrt); x * r; w (bf16 widened) * that;
// one bf16 rounding. eps is norm_eps = 1e-20 in the LLM (an all-zero row
// gives inf/NaN, as in the reference).
// Rows are independent (parallelFor over rows).
//===----------------------------------------------------------------------===//
#ifndef DSC_RUNTIME_CPU_KERNELS_DENSE_NORM_H
#define DSC_RUNTIME_CPU_KERNELS_DENSE_NORM_H

#include <cstdint>

namespace dsc::cpu {

/// x bf16 [rows, n], w bf16 [n], y bf16 [rows, n] (y may alias x).
void rmsNorm(const uint16_t *x, int64_t rows, int64_t n, const uint16_t *w, float eps,
             uint16_t *y);

/// rsqrt(mean(x^2) + eps) of one fp32 row with the rounding rule above
/// (shared by RMSNorm, hc_mixes and the Engram gate).
float rmsRsqrt(const float *x, int64_t n, float eps);

} // namespace dsc::cpu

#endif // DSC_RUNTIME_CPU_KERNELS_DENSE_NORM_H
