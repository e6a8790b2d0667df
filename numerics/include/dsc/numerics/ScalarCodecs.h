//===- ScalarCodecs.h - bf16, E4M3, E2M1, UE8M0 and scale rounding --------===//
//
// What: scalar conversions between fp32 and the storage formats of
// DeepSeek-V4.1-Flash, and the scale rules of the reference quantisers.
// Why: every bf16/fp8/fp4 byte dsc writes or reads goes through these, so the
// compiler, CPU backend and kernels agree bit for bit with the reference.
// Rules (sources in docs/numerics.md):
//   - bf16: round-to-nearest-even from fp32; NaN -> 0x7fc0 (what torch's
//     c10::BFloat16 does; reference-spec §1: activations are bf16).
//   - E4M3 ("fn": bias 7, no inf, 0x7f/0xff = NaN, max 448): encode is
//     round-to-nearest-even with saturation to +-448 (inf included), NaN ->
//     0x7f; this is the reference's clamp(+-448) then cast (reference-spec
//     §3.2; kcpu _to_e4m3_satfinite) and PTX cvt.rn.satfinite.e4m3x2.f32.
//     Subnormals (multiples of 2^-9) are exact; -0 keeps its sign.
//   - E2M1 (4-bit code, bit 3 = sign, magnitudes {0,.5,1,1.5,2,3,4,6}):
//     round-to-nearest with ties to the EVEN CODE (0.25->0, 0.75->1.0,
//     1.25->1.0, 1.75->2, 2.5->2, 3.5->4, 5->4), saturating at +-6, sign
//     kept (incl. -0), NaN -> code 0 (reference-spec §3.3, peers §0.1).
//   - UE8M0: 2^(e-127); e = 0xff is NaN, e = 0 is 2^-127 (an fp32 subnormal).
//   - fast_round_scale(amax, max_inv) = 2^ceil(log2(fp32(amax*max_inv))) read
//     from the fp32 bits (reference-spec §3.1), bit for bit incl. the
//     degenerate inputs (NaN gives the bits 0x80000000, i.e. -0.0).
//   - amax floors apply to amax, not to the scale: 1e-4 (FP8 activations,
//     §3.2), 6*2^-126 (FP4 with UE8M0 scales), 6*2^-9 (FP4 with E4M3 scales,
//     §3.3). The E4M3 FP4 scale is e4m3(amax / 6.0f), a true fp32 division.
// Invariants: all functions are constexpr DSC_HD, pure bit manipulation.
//===----------------------------------------------------------------------===//
#ifndef DSC_NUMERICS_SCALARCODECS_H
#define DSC_NUMERICS_SCALARCODECS_H

#include "dsc/numerics/Portability.h"

