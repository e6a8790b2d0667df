//===- reduce.cuh - CPU-order fp32 / double reductions for kernel templates -===//
//
// The two reductions whose order the CPU reference fixes, so that a kernel's
// result equals the CPU's bit for bit. Kept in ONE place so every kernel
// (dense and attention) runs the same operations in the same order:
//   - dsc_dense_ts::torchSum / rmsRsqrt: torch's CPU fp32 sum order
//     (dsc/numerics/TorchSumOrder.h, equal to runtime/cpu/kernels/dense/
//     TorchReduce.h torchSumF32) and Norm.cpp's rmsRsqrt, run by ONE
//     thread, every add __fadd_rn (NVRTC would otherwise contract a*b+c
//     into an FMA);
//   - torchSumMerge / torchSumWarp / torchSumBlock and rmsNormRowFast: the
//     same order, bit for bit, computed in parallel through
//     dsc/numerics/TorchSumOrder.h (group sums anywhere, one warp folds);
//   - dsc_dense_d64::dotF64: exact fp32 products summed in double, mirroring
//     runtime/cpu/kernels/dense/DenseUtil.h dotF64 (used by Linear.cpp's bf16
//     path, the LM head, the MoE gate, mHC mixes, grouped output).
// Include after common.cuh:
//
//   #include "codegen/kernels/common.cuh"
//   #include "codegen/kernels/reduce.cuh"
//
// Everything here is a template: nothing is emitted unless a kernel uses it.
//===----------------------------------------------------------------------===//
#ifndef DSC_CODEGEN_KERNELS_REDUCE_CUH
#define DSC_CODEGEN_KERNELS_REDUCE_CUH

#include "codegen/kernels/common.cuh"
#include "dsc/numerics/TorchSumOrder.h"

