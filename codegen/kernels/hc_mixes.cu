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
// hc <= 8 ((2+hc)*hc <= 80 mixes). That is the CPU-order kernel
// (the Mhc kernel family on CudaOptions::cpuOrderFamilies). The default,
// fast path, `splits` = hcSplits(nmix, width) (runtime/cuda/GemvLaunch.h: 64
// unless the finish stage would not fit; never a function of the tokens),
// at most kHcTokenChunk tokens per launch pair:
//   dsc_hc_mixes_dot_fast: one warp per (token s, mix k, split c) of the
//     (nmix + 1) x splits items: the dot of fn[k] with the token's stream
//     over split c as exact fp32 products summed in double (lane-strided,
//     a warp xor tree) -> partial [S, nmix + 1, splits] (double); items
//     k == nmix compute the squares' torch-order group sums (reduce.cuh
//     TorchChains; split c: groups c, c + splits, ...) -> groupSums
//     [S, torchGroupStride(width), 32];
//   dsc_hc_mixes_finish_fast: one block per token, the token's partials
//     staged in shared memory: warp 0 merges the group sums
//     (torchSumMerge: the CPU's sum of squares bit for bit, hence its r =
//     rmsRsqrt), the warps sum each mix's splits in double (a fixed lane
//     order), round to fp32 and multiply by r, then splitSinkhorn as above
//     (splitSinkhornWarp: the same operations spread over the lanes).
// The mixes equal the CPU-order kernel's unless the two double sums (same
// exact products, different order) round to different floats: they differ
// by a few double ulps, so that takes a double-sum within ~2^-29 relative of
// a float rounding boundary (not seen in the goldens).
// Bound: the 4*(2+hc)*hc*hc*D bytes of fn at memory bandwidth.
//===----------------------------------------------------------------------===//
#include "codegen/kernels/common.cuh"
#include "codegen/kernels/reduce.cuh"
#include "codegen/kernels/gemv.cuh"
#include "codegen/kernels/hc_sinkhorn.cuh"



DSC_KERNEL void dsc_hc_mixes(const __grid_constant__ dsc::abi::HcMixesParams p,
                             const unsigned short *h, long long S, long long hc, long long D,
                             const float *fn, const float *scale, const float *base, float *pre,
                             float *post, float *comb) {
  DSC_KERNEL_PROLOGUE();
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
    if (threadIdx.x == 0)
      dsc_dense_hc::splitSinkhorn(mixes, hc, scale, base, eps, iters, pre + s * hc, post + s * hc,
                                  comb + s * hc * hc);
    __syncthreads();
  }
}

DSC_KERNEL void dsc_hc_mixes_dot_fast(const unsigned short *h, long long S, long long width,
                                      const float *fn, long long nmix, long long splits,
                                      double *partial, float *groupSums) {
  DSC_KERNEL_PROLOGUE();
  const int lane = threadIdx.x & 31;
  const long long perToken = (nmix + 1) * splits, items = S * perToken;
  const long long chunk = (width + splits - 1) / splits;
  for (long long q = dsc_gemv::firstRow(); q < items; q += dsc_gemv::rowStride()) {
    const long long s = q / perToken, rem = q - s * perToken, k = rem / splits,
                    c = rem - k * splits;
    const unsigned short *xs = h + s * width;
    if (k == nmix) { // the squares' torch-order group sums m = c, c + splits, ...
      const dsc_dense_ts::TorchChains t(width);
      float *gs = groupSums + s * dsc::abi::torchGroupStride(width) * 32;
      for (long long m = c; m <= t.groups; m += splits)
        gs[m * 32 + lane] = dsc_dense_ts::torchGroupSum(t, lane, m, [&](long long i) {
          const float v = bf16ToFloat(xs[i]);
          return __fmul_rn(v, v);
        });
      continue;
    }
    // Exact fp32 products summed in double over the split, lanes strided.
    const long long begin = c * chunk, end = begin + chunk < width ? begin + chunk : width;
    const float *f = fn + k * width;
    double acc = 0.0;
#pragma unroll 8
    for (long long i = begin + lane; i < end; i += 32)
      acc = __fma_rn((double)__ldg(f + i), (double)bf16ToFloat(xs[i]), acc);
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1)
      acc = __dadd_rn(acc, __shfl_xor_sync(0xffffffffu, acc, offset));
    if (lane == 0)
      partial[q] = acc;
  }
}