namespace dsc::numerics {

//===--------------------------------------------------------------------===//
// Constants (reference-spec §1 "the quantisation constants do not change")
//===--------------------------------------------------------------------===//

inline constexpr float kE4M3Max = 448.0f;
inline constexpr float kE2M1Max = 6.0f;
/// fp32(1/448) and fp32(1/6): the kernels multiply by these reciprocals
/// (reference-spec §3.1 item 5).
inline constexpr float kFp8MaxInv = 1.0f / 448.0f;
inline constexpr float kFp4MaxInv = 1.0f / 6.0f;
/// amax floors (reference-spec §3.2, §3.3).
inline constexpr float kFp8ActAmaxFloor = 1e-4f;
inline constexpr float kFp4E8M0AmaxFloor = 0x1.8p-124f; // 6*2^-126
inline constexpr float kFp4E4M3AmaxFloor = 0x1.8p-7f;   // 6*2^-9
static_assert(kFp4E4M3AmaxFloor == 6.0f / 512.0f, "6*2^-9");

//===--------------------------------------------------------------------===//
// bf16
//===--------------------------------------------------------------------===//

/// fp32 -> bf16 bits, round-to-nearest-even; NaN -> 0x7fc0.
DSC_HD constexpr uint16_t bf16FromFloat(float x) {
  uint32_t bits = floatBits(x);
  if ((bits & 0x7fffffffu) > 0x7f800000u)
    return 0x7fc0;
  bits += 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>(bits >> 16);
}

DSC_HD constexpr float bf16ToFloat(uint16_t bits) {
  return floatFromBits(static_cast<uint32_t>(bits) << 16);
}

/// The fp32 value after one bf16 rounding.
DSC_HD constexpr float roundToBf16(float x) { return bf16ToFloat(bf16FromFloat(x)); }

//===--------------------------------------------------------------------===//
// E4M3 (float8_e4m3fn)
//===--------------------------------------------------------------------===//

inline constexpr uint8_t kE4M3NaN = 0x7f;
inline constexpr uint8_t kE4M3MaxCode = 0x7e; // 448

/// fp32 -> E4M3 code, round-to-nearest-even, saturating to +-448.
DSC_HD constexpr uint8_t e4m3FromFloat(float x) {
  const uint32_t bits = floatBits(x);
  const uint8_t sign = static_cast<uint8_t>((bits >> 24) & 0x80u);
  const uint32_t a = bits & 0x7fffffffu;
  if (a > 0x7f800000u)
    return kE4M3NaN;
  if (a >= 0x43e00000u) // >= 448, inf included: saturate
    return sign | kE4M3MaxCode;
  uint32_t code = 0;
  if (a >= 0x3c800000u) {
    // Normal E4M3 (>= 2^-6): drop 20 mantissa bits with RNE; a carry moves
    // into the exponent field, which is what RNE wants.
    const uint32_t r = a + 0x7ffffu + ((a >> 20) & 1u);
    code = (r >> 20) - (120u << 3);
    if (code > kE4M3MaxCode) // 464 <= |x| rounds up past 448
      code = kE4M3MaxCode;
  } else {
    // Subnormal E4M3: q = round_even(|x| * 2^9), 0..8 (8 is 2^-6, code 0x08).
    const uint32_t e = a >> 23;
    if (e < 117 - 1) // |x| < 2^-11: below half the smallest step
      return sign;
    const uint32_t m = (a & 0x7fffffu) | 0x800000u;
    const uint32_t shift = 141u - e; // 21..25
    const uint32_t q = m >> shift;
    const uint32_t rem = m & ((1u << shift) - 1u);
    const uint32_t half = 1u << (shift - 1u);
    code = q + ((rem > half || (rem == half && (q & 1u))) ? 1u : 0u);
  }
  return static_cast<uint8_t>(sign | code);
}

/// E4M3 code -> fp32 (exact); 0x7f/0xff -> NaN.
DSC_HD constexpr float e4m3ToFloat(uint8_t code) {
  const uint32_t sign = static_cast<uint32_t>(code & 0x80u) << 24;
  const uint32_t mag = code & 0x7fu;
  if (mag == 0x7fu)
    return floatFromBits(sign | 0x7fc00000u);
  const uint32_t exp = mag >> 3, man = mag & 7u;
  if (exp == 0) // man * 2^-9, exact
    return floatFromBits(sign | floatBits(static_cast<float>(man) * (1.0f / 512.0f)));
  return floatFromBits(sign | ((exp + 120u) << 23) | (man << 20));
}

//===--------------------------------------------------------------------===//
// E2M1 (float4_e2m1fn)
//===--------------------------------------------------------------------===//

/// Magnitude of a 3-bit E2M1 code.
DSC_HD constexpr float e2m1Magnitude(uint8_t code3) {
  // {0, .5, 1, 1.5, 2, 3, 4, 6}, without a table (device-friendly).
  const uint32_t c = code3 & 7u;
  return c < 4 ? static_cast<float>(c) * 0.5f
               : (c < 6 ? static_cast<float>(c - 2) : (c == 6 ? 4.0f : 6.0f));
}

/// fp32 -> 4-bit E2M1 code: RNE with ties to the even code, saturating at
/// +-6, sign kept (incl. -0), NaN -> 0.
DSC_HD constexpr uint8_t e2m1FromFloat(float x) {
  if (isNaN(x))
    return 0;
  const uint8_t sign = signBit(x) ? 0x8u : 0x0u;
  const float m = absF(x);
  uint8_t c = 0;
  if (m <= 0.25f) c = 0;      // tie 0.25 -> code 0 (even)
  else if (m < 0.75f) c = 1;  // tie 0.75 -> code 2 (1.0)
  else if (m <= 1.25f) c = 2; // tie 1.25 -> code 2
  else if (m < 1.75f) c = 3;  // tie 1.75 -> code 4 (2.0)
  else if (m <= 2.5f) c = 4;  // tie 2.5 -> code 4
  else if (m < 3.5f) c = 5;   // tie 3.5 -> code 6 (4.0)
  else if (m <= 5.0f) c = 6;  // tie 5 -> code 6
  else c = 7;                 // saturate at 6 (inf too)
  return static_cast<uint8_t>(sign | c);
}

/// 4-bit E2M1 code -> fp32 (exact; code 8 is -0).
DSC_HD constexpr float e2m1ToFloat(uint8_t code) {
  const float m = e2m1Magnitude(code & 7u);
  return (code & 8u) ? floatFromBits(floatBits(m) | 0x80000000u) : m;
}

/// Eight packed E2M1 codes (element 2i in the low nibble of byte i of
/// `word`) as E4M3 bytes of value * 2^-6, in two logic ops per four values:
/// the magnitude bits (e1 e0 m) go to bits 2-4 and the sign to bit 7, which
/// is E4M3 with exponent field 0 0 e1 e0 and mantissa m 0 0, i.e. exactly
/// e2m1 * 2^-6 (0.5 -> the subnormal 2^-7). `even` holds elements 0, 2, 4, 6
/// (byte i: element 2i), `odd` elements 1, 3, 5, 7. The lane-block GEMV
/// (codegen/kernels/lane_gemv.cuh) feeds these to the E4M3 tensor cores and
/// folds the 2^6 into the activation scale.
struct E4m3Pair {
  uint32_t even, odd;
};
DSC_HD constexpr E4m3Pair e2m1x8ToE4m3Scaled(uint32_t word) {
  return E4m3Pair{((word << 2) & 0x1C1C1C1Cu) | ((word << 4) & 0x80808080u),
                  ((word >> 2) & 0x1C1C1C1Cu) | (word & 0x80808080u)};
}
/// The power of two e2m1x8ToE4m3Scaled's bytes carry less than the codes.
inline constexpr float kE2m1ToE4m3ScaledUnscale = 64.0f;

//===--------------------------------------------------------------------===//
// UE8M0 (float8_e8m0fnu) and power-of-two scales
//===--------------------------------------------------------------------===//

inline constexpr uint8_t kUE8M0NaN = 0xff;

/// UE8M0 byte -> 2^(e-127); 0xff -> NaN; 0 -> 2^-127.
DSC_HD constexpr float ue8m0ToFloat(uint8_t e) {
  if (e == 0xffu)
    return kQuietNaN;
  if (e == 0)
    return floatFromBits(0x00400000u);
  return floatFromBits(static_cast<uint32_t>(e) << 23);
}

/// A power of two in [2^-127, 2^127] -> its UE8M0 byte; NaN, inf and
/// non-powers-of-two -> 0xff (callers only pass scales built by
/// fastRoundScale, which are powers of two for finite positive amax).
DSC_HD constexpr uint8_t ue8m0FromPow2(float s) {
  const uint32_t bits = floatBits(s);
  if (bits == 0x00400000u)
    return 0;
  if ((bits & 0x807fffffu) != 0 || bits == 0 || bits >= 0x7f800000u)
    return kUE8M0NaN;
  return static_cast<uint8_t>(bits >> 23);
}

/// Biased exponent k+127 of fast_round_scale (reference-spec §3.1):
/// t = fp32(amax * maxInv); k = e - 127 + (m != 0). In 0..256.
DSC_HD constexpr uint32_t fastRoundScaleBiasedExp(float amax, float maxInv) {
  const uint32_t bits = floatBits(amax * maxInv);
  const uint32_t e = (bits >> 23) & 0xffu;
  const uint32_t m = bits & 0x7fffffu;
  return e + (m != 0 ? 1u : 0u);
}

/// fast_round_scale(amax, maxInv) = bits ((k+127) << 23) as fp32, exactly as
/// the reference (a biased exponent of 256 wraps to the sign bit: -0.0).
DSC_HD constexpr float fastRoundScale(float amax, float maxInv) {
  return floatFromBits(fastRoundScaleBiasedExp(amax, maxInv) << 23);
}

//===--------------------------------------------------------------------===//
// Scale rules of the three quantisers
//===--------------------------------------------------------------------===//

/// max(amax, floor), propagating NaN like torch's clamp_min.
DSC_HD constexpr float floorAmax(float amax, float floor) {
  return amax < floor ? floor : amax;
}

/// FP8 activation scale (act_quant, reference-spec §3.2): a power of two.
DSC_HD constexpr float fp8ActScale(float amax) {
  return fastRoundScale(floorAmax(amax, kFp8ActAmaxFloor), kFp8MaxInv);
}

/// FP4 scale with UE8M0 storage (indexer q/k, reference-spec §3.3).
DSC_HD constexpr float fp4E8M0Scale(float amax) {
  return fastRoundScale(floorAmax(amax, kFp4E8M0AmaxFloor), kFp4MaxInv);
}

/// FP4 scale with E4M3 storage (compressed KV, reference-spec §3.3): the
/// E4M3 code of amax/6 (fp32 division), RNE, saturating; NaN amax -> 0x7f.
DSC_HD constexpr uint8_t fp4E4M3ScaleCode(float amax) {
  return e4m3FromFloat(floorAmax(amax, kFp4E4M3AmaxFloor) / 6.0f);
}

/// The UE8M0 byte of a fastRoundScale result; NaN amax (scale -0.0) and
/// infinite amax map to 0xff.
DSC_HD constexpr uint8_t ue8m0FromScale(float s) { return ue8m0FromPow2(s); }

} // namespace dsc::numerics

#endif // DSC_NUMERICS_SCALARCODECS_H
