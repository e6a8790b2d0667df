//===- Quantize.h - Block quantisers, packed and QDQ ----------------------===//
//
// What: the reference's block quantisers on one block of values, in packed
// form (codes + scale byte) and as QDQ (the bf16 values the reference keeps),
// plus dequantisation of the checkpoint's FP8 and FP4 weights and the
// block-scaled dot product of its GEMMs.
// Why: the caches of the reference hold QDQ values (reference-spec §1); dsc
// stores the packed bytes, so packed -> decode must reproduce those values
// bit for bit, and QDQ(QDQ(x)) must equal QDQ(x) in value.
// Rules:
//   - FP8 activations, blocks of 32 along the last axis (act_quant,
//     reference-spec §3.2): s = fast_round_scale(max(amax,1e-4), 1/448),
//     q = e4m3(clamp(x/s, +-448)), QDQ = bf16(e4m3(q)*s), scale byte UE8M0.
//   - FP4 with UE8M0 scales, blocks of 32 (indexer q/k, §3.3 E8M0 path):
//     s = fast_round_scale(max(amax,6*2^-126), 1/6).
//   - FP4 with E4M3 scales, blocks of 16 (compressed KV, §3.3 E4M3 path):
//     s = e4m3(max(amax,6*2^-9)/6) (fp32 division), not a power of two.
//   - FP4 values: code = e2m1(clamp(x/s, +-6)) with a true fp32 division;
//     packing puts element 2i in the LOW nibble of byte i (§3.3).
//   - amax is max|x| in fp32 and propagates NaN (torch amax).
//   - FP8 weights: [N,K] E4M3 with one UE8M0 scale per 32x32 block, scale
//     tensor [ceil(N/32), ceil(K/32)] (§3.4). FP4 experts: [N,K/2] bytes (I8
//     in the checkpoint), one UE8M0 scale per row and 32 K, tensor [N, K/32].
//   - GEMM (§3.4): each 32-wide K block is reduced in fp32, then
//     acc += partial * a_scale * b_scale, blocks added in K order. Within a
//     block this header sums in index order (the tensor core differs by at
//     most a few fp32 ulp; products are exact).
// Invariants: DSC_HD, no allocation, n is the block length (any n >= 1; the
// FP4 functions need n even). Inputs are fp32 (bf16 activations widened).
//===----------------------------------------------------------------------===//
#ifndef DSC_NUMERICS_QUANTIZE_H
#define DSC_NUMERICS_QUANTIZE_H

#include "dsc/numerics/ScalarCodecs.h"

