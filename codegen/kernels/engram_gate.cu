//===- engram_gate.cu - Engram gate and residual update (§7.5.2-3) --------===//
//
// One block per (token s, copy c). Thread 0 computes, in the CPU's order
// (Engram.cpp engramGates): rstd = rmsRsqrt(h) * rmsRsqrt(key) (torch sum
// order), dot = torchSum((h * (q*k)) * key) * rstd * invSqrtD,
// gate = sigmoid(copysign(sqrt(max(|dot|, 1e-6)), dot)). Then every thread
// writes out[s, c, d] = bf16(h + gate * value[d]) for its d. key = kv[s,
// c*D:(c+1)*D], value = kv[s, hc*D:]. out may alias h.
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

DSC_KERNEL void dsc_engram_gate(const unsigned short *h, long long S, long long hc, long long D,
                                const unsigned short *kv, const unsigned short *qW,
                                const unsigned short *kW, float eps, float invSqrtD,
                                unsigned short *out) {
  __shared__ float gate;
  for (long long sc = blockIdx.x; sc < S * hc; sc += gridDim.x) {
    const long long s = sc / hc, c = sc - s * hc;
    const unsigned short *hr = h + sc * D;
    const unsigned short *kvs = kv + s * (hc + 1) * D;
    const unsigned short *key = kvs + c * D, *value = kvs + hc * D;
    if (threadIdx.x == 0) {
      const float rh = dsc_dense_ts::rmsRsqrt(D, eps, [&](long long i) { return bf16ToFloat(hr[i]); });
      const float rk = dsc_dense_ts::rmsRsqrt(D, eps, [&](long long i) { return bf16ToFloat(key[i]); });
      const float rstd = __fmul_rn(rh, rk);
      const unsigned short *q = qW + c * D, *kk = kW + c * D;
      const float sum = dsc_dense_ts::torchSum(D, [&](long long d) {
        const float wc = __fmul_rn(bf16ToFloat(q[d]), bf16ToFloat(kk[d]));
        return __fmul_rn(__fmul_rn(bf16ToFloat(hr[d]), wc), bf16ToFloat(key[d]));
      });
      const float dot = __fmul_rn(__fmul_rn(sum, rstd), invSqrtD);
      const float a = fabsf(dot);
      const float mag = __fsqrt_rn(a < 1e-6f ? 1e-6f : a);
      const float z = copysignf(mag, dot);
      gate = __fdiv_rn(1.0f, __fadd_rn(1.0f, expf(-z)));
    }
    __syncthreads();
    const float g = gate;
    for (long long d = threadIdx.x; d < D; d += blockDim.x)
      out[sc * D + d] =
          bf16FromFloat(__fadd_rn(bf16ToFloat(hr[d]), __fmul_rn(g, bf16ToFloat(value[d]))));
    __syncthreads();
  }
}
