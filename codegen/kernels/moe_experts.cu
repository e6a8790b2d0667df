//===- moe_experts.cu - Routed FP4 experts + shared FP8 expert (§10.4-5) --===//
//
// Steps (the adapter runs them in this order; Moe.cpp's math):
//   dsc_moe_experts_zero: acc f32 [T, D] = 0;
//   dsc_moe_experts_order: per token, its k slots sorted by expert id
//     ascending (ids outside [0, E) last, marked -1);
//   dsc_moe_experts_act_quant: act_quant of x [T, D] (and later of h [T, I]);
//   for rank r = 0..k-1 (each token's r-th smallest expert id, so acc sums in
//   ascending expert id per token, as the CPU's expert loop):
//     dsc_moe_experts_up_fp4: one thread per (t, i): g = bf16(w1 x), u =
//       bf16(w3 x) (FP4 GEMMs, linearFp4's order), clamps at lim =
//       (float)p.swiglu_limit, silu(g) * u, times the route weight, bf16 ->
//       h [T, I];
//     act_quant(h);
//     dsc_moe_experts_down_fp4: one thread per (t, d): acc += bf16(w2 h);
//   shared expert: dsc_moe_experts_up_fp8 (no route weight), act_quant,
//   dsc_moe_experts_down_fp8: y = bf16(acc + bf16(w2 h)).
// The up steps take p (dsc::abi::MoeExpertsParams) as their first argument;
// the other steps use no parameter.
// Routed weights are stacked: w1/w3 [E, I, D/2] + [E, I, D/32], w2
// [E, D, I/2] + [E, D, I/32]; shared: w1/w3 [I, D] + [ceil(I/32), D/32], w2
// [D, I] + [ceil(D/32), I/32].
//===----------------------------------------------------------------------===//
#include "codegen/kernels/common.cuh"
#include "codegen/kernels/gemm.cuh"

namespace dsc_dense_moe {
/// moeSwiglu of one element: bf16( w * (silu(min(g,lim)) * clamp(u,+-lim)) ).
__device__ unsigned short swiglu(float g, float u, float lim, bool routed, float rw) {
  if (lim > 0.0f) {
    u = u < -lim ? -lim : (u > lim ? lim : u);
    g = g > lim ? lim : g;
  }
  const float silu = __fdiv_rn(g, __fadd_rn(1.0f, expf(-g)));
  float y = __fmul_rn(silu, u);
  if (routed)
    y = __fmul_rn(rw, y);
  return bf16FromFloat(y);
}
} // namespace dsc_dense_moe

DSC_KERNEL void dsc_moe_experts_zero(float *acc, long long n) {
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += (long long)gridDim.x * blockDim.x)
    acc[i] = 0.0f;
}

DSC_KERNEL void dsc_moe_experts_order(const int *ids, long long T, long long k, long long E,
                                      int *order) {
  for (long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x; t < T;
       t += (long long)gridDim.x * blockDim.x) {
    const int *id = ids + t * k;
    int *o = order + t * k;
    long long n = 0;
    for (long long j = 0; j < k; ++j) {
      if (id[j] < 0 || id[j] >= E)
        continue;
      long long p = n++; // insertion sort by expert id (stable)
      while (p > 0 && id[o[p - 1]] > id[j]) {
        o[p] = o[p - 1];
        --p;
      }
      o[p] = (int)j;
    }
    for (; n < k; ++n)
      o[n] = -1;
  }
}

DSC_KERNEL void dsc_moe_experts_act_quant(const unsigned short *x, long long M, long long K,
                                          unsigned char *codes, float *scales) {
  dsc_dense_gemm::actQuant(x, M, K, codes, scales);
}

DSC_KERNEL void dsc_moe_experts_up_fp4(const __grid_constant__ dsc::abi::MoeExpertsParams p,
                                       const unsigned char *codes, const float *scales,
                                       long long T, long long D, long long I,
                                       const unsigned char *w1, const unsigned char *w1s,
                                       const unsigned char *w3, const unsigned char *w3s,
                                       const int *ids, const float *weights, const int *order,
                                       long long k, long long rank, unsigned short *h) {
  const float lim = (float)p.swiglu_limit;
  const long long n = T * I;
  for (long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x; e < n;
       e += (long long)gridDim.x * blockDim.x) {
    const long long t = e / I, i = e - t * I;
    const int slot = order[t * k + rank];
    if (slot < 0) {
      h[e] = 0;
      continue;
    }
    const long long x = ids[t * k + slot];
    const float g = roundToBf16(dsc_dense_gemm::fp4Out(codes, scales, t, D, w1 + x * I * (D / 2),
                                                       w1s + x * I * (D / 32), i));
    const float u = roundToBf16(dsc_dense_gemm::fp4Out(codes, scales, t, D, w3 + x * I * (D / 2),
                                                       w3s + x * I * (D / 32), i));
    h[e] = dsc_dense_moe::swiglu(g, u, lim, true, weights[t * k + slot]);
  }
}

DSC_KERNEL void dsc_moe_experts_down_fp4(const unsigned char *codes, const float *scales,
                                         long long T, long long I, long long D,
                                         const unsigned char *w2, const unsigned char *w2s,
                                         const int *ids, const int *order, long long k,
                                         long long rank, float *acc) {
  const long long n = T * D;
  for (long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x; e < n;
       e += (long long)gridDim.x * blockDim.x) {
    const long long t = e / D, d = e - t * D;
    const int slot = order[t * k + rank];
    if (slot < 0)
      continue;
    const long long x = ids[t * k + slot];
    const float out = roundToBf16(dsc_dense_gemm::fp4Out(codes, scales, t, I, w2 + x * D * (I / 2),
                                                         w2s + x * D * (I / 32), d));
    acc[e] = __fadd_rn(acc[e], out);
  }
}

DSC_KERNEL void dsc_moe_experts_up_fp8(const __grid_constant__ dsc::abi::MoeExpertsParams p,
                                       const unsigned char *codes, const float *scales,
                                       long long T, long long D, long long I,
                                       const unsigned char *w1, const unsigned char *w1s,
                                       const unsigned char *w3, const unsigned char *w3s,
                                       unsigned short *h) {
  const float lim = (float)p.swiglu_limit;
  const long long n = T * I;
  for (long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x; e < n;
       e += (long long)gridDim.x * blockDim.x) {
    const long long t = e / I, i = e - t * I;
    const float g = roundToBf16(dsc_dense_gemm::fp8Out(codes, scales, t, D, w1, w1s, i));
    const float u = roundToBf16(dsc_dense_gemm::fp8Out(codes, scales, t, D, w3, w3s, i));
    h[e] = dsc_dense_moe::swiglu(g, u, lim, false, 0.0f);
  }
}

DSC_KERNEL void dsc_moe_experts_down_fp8(const unsigned char *codes, const float *scales,
                                         long long T, long long I, long long D,
                                         const unsigned char *w2, const unsigned char *w2s,
                                         const float *acc, unsigned short *y) {
  const long long n = T * D;
  for (long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x; e < n;
       e += (long long)gridDim.x * blockDim.x) {
    const long long t = e / D, d = e - t * D;
    const float out = roundToBf16(dsc_dense_gemm::fp8Out(codes, scales, t, I, w2, w2s, d));
    y[e] = bf16FromFloat(__fadd_rn(acc[e], out));
  }
}