// torch's CPU fp32 sum order (runtime/cpu/kernels/dense/TorchReduce.h,
// AVX2: 8 lanes, 4 interleaved accumulators, 4 cascade levels), run by ONE
// thread; every add is __fadd_rn (no contraction). item(i) is the i-th fp32
// value of the row (computed on the fly).
namespace dsc_dense_ts {

/// torchSumF32 of n values item(i): dsc/numerics/TorchSumOrder.h's
/// torchSumOrdered (the one definition, host-tested against torchSumF32).
template <typename Item>
__device__ float torchSum(long long n, Item item) {
  return dsc::numerics::torchSumOrdered(n, item);
}

/// Norm.h rmsRsqrt: 1 / sqrt(torchSum(x^2) / n + eps), all fp32 IEEE.
template <typename Load>
__device__ float rmsRsqrt(long long n, float eps, Load load) {
  const float sum = torchSum(n, [&](long long i) {
    const float v = load(i);
    return __fmul_rn(v, v);
  });
  const float mean = __fdiv_rn(sum, (float)n);
  return __fdiv_rn(1.0f, __fsqrt_rn(__fadd_rn(mean, eps)));
}

/// Norm.cpp rmsNorm of one row by the whole block: thread 0 computes
/// r = rmsRsqrt(x), then every thread writes y[i] = bf16(w[i] * (x(i) * r)).
/// `x(i)` gives the row's i-th value as fp32 (from global or shared memory).
/// y may alias the row x reads: the sum finishes before any write and each
/// element is read by the thread that writes it. Ends with a barrier, so the
/// caller may reuse shared memory at once.
template <typename Load>
__device__ void rmsNormRow(long long n, float eps, Load x, const unsigned short *w,
                           unsigned short *y) {
  __shared__ float rs;
  if (threadIdx.x == 0)
    rs = rmsRsqrt(n, eps, x);
  __syncthreads();
  const float rv = rs;
  for (long long i = threadIdx.x; i < n; i += blockDim.x) {
    const float normed = __fmul_rn(x(i), rv);
    y[i] = bf16FromFloat(__fmul_rn(bf16ToFloat(w[i]), normed));
  }
  __syncthreads();
}

// torchSum in parallel, bit for bit: dsc/numerics/TorchSumOrder.h cuts
// torch's order into group sums (computed anywhere), per-chain folds and a
// combine of the 32 chains; here one warp (lane = chain) folds and combines.
using dsc::numerics::TorchChains;
using dsc::numerics::torchGroupSum;

/// torchSum(n, item) from the group sums: every lane of one warp calls it
/// with group(m) = its chain's group sum m (0 <= m <= t.groups, asked in
/// order); every lane gets the sum. Reads item() only for the few items
/// outside the chains. Bound: t.groups + 48 dependent adds per lane.
template <typename Item, typename Group>
__device__ float torchSumMerge(const TorchChains &t, Group group, Item item) {
  if (t.n < 8) // no chains: every lane sums the few items itself
    return dsc::numerics::torchSumSmall(t.n, item);
  const int lane = threadIdx.x & 31;
  const float mine = dsc::numerics::torchChainSum(t, lane, group, item);
  return dsc::numerics::torchCombineChains(
      t, [&](int c) { return __shfl_sync(0xffffffffu, mine, c); }, item);
}

/// torchSum(n, item) by one warp (each lane sums its own chain's groups):
/// every lane calls it and gets the sum. Bound: n / 32 dependent adds.
template <typename Item>
__device__ float torchSumWarp(long long n, Item item) {
  const TorchChains t(n);
  const int lane = threadIdx.x & 31;
  return torchSumMerge(t, [&](long long m) { return torchGroupSum(t, lane, m, item); }, item);
}


/// torchSum(n, item) by a whole block (blockDim.x a multiple of 32): the
/// warps compute the group sums (warp w: groups w, w + warps, ...; lanes
/// over chains, so a warp reads 32 consecutive items), warp 0 merges them.
/// Every thread calls it and gets the sum; contains barriers (ends with one).
template <typename Item>
__device__ float torchSumBlock(long long n, Item item) {
  // Rows with more groups than kTorchBlockGroups fall back to torchSumWarp.
  constexpr int kTorchBlockGroups = dsc::abi::kTorchBlockGroups;
  __shared__ float groupSums[kTorchBlockGroups * 32];
  __shared__ float result;
  const TorchChains t(n);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  if (t.groups + 1 > kTorchBlockGroups) {
    if (warp == 0) {
      const float sum = torchSumWarp(n, item);
      if (lane == 0)
        result = sum;
    }
  } else {
    for (long long m = warp; m <= t.groups; m += warps)
      groupSums[m * 32 + lane] = torchGroupSum(t, lane, m, item);
    __syncthreads();
    if (warp == 0) {
      const float sum =
          torchSumMerge(t, [&](long long m) { return groupSums[m * 32 + lane]; }, item);
      if (lane == 0)
        result = sum;
    }
  }
  __syncthreads();
  const float sum = result;
  __syncthreads(); // groupSums and result may be reused by the next call
  return sum;
}

/// The fast RMSNorm row (the Norm family not on the CPU-order kernels): the
/// same result as rmsNormRow, bit for bit (the block sums the squares with
/// torchSumBlock instead of thread 0 with torchSum), the normalisation
/// spread over the whole block. Same aliasing rule; ends with a barrier.
template <typename Load>
__device__ void rmsNormRowFast(long long n, float eps, Load x, const unsigned short *w,
                               unsigned short *y) {
  const float sum = torchSumBlock(n, [&](long long i) {
    const float v = x(i);
    return __fmul_rn(v, v);
  });
  const float rv = __fdiv_rn(1.0f, __fsqrt_rn(__fadd_rn(__fdiv_rn(sum, (float)n), eps)));
  // A thread's elements are all read before it writes any (blockCopy: loads
  // in flight; the aliasing rule holds per element).
  blockCopy<4>(
      n, [&](long long i) { return make_float2(x(i), bf16ToFloat(w[i])); },
      [&](long long i, float2 v) { y[i] = bf16FromFloat(__fmul_rn(v.y, __fmul_rn(v.x, rv))); });
  __syncthreads();
}

/// rmsNormRow (kFast false: thread 0 sums) or rmsNormRowFast (the block
/// sums): the same bits; the CPU-order and fast kernel pairs pick with kFast.
template <bool kFast, typename Load>
__device__ void rmsNormRowWith(long long n, float eps, Load x, const unsigned short *w,
                               unsigned short *y) {
  if (kFast)
    rmsNormRowFast(n, eps, x, w, y);
  else
    rmsNormRow(n, eps, x, w, y);
}

} // namespace dsc_dense_ts

// DenseUtil.h dotF64: exact products summed in double, four interleaved
// partial sums combined as (s0+s1)+(s2+s3) (the CPU's order, bit for bit).
// a(k), b(k) give the fp32 operands.
namespace dsc_dense_d64 {
template <typename A, typename B>
__device__ double dotF64(long long n, A a, B b) {
  double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  long long k = 0;
  for (; k + 4 <= n; k += 4) {
    s0 = __dadd_rn(s0, __dmul_rn((double)a(k), (double)b(k)));
    s1 = __dadd_rn(s1, __dmul_rn((double)a(k + 1), (double)b(k + 1)));
    s2 = __dadd_rn(s2, __dmul_rn((double)a(k + 2), (double)b(k + 2)));
    s3 = __dadd_rn(s3, __dmul_rn((double)a(k + 3), (double)b(k + 3)));
  }
  for (; k < n; ++k)
    s0 = __dadd_rn(s0, __dmul_rn((double)a(k), (double)b(k)));
  return __dadd_rn(__dadd_rn(s0, s1), __dadd_rn(s2, s3));
}
} // namespace dsc_dense_d64

#endif // DSC_CODEGEN_KERNELS_REDUCE_CUH
