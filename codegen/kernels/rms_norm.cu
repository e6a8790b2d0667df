//===- rms_norm.cu - RMSNorm (reference-spec §6) --------------------------===//
//
// One block per row (any blockDim). Thread 0 computes rsqrt(mean(x^2)+eps),
// eps = (float)p.eps (dsc::abi::RmsNormParams, the first argument), with
// torch's fp32 sum order (TorchReduce.h, serial, bit for bit as the
// CPU); then every thread writes y[i] = bf16(w[i] * (x[i] * r)) for its
// columns. y may alias x (each element is read before it is written by the
// same thread; the sum finishes before any write). This is the CPU-order
// kernel (the Norm family on CudaOptions::cpuOrderFamilies); dsc_rms_norm_fast
// (the default) sums the squares with the whole block in the same torch
// order (rmsNormRowFast: the same bits), same layout.
//===----------------------------------------------------------------------===//
#include "codegen/kernels/common.cuh"
#include "codegen/kernels/reduce.cuh"

namespace dsc_norm_rows {
/// Every row of x, one block per row: rmsNormRow (CPU order) or rmsNormRowFast.
template <bool kFast>
__device__ void rows(const dsc::abi::RmsNormParams &p, const unsigned short *x, long long rows,
                     long long n, const unsigned short *w, unsigned short *y) {
  const float eps = (float)p.eps;
  for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
    const unsigned short *xr = x + r * n;
    auto load = [&](long long i) { return bf16ToFloat(xr[i]); };
    dsc_dense_ts::rmsNormRowWith<kFast>(n, eps, load, w, y + r * n);
  }
}
} // namespace dsc_norm_rows

DSC_KERNEL void dsc_rms_norm(const __grid_constant__ dsc::abi::RmsNormParams p,
                             const unsigned short *x, long long rows, long long n,
                             const unsigned short *w, unsigned short *y) {
  DSC_KERNEL_PROLOGUE();
  dsc_norm_rows::rows<false>(p, x, rows, n, w, y);
}

DSC_KERNEL void __launch_bounds__(dsc::abi::kNormThreads)
    dsc_rms_norm_fast(const __grid_constant__ dsc::abi::RmsNormParams p, const unsigned short *x,
                      long long rows, long long n, const unsigned short *w, unsigned short *y) {
  DSC_KERNEL_PROLOGUE();
  dsc_norm_rows::rows<true>(p, x, rows, n, w, y);
}
