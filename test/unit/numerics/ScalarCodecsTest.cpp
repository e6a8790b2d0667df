//===- ScalarCodecsTest.cpp - Hand cases for the scalar codecs ------------===//
//
// Expected values are worked out by hand from the format definitions
// (reference-spec §3, peers §0.1): ties, saturation, NaN, -0, subnormals,
// amax exactly a power of two, amax below each floor.
//===----------------------------------------------------------------------===//
#include "dsc/numerics/ScalarCodecs.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

using namespace dsc::numerics;

namespace {
float f(uint32_t bits) { return floatFromBits(bits); }
uint32_t b(float x) { return floatBits(x); }
float p2(int k) { return std::ldexp(1.0f, k); }
} // namespace

TEST(NumericsBf16, RoundToNearestEven) {
  EXPECT_EQ(bf16FromFloat(1.0f), 0x3f80);
  EXPECT_EQ(bf16FromFloat(f(0x3f808000)), 0x3f80); // tie, even stays
  EXPECT_EQ(bf16FromFloat(f(0x3f818000)), 0x3f82); // tie, odd rounds up
  EXPECT_EQ(bf16FromFloat(f(0x3f808001)), 0x3f81); // above the tie
  EXPECT_EQ(bf16FromFloat(f(0x3f807fff)), 0x3f80); // below the tie
  EXPECT_EQ(bf16FromFloat(f(0x7f7fffff)), 0x7f80); // FLT_MAX rounds to inf
  EXPECT_EQ(bf16FromFloat(INFINITY), 0x7f80);
  EXPECT_EQ(bf16FromFloat(-INFINITY), 0xff80);
  EXPECT_EQ(bf16FromFloat(-0.0f), 0x8000);
  EXPECT_EQ(bf16FromFloat(f(0x00010000)), 0x0001); // subnormal
  EXPECT_EQ(bf16FromFloat(f(0x00008000)), 0x0000); // subnormal tie to even
  EXPECT_EQ(bf16FromFloat(NAN), 0x7fc0);
  EXPECT_EQ(bf16FromFloat(f(0xff800001)), 0x7fc0); // -NaN, signalling
  EXPECT_EQ(bf16FromFloat(f(0x7f800001)), 0x7fc0); // would round to inf
  EXPECT_EQ(b(bf16ToFloat(0xc040)), 0xc0400000u);
}

TEST(NumericsE4M3, EncodeHandCases) {
  EXPECT_EQ(e4m3FromFloat(0.0f), 0x00);
  EXPECT_EQ(e4m3FromFloat(-0.0f), 0x80);
  EXPECT_EQ(e4m3FromFloat(1.0f), 0x38);
  EXPECT_EQ(e4m3FromFloat(-2.0f), 0xc0);
  EXPECT_EQ(e4m3FromFloat(1.0625f), 0x38); // tie 1 | 1.125 -> even mantissa 0
  EXPECT_EQ(e4m3FromFloat(1.1875f), 0x3a); // tie 1.125 | 1.25 -> even 1.25
  EXPECT_EQ(e4m3FromFloat(240.0f), 0x77);
  EXPECT_EQ(e4m3FromFloat(232.0f), 0x76); // tie 224 | 240 -> 224
  EXPECT_EQ(e4m3FromFloat(15.5f), 0x58);  // tie 15 (0x57, odd) | 16 (0x58) -> 16
  // Saturation: 448 is the largest finite; everything above saturates,
  // inf included (clamp to +-448 before the cast, reference-spec §3.2).
  EXPECT_EQ(e4m3FromFloat(448.0f), 0x7e);
  EXPECT_EQ(e4m3FromFloat(449.0f), 0x7e);
  EXPECT_EQ(e4m3FromFloat(464.0f), 0x7e);
  EXPECT_EQ(e4m3FromFloat(1e30f), 0x7e);
  EXPECT_EQ(e4m3FromFloat(INFINITY), 0x7e);
  EXPECT_EQ(e4m3FromFloat(-INFINITY), 0xfe);
  EXPECT_EQ(e4m3FromFloat(-500.0f), 0xfe);
  // NaN -> 0x7f whatever its sign.
  EXPECT_EQ(e4m3FromFloat(NAN), 0x7f);
  EXPECT_EQ(e4m3FromFloat(-NAN), 0x7f);
  // Subnormals: steps of 2^-9.
  EXPECT_EQ(e4m3FromFloat(p2(-9)), 0x01);
  EXPECT_EQ(e4m3FromFloat(p2(-10)), 0x00);                  // tie 0 | 1 -> 0
  EXPECT_EQ(e4m3FromFloat(-p2(-10)), 0x80);                 // -0 kept
  EXPECT_EQ(e4m3FromFloat(std::nextafter(p2(-10), 1.0f)), 0x01);
  EXPECT_EQ(e4m3FromFloat(3 * p2(-10)), 0x02);              // tie 1 | 2 -> 2
  EXPECT_EQ(e4m3FromFloat(5 * p2(-10)), 0x02);              // tie 2 | 3 -> 2
  EXPECT_EQ(e4m3FromFloat(15 * p2(-10)), 0x08);             // tie 7 | 8 -> 8 = 2^-6
  EXPECT_EQ(e4m3FromFloat(7 * p2(-9)), 0x07);
  EXPECT_EQ(e4m3FromFloat(p2(-6)), 0x08);
  EXPECT_EQ(e4m3FromFloat(p2(-12)), 0x00);
  EXPECT_EQ(e4m3FromFloat(f(0x00000001)), 0x00);            // fp32 subnormal
  EXPECT_EQ(e4m3FromFloat(f(0x80000001)), 0x80);
}

