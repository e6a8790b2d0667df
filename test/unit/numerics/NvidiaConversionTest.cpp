//===- NvidiaConversionTest.cpp - Codecs vs NVIDIA's host conversions -----===//
//
// The independent source here is NVIDIA's host-callable emulation of the PTX
// conversions in cuda_fp8.h / cuda_fp4.h / cuda_bf16.h (CUDA 13). Inputs:
// all 65,536 bf16 bit patterns, divided (true fp32 division, as the
// quantisers do) by several scales: powers of two, E4M3 (non-power-of-two)
// scales, and scales that push values into subnormal and saturation ranges.
//
// Where the semantics differ from the reference, exactly those inputs are
// excluded, and counted so that a change in the exclusion shows:
//   - E2M1 NaN: NVIDIA gives +6 (code 0x7); the reference/peers give code 0
//     (peers §0.1: "NaN element -> code 0").
//   - UE8M0 of t = amax*max_inv: compared with __nv_cvt_float_to_e8m0(t,
//     SATFINITE, RoundPosInf) for finite normal t <= 2^127 only. For t = 0,
//     subnormal t, inf or NaN the reference's bit formula (reference-spec
//     §3.1) and NVIDIA's conversion differ by design.
//   - bf16 NaN: torch (and dsc) give 0x7fc0; NVIDIA keeps a payload.
// No exclusion is needed for E4M3: NVIDIA's SATFINITE gives +-448 for
// overflow and inf and 0x7f for NaN, like the reference's clamp-then-cast.
//===----------------------------------------------------------------------===//
#include "dsc/numerics/ScalarCodecs.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp4.h>
#include <cuda_fp8.h>

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

using namespace dsc::numerics;

namespace {

/// Scales the bf16 patterns are divided by before encoding.
std::vector<float> testScales() {
  return {
      1.0f,
      0.25f,
      std::ldexp(1.0f, -9),  // pushes tiny values up, big ones to saturation
      std::ldexp(1.0f, 12),  // pushes values into the subnormal range
      std::ldexp(1.0f, -126),
      0.171875f,             // an E4M3 scale (1.375 * 2^-3)
      3.0f,
      e4m3ToFloat(0x01),     // the FP4/E4M3 floor scale 2^-9
      e4m3ToFloat(0x5b),     // 26: non-power-of-two
      1.0f / 3.7f,
  };
}

float nvHalfToFloat(__half_raw h) { return __half2float(__half(h)); }

} // namespace

TEST(NumericsNvidiaConversions, E4M3EncodeAllBf16AtSeveralScales) {
  int64_t compared = 0, mismatches = 0;
  for (float s : testScales()) {
    for (uint32_t p = 0; p < 65536; ++p) {
      const float v = bf16ToFloat(static_cast<uint16_t>(p)) / s;
      const uint8_t ours = e4m3FromFloat(v);
      const uint8_t nv = __nv_cvt_float_to_fp8(v, __NV_SATFINITE, __NV_E4M3);
      ++compared;
      if (ours != nv && ++mismatches <= 10)
        ADD_FAILURE() << "bf16 0x" << std::hex << p << " / " << s << " = " << v
                      << ": dsc 0x" << int(ours) << ", NVIDIA 0x" << int(nv);
    }
  }
  EXPECT_EQ(compared, 65536 * static_cast<int64_t>(testScales().size()));
  EXPECT_EQ(mismatches, 0);
}

TEST(NumericsNvidiaConversions, E2M1EncodeAllBf16AtSeveralScales) {
  int64_t compared = 0, excludedNaN = 0, mismatches = 0;
  for (float s : testScales()) {
    for (uint32_t p = 0; p < 65536; ++p) {
      const float v = bf16ToFloat(static_cast<uint16_t>(p)) / s;
      const uint8_t ours = e2m1FromFloat(v);
      const uint8_t nv = __nv_cvt_float_to_fp4(v, __NV_E2M1, cudaRoundNearest);
      if (std::isnan(v)) {
        // Documented difference: NVIDIA maps NaN to +6, the reference to 0.
        EXPECT_EQ(nv, 0x7);
        EXPECT_EQ(ours, 0x0);
        ++excludedNaN;
        continue;
      }
      ++compared;
      if (ours != nv && ++mismatches <= 10)
        ADD_FAILURE() << "bf16 0x" << std::hex << p << " / " << s << " = " << v
                      << ": dsc 0x" << int(ours) << ", NVIDIA 0x" << int(nv);
    }
  }
  // 2 * 127 NaN patterns (both signs) per scale.
  EXPECT_EQ(excludedNaN, 254 * static_cast<int64_t>(testScales().size()));
  EXPECT_EQ(compared + excludedNaN, 65536 * static_cast<int64_t>(testScales().size()));
  EXPECT_EQ(mismatches, 0);
}

