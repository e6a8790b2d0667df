//===- hc_mixes.cu - mHC mixes + Sinkhorn split (reference-spec §8.1) -----===//
//
// One block per token (blockDim >= 32). Parameters: p (dsc::abi::HcMixesParams,
// the first argument): iters = (int)p.sinkhorn_iters, eps = (float)p.eps,
// norm_eps = (float)p.norm_eps. xf = the token's hc*D stream values.
// Thread 0: r = rmsRsqrt(xf, norm_eps) in torch's fp32 sum order (as the
// CPU). Threads k < (2+hc)*hc: mixes[k] = fp32(dotF64(xf, fn[k])) * r (exact
// products, double sum in the CPU's order). Thread 0 then runs the
// hc_split_sinkhorn of numerics/lib/HyperConnection.cpp in the same fp32
// operation order, with the device expf (<= 2 ulp from the host libm).
// hc <= 8 ((2+hc)*hc <= 80 mixes).
//===----------------------------------------------------------------------===//
#include "codegen/kernels/common.cuh"
#include "codegen/kernels/reduce.cuh"

namespace dsc_dense_hc {
__device__ float sigmoid(float x) { return __fdiv_rn(1.0f, __fadd_rn(1.0f, expf(-x))); }
} // namespace dsc_dense_hc

DSC_KERNEL void dsc_hc_mixes(const __grid_constant__ dsc::abi::HcMixesParams p,
                             const unsigned short *h, long long S, long long hc, long long D,
                             const float *fn, const float *scale, const float *base, float *pre,
                             float *post, float *comb) {
  const int iters = (int)p.sinkhorn_iters;
  const float normEps = (float)p.norm_eps, eps = (float)p.eps;
  __shared__ float mixes[80];
  __shared__ float rs;
  const long long width = hc * D, nmix = (2 + hc) * hc;
  for (long long s = blockIdx.x; s < S; s += gridDim.x) {
    const unsigned short *xs = h + s * width;
    if (threadIdx.x == 0)
      rs = dsc_dense_ts::rmsRsqrt(width, normEps, [&](long long i) { return bf16ToFloat(xs[i]); });
    __syncthreads();
    for (long long k = threadIdx.x; k < nmix; k += blockDim.x) {
      const float *f = fn + k * width;
      const double d = dsc_dense_d64::dotF64(
          width, [&](long long i) { return bf16ToFloat(xs[i]); }, [&](long long i) { return f[i]; });
      mixes[k] = __fmul_rn((float)d, rs);
    }
    __syncthreads();
    if (threadIdx.x == 0) {
      const int n = (int)hc;
      float *pr = pre + s * hc, *q = post + s * hc, *cb = comb + s * hc * hc;
      for (int c = 0; c < n; ++c) {
        pr[c] = __fadd_rn(
            dsc_dense_hc::sigmoid(__fadd_rn(__fmul_rn(mixes[c], scale[0]), base[c])), eps);
        q[c] = __fmul_rn(2.0f, dsc_dense_hc::sigmoid(
                                   __fadd_rn(__fmul_rn(mixes[n + c], scale[1]), base[n + c])));
      }
      const float *m = mixes + 2 * n;
      const float *b = base + 2 * n;
      for (int i = 0; i < n; ++i) {
        float *row = cb + i * n;
        float mx = __int_as_float(0xff800000);
        for (int j = 0; j < n; ++j) {
          row[j] = __fadd_rn(__fmul_rn(m[i * n + j], scale[2]), b[i * n + j]);
          mx = row[j] > mx ? row[j] : mx;
        }
        for (int j = 0; j < n; ++j)
          row[j] = expf(__fsub_rn(row[j], mx));
        float sum = 0.0f;
        for (int j = 0; j < n; ++j)
          sum = __fadd_rn(sum, row[j]);
        for (int j = 0; j < n; ++j)
          row[j] = __fadd_rn(__fdiv_rn(row[j], sum), eps);
      }
      for (int it = 0; it < (iters < 1 ? 1 : iters); ++it) {
        if (it > 0) // rows, then columns, from the second round on
          for (int i = 0; i < n; ++i) {
            float sum = 0.0f;
            for (int j = 0; j < n; ++j)
              sum = __fadd_rn(sum, cb[i * n + j]);
            const float d = __fadd_rn(sum, eps);
            for (int j = 0; j < n; ++j)
              cb[i * n + j] = __fdiv_rn(cb[i * n + j], d);
          }
        for (int j = 0; j < n; ++j) {
          float sum = 0.0f;
          for (int i = 0; i < n; ++i)
            sum = __fadd_rn(sum, cb[i * n + j]);
          const float d = __fadd_rn(sum, eps);
          for (int i = 0; i < n; ++i)
            cb[i * n + j] = __fdiv_rn(cb[i * n + j], d);
        }
      }
    }
    __syncthreads();
  }
}
