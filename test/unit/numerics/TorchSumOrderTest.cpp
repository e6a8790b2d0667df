//===- TorchSumOrderTest.cpp - the parallel cut of torch's sum order -------===//
//
// dsc/numerics/TorchSumOrder.h must give torchSumF32's bits (the CPU
// backend's torch order, itself pinned by the goldens) for every length:
// the chain geometry changes with n (cascade step 16 up to ilp = 2^19, then
// 32, ...; tails of vectors and of scalars), so the test walks every n up
// to 600, the lengths the models use and lengths at each step boundary,
// on values whose sums round (random magnitudes over 2^20, both signs).
// The group sums are also computed out of order and handed over in order,
// as the GPU kernels do (warps, splits), with the same result.
//===----------------------------------------------------------------------===//
#include "dsc/numerics/TorchSumOrder.h"
#include "runtime/cpu/kernels/dense/TorchReduce.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

namespace {

using dsc::numerics::TorchChains;

std::vector<float> values(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> mant(-1.0f, 1.0f);
  std::uniform_int_distribution<int> exp(-10, 10);
  std::vector<float> x(static_cast<size_t>(n));
  for (float &v : x)
    v = std::ldexp(mant(rng), exp(rng));
  return x;
}

uint32_t bits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}

/// The GPU's way: every group sum first (here in reverse), then per-chain
/// folds reading them, then the combine.
float splitSum(const std::vector<float> &x) {
  const int64_t n = int64_t(x.size());
  auto item = [&](int64_t i) { return x[size_t(i)]; };
  if (n < 8)
    return dsc::numerics::torchSumSmall(n, item);
  const TorchChains t(n);
  std::vector<float> groups(size_t((t.groups + 1) * 32));
  for (int64_t m = t.groups; m >= 0; --m)
    for (int c = 31; c >= 0; --c)
      groups[size_t(m * 32 + c)] = dsc::numerics::torchGroupSum(t, c, m, item);
  float chains[32];
  for (int c = 0; c < 32; ++c)
    chains[c] = dsc::numerics::torchChainSum(
        t, c, [&](int64_t m) { return groups[size_t(m * 32 + c)]; }, item);
  return dsc::numerics::torchCombineChains(t, [&](int c) { return chains[c]; }, item);
}

void expectTorchOrder(int64_t n, uint32_t seed) {
  const std::vector<float> x = values(n, seed);
  const float want = dsc::cpu::torchSumF32(x.data(), n);
  auto item = [&](int64_t i) { return x[size_t(i)]; };
  EXPECT_EQ(bits(dsc::numerics::torchSumOrdered(n, item)), bits(want)) << "n = " << n;
  EXPECT_EQ(bits(splitSum(x)), bits(want)) << "n = " << n << " (split)";
}

TEST(TorchSumOrder, EveryShortLength) {
  for (int64_t n = 0; n <= 600; ++n)
    expectTorchOrder(n, uint32_t(n));
}

/// dims and mHC widths of the models (tiny6/tiny40/rw6/released) and the
/// lengths around cascade boundaries (ilp = 16 m, ilp = 2^k, step 32 from
/// ilp > 2^19).
TEST(TorchSumOrder, ModelWidthsAndStepBoundaries) {
  for (int64_t n : {224, 256, 512, 1024, 2048, 4096, 5120, 7168, 8192, 16384, 20480, 28672})
    for (int64_t d : {-9, -1, 0, 1, 7, 33})
      expectTorchOrder(n + d, uint32_t(n + d));
  for (int64_t ilp : {int64_t(1) << 16, (int64_t(1) << 19) + 1})
    expectTorchOrder(ilp * 32 + 5, 7);
}

/// The geometry the kernels size their scratch by: groups + 1 never
/// exceeds abi::torchGroupStride(n) = n / 512 + 1.
TEST(TorchSumOrder, GroupsFitTheScratchStride) {
  for (int64_t n = 0; n < 200000; n += 37) {
    const TorchChains t(n);
    EXPECT_LE(t.groups + 1, n / 512 + 1) << n;
    EXPECT_GE(t.step, 16);
  }
}

} // namespace
