//===- LaunchGeometryTest.cpp - Host launch geometry of the fast kernels ---===//
//
// runtime/cuda/GemvLaunch.h's mHC split rule, by hand numbers: the split
// count is a function of the widths only (so a row's mixes never depend on
// the call's tokens), 64 where one token's stage fits the finish kernel's
// shared memory, the largest count that fits otherwise, 0 (the CPU-order
// kernel) when not even one split does. No GPU needed.
//===----------------------------------------------------------------------===//
#include "runtime/cuda/GemvLaunch.h"

#include <gtest/gtest.h>

namespace {

using dsc::cuda::hcSplits;
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

} // namespace
