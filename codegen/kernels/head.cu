//===- head.cu - LM head logits (reference-spec §5.8) ---------------------===//
//
// logits[r, v] = fp32( sum_d x[r, d] * W[v, d] ) with bf16 x and W widened:
// exact products summed in double in the CPU's dotF64 order, one rounding
// to fp32. x points at the first row the head runs on (the adapter offsets
// it for last_only). One thread per logit, v the fastest index.
//===----------------------------------------------------------------------===//
#include "codegen/kernels/common.cuh"

// DenseUtil.h dotF64: exact products summed in double, four interleaved
// partial sums combined as (s0+s1)+(s2+s3) (the CPU's order, bit for bit).
// a(k), b(k) give the fp32 operands.
namespace dsc_dense_d64 {
template <typename A, typename B>
__device__ double dotF64(long long n, A a, B b) {
  double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  long long k = 0;
  for (; k + 4 <= n; k += 4) {
    s0 = __dadd_rn(s0, __dmul_rn((double)a(k), (double)b(k)));
    s1 = __dadd_rn(s1, __dmul_rn((double)a(k + 1), (double)b(k + 1)));
    s2 = __dadd_rn(s2, __dmul_rn((double)a(k + 2), (double)b(k + 2)));
    s3 = __dadd_rn(s3, __dmul_rn((double)a(k + 3), (double)b(k + 3)));
  }
  for (; k < n; ++k)
    s0 = __dadd_rn(s0, __dmul_rn((double)a(k), (double)b(k)));
  return __dadd_rn(__dadd_rn(s0, s1), __dadd_rn(s2, s3));
}
} // namespace dsc_dense_d64

DSC_KERNEL void dsc_head(const unsigned short *x, long long rows, long long D,
                         const unsigned short *w, long long V, float *logits) {
  const long long n = rows * V;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += (long long)gridDim.x * blockDim.x) {
    const long long r = i / V, v = i - r * V;
    const unsigned short *xr = x + r * D, *wr = w + v * D;
    logits[i] = (float)dsc_dense_d64::dotF64(
        D, [&](long long k) { return bf16ToFloat(xr[k]); },
        [&](long long k) { return bf16ToFloat(wr[k]); });
  }
}
