//===- selftest.cu - Trivial kernel that exercises common.cuh under NVRTC -===//
//
// Used by test/unit/codegen only: y[i] = bf16(x[i] * SCALE) plus a block sum,
// so the compile covers the bf16 helpers, the reductions and a -D define.
//===----------------------------------------------------------------------===//
#include "codegen/kernels/common.cuh"

#ifndef SELFTEST_SCALE
#define SELFTEST_SCALE 2.0f
#endif

DSC_KERNEL void dsc_selftest(const unsigned short *x, unsigned short *y, float *sum,
                             long long n) {
  DSC_KERNEL_PROLOGUE();
  __shared__ float scratch[32];
  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  const float v = i < n ? bf16Load(x, i) * (SELFTEST_SCALE) : 0.0f;
  if (i < n)
    bf16Store(y, i, v);
  const float s = blockSum(v, scratch);
  const float m = blockMax(i < n ? v : kNegInf, scratch);
  if (threadIdx.x == 0)
    atomicAdd(sum, s + (m > negInf() ? 0.0f : 1.0f));
}
