//===- index_keys.cu - Indexer keys (kernel `index_keys`) ------------------===//
//
// CPU: indexKeysWrite (runtime/cpu/kernels/attention/Indexer.cpp). n (emitted
// entries) and j0 = start / ratio come from the call state. Every step takes
// p (dsc::abi::IndexKeysParams) first: ratio = p.ratio (the verifier checks
// it is the index-key state's), eps = (float)p.eps, ropeDim = p.rope.dim
// (invFreq: numerics::ropeInvFreq of p.rope, from the adapter).
//   dsc_index_keys_linear: one thread per (latent i, output o): bf16 linear
//     latents [n, Dh] . wk [Dk, Dh]^T (dotF64 order, fp32, then bf16).
//   dsc_index_keys_linear_fast (the default; the IndexKeys kernel family on
//     the CPU-order kernels launches the above): one warp per (latent i,
//     output o), the same exact fp32 products summed in double across the
//     lanes (a fixed xor tree), then fp32, then bf16; equal to the above
//     unless the two double sums round to different floats.
//   dsc_index_keys_norm: one block per row, in place: k_norm (dense rmsNorm,
//     torch's fp32 sum order summed by the block: rmsNormRowFast, bit for
//     bit the CPU's).
//   dsc_index_keys_write: one thread per (row i, tile b): RoPE at
//     (j0 + i) * ratio on the rope tail, then the tile is quantised into
//     index-key record j0 + i (indexKeyFormat: E2M1 + UE8M0 per 32).
//===----------------------------------------------------------------------===//
#include "codegen/kernels/common.cuh"
#include "codegen/kernels/attention.cuh"

DSC_KERNEL void dsc_index_keys_linear(const __grid_constant__ dsc::abi::IndexKeysParams p,
                                      const unsigned short *x, const unsigned short *w,
                                      const long long *callState, long long dim, long long N,
                                      unsigned short *y) {
  DSC_KERNEL_PROLOGUE();
  const long long n = DSC_CALL_COMPRESSED_TOKENS(callState, p.ratio);
  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n * N)
    return;
  const long long s = i / N, o = i % N;
  y[i] = bf16FromFloat(__double2float_rn(dotF64Bf16(x + s * dim, w + o * dim, dim)));
}

DSC_KERNEL void dsc_index_keys_linear_fast(const __grid_constant__ dsc::abi::IndexKeysParams p,
                                           const unsigned short *x, const unsigned short *w,
                                           const long long *callState, long long dim, long long N,
                                           unsigned short *y) {
  DSC_KERNEL_PROLOGUE();
  const long long n = DSC_CALL_COMPRESSED_TOKENS(callState, p.ratio);
  const int lane = threadIdx.x & 31;
  const long long warps = (long long)gridDim.x * (blockDim.x >> 5);
  for (long long i = (long long)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5); i < n * N;
       i += warps) {
    const long long s = i / N, o = i % N;
    const unsigned short *xr = x + s * dim, *wr = w + o * dim;
    double acc = 0.0;
    for (long long k = lane; k < dim; k += 32)
      acc = __fma_rn((double)bf16ToFloat(xr[k]), (double)bf16ToFloat(wr[k]), acc);
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1)
      acc = __dadd_rn(acc, __shfl_xor_sync(0xffffffffu, acc, offset));
    if (lane == 0)
      y[i] = bf16FromFloat(__double2float_rn(acc));
  }
}

DSC_KERNEL void dsc_index_keys_norm(const __grid_constant__ dsc::abi::IndexKeysParams p,
                                    unsigned short *k, const long long *callState, long long d,
                                    const unsigned short *w) {
  DSC_KERNEL_PROLOGUE();
  const long long rows = DSC_CALL_COMPRESSED_TOKENS(callState, p.ratio);
  for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
    unsigned short *kr = k + r * d;
    dsc_dense_ts::rmsNormRowFast(d, (float)p.eps, [&](long long i) { return bf16ToFloat(kr[i]); },
                                 w, kr);
  }
}

DSC_KERNEL void dsc_index_keys_write(const __grid_constant__ dsc::abi::IndexKeysParams p,
                                     const unsigned short *k, const long long *callState,
                                     long long dk, const float *invFreq, unsigned char *pool,
                                     int values, int tile, int valueType, int scaleType,
                                     int tokensPerPage, int order) {
  DSC_KERNEL_PROLOGUE();
  const KvPageLayout l = pageLayout(values, tile, valueType, scaleType, tokensPerPage, order);
  ropeQuantizeTile(k, dk, p.ratio, p.rope.dim, invFreq, l, pool, callState,
                   (long long)blockIdx.x * blockDim.x + threadIdx.x);
}