DSC_KERNEL void dsc_hc_mixes_finish_fast(const __grid_constant__ dsc::abi::HcMixesParams p,
                                         const unsigned short *h, const double *partial,
                                         const float *groupSums, long long S, long long splits,
                                         long long hc, long long D, const float *scale,
                                         const float *base, float *pre, float *post,
                                         float *comb) {
  DSC_KERNEL_PROLOGUE();
  const int iters = (int)p.sinkhorn_iters;
  const float normEps = (float)p.norm_eps, eps = (float)p.eps;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  const long long nmix = (2 + hc) * hc, width = hc * D;
  const long long stride = dsc::abi::torchGroupStride(width);
  // The token's split sums and group sums, staged: nmix * splits doubles,
  // then stride * 32 floats (the adapter sizes the dynamic shared memory).
  extern __shared__ double stage[];
  float *groups = (float *)(stage + nmix * splits);
  __shared__ float raw[80], mixes[80];
  __shared__ float rs;
  const dsc_dense_ts::TorchChains chains(width);
  for (long long s = blockIdx.x; s < S; s += gridDim.x) {
    const double *ps = partial + s * (nmix + 1) * splits;
    const float *gs = groupSums + s * stride * 32;
    blockCopy(
        nmix * splits, [&](long long i) { return ps[i]; },
        [&](long long i, double v) { stage[i] = v; });
    blockCopy((chains.groups + 1) * 32, [&](long long i) { return gs[i]; },
              [&](long long i, float v) { groups[i] = v; });
    __syncthreads();
    const unsigned short *xs = h + s * width;
    if (warp == 0) { // rmsRsqrt of the torch-order sum of squares
      auto square = [&](long long i) {
        const float v = bf16ToFloat(xs[i]);
        return __fmul_rn(v, v);
      };
      const float sumsq = dsc_dense_ts::torchSumMerge(
          chains, [&](long long m) { return groups[m * 32 + lane]; }, square);
      if (lane == 0)
        rs = __fdiv_rn(1.0f, __fsqrt_rn(__fadd_rn(__fdiv_rn(sumsq, (float)width), normEps)));
    }
    // Each mix: its split sums in double (lane j: splits j, j + 32, ...;
    // then a fixed xor tree), rounded to fp32.
    for (long long k = warp; k < nmix; k += warps) {
      double v = 0.0;
      for (long long c = lane; c < splits; c += 32)
        v = __dadd_rn(v, stage[k * splits + c]);
#pragma unroll
      for (int offset = 16; offset > 0; offset >>= 1)
        v = __dadd_rn(v, __shfl_xor_sync(0xffffffffu, v, offset));
      if (lane == 0)
        raw[k] = (float)v;
    }
    __syncthreads();
    if (warp == 0) {
      for (long long k = lane; k < nmix; k += 32)
        mixes[k] = __fmul_rn(raw[k], rs);
      __syncwarp();
      if (hc * hc <= 32)
        dsc_dense_hc::splitSinkhornWarp(mixes, hc, scale, base, eps, iters, pre + s * hc,
                                        post + s * hc, comb + s * hc * hc);
      else if (lane == 0)
        dsc_dense_hc::splitSinkhorn(mixes, hc, scale, base, eps, iters, pre + s * hc,
                                    post + s * hc, comb + s * hc * hc);
    }
    __syncthreads();
  }
}
