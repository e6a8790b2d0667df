//===- embed.cu - Token embedding lookup (reference-spec §5.3) ------------===//
//
// out[s, d] = table[ids[s], d], bf16 bits copied. One thread per output
// element (grid-stride). An id outside [0, vocab) yields a zero row (the CPU
// adapter rejects it; a kernel cannot return an error).
//===----------------------------------------------------------------------===//
#include "codegen/kernels/common.cuh"

DSC_KERNEL void dsc_embed(const int *ids, const unsigned short *table, unsigned short *out,
                          long long S, long long D, long long vocab) {
  DSC_KERNEL_PROLOGUE();
  const long long n = S * D;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += (long long)gridDim.x * blockDim.x) {
    const long long s = i / D, d = i - s * D;
    const long long id = ids[s];
    out[i] = (id < 0 || id >= vocab) ? (unsigned short)0 : table[id * D + d];
  }
}
