//===- head.cu - LM head logits (reference-spec §5.8) ---------------------===//
//
// logits[r, v] = fp32( sum_d x[r, d] * W[v, d] ) with bf16 x and W widened:
// exact products summed in double in the CPU's dotF64 order, one rounding
// to fp32. x points at the first row the head runs on (the adapter offsets
// it for last_only). One thread per logit, v the fastest index: the
// CPU-order kernel (CudaOptions::cpuOrderFamilies).
// dsc_head_fast (the default): one warp per vocabulary row (gemv.cuh,
// 16-byte loads), fp32 accumulation in a fixed order; bound: the 2*V*D
// bytes of the bf16 head at memory bandwidth.
//===----------------------------------------------------------------------===//
#include "codegen/kernels/common.cuh"
#include "codegen/kernels/reduce.cuh"
#include "codegen/kernels/gemv.cuh"

DSC_KERNEL void dsc_head(const unsigned short *x, long long rows, long long D,
                         const unsigned short *w, long long V, float *logits) {
  DSC_KERNEL_PROLOGUE();
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

DSC_KERNEL void dsc_head_fast(const unsigned short *x, long long rows, long long D,
                              const unsigned short *w, long long V, float *logits) {
  DSC_KERNEL_PROLOGUE();
  dsc_gemv::bf16RowGemv(
      V, rows, D, D, [&](long long v) { return w + v * D; }, [&](long long) { return x; },
      [&](long long r, long long v, float dot) { logits[r * V + v] = dot; });
}
