//===- Linear.h - CPU reference GEMMs: FP8/FP4 block-scaled, bf16, fp32 ---===//
//
// What: the reference's `linear()` dispatch (reference-spec §3.4) on the CPU:
// quantised weights take an FP8-quantised activation and a block-scaled GEMM;
// other weights are a plain F.linear in the tensors' own dtype.
// Layout: raw row-major contiguous pointers; bf16 = uint16_t bit patterns;
// E4M3 / UE8M0 / packed E2M1 = uint8_t; y[m, n] = sum_k x[m, k] * W[n, k].
// Rounding rules all come from dsc/numerics (Quantize.h, ScalarCodecs.h).
// Determinism: work is split over output columns n only (parallelFor); every
// output element is reduced by one thread in a fixed order, so results do not
// depend on the thread count.
//===----------------------------------------------------------------------===//
#ifndef DSC_RUNTIME_CPU_KERNELS_DENSE_LINEAR_H
#define DSC_RUNTIME_CPU_KERNELS_DENSE_LINEAR_H

#include <cstdint>

namespace dsc::cpu {

/// FP8 linear (spec §3.2, §3.4; kcpu act_quant + fp8_gemm).
/// y[M,N] bf16 = sum_kb (act_quant(x)[m, kb] . W_e4m3[n, kb])_fp32 * a_s[m,kb] * w_s[n/32,kb],
/// blocks of 32 along K summed in K order, then one bf16 rounding.
/// x: bf16 [M, K]; w: E4M3 [N, K]; scale: UE8M0 [ceil(N/32), K/32]. K % 32 == 0.
/// Rounding points: act_quant (ceil-pow2 scale from max(amax,1e-4)*fp32(1/448),
/// e4m3 RNE of clamp(x/s)); each block partial in fp32 (index order inside
/// the block: numerics::blockScaledDot); acc += partial*a_s*w_s in fp32;
/// final bf16 RNE.
void linearFp8(const uint16_t *x, int64_t M, int64_t K, const uint8_t *w, const uint8_t *scale,
               int64_t N, uint16_t *y);

/// FP4 linear (spec §3.3 packing, §3.4; kcpu act_quant + fp4_gemm).
/// x: bf16 [M, K]; w: packed E2M1 [N, K/2] (even k in the low nibble);
/// scale: UE8M0 [N, K/32]. Same rounding points as linearFp8 (the activation
/// is FP8 with per-32 scales; the weight scale is per row and 32 K).
void linearFp4(const uint16_t *x, int64_t M, int64_t K, const uint8_t *w, const uint8_t *scale,
               int64_t N, uint16_t *y);

/// linearFp8 / linearFp4 without the final bf16 cast: the fp32 accumulator.
/// NOTE: the reference's Expert does `w1(x).float()`, where w1 returns bf16
/// (fp8_gemm/fp4_gemm cast to the default dtype), i.e. bf16-then-fp32. The
/// MoE kernels (Moe.h) therefore use linearFp4/linearFp8 and widen; these
/// fp32 variants are for callers that want the unrounded accumulator.
void linearFp8F32(const uint16_t *x, int64_t M, int64_t K, const uint8_t *w, const uint8_t *scale,
                  int64_t N, float *y);
void linearFp4F32(const uint16_t *x, int64_t M, int64_t K, const uint8_t *w, const uint8_t *scale,
                  int64_t N, float *y);

/// Plain bf16 F.linear (spec §3.4 "anything else"; e.g. the ratio-1
/// compressor wkv, indexer wk / weights_proj, spec §15.9).
/// y[M,N] bf16 = bf16( sum_k x*w ). w: bf16 [N, K].
/// Assumption (torch CPU bf16 matmul via oneDNN/MKL): products exact, fp32
/// (or wider) accumulation, ONE bf16 rounding of the result. The reference's
/// summation order is a BLAS blocking we cannot reproduce; dsc accumulates
/// exact products in double in K order and rounds double -> fp32 -> bf16,
/// i.e. the nearly exact sum (within 1 fp32 ulp of any good fp32 order).
void linearBf16(const uint16_t *x, int64_t M, int64_t K, const uint16_t *w, int64_t N,
                uint16_t *y);

/// fp32 F.linear with bf16 weights upcast to fp32 (head §5.8, ratio-2
/// compressor wkv/wgate §9.4, DSpark markov head). x fp32 [M, K], w bf16
/// [N, K], y fp32 [M, N]. Same accumulation rule as linearBf16 (double, K
/// order, one rounding to fp32).
void linearF32(const float *x, int64_t M, int64_t K, const uint16_t *w, int64_t N, float *y);

/// Same with fp32 weights (e.g. the hc_* fn matrices): y = x . w^T in fp32,
/// exact products, double accumulation in K order, one rounding to fp32.
void linearF32W32(const float *x, int64_t M, int64_t K, const float *w, int64_t N, float *y);

/// Dequantises an FP8 weight with 32x32 UE8M0 block scales to bf16 [N, K]
/// (what the reference's convert.py does to `attn.wo_a`, spec §4: e4m3*2^k is
/// exact in bf16 unless it under/overflows, then bf16 RNE).
void dequantizeFp8WeightToBf16(const uint8_t *w, const uint8_t *scale, int64_t N, int64_t K,
                               uint16_t *out);

} // namespace dsc::cpu

#endif // DSC_RUNTIME_CPU_KERNELS_DENSE_LINEAR_H
