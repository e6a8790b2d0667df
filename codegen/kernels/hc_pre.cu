//===- hc_pre.cu - mHC pre mix (reference-spec §8.2) ----------------------===//
//
// y[s, d] = bf16( sum_c pre[s, c] * h[s, c, d] ), c ascending, fp32 with
// __fmul_rn/__fadd_rn (the CPU's order, no FMA). One thread per (s, d).
//===----------------------------------------------------------------------===//
#include "codegen/kernels/common.cuh"

DSC_KERNEL void dsc_hc_pre(const unsigned short *h, long long S, long long hc, long long D,
                           const float *pre, unsigned short *y) {
  DSC_KERNEL_PROLOGUE();
  const long long n = S * D;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += (long long)gridDim.x * blockDim.x) {
    const long long s = i / D, d = i - s * D;
    const float *p = pre + s * hc;
    const unsigned short *hs = h + s * hc * D;
    float acc = 0.0f;
    for (long long c = 0; c < hc; ++c)
      acc = __fadd_rn(acc, __fmul_rn(p[c], bf16ToFloat(hs[c * D + d])));
    y[i] = bf16FromFloat(acc);
  }
}
