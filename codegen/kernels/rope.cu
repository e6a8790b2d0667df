//===- rope.cu - Interleaved RoPE on bf16 rows (kernel `rope`) -------------===//
//
// y = x with the last ropeDim channels of each headDim vector rotated
// (CPU: runtime/cpu/kernels/attention/Rope.cpp). Parameters: p
// (dsc::abi::RopeParams, the first argument): ropeDim = p.rope.dim, posStep
// = p.position_stride, the inverse rotation if p.inverse. Row r is at
// position pos0 + r * posStep, pos0 = start * posStep (start from the call
// state). One thread per element of y: channels outside the rope tail are
// copied; a tail channel computes its pair and keeps its half.
// invFreq: fp32 [ropeDim/2] (numerics::ropeInvFreq, uploaded by the adapter).
//===----------------------------------------------------------------------===//
#include "codegen/kernels/common.cuh"
#include "codegen/kernels/attention.cuh"

DSC_KERNEL void dsc_rope(const __grid_constant__ dsc::abi::RopeParams p, const unsigned short *x,
                         unsigned short *y, long long rows, long long heads, long long headDim,
                         const float *invFreq, const long long *callState) {
  DSC_KERNEL_PROLOGUE();
  const long long ropeDim = p.rope.dim, posStep = p.position_stride;
  const long long pos0 = DSC_CALL_START(callState) * posStep;
  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  const long long total = rows * heads * headDim;
  if (i >= total)
    return;
  const long long c = i % headDim;
  const long long tail = headDim - ropeDim;
  if (c < tail) {
    y[i] = x[i];
    return;
  }
  const long long r = i / (heads * headDim);
  const long long even = i - ((c - tail) & 1);
  const long long k = (c - tail) / 2;
  float re, im;
  ropePair(bf16ToFloat(x[even]), bf16ToFloat(x[even + 1]), invFreq[k], pos0 + r * posStep,
           p.inverse, re, im);
  y[i] = bf16FromFloat(((c - tail) & 1) ? im : re);
}
