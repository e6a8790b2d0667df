//===- rms_norm.cu - RMSNorm (reference-spec §6) --------------------------===//
//
// One block per row (any blockDim). Thread 0 computes rsqrt(mean(x^2)+eps)
// with torch's fp32 sum order (TorchReduce.h, serial, bit for bit as the
// CPU); then every thread writes y[i] = bf16(w[i] * (x[i] * r)) for its
// columns. y may alias x (each element is read before it is written by the
// same thread; the sum finishes before any write).
//===----------------------------------------------------------------------===//
#include "codegen/kernels/common.cuh"

// torch's CPU fp32 sum order (runtime/cpu/kernels/dense/TorchReduce.h,
// AVX2: 8 lanes, 4 interleaved accumulators, 4 cascade levels), run by ONE
// thread in exactly the CPU's order; every add is __fadd_rn (no contraction).
// item(i) is the i-th fp32 value of the row (computed on the fly).
namespace dsc_dense_ts {

template <typename Item>
__device__ void cascadeRows(long long size, int nr, int lanes, Item item, float *acc) {
  for (int q = 0; q < 4 * nr * lanes; ++q)
    acc[q] = 0.0f;
  const long long ceilLog2 =
      size <= 2 ? 1 : (long long)(64 - __clzll((long long)(size - 1)));
  const long long power = ceilLog2 / 4 > 4 ? ceilLog2 / 4 : 4;
  const long long step = 1LL << power, mask = step - 1;
  long long i = 0;
  while (i + step <= size) {
    for (long long j = 0; j < step; ++j, ++i)
      for (int k = 0; k < nr; ++k)
        for (int l = 0; l < lanes; ++l)
          acc[k * lanes + l] = __fadd_rn(acc[k * lanes + l], item(i, k, l));
    for (int j = 1; j < 4; ++j) {
      for (int k = 0; k < nr; ++k)
        for (int l = 0; l < lanes; ++l) {
          float &dst = acc[(j * nr + k) * lanes + l];
          float &src = acc[((j - 1) * nr + k) * lanes + l];
          dst = __fadd_rn(dst, src);
          src = 0.0f;
        }
      if ((i & (mask << (j * power))) != 0)
        break;
    }
  }
  for (; i < size; ++i)
    for (int k = 0; k < nr; ++k)
      for (int l = 0; l < lanes; ++l)
        acc[k * lanes + l] = __fadd_rn(acc[k * lanes + l], item(i, k, l));
  for (int j = 1; j < 4; ++j)
    for (int k = 0; k < nr; ++k)
      for (int l = 0; l < lanes; ++l)
        acc[k * lanes + l] = __fadd_rn(acc[k * lanes + l], acc[(j * nr + k) * lanes + l]);
}

/// ilpRowSum: result in acc[0..lanes). acc holds 4*4*lanes floats.
template <typename Item>
__device__ void ilpRowSum(long long size, int lanes, Item item, float *acc) {
  const long long ilp = size / 4;
  cascadeRows(
      ilp, 4, lanes, [&](long long i, int k, int l) { return item(i * 4 + k, l); }, acc);
  for (long long i = ilp * 4; i < size; ++i)
    for (int l = 0; l < lanes; ++l)
      acc[l] = __fadd_rn(acc[l], item(i, l));
  for (int k = 1; k < 4; ++k)
    for (int l = 0; l < lanes; ++l)
      acc[l] = __fadd_rn(acc[l], acc[k * lanes + l]);
}

/// torchSumF32 of n values item(i), lanes = 8.
template <typename Item>
__device__ float torchSum(long long n, Item item) {
  float acc[4 * 4 * 8];
  if (n < 8) {
    ilpRowSum(n, 1, [&](long long i, int) { return item(i); }, acc);
    return acc[0];
  }
  const long long vecs = n / 8;
  ilpRowSum(vecs, 8, [&](long long i, int l) { return item(i * 8 + l); }, acc);
  float total = 0.0f;
  for (long long k = vecs * 8; k < n; ++k)
    total = __fadd_rn(total, item(k));
  for (int l = 0; l < 8; ++l)
    total = __fadd_rn(total, acc[l]);
  return total;
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

} // namespace dsc_dense_ts

DSC_KERNEL void dsc_rms_norm(const unsigned short *x, long long rows, long long n,
                             const unsigned short *w, float eps, unsigned short *y) {
  __shared__ float rs;
  for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
    const unsigned short *xr = x + r * n;
    if (threadIdx.x == 0)
      rs = dsc_dense_ts::rmsRsqrt(n, eps, [&](long long i) { return bf16ToFloat(xr[i]); });
    __syncthreads();
    const float rv = rs;
    for (long long i = threadIdx.x; i < n; i += blockDim.x) {
      const float normed = __fmul_rn(bf16ToFloat(xr[i]), rv);
      y[r * n + i] = bf16FromFloat(__fmul_rn(bf16ToFloat(w[i]), normed));
    }
    __syncthreads();
  }
}
