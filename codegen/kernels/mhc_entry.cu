//===- mhc_entry.cu - mHC entry: pre-collapse + RMSNorm in one kernel -----===//
//
// dsc_mhc_pre_norm: the hc_pre and rms_norm steps of a native `mhc_entry`
// group (runtime/cuda/executables/MhcEntryPreNorm.cpp) in one kernel. One
// block per row s (any blockDim; dynamic shared memory 2·D bytes):
//   x[d] = bf16( sum_c pre[s, c] * h[s, c, d] ), c ascending, __fmul_rn /
//          __fadd_rn (dsc_hc_pre's arithmetic), kept in shared memory;
//   r    = rsqrt(mean(x^2) + eps), thread 0, torch's serial fp32 order over
//          the bf16 x (dsc_rms_norm's rmsRsqrt);
//   y[d] = bf16( w[d] * (x[d] * r) ).
// Bit-identical to dsc_hc_pre followed by dsc_rms_norm; x never reaches
// global memory (it is internal to the group). Takes the rms_norm step's
// parameters as its __grid_constant__ struct (the kernel ABI).
//===----------------------------------------------------------------------===//
#include "codegen/kernels/common.cuh"
#include "codegen/kernels/reduce.cuh"

DSC_KERNEL void dsc_mhc_pre_norm(const __grid_constant__ dsc::abi::RmsNormParams p,
                                 const unsigned short *h, long long S, long long hc, long long D,
                                 const float *pre, const unsigned short *w, unsigned short *y) {
  const float eps = (float)p.eps; // the rms_norm step's parameters (the host's float(eps))
  extern __shared__ unsigned short xs[];
  __shared__ float rs;
  for (long long s = blockIdx.x; s < S; s += gridDim.x) {
    const float *mix = pre + s * hc;
    const unsigned short *hs = h + s * hc * D;
    for (long long d = threadIdx.x; d < D; d += blockDim.x) {
      float acc = 0.0f;
      for (long long c = 0; c < hc; ++c)
        acc = __fadd_rn(acc, __fmul_rn(mix[c], bf16ToFloat(hs[c * D + d])));
      xs[d] = bf16FromFloat(acc);
    }
    __syncthreads();
    if (threadIdx.x == 0)
      rs = dsc_dense_ts::rmsRsqrt(D, eps, [&](long long i) { return bf16ToFloat(xs[i]); });
    __syncthreads();
    const float rv = rs;
    for (long long d = threadIdx.x; d < D; d += blockDim.x) {
      const float normed = __fmul_rn(bf16ToFloat(xs[d]), rv);
      y[s * D + d] = bf16FromFloat(__fmul_rn(bf16ToFloat(w[d]), normed));
    }
    __syncthreads();
  }
}
