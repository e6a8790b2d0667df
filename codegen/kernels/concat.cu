//===- concat.cu - Concatenation along the last axis (§5.10) --------------===//
//
// One launch per input: copies its rows (widthBytes each) into the output
// rows (outWidthBytes each) at byte offset offsetBytes. Byte-wise, so any
// dtype works. One thread per byte (grid-stride).
//===----------------------------------------------------------------------===//
#include "codegen/kernels/common.cuh"

DSC_KERNEL void dsc_concat(const unsigned char *in, unsigned char *out, long long rows,
                           long long widthBytes, long long outWidthBytes, long long offsetBytes) {
  DSC_KERNEL_PROLOGUE();
  const long long n = rows * widthBytes;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += (long long)gridDim.x * blockDim.x) {
    const long long r = i / widthBytes, b = i - r * widthBytes;
    out[r * outWidthBytes + offsetBytes + b] = in[i];
  }
}
