//===- copy_mean.cu - Mean over the hc copies (reference-spec §5.6.2) -----===//
//
// y[s, d] = bf16( (sum_c h[s, c, d]) / hc ), the sum ascending in fp32, an
// IEEE fp32 division (torch's bf16 mean on CPU). One thread per (s, d).
//===----------------------------------------------------------------------===//
#include "codegen/kernels/common.cuh"

DSC_KERNEL void dsc_copy_mean(const unsigned short *h, long long S, long long hc, long long D,
                              unsigned short *y) {
  DSC_KERNEL_PROLOGUE();
  const long long n = S * D;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += (long long)gridDim.x * blockDim.x) {
    const long long s = i / D, d = i - s * D;
    float acc = 0.0f;
    for (long long c = 0; c < hc; ++c)
      acc = __fadd_rn(acc, bf16ToFloat(h[(s * hc + c) * D + d]));
    y[i] = bf16FromFloat(__fdiv_rn(acc, (float)hc));
  }
}
