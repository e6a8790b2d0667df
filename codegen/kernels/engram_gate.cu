//===- engram_gate.cu - Engram gate and residual update (§7.5.2-3) --------===//
//
// One block per (token s, copy c); eps = (float)p.eps (dsc::abi::EngramGateParams,
// the first argument), invSqrtD = fp32(D^-0.5) from the adapter. Thread 0
// computes, in the CPU's order
// (Engram.cpp engramGates): rstd = rmsRsqrt(h) * rmsRsqrt(key) (torch sum
// order), dot = torchSum((h * (q*k)) * key) * rstd * invSqrtD,
// gate = sigmoid(copysign(sqrt(max(|dot|, 1e-6)), dot)). Then every thread
// writes out[s, c, d] = bf16(h + gate * value[d]) for its d. key = kv[s,
// c*D:(c+1)*D], value = kv[s, hc*D:]. out may alias h.
//===----------------------------------------------------------------------===//
#include "codegen/kernels/common.cuh"
#include "codegen/kernels/reduce.cuh"

DSC_KERNEL void dsc_engram_gate(const __grid_constant__ dsc::abi::EngramGateParams p,
                                const unsigned short *h, long long S, long long hc, long long D,
                                const unsigned short *kv, const unsigned short *qW,
                                const unsigned short *kW, float invSqrtD, unsigned short *out) {
  DSC_KERNEL_PROLOGUE();
  const float eps = (float)p.eps;
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
