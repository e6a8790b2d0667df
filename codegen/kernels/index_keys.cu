//===- index_keys.cu - Indexer keys (kernel `index_keys`) ------------------===//
//
// CPU: indexKeysWrite (runtime/cpu/kernels/attention/Indexer.cpp). n (emitted
// entries) and j0 = p / ratio come from the call state.
//   dsc_index_keys_linear: one thread per (latent i, output o): bf16 linear
//     latents [n, Dh] . wk [Dk, Dh]^T (dotF64 order, fp32, then bf16).
//   dsc_index_keys_norm: one thread per row, in place: k_norm (dense rmsNorm,
//     torch's fp32 sum order).
//   dsc_index_keys_write: one thread per (row i, tile b): RoPE at
//     (j0 + i) * ratio on the rope tail, then the tile is quantised into
//     index-key record j0 + i (indexKeyFormat: E2M1 + UE8M0 per 32).
//===----------------------------------------------------------------------===//
#include "codegen/kernels/common.cuh"
#include "codegen/kernels/attention.cuh"

DSC_KERNEL void dsc_index_keys_linear(const unsigned short *x, const unsigned short *w,
                                      const long long *callState, long long ratio,
                                      long long dim, long long N, unsigned short *y) {
  const long long n = DSC_CALL_COMPRESSED_TOKENS(callState, ratio);
  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n * N)
    return;
  const long long s = i / N, o = i % N;
  y[i] = bf16FromFloat(__double2float_rn(dotF64Bf16(x + s * dim, w + o * dim, dim)));
}

DSC_KERNEL void dsc_index_keys_norm(unsigned short *k, const long long *callState,
                                    long long ratio, long long d, const unsigned short *w,
                                    float eps) {
  const long long rows = DSC_CALL_COMPRESSED_TOKENS(callState, ratio);
  const long long r = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= rows)
    return;
  rmsNormRow(k + r * d, d, w, eps, k + r * d);
}

DSC_KERNEL void dsc_index_keys_write(const unsigned short *k, const long long *callState,
                                     long long dk, long long ratio, long long ropeDim,
                                     const float *invFreq, unsigned char *pool, int values,
                                     int tile, int valueType, int scaleType, int tokensPerPage,
                                     int order) {
  const KvPageLayout l = pageLayout(values, tile, valueType, scaleType, tokensPerPage, order);
  ropeQuantizeTile(k, dk, ratio, ropeDim, invFreq, l, pool, callState,
                   (long long)blockIdx.x * blockDim.x + threadIdx.x);
}