TEST(NumericsNvidiaConversions, FastRoundScaleIsE8M0RoundUp) {
  // fast_round_scale(amax, max_inv) = 2^ceil(log2(t)), t = amax*max_inv.
  int64_t compared = 0, mismatches = 0;
  auto check = [&](float t) {
    const uint32_t bits = floatBits(t);
    const uint32_t e = (bits >> 23) & 0xff;
    if (signBit(t) || e == 0 || e == 0xff || t > std::ldexp(1.0f, 127))
      return; // zero, subnormal, inf/NaN, or above the largest UE8M0
    const uint32_t ours = fastRoundScaleBiasedExp(t, 1.0f);
    const uint8_t nv = __nv_cvt_float_to_e8m0(t, __NV_SATFINITE, cudaRoundPosInf);
    ++compared;
    if (ours != nv && ++mismatches <= 10)
      ADD_FAILURE() << "t = " << t << ": dsc " << ours << ", NVIDIA " << int(nv);
  };
  for (uint32_t p = 0; p < 65536; ++p) {
    const float x = bf16ToFloat(static_cast<uint16_t>(p));
    check(x);
    check(x * kFp8MaxInv);
    check(x * kFp4MaxInv);
  }
  std::mt19937 rng(7);
  for (int i = 0; i < 200000; ++i)
    check(floatFromBits(rng() & 0x7fffffffu));
  EXPECT_GT(compared, 250000);
  EXPECT_EQ(mismatches, 0);
}

TEST(NumericsNvidiaConversions, DecodeTables) {
  for (int c = 0; c < 256; ++c) {
    const float nv = nvHalfToFloat(__nv_cvt_fp8_to_halfraw(static_cast<uint8_t>(c), __NV_E4M3));
    const float ours = e4m3ToFloat(static_cast<uint8_t>(c));
    if ((c & 0x7f) == 0x7f) {
      EXPECT_TRUE(std::isnan(nv) && std::isnan(ours)) << c;
      continue;
    }
    EXPECT_EQ(floatBits(ours), floatBits(nv)) << "E4M3 code " << c;
  }
  for (int c = 0; c < 16; ++c) {
    const float nv = nvHalfToFloat(__nv_cvt_fp4_to_halfraw(static_cast<uint8_t>(c), __NV_E2M1));
    EXPECT_EQ(floatBits(e2m1ToFloat(static_cast<uint8_t>(c))), floatBits(nv)) << "E2M1 code " << c;
  }
  for (int e = 0; e < 256; ++e) {
    const __nv_bfloat16_raw nv = __nv_cvt_e8m0_to_bf16raw(static_cast<uint8_t>(e));
    const float ours = ue8m0ToFloat(static_cast<uint8_t>(e));
    if (e == 255) {
      EXPECT_TRUE(std::isnan(ours));
      EXPECT_TRUE(std::isnan(bf16ToFloat(nv.x)));
      continue;
    }
    EXPECT_EQ(bf16FromFloat(ours), nv.x) << "UE8M0 " << e;
  }
}

TEST(NumericsNvidiaConversions, Bf16RoundNearestEven) {
  int64_t compared = 0, excludedNaN = 0, mismatches = 0;
  auto check = [&](uint32_t bits) {
    const float x = floatFromBits(bits);
    const __nv_bfloat16_raw nv = __nv_bfloat16_raw(__float2bfloat16_rn(x));
    if (std::isnan(x)) {
      ++excludedNaN; // dsc/torch: 0x7fc0; NVIDIA keeps a NaN payload
      EXPECT_TRUE(std::isnan(bf16ToFloat(nv.x)));
      return;
    }
    ++compared;
    if (bf16FromFloat(x) != nv.x && ++mismatches <= 10)
      ADD_FAILURE() << std::hex << "fp32 0x" << bits << ": dsc 0x" << bf16FromFloat(x)
                    << ", NVIDIA 0x" << nv.x;
  };
  // Every 16-bit prefix with the interesting low halves (ties, just off ties).
  for (uint32_t hi = 0; hi < 65536; ++hi)
    for (uint32_t lo : {0x0000u, 0x0001u, 0x7fffu, 0x8000u, 0x8001u, 0xffffu})
      check((hi << 16) | lo);
  std::mt19937 rng(11);
  for (int i = 0; i < 200000; ++i)
    check(rng());
  EXPECT_GT(compared, 500000);
  EXPECT_GT(excludedNaN, 0);
  EXPECT_EQ(mismatches, 0);
}
