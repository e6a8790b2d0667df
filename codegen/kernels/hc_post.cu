//===- hc_post.cu - mHC post mix (reference-spec §8.2) --------------------===//
//
// out[s, j, d] = bf16( post[s, j] * x[s, d] + sum_i comb[s, i, j] * res[s, i, d] ),
// the i-sum ascending from 0, fp32 with __fmul_rn/__fadd_rn (the CPU's
// order). One thread per output element. out must not alias res.
//===----------------------------------------------------------------------===//
#include "codegen/kernels/common.cuh"

DSC_KERNEL void dsc_hc_post(const unsigned short *x, const unsigned short *res, const float *post,
                            const float *comb, long long S, long long hc, long long D,
                            unsigned short *out) {
  DSC_KERNEL_PROLOGUE();
  const long long n = S * hc * D;
  for (long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x; e < n;
       e += (long long)gridDim.x * blockDim.x) {
    const long long d = e % D, j = (e / D) % hc, s = e / (hc * D);
    const float *cb = comb + s * hc * hc;
    const unsigned short *rs = res + s * hc * D;
    float sum = 0.0f;
    for (long long i = 0; i < hc; ++i)
      sum = __fadd_rn(sum, __fmul_rn(cb[i * hc + j], bf16ToFloat(rs[i * D + d])));
    const float v = __fadd_rn(__fmul_rn(post[s * hc + j], bf16ToFloat(x[s * D + d])), sum);
    out[e] = bf16FromFloat(v);
  }
}
