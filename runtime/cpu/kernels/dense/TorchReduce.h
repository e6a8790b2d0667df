//===- TorchReduce.h - torch's CPU fp32 sum order ---------------------------===//
//
// The reference computes fp32 reductions such as mean(x^2) in RMSNorm with
// torch's CPU cascade sum (aten SumKernel). For a contiguous fp32 row of n
// values on an AVX2 build: the row is cut into vectors of L = 8 lanes; the
// vectors are summed lane-wise with 4 interleaved accumulators (vector i goes
// to accumulator i % 4) whose chunks are folded in levels of
// 2^max(4, ceil(log2(n/L/4))/4) rows; the 4 accumulators are added in order;
// the scalar tail (n % L values) is summed first into the final scalar and
// the 8 lanes are then added to it in lane order. All in fp32.
// Why: the goldens hold near-ties that a differently ordered (or double)
// sum flips: tiny40/expected, layer 14, one index key 1.6e-5 from an E2M1
// boundary is reproduced by this order (AVX2), not by AVX-512's 16 lanes.
//===----------------------------------------------------------------------===//
#ifndef DSC_RUNTIME_CPU_KERNELS_DENSE_TORCHREDUCE_H
#define DSC_RUNTIME_CPU_KERNELS_DENSE_TORCHREDUCE_H

#include <algorithm>
#include <bit>
#include <cstdint>
#include <vector>

namespace dsc::cpu {

/// Lane-wise cascade sum of `size` items of `nr` x `lanes` values;
/// item(i, k, l) is lane l of accumulator k's i-th item.
template <typename Item>
std::vector<float> cascadeRows(int64_t size, int nr, int lanes, Item item) {
  constexpr int kLevels = 4;
  const int64_t ceilLog2 = size <= 2 ? 1 : std::bit_width(static_cast<uint64_t>(size - 1));
  const int64_t power = std::max<int64_t>(4, ceilLog2 / kLevels);
  const int64_t step = int64_t(1) << power, mask = step - 1;
  std::vector<float> acc(static_cast<size_t>(kLevels * nr * lanes), 0.0f);
  auto at = [&](int j, int k, int l) -> float & { return acc[static_cast<size_t>((j * nr + k) * lanes + l)]; };
  int64_t i = 0;
  while (i + step <= size) {
    for (int64_t j = 0; j < step; ++j, ++i)
      for (int k = 0; k < nr; ++k)
        for (int l = 0; l < lanes; ++l)
          at(0, k, l) += item(i, k, l);
    for (int j = 1; j < kLevels; ++j) {
      for (int k = 0; k < nr; ++k)
        for (int l = 0; l < lanes; ++l) {
          at(j, k, l) += at(j - 1, k, l);
          at(j - 1, k, l) = 0.0f;
        }
      if ((i & (mask << (j * power))) != 0)
        break;
    }
  }
  for (; i < size; ++i)
    for (int k = 0; k < nr; ++k)
      for (int l = 0; l < lanes; ++l)
        at(0, k, l) += item(i, k, l);
  for (int j = 1; j < kLevels; ++j)
    for (int k = 0; k < nr; ++k)
      for (int l = 0; l < lanes; ++l)
        at(0, k, l) += at(j, k, l);
  return std::vector<float>(acc.begin(), acc.begin() + nr * lanes);
}

/// One "row_sum": items split over 4 accumulators, remainder into the first,
/// accumulators added in order. Returns `lanes` values.
template <typename Item>
std::vector<float> ilpRowSum(int64_t size, int lanes, Item item) {
  const int64_t ilp = size / 4;
  std::vector<float> part =
      cascadeRows(ilp, 4, lanes, [&](int64_t i, int k, int l) { return item(i * 4 + k, l); });
  for (int64_t i = ilp * 4; i < size; ++i)
    for (int l = 0; l < lanes; ++l)
      part[static_cast<size_t>(l)] += item(i, l);
  for (int k = 1; k < 4; ++k)
    for (int l = 0; l < lanes; ++l)
      part[static_cast<size_t>(l)] += part[static_cast<size_t>(k * lanes + l)];
  part.resize(static_cast<size_t>(lanes));
  return part;
}

/// torch's CPU fp32 sum of n contiguous values (vector width `lanes`).
inline float torchSumF32(const float *x, int64_t n, int lanes = 8) {
  if (n < lanes)
    return ilpRowSum(n, 1, [&](int64_t i, int) { return x[i]; })[0];
  const int64_t vecs = n / lanes;
  const std::vector<float> v =
      ilpRowSum(vecs, lanes, [&](int64_t i, int l) { return x[i * lanes + l]; });
  float total = 0.0f;
  for (int64_t k = vecs * lanes; k < n; ++k)
    total += x[k];
  for (int l = 0; l < lanes; ++l)
    total += v[static_cast<size_t>(l)];
  return total;
}

} // namespace dsc::cpu

#endif // DSC_RUNTIME_CPU_KERNELS_DENSE_TORCHREDUCE_H
