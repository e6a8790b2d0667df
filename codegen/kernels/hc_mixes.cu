//===- hc_mixes.cu - mHC mixes + Sinkhorn split (reference-spec §8.1) -----===//
//
// One block per token (blockDim >= 32). xf = the token's hc*D stream values.
// Thread 0: r = rmsRsqrt(xf, norm_eps) in torch's fp32 sum order (as the
// CPU). Threads k < (2+hc)*hc: mixes[k] = fp32(dotF64(xf, fn[k])) * r (exact
// products, double sum in the CPU's order). Thread 0 then runs the
// hc_split_sinkhorn of numerics/lib/HyperConnection.cpp in the same fp32
// operation order, with the device expf (<= 2 ulp from the host libm).
// hc <= 8 ((2+hc)*hc <= 80 mixes).
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

namespace dsc_dense_hc {
__device__ float sigmoid(float x) { return __fdiv_rn(1.0f, __fadd_rn(1.0f, expf(-x))); }
} // namespace dsc_dense_hc

DSC_KERNEL void dsc_hc_mixes(const unsigned short *h, long long S, long long hc, long long D,
                             const float *fn, const float *scale, const float *base, int iters,
                             float normEps, float eps, float *pre, float *post, float *comb) {
  __shared__ float mixes[80];
  __shared__ float rs;
  const long long width = hc * D, nmix = (2 + hc) * hc;
  for (long long s = blockIdx.x; s < S; s += gridDim.x) {
    const unsigned short *xs = h + s * width;
    if (threadIdx.x == 0)
      rs = dsc_dense_ts::rmsRsqrt(width, normEps, [&](long long i) { return bf16ToFloat(xs[i]); });
    __syncthreads();
    for (long long k = threadIdx.x; k < nmix; k += blockDim.x) {
      const float *f = fn + k * width;
      const double d = dsc_dense_d64::dotF64(
          width, [&](long long i) { return bf16ToFloat(xs[i]); }, [&](long long i) { return f[i]; });
      mixes[k] = __fmul_rn((float)d, rs);
    }
    __syncthreads();
    if (threadIdx.x == 0) {
      const int n = (int)hc;
      float *p = pre + s * hc, *q = post + s * hc, *cb = comb + s * hc * hc;
      for (int c = 0; c < n; ++c) {
        p[c] = __fadd_rn(dsc_dense_hc::sigmoid(__fadd_rn(__fmul_rn(mixes[c], scale[0]), base[c])), eps);
        q[c] = __fmul_rn(2.0f, dsc_dense_hc::sigmoid(
                                   __fadd_rn(__fmul_rn(mixes[n + c], scale[1]), base[n + c])));
      }
      const float *m = mixes + 2 * n;
      const float *b = base + 2 * n;
      for (int i = 0; i < n; ++i) {
        float *row = cb + i * n;
        float mx = __int_as_float(0xff800000);
        for (int j = 0; j < n; ++j) {
          row[j] = __fadd_rn(__fmul_rn(m[i * n + j], scale[2]), b[i * n + j]);
          mx = row[j] > mx ? row[j] : mx;
        }
        for (int j = 0; j < n; ++j)
          row[j] = expf(__fsub_rn(row[j], mx));
        float sum = 0.0f;
        for (int j = 0; j < n; ++j)
          sum = __fadd_rn(sum, row[j]);
        for (int j = 0; j < n; ++j)
          row[j] = __fadd_rn(__fdiv_rn(row[j], sum), eps);
      }
      for (int it = 0; it < (iters < 1 ? 1 : iters); ++it) {
        if (it > 0) // rows, then columns, from the second round on
          for (int i = 0; i < n; ++i) {
            float sum = 0.0f;
            for (int j = 0; j < n; ++j)
              sum = __fadd_rn(sum, cb[i * n + j]);
            const float d = __fadd_rn(sum, eps);
            for (int j = 0; j < n; ++j)
              cb[i * n + j] = __fdiv_rn(cb[i * n + j], d);
          }
        for (int j = 0; j < n; ++j) {
          float sum = 0.0f;
          for (int i = 0; i < n; ++i)
            sum = __fadd_rn(sum, cb[i * n + j]);
          const float d = __fadd_rn(sum, eps);
          for (int i = 0; i < n; ++i)
            cb[i * n + j] = __fdiv_rn(cb[i * n + j], d);
        }
      }
    }
    __syncthreads();
  }
}
