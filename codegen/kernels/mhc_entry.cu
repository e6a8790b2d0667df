//===- mhc_entry.cu - mHC entry: pre-collapse + RMSNorm in one kernel -----===//
//
// dsc_mhc_pre_norm: the hc_pre and rms_norm steps of a native `mhc_entry`
// group (runtime/cuda/executables/MhcEntryPreNorm.cpp) in one kernel. One
// block per row s (any blockDim; dynamic shared memory 2·D bytes):
//   x[d] = bf16( sum_c pre[s, c] * h[s, c, d] ), c ascending, __fmul_rn /
//          __fadd_rn (dsc_hc_pre's arithmetic), kept in shared memory;
//   y    = rmsNormRow(x) (reduce.cuh, the row dsc_rms_norm computes: thread 0's
//          rsqrt(mean(x^2) + eps) in torch's serial fp32 order over the bf16
//          x, then y[d] = bf16( w[d] * (x[d] * r) )).
// Bit-identical to dsc_hc_pre followed by dsc_rms_norm; x never reaches
// global memory (it is internal to the group). Takes the rms_norm step's
// parameters as its __grid_constant__ struct (the kernel ABI).
// dsc_mhc_pre_norm_fast (the default; CudaOptions::cpuOrderFamilies selects
// the entry above): the same with rmsNormRowFast (the block sums the squares
// in the same torch order), bit-identical to dsc_hc_pre followed by
// dsc_rms_norm_fast, and so to the entry above.
//===----------------------------------------------------------------------===//
#include "codegen/kernels/common.cuh"
#include "codegen/kernels/reduce.cuh"

namespace dsc_mhc_entry {
template <bool kFast>
__device__ void preNorm(const dsc::abi::RmsNormParams &p, const unsigned short *h, long long S,
                        long long hc, long long D, const float *pre, const unsigned short *w,
                        unsigned short *y) {
  const float eps = (float)p.eps; // the rms_norm step's parameters (the host's float(eps))
  extern __shared__ unsigned short xs[];
  for (long long s = blockIdx.x; s < S; s += gridDim.x) {
    const float *mix = pre + s * hc;
    const unsigned short *hs = h + s * hc * D;
    // Each thread's columns are all loaded before any is stored (blockCopy:
    // the loads in flight at once; a shared store between them would order them).
    blockCopy<4>(
        D,
        [&](long long d) {
          float acc = 0.0f;
          for (long long c = 0; c < hc; ++c)
            acc = __fadd_rn(acc, __fmul_rn(mix[c], bf16ToFloat(hs[c * D + d])));
          return bf16FromFloat(acc);
        },
        [&](long long d, unsigned short v) { xs[d] = v; });
    __syncthreads();
    auto x = [&](long long i) { return bf16ToFloat(xs[i]); };
    dsc_dense_ts::rmsNormRowWith<kFast>(D, eps, x, w, y + s * D);
  }
}
} // namespace dsc_mhc_entry

DSC_KERNEL void dsc_mhc_pre_norm(const __grid_constant__ dsc::abi::RmsNormParams p,
                                 const unsigned short *h, long long S, long long hc, long long D,
                                 const float *pre, const unsigned short *w, unsigned short *y) {
  DSC_KERNEL_PROLOGUE();
  dsc_mhc_entry::preNorm<false>(p, h, S, hc, D, pre, w, y);
}

DSC_KERNEL void __launch_bounds__(dsc::abi::kNormThreads)
    dsc_mhc_pre_norm_fast(const __grid_constant__ dsc::abi::RmsNormParams p,
                          const unsigned short *h, long long S, long long hc, long long D,
                          const float *pre, const unsigned short *w, unsigned short *y) {
  DSC_KERNEL_PROLOGUE();
  dsc_mhc_entry::preNorm<true>(p, h, S, hc, D, pre, w, y);
}