TEST(NumericsE4M3, DecodeAllCodes) {
  EXPECT_EQ(e4m3ToFloat(0x7e), 448.0f);
  EXPECT_EQ(e4m3ToFloat(0xfe), -448.0f);
  EXPECT_EQ(e4m3ToFloat(0x01), p2(-9));
  EXPECT_EQ(e4m3ToFloat(0x07), 7 * p2(-9));
  EXPECT_EQ(e4m3ToFloat(0x08), p2(-6));
  EXPECT_EQ(e4m3ToFloat(0x38), 1.0f);
  EXPECT_EQ(b(e4m3ToFloat(0x80)), 0x80000000u);
  EXPECT_TRUE(std::isnan(e4m3ToFloat(0x7f)));
  EXPECT_TRUE(std::isnan(e4m3ToFloat(0xff)));
  // Every finite code decodes to a value that encodes back to itself, and the
  // positive codes are strictly increasing.
  for (int c = 0; c < 256; ++c) {
    if ((c & 0x7f) == 0x7f)
      continue;
    EXPECT_EQ(e4m3FromFloat(e4m3ToFloat(static_cast<uint8_t>(c))), c) << c;
    if (c > 0 && c < 0x7f) {
      EXPECT_LT(e4m3ToFloat(static_cast<uint8_t>(c - 1)), e4m3ToFloat(static_cast<uint8_t>(c)));
    }
  }
}

TEST(NumericsE2M1, TiesToEvenCode) {
  // Brief/spec table: 0.25->0, 0.75->1, 1.25->1, 1.75->2, 2.5->2, 3.5->4, 5->4.
  EXPECT_EQ(e2m1FromFloat(0.25f), 0x0);
  EXPECT_EQ(e2m1FromFloat(0.75f), 0x2);
  EXPECT_EQ(e2m1FromFloat(1.25f), 0x2);
  EXPECT_EQ(e2m1FromFloat(1.75f), 0x4);
  EXPECT_EQ(e2m1FromFloat(2.5f), 0x4);
  EXPECT_EQ(e2m1FromFloat(3.5f), 0x6);
  EXPECT_EQ(e2m1FromFloat(5.0f), 0x6);
  EXPECT_EQ(e2m1ToFloat(0x2), 1.0f);
  EXPECT_EQ(e2m1ToFloat(0x4), 2.0f);
  EXPECT_EQ(e2m1ToFloat(0x6), 4.0f);
  // Just off the ties.
  EXPECT_EQ(e2m1FromFloat(std::nextafter(0.25f, 1.0f)), 0x1);
  EXPECT_EQ(e2m1FromFloat(std::nextafter(0.75f, 0.0f)), 0x1);
  EXPECT_EQ(e2m1FromFloat(std::nextafter(1.25f, 2.0f)), 0x3);
  EXPECT_EQ(e2m1FromFloat(std::nextafter(5.0f, 6.0f)), 0x7);
  EXPECT_EQ(e2m1FromFloat(std::nextafter(2.5f, 3.0f)), 0x5);
  // Negative ties keep the sign.
  EXPECT_EQ(e2m1FromFloat(-0.75f), 0xa);
  EXPECT_EQ(e2m1FromFloat(-3.5f), 0xe);
}

TEST(NumericsE2M1, SignSaturationNaN) {
  EXPECT_EQ(e2m1FromFloat(0.0f), 0x0);
  EXPECT_EQ(e2m1FromFloat(-0.0f), 0x8);
  EXPECT_EQ(e2m1FromFloat(-0.1f), 0x8); // rounds to -0
  EXPECT_EQ(e2m1FromFloat(6.0f), 0x7);
  EXPECT_EQ(e2m1FromFloat(7.0f), 0x7);
  EXPECT_EQ(e2m1FromFloat(INFINITY), 0x7);
  EXPECT_EQ(e2m1FromFloat(-1e9f), 0xf);
  EXPECT_EQ(e2m1FromFloat(NAN), 0x0);
  EXPECT_EQ(e2m1FromFloat(-NAN), 0x0);
  const float grid[8] = {0, 0.5f, 1, 1.5f, 2, 3, 4, 6};
  for (int c = 0; c < 16; ++c) {
    float v = e2m1ToFloat(static_cast<uint8_t>(c));
    EXPECT_EQ(std::fabs(v), grid[c & 7]);
    EXPECT_EQ(std::signbit(v), (c & 8) != 0) << c;
    EXPECT_EQ(e2m1FromFloat(v), c);
  }
}

