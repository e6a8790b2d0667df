//===- LaunchGeometryTest.cpp - Host launch geometry of the fast kernels ---===//
//
// runtime/cuda/GemvLaunch.h's mHC split rule, by hand numbers: the split
// count is a function of the widths only (so a row's mixes never depend on
// the call's tokens), 64 where one token's stage fits the finish kernel's
// shared memory, the largest count that fits otherwise, 0 (the CPU-order
// kernel) when not even one split does. The lane-block GEMV's K splits and
// the lane MoE steps' items, by the same hand arithmetic. No GPU needed.
//===----------------------------------------------------------------------===//
#include "runtime/cuda/GemvLaunch.h"

#include <gtest/gtest.h>

namespace {

using dsc::cuda::hcSplits;
using dsc::cuda::laneSplits;
using dsc::cuda::moeLaneItems;
using dsc::cuda::hcStageBytes;
using dsc::cuda::kMaxDynamicShared;

/// nmix = (2 + hc) * hc mixes of width hc * D.
long long nmixOf(long long hc) { return (2 + hc) * hc; }

TEST(HcSplits, ReleasedShapesTakeAllSplits) {
  // rw6 / released: hc 4, D 5120 -> 24 mixes of 20,480: 24 * 64 * 8 = 12,288
  // bytes of split sums + (20480 / 512 + 1) * 32 * 4 = 5,248 of group sums.
  EXPECT_EQ(hcStageBytes(nmixOf(4), 4 * 5120, 64), 12288 + 5248);
  EXPECT_EQ(hcSplits(nmixOf(4), 4 * 5120), 64);
  EXPECT_EQ(hcSplits(nmixOf(4), 4 * 7168), 64);
}

TEST(HcSplits, ShrinksToTheLargestCountThatFits) {
  // hc 8, D 4096: 80 mixes, 640 bytes per split, 65 * 128 = 8,320 of group
  // sums: 640 s + 8320 <= 48,128 gives s = 62.
  ASSERT_EQ(kMaxDynamicShared, 47 * 1024);
  EXPECT_EQ(hcSplits(nmixOf(8), 8 * 4096), 62);
  EXPECT_LE(hcStageBytes(nmixOf(8), 8 * 4096, 62), kMaxDynamicShared);
  EXPECT_GT(hcStageBytes(nmixOf(8), 8 * 4096, 63), kMaxDynamicShared);
}

TEST(HcSplits, NoneWhenTheGroupSumsAloneDoNotFit) {
  // width 200,000: 391 * 128 = 50,048 bytes of group sums > 48,128.
  EXPECT_EQ(hcSplits(nmixOf(4), 200000), 0);
}


// laneSplits: the s of least ceil(tiles * s / 4224) * (ceil(kb / s) * 32 +
// 2048), 2,112 = 132 SMs x 2 blocks x 8 warps.
TEST(LaneSplits, OneFullWaveBeatsASecondNearlyEmptyOne) {
  // wo_b: N 5120 -> 640 tiles, K 8192 -> kb 256. s = 3: 1,920 items, one wave,
  // 1 * (86 * 32 + 2048) = 4,800; s = 4: 2,560 items, two waves,
  // 2 * (64 * 32 + 2048) = 8,192; s = 6: 2 * (43 * 32 + 2048) = 6,848.
  EXPECT_EQ(laneSplits(5120, 8192), 3);
  // wq_a: 160 tiles, kb 160. s = 13: 2,080 items, 1 * (13 * 32 + 2048) =
  // 2,464; s = 16: 2,560 items, 2 * (10 * 32 + 2048) = 4,736; s = 12:
  // 1 * (14 * 32 + 2048) = 2,496.
  EXPECT_EQ(laneSplits(1280, 5120), 13);
}

TEST(LaneSplits, ManyTilesStayWhole) {
  // wq_b: 4,096 tiles, kb 40: s = 1, two waves, 2 * (40 * 32 + 2048) = 6,656;
  // s = 2: 8,192 items, four waves, 4 * (20 * 32 + 2048) = 10,752.
  EXPECT_EQ(laneSplits(32768, 1280), 1);
  // kb / s >= 8: K 256 (kb 8) never splits, however few the tiles.
  EXPECT_EQ(laneSplits(8, 256), 1);
  // wkv: 64 tiles, kb 160: every s up to 16 keeps one wave; 16 is the cheapest
  // (1 * (10 * 32 + 2048) = 2,368), s = 20 would break the 16 cap.
  EXPECT_EQ(laneSplits(512, 5120), 16);
}

TEST(MoeLaneItems, RoutedItemsAreTwoTilesTheSharedOne) {
  // Released up: 6 routed slots x ceil(2304 / 16) + ceil(2304 / 8) = 864 + 288.
  EXPECT_EQ(moeLaneItems(1, 6, 2304), 1152);
  // Down (5120 rows): 6 x 320 + 640 = 2,560; per token, so two tokens double it.
  EXPECT_EQ(moeLaneItems(2, 6, 5120), 5120);
  // A partial tile rounds up: 40 rows -> 3 routed items, 5 shared.
  EXPECT_EQ(moeLaneItems(1, 2, 40), 2 * 3 + 5);
}

} // namespace