namespace dsc::numerics {

inline constexpr int kFp8ActBlock = 32;    // reference-spec §1 fp8_block_size
inline constexpr int kFp8WeightBlock = 32; // 32x32 weight blocks
inline constexpr int kFp4E8M0Block = 32;   // indexer q/k, FP4 experts along K
inline constexpr int kFp4E4M3Block = 16;   // compressed (main) KV

/// max |x[i]| in fp32; NaN if any element is NaN.
DSC_HD constexpr float absMax(const float *x, int n) {
  float m = 0.0f;
  bool nan = false;
  for (int i = 0; i < n; ++i) {
    const float a = absF(x[i]);
    nan |= isNaN(a);
    m = a > m ? a : m;
  }
  return nan ? kQuietNaN : m;
}

/// clamp(v, -lim, lim), propagating NaN (torch clamp).
DSC_HD constexpr float clampSym(float v, float lim) {
  return v < -lim ? -lim : (v > lim ? lim : v);
}

//===--------------------------------------------------------------------===//
// FP8 activations (E4M3 + UE8M0)
//===--------------------------------------------------------------------===//

/// Quantises x[0..n) to E4M3 codes q[0..n); returns the UE8M0 scale byte.
DSC_HD constexpr uint8_t quantizeFp8Block(const float *x, int n, uint8_t *q) {
  const float s = fp8ActScale(absMax(x, n));
  for (int i = 0; i < n; ++i)
    q[i] = e4m3FromFloat(clampSym(x[i] / s, kE4M3Max));
  return ue8m0FromScale(s);
}

/// y[i] = e4m3(q[i]) * s, in fp32 (exact; a bf16 value unless it
/// underflows or overflows bf16, which the reference's QDQ rounds too).
DSC_HD constexpr void dequantizeFp8Block(const uint8_t *q, uint8_t scale, int n, float *y) {
  const float s = ue8m0ToFloat(scale);
  for (int i = 0; i < n; ++i)
    y[i] = e4m3ToFloat(q[i]) * s;
}

/// act_quant(inplace=True) on one block: y = bf16(e4m3(clamp(x/s)) * s).
/// Uses the fp32 scale directly, so it also matches the reference for
/// degenerate scales that have no UE8M0 byte (NaN amax).
DSC_HD constexpr void qdqFp8Block(const float *x, int n, float *y) {
  const float s = fp8ActScale(absMax(x, n));
  for (int i = 0; i < n; ++i)
    y[i] = roundToBf16(e4m3ToFloat(e4m3FromFloat(clampSym(x[i] / s, kE4M3Max))) * s);
}

//===--------------------------------------------------------------------===//
// FP4 (E2M1) packing
//===--------------------------------------------------------------------===//

/// The 4-bit code of element i of a packed FP4 array.
DSC_HD constexpr uint8_t fp4CodeAt(const uint8_t *packed, int64_t i) {
  const uint8_t b = packed[i >> 1];
  return (i & 1) ? static_cast<uint8_t>(b >> 4) : static_cast<uint8_t>(b & 0x0fu);
}

/// Stores the 4-bit code of element i (even -> low nibble, odd -> high).
DSC_HD constexpr void fp4SetCodeAt(uint8_t *packed, int64_t i, uint8_t code) {
  uint8_t &b = packed[i >> 1];
  b = (i & 1) ? static_cast<uint8_t>((b & 0x0fu) | ((code & 0x0fu) << 4))
              : static_cast<uint8_t>((b & 0xf0u) | (code & 0x0fu));
}

/// Codes of x[0..n) under scale s, packed into n/2 bytes (n even).
DSC_HD constexpr void packFp4Values(const float *x, int n, float s, uint8_t *packed) {
  for (int i = 0; i + 1 < n; i += 2) {
    const uint8_t lo = e2m1FromFloat(clampSym(x[i] / s, kE2M1Max));
    const uint8_t hi = e2m1FromFloat(clampSym(x[i + 1] / s, kE2M1Max));
    packed[i >> 1] = static_cast<uint8_t>(lo | (hi << 4));
  }
}

/// y[i] = e2m1(code i) * s (exact: <= 6 significant bits).
DSC_HD constexpr void dequantizeFp4Block(const uint8_t *packed, float s, int n, float *y) {
  for (int i = 0; i < n; ++i)
    y[i] = e2m1ToFloat(fp4CodeAt(packed, i)) * s;
}

//===--------------------------------------------------------------------===//
// FP4 with UE8M0 scales (indexer q/k; block 32)
//===--------------------------------------------------------------------===//

/// Quantises x[0..n) (n even) into n/2 packed bytes; returns the UE8M0 byte.
DSC_HD constexpr uint8_t quantizeFp4E8M0Block(const float *x, int n, uint8_t *packed) {
  const float s = fp4E8M0Scale(absMax(x, n));
  packFp4Values(x, n, s, packed);
  return ue8m0FromScale(s);
}

DSC_HD constexpr void dequantizeFp4E8M0Block(const uint8_t *packed, uint8_t scale, int n,
                                             float *y) {
  dequantizeFp4Block(packed, ue8m0ToFloat(scale), n, y);
}

/// fp4_act_quant(inplace=True), E8M0 path: y = bf16(e2m1(clamp(x/s)) * s).
DSC_HD constexpr void qdqFp4E8M0Block(const float *x, int n, float *y) {
  const float s = fp4E8M0Scale(absMax(x, n));
  for (int i = 0; i < n; ++i)
    y[i] = roundToBf16(e2m1ToFloat(e2m1FromFloat(clampSym(x[i] / s, kE2M1Max))) * s);
}

//===--------------------------------------------------------------------===//
// FP4 with E4M3 scales (compressed / main KV; block 16)
//===--------------------------------------------------------------------===//

/// Quantises x[0..n) (n even) into n/2 packed bytes; returns the E4M3 scale
/// code (0x7f if the block holds a NaN).
DSC_HD constexpr uint8_t quantizeFp4E4M3Block(const float *x, int n, uint8_t *packed) {
  const uint8_t sc = fp4E4M3ScaleCode(absMax(x, n));
  packFp4Values(x, n, e4m3ToFloat(sc), packed);
  return sc;
}

DSC_HD constexpr void dequantizeFp4E4M3Block(const uint8_t *packed, uint8_t scale, int n,
                                             float *y) {
  dequantizeFp4Block(packed, e4m3ToFloat(scale), n, y);
}

/// fp4_act_quant(inplace=True), E4M3 path: y = bf16(e2m1(clamp(x/s)) * s).
DSC_HD constexpr void qdqFp4E4M3Block(const float *x, int n, float *y) {
  const float s = e4m3ToFloat(fp4E4M3ScaleCode(absMax(x, n)));
  for (int i = 0; i < n; ++i)
    y[i] = roundToBf16(e2m1ToFloat(e2m1FromFloat(clampSym(x[i] / s, kE2M1Max))) * s);
}

//===--------------------------------------------------------------------===//
// Rows: a row of `n` values cut into blocks of `block` (n % block == 0)
//===--------------------------------------------------------------------===//

/// act_quant on one row: q[n] E4M3 codes, scales[n/block] UE8M0 bytes.
DSC_HD constexpr void quantizeFp8Row(const float *x, int n, int block, uint8_t *q,
                                     uint8_t *scales) {
  for (int b = 0; b * block < n; ++b)
    scales[b] = quantizeFp8Block(x + b * block, block, q + b * block);
}

DSC_HD constexpr void qdqFp8Row(const float *x, int n, int block, float *y) {
  for (int b = 0; b * block < n; ++b)
    qdqFp8Block(x + b * block, block, y + b * block);
}

DSC_HD constexpr void qdqFp4E8M0Row(const float *x, int n, int block, float *y) {
  for (int b = 0; b * block < n; ++b)
    qdqFp4E8M0Block(x + b * block, block, y + b * block);
}

DSC_HD constexpr void qdqFp4E4M3Row(const float *x, int n, int block, float *y) {
  for (int b = 0; b * block < n; ++b)
    qdqFp4E4M3Block(x + b * block, block, y + b * block);
}

//===--------------------------------------------------------------------===//
// Checkpoint weights
//===--------------------------------------------------------------------===//

/// Element (n, k) of an FP8 weight [N, K] with UE8M0 32x32 block scales
/// [ceil(N/32), ceil(K/32)] (exact in fp32).
DSC_HD constexpr float fp8WeightAt(const uint8_t *w, const uint8_t *scales, int64_t K,
                                   int64_t n, int64_t k) {
  const int64_t kBlocks = (K + kFp8WeightBlock - 1) / kFp8WeightBlock;
  return e4m3ToFloat(w[n * K + k]) *
         ue8m0ToFloat(scales[(n / kFp8WeightBlock) * kBlocks + k / kFp8WeightBlock]);
}

/// Element (n, k) of an FP4 expert weight: packed [N, K/2] (even k in the
/// low nibble), UE8M0 scales [N, K/32].
DSC_HD constexpr float fp4WeightAt(const uint8_t *w, const uint8_t *scales, int64_t K,
                                   int64_t n, int64_t k) {
  return e2m1ToFloat(fp4CodeAt(w + n * (K / 2), k)) *
         ue8m0ToFloat(scales[n * (K / kFp4E8M0Block) + k / kFp4E8M0Block]);
}

/// Dequantises a whole FP8 weight into out[N*K].
DSC_HD constexpr void dequantizeFp8Weight(const uint8_t *w, const uint8_t *scales, int64_t N,
                                          int64_t K, float *out) {
  for (int64_t n = 0; n < N; ++n)
    for (int64_t k = 0; k < K; ++k)
      out[n * K + k] = fp8WeightAt(w, scales, K, n, k);
}

/// Dequantises a whole FP4 expert weight into out[N*K].
DSC_HD constexpr void dequantizeFp4Weight(const uint8_t *w, const uint8_t *scales, int64_t N,
                                          int64_t K, float *out) {
  for (int64_t n = 0; n < N; ++n)
    for (int64_t k = 0; k < K; ++k)
      out[n * K + k] = fp4WeightAt(w, scales, K, n, k);
}

/// One output of a block-scaled GEMM (reference-spec §3.4):
/// sum over 32-wide K blocks of (sum_k a[k]*b[k])_fp32 * aScale[kb] * bScale[kb],
/// blocks in K order. a and b are the unscaled code values (E4M3 or E2M1 as
/// fp32); aScale/bScale the per-block fp32 scales of this row and column.
DSC_HD constexpr float blockScaledDot(const float *a, const float *aScale, const float *b,
                                      const float *bScale, int K) {
  float acc = 0.0f;
  for (int kb = 0; kb * 32 < K; ++kb) {
    float partial = 0.0f;
    for (int k = kb * 32; k < kb * 32 + 32 && k < K; ++k)
      partial += a[k] * b[k];
    acc += partial * aScale[kb] * bScale[kb];
  }
  return acc;
}

} // namespace dsc::numerics

#endif // DSC_NUMERICS_QUANTIZE_H