/// e2m1x8ToE4m3Scaled against the two decoders: every code in every one of
/// the eight nibble positions (the other nibbles set to a different code)
/// becomes the E4M3 byte of exactly e2m1 * 2^-6 in its even/odd byte.
TEST(NumericsE2M1, PackedToScaledE4M3) {
  for (uint32_t code = 0; code < 16; ++code)
    for (int pos = 0; pos < 8; ++pos) {
      uint32_t word = 0;
      for (int n = 0; n < 8; ++n)
        word |= uint32_t(n == pos ? code : (code + 5 + n) % 16) << (4 * n);
      const E4m3Pair p = e2m1x8ToE4m3Scaled(word);
      for (int n = 0; n < 8; ++n) {
        const uint32_t c = (word >> (4 * n)) & 0xFu;
        const uint8_t byte = uint8_t(((n % 2 ? p.odd : p.even) >> (8 * (n / 2))) & 0xFFu);
        EXPECT_EQ(e4m3ToFloat(byte) * kE2m1ToE4m3ScaledUnscale, e2m1ToFloat(uint8_t(c)))
            << "code " << c << " at nibble " << n;
        EXPECT_EQ(byte & 0x80u, (c & 8u) << 4) << "the sign of code " << c << " (-0 stays -0)";
      }
    }
}

TEST(NumericsUE8M0, EncodeDecode) {
  EXPECT_EQ(ue8m0ToFloat(127), 1.0f);
  EXPECT_EQ(ue8m0ToFloat(0), p2(-127));
  EXPECT_EQ(ue8m0ToFloat(1), p2(-126));
  EXPECT_EQ(ue8m0ToFloat(254), p2(127));
  EXPECT_TRUE(std::isnan(ue8m0ToFloat(255)));
  for (int e = 0; e < 255; ++e)
    EXPECT_EQ(ue8m0FromPow2(ue8m0ToFloat(static_cast<uint8_t>(e))), e);
  EXPECT_EQ(ue8m0FromPow2(3.0f), 0xff);
  EXPECT_EQ(ue8m0FromPow2(-1.0f), 0xff);
  EXPECT_EQ(ue8m0FromPow2(0.0f), 0xff);
  EXPECT_EQ(ue8m0FromPow2(INFINITY), 0xff);
  EXPECT_EQ(ue8m0FromPow2(NAN), 0xff);
}

TEST(NumericsFastRoundScale, CeilPow2FromBits) {
  // 448 * fp32(1/448) rounds to exactly 1.0, so amax = 448 * 2^k gives 2^k.
  EXPECT_EQ(fastRoundScale(448.0f, kFp8MaxInv), 1.0f);
  EXPECT_EQ(fastRoundScale(448.0f * 1024, kFp8MaxInv), 1024.0f);
  EXPECT_EQ(fastRoundScale(449.0f, kFp8MaxInv), 2.0f);
  EXPECT_EQ(fastRoundScale(224.0f, kFp8MaxInv), 0.5f);
  EXPECT_EQ(fastRoundScale(300.0f, kFp8MaxInv), 1.0f);
  // amax exactly a power of two: 1 * fp32(1/448) = 1.142857*2^-9 -> 2^-8.
  EXPECT_EQ(fastRoundScale(1.0f, kFp8MaxInv), p2(-8));
  EXPECT_EQ(fastRoundScale(512.0f, kFp8MaxInv), 2.0f);
  EXPECT_EQ(fastRoundScale(6.0f, kFp4MaxInv), 1.0f);
  EXPECT_EQ(fastRoundScale(3.0f, kFp4MaxInv), 0.5f); // 3*fp32(1/6) rounds to 0.5
  EXPECT_EQ(fastRoundScale(4.0f, kFp4MaxInv), 1.0f);
  EXPECT_EQ(fastRoundScale(8.0f, kFp4MaxInv), 2.0f);
  // Degenerate inputs, bit for bit as the reference's integer formula.
  EXPECT_EQ(b(fastRoundScale(NAN, kFp8MaxInv)), 0x80000000u);
  EXPECT_EQ(b(fastRoundScale(INFINITY, kFp8MaxInv)), 0x7f800000u);
  EXPECT_EQ(b(fastRoundScale(0.0f, kFp8MaxInv)), 0x00000000u);
  EXPECT_EQ(fastRoundScaleBiasedExp(1.0f, 1.0f), 127u);
  EXPECT_EQ(fastRoundScaleBiasedExp(1.5f, 1.0f), 128u);
}

