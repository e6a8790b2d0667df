//===- TorchSumOrder.h - torch's CPU fp32 sum order, cut into parallel parts ===//
//
// What: torch's CPU fp32 sum of n values (runtime/cpu/kernels/dense/
// TorchReduce.h torchSumF32, AVX2: 8 lanes, 4 interleaved accumulators,
// 4 cascade levels) rewritten as independent parts that may run on
// different threads, warps or blocks, with the same result bit for bit.
// Why: the reference's RMSNorm and mHC sums of squares use that order, and
// the goldens hold near-ties that any other order flips (tiny40/expected:
// a block-reduced sum of squares moved layers 14-18 out of the GPU gates).
// A single thread walking n values is too slow on the GPU; this is the same
// sum with n / 512 + 32 dependent adds on the critical path.
//
// The decomposition, for n >= 8: the row is 32 independent chains
// c = 8k + l (vector i of 8 lanes goes to accumulator i % 4 = k, lane l);
// chain c's i-th item is item((4i + k) * 8 + l) for i < ilp = n / 32. Each
// chain adds its items into level 0 from zero, and after every `step` items
// folds level 0 into levels 1..3 at indices shared by all chains. So:
//   1. torchGroupSum: chain c's group m (items m*step .. m*step+step-1, or
//      the partial tail group m == groups) summed from zero, in order;
//   2. torchChainSum: chain c's fold of its group sums, plus ilpRowSum's
//      tail vectors for the k == 0 chains;
//   3. torchCombineChains: the 32 chain sums merged in torchSumF32's order
//      (accumulators per lane, the scalar tail, then the lanes).
// torchSumOrdered runs all three on one thread (the host check and n < 8).
// Invariants: every add is one IEEE fp32 round-to-nearest add (addRn: no
// contraction into an FMA on the device); group sums may be computed by
// anyone but must be handed to torchChainSum in m order.
//===----------------------------------------------------------------------===//
#ifndef DSC_NUMERICS_TORCHSUMORDER_H
#define DSC_NUMERICS_TORCHSUMORDER_H

#include "dsc/numerics/Portability.h"

namespace dsc::numerics {

/// One fp32 round-to-nearest add that the device compiler may not fuse.
DSC_HD inline float addRn(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fadd_rn(a, b);
#else
  return a + b;
#endif
}

/// The chain geometry of a torch-order sum of n values.
struct TorchChains {
  int64_t n = 0, vecs = 0, ilp = 0, step = 16, power = 4;
  int64_t groups = 0; ///< full groups per chain (the tail group is index `groups`)
  DSC_HD explicit TorchChains(int64_t count) : n(count) {
    vecs = n / 8;
    ilp = vecs / 4;
    int64_t ceilLog2 = 1;
    if (ilp > 2) {
      ceilLog2 = 0;
      for (uint64_t v = uint64_t(ilp - 1); v != 0; v >>= 1)
        ++ceilLog2;
    }
    power = ceilLog2 / 4 > 4 ? ceilLog2 / 4 : 4;
    step = int64_t(1) << power;
    groups = n < 8 ? 0 : ilp / step;
  }
  /// The row index of chain c's i-th item.
  DSC_HD int64_t at(int64_t i, int c) const { return (i * 4 + (c >> 3)) * 8 + (c & 7); }
};

/// Step 1: chain c's group m (m == t.groups: the tail group, maybe empty).
template <typename Item>
DSC_HD float torchGroupSum(const TorchChains &t, int c, int64_t m, Item item) {
  const int64_t begin = m * t.step, end = m < t.groups ? begin + t.step : t.ilp;
  float a = 0.0f;
  if (end - begin == 16) { // the common full group: every item fetched first
    float v[16];
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
    for (int j = 0; j < 16; ++j)
      v[j] = item(t.at(begin + j, c));
    for (int j = 0; j < 16; ++j)
      a = addRn(a, v[j]);
    return a;
  }
  for (int64_t i = begin; i < end; ++i)
    a = addRn(a, item(t.at(i, c)));
  return a;
}

/// Step 2: chain c's sum from group(m), m = 0 .. t.groups in order (n >= 8).
template <typename Group, typename Item>
DSC_HD float torchChainSum(const TorchChains &t, int c, Group group, Item item) {
  const int64_t mask = t.step - 1;
  float a[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  for (int64_t m = 0; m < t.groups; ++m) { // cascadeRows' folds after group m
    a[0] = group(m);
    const int64_t i = (m + 1) * t.step;
    for (int j = 1; j < 4; ++j) {
      a[j] = addRn(a[j], a[j - 1]);
      a[j - 1] = 0.0f;
      if ((i & (mask << (j * t.power))) != 0)
        break;
    }
  }
  a[0] = group(t.groups);
  for (int j = 1; j < 4; ++j)
    a[0] = addRn(a[0], a[j]);
  if ((c >> 3) == 0) // ilpRowSum's tail: vectors ilp*4 .. vecs, into accumulator 0
    for (int64_t v = t.ilp * 4; v < t.vecs; ++v)
      a[0] = addRn(a[0], item(v * 8 + (c & 7)));
  return a[0];
}

/// Step 3: the sum from chain(c), c = 0..31, which is called in the same
/// fixed sequence by every caller (so a warp may answer it by shuffles).
template <typename Chain, typename Item>
DSC_HD float torchCombineChains(const TorchChains &t, Chain chain, Item item) {
  float lanes[8];
  for (int l = 0; l < 8; ++l) {
    float acc = chain(l);
    for (int k = 1; k < 4; ++k)
      acc = addRn(acc, chain(k * 8 + l));
    lanes[l] = acc;
  }
  float total = 0.0f;
  for (int64_t v = t.vecs * 8; v < t.n; ++v)
    total = addRn(total, item(v));
  for (int l = 0; l < 8; ++l)
    total = addRn(total, lanes[l]);
  return total;
}

/// n < 8: ilpRowSum with one lane (no chain has a full group).
template <typename Item>
DSC_HD float torchSumSmall(int64_t n, Item item) {
  float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  const int64_t ilp = n / 4;
  for (int64_t i = 0; i < ilp; ++i)
    for (int k = 0; k < 4; ++k)
      acc[k] = addRn(acc[k], item(i * 4 + k));
  for (int j = 1; j < 4; ++j) // cascadeRows' final fold of the (empty) levels
    for (int k = 0; k < 4; ++k)
      acc[k] = addRn(acc[k], 0.0f);
  for (int64_t i = ilp * 4; i < n; ++i)
    acc[0] = addRn(acc[0], item(i));
  for (int k = 1; k < 4; ++k)
    acc[0] = addRn(acc[0], acc[k]);
  return acc[0];
}

/// The whole sum on one thread through steps 1-3 (equals torchSumF32).
template <typename Item>
DSC_HD float torchSumOrdered(int64_t n, Item item) {
  if (n < 8)
    return torchSumSmall(n, item);
  const TorchChains t(n);
  return torchCombineChains(
      t,
      [&](int c) {
        return torchChainSum(
            t, c, [&](int64_t m) { return torchGroupSum(t, c, m, item); }, item);
      },
      item);
}

} // namespace dsc::numerics

#endif // DSC_NUMERICS_TORCHSUMORDER_H
