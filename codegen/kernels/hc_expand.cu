//===- hc_expand.cu - hc identical copies of the embedding (§5.4) ---------===//
//
// out[s, c, d] = x[s, d], c < copies = p.copies (dsc::abi::HcExpandParams, the
// first argument; the plan's verifier checks it is the output's dim 1). One
// thread per output element (grid-stride).
//===----------------------------------------------------------------------===//
#include "codegen/kernels/common.cuh"

DSC_KERNEL void dsc_hc_expand(const __grid_constant__ dsc::abi::HcExpandParams p,
                              const unsigned short *x, unsigned short *out, long long S,
                              long long D) {
  DSC_KERNEL_PROLOGUE();
  const long long copies = p.copies;
  const long long n = S * copies * D;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += (long long)gridDim.x * blockDim.x) {
    const long long d = i % D, s = i / (copies * D);
    out[i] = x[s * D + d];
  }
}