TEST(NumericsScaleRules, Fp8ActFloorOnAmax) {
  // amax floor 1e-4: 1e-4 * fp32(1/448) = 2.23e-7 -> 2^-22.
  EXPECT_EQ(fp8ActScale(1e-4f), p2(-22));
  EXPECT_EQ(fp8ActScale(0.0f), p2(-22));
  EXPECT_EQ(fp8ActScale(5e-5f), p2(-22));
  EXPECT_EQ(fp8ActScale(1e-30f), p2(-22));
  // Flooring the scale instead (vLLM: 2^ceil(log2(max(amax/448, 1e-4))))
  // would give 2^-13; the reference floors amax.
  EXPECT_NE(fp8ActScale(5e-5f), p2(-13));
  EXPECT_EQ(fp8ActScale(2e-4f), p2(-21));
  EXPECT_EQ(fp8ActScale(448.0f), 1.0f);
  EXPECT_TRUE(std::signbit(fp8ActScale(NAN)));
}

TEST(NumericsScaleRules, Fp4E8M0Floor) {
  // 6*2^-126 * fp32(1/6) = 2^-126 (1 + 2^-25) rounds to 2^-126.
  EXPECT_EQ(kFp4E8M0AmaxFloor, 6.0f * p2(-126));
  EXPECT_EQ(fp4E8M0Scale(0.0f), p2(-126));
  EXPECT_EQ(fp4E8M0Scale(f(0x00000001)), p2(-126));
  EXPECT_EQ(fp4E8M0Scale(6.0f * p2(-126)), p2(-126));
  EXPECT_EQ(fp4E8M0Scale(6.0f), 1.0f);
  EXPECT_EQ(fp4E8M0Scale(6.5f), 2.0f);
  EXPECT_EQ(fp4E8M0Scale(1.0f), 0.25f); // 1/6 = 0.1667 -> 2^-2
  EXPECT_EQ(ue8m0FromScale(fp4E8M0Scale(6.0f)), 127);
}

TEST(NumericsScaleRules, Fp4E4M3ScaleIsRneOfAmaxOver6) {
  EXPECT_EQ(kFp4E4M3AmaxFloor, 6.0f * p2(-9));
  EXPECT_EQ(fp4E4M3ScaleCode(0.0f), 0x01); // floor/6 = 2^-9
  EXPECT_EQ(fp4E4M3ScaleCode(0.01f), 0x01);
  EXPECT_EQ(fp4E4M3ScaleCode(6.0f), 0x38);
  EXPECT_EQ(fp4E4M3ScaleCode(1.0f), 0x23); // 0.16667 -> 0.171875 (1.375*2^-3)
  EXPECT_EQ(fp4E4M3ScaleCode(6.375f), 0x38); // 1.0625: tie -> 1.0
  EXPECT_EQ(fp4E4M3ScaleCode(6.0f * 448.0f), 0x7e);
  EXPECT_EQ(fp4E4M3ScaleCode(1e6f), 0x7e);
  EXPECT_EQ(fp4E4M3ScaleCode(INFINITY), 0x7e);
  EXPECT_EQ(fp4E4M3ScaleCode(NAN), 0x7f);
  // The floor applies to amax: amax just above the floor gives its own
  // rounding (0.0118/6 = 0.00197 -> 2^-9 still), amax 0.02 gives 0.00333 ->
  // 0.003418 (7*2^-11 is not E4M3; subnormal step 2^-9: 0.00333*512 = 1.71 -> 2).
  EXPECT_EQ(fp4E4M3ScaleCode(0.0118f), 0x01);
  EXPECT_EQ(fp4E4M3ScaleCode(0.02f), 0x02);
  // A true fp32 division, not a multiply by fp32(1/6): for amax = 0x3fe3ffff
  // (1.78124988) a/6 lands just below the E4M3 tie 0.296875 (-> 0x29,
  // 0.28125) while a*fp32(1/6) rounds onto the tie (-> even 0x2a, 0.3125).
  EXPECT_EQ(fp4E4M3ScaleCode(f(0x3fe3ffff)), 0x29);
  EXPECT_EQ(e4m3FromFloat(f(0x3fe3ffff) * kFp4MaxInv), 0x2a);
}

static_assert(e4m3FromFloat(448.0f) == 0x7e, "usable in constant expressions");
static_assert(e2m1FromFloat(1.75f) == 0x4, "usable in constant expressions");
static_assert(bf16FromFloat(1.0f) == 0x3f80, "usable in constant expressions");
