//===- hc_identity_mix.cu - One-hot pre mix (§5.5) ------------------------===//
//
// mix[s, c] = c == 0 ? 1 : 0 (fp32, no eps). One thread per element.
//===----------------------------------------------------------------------===//
#include "codegen/kernels/common.cuh"

DSC_KERNEL void dsc_hc_identity_mix(float *mix, long long S, long long copies) {
  DSC_KERNEL_PROLOGUE();
  const long long n = S * copies;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += (long long)gridDim.x * blockDim.x)
    mix[i] = (i % copies) == 0 ? 1.0f : 0.0f;
}
