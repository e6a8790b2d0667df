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
//
// dsc_mhc_entry_decode_fast: the whole group [hc_post] hc_mixes hc_pre
// rms_norm of a few rows (decode, M-row steps) in ONE launch, where the steps
// take five (hc_post, the mixes' dot and finish kernels, hc_pre, rms_norm)
// that each wait on the one before. Grid (splits, S), dsc::abi::
// kMhcDecodeThreads threads; block (c, s) owns split c of token s's stream
// (elements [c * chunk, (c + 1) * chunk), chunk = ceil(hc * D / splits)):
//   1. with hc_post: h[s, j, d] = dsc_hc_post's value for its elements
//      (written out: the group yields it), else it reads them; either way
//      they are kept as fp32 in shared memory;
//   2. the dot of each mix row fn[k] with them, dsc_hc_mixes_dot_fast's
//      (exact fp32 products summed in double, lane-strided, a xor tree)
//      -> partial[s, k, c];
//   3. the last block of token s to finish (a counter per token in scratch,
//      zero when the launch starts; the last block sets it back to zero)
//      does the rest, as dsc_hc_mixes_finish_fast, dsc_hc_pre and
//      dsc_rms_norm_fast do: the torch-order sum of squares from group sums
//      its warps compute over the whole stream (read through L2), the
//      mixes' split sums in double, splitSinkhornWarp -> pre, post, comb;
//      the pre-collapse into shared memory; rmsNormRowFast -> y.
// Every value is computed by the same operations in the same order as the
// steps' fast kernels, so the outputs are the steps' bytes (the device gate
// compares them); only who computes which part differs.
// Invariants: splits = cuda::hcSplits(nmix, hc * D) (the steps' split
// count), S <= dsc::abi::kMhcDecodeMaxRows, h (written) does not alias res,
// dynamic shared memory = cuda::mhcDecodeSmemBytes. Bound: the fn bytes
// (4 (2+hc) hc hc D) and the stream's at memory bandwidth, plus one block's
// serial finish (the Sinkhorn iterations).
//===----------------------------------------------------------------------===//
#include "codegen/kernels/common.cuh"
#include "codegen/kernels/reduce.cuh"
#include "codegen/kernels/hc_sinkhorn.cuh"

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

DSC_KERNEL void __launch_bounds__(dsc::abi::kMhcDecodeThreads)
    dsc_mhc_entry_decode_fast(const __grid_constant__ dsc::abi::HcMixesParams p,
                              const dsc::abi::RmsNormParams np, const unsigned short *x,
                              const unsigned short *res, const float *postIn,
                              const float *combIn, unsigned short *h, long long S, long long hc,
                              long long D, const float *fn, const float *scale,
                              const float *base, float *pre, float *post, float *comb,
                              const unsigned short *w, unsigned short *y, long long splits,
                              double *partial, unsigned *counters) {
  DSC_KERNEL_PROLOGUE();
  extern __shared__ double mhcDecodeSmem[];
  __shared__ float raw[80], mixes[80];
  __shared__ float rs;
  __shared__ bool last;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  const long long c = blockIdx.x, s = blockIdx.y;
  const long long width = hc * D, nmix = (2 + hc) * hc;
  const long long chunk = (width + splits - 1) / splits, begin = c * chunk;
  const long long end = begin + chunk < width ? begin + chunk : width;
  unsigned short *hs = h + s * width;
  // 1. The block's stream elements (hc_post's arithmetic when x is given).
  float *hv = reinterpret_cast<float *>(mhcDecodeSmem);
  for (long long e = begin + threadIdx.x; e < end; e += blockDim.x) {
    float v;
    if (x) {
      const long long j = e / D, d = e - j * D;
      const float *cb = combIn + s * hc * hc;
      const unsigned short *rr = res + s * width;
      float sum = 0.0f;
      for (long long i = 0; i < hc; ++i)
        sum = __fadd_rn(sum, __fmul_rn(cb[i * hc + j], bf16ToFloat(rr[i * D + d])));
      const unsigned short o = bf16FromFloat(
          __fadd_rn(__fmul_rn(postIn[s * hc + j], bf16ToFloat(x[s * D + d])), sum));
      hs[e] = o;
      v = bf16ToFloat(o);
    } else {
      v = bf16ToFloat(hs[e]);
    }
    hv[e - begin] = v;
  }
  __syncthreads();
  // 2. The mixes' partial dots over the split.
  for (long long k = warp; k < nmix; k += warps) {
    const float *f = fn + k * width + begin;
    double acc = 0.0;
#pragma unroll 8
    for (long long i = lane; i < end - begin; i += 32)
      acc = __fma_rn((double)__ldg(f + i), (double)hv[i], acc);
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1)
      acc = __dadd_rn(acc, __shfl_xor_sync(0xffffffffu, acc, offset));
    if (lane == 0)
      partial[(s * nmix + k) * splits + c] = acc;
  }
  // 3. The token's last block finishes it.
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0)
    last = atomicAdd(counters + s, 1u) == unsigned(splits - 1);
  __syncthreads();
  if (!last)
    return;
  __threadfence();
  if (threadIdx.x == 0)
    counters[s] = 0u; // every block of token s has arrived: ready for the next launch
  const int iters = (int)p.sinkhorn_iters;
  const float normEps = (float)p.norm_eps, eps = (float)p.eps;
  double *stage = mhcDecodeSmem;
  float *groups = reinterpret_cast<float *>(stage + nmix * splits);
  const double *ps = partial + s * nmix * splits;
  for (long long i = threadIdx.x; i < nmix * splits; i += blockDim.x)
    stage[i] = __ldcg(ps + i);
  const dsc_dense_ts::TorchChains chains(width);
  auto square = [&](long long i) {
    const float v = bf16ToFloat(__ldcg(hs + i));
    return __fmul_rn(v, v);
  };
  for (long long m = warp; m <= chains.groups; m += warps)
    groups[m * 32 + lane] = dsc_dense_ts::torchGroupSum(chains, lane, m, square);
  __syncthreads();
  if (warp == 0) { // rmsRsqrt of the torch-order sum of squares
    const float sumsq = dsc_dense_ts::torchSumMerge(
        chains, [&](long long m) { return groups[m * 32 + lane]; }, square);
    if (lane == 0)
      rs = __fdiv_rn(1.0f, __fsqrt_rn(__fadd_rn(__fdiv_rn(sumsq, (float)width), normEps)));
  } else { // each mix's split sums in double (finish's lane order and xor tree)
    for (long long k = warp - 1; k < nmix; k += warps - 1) {
      double v = 0.0;
      for (long long cc = lane; cc < splits; cc += 32)
        v = __dadd_rn(v, stage[k * splits + cc]);
#pragma unroll
      for (int offset = 16; offset > 0; offset >>= 1)
        v = __dadd_rn(v, __shfl_xor_sync(0xffffffffu, v, offset));
      if (lane == 0)
        raw[k] = (float)v;
    }
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
  // The pre-collapse (dsc_hc_pre's arithmetic) into shared memory, then the
  // norm (dsc_rms_norm_fast's).
  unsigned short *xs = reinterpret_cast<unsigned short *>(mhcDecodeSmem);
  const float *mix = pre + s * hc;
  blockCopy<4>(
      D,
      [&](long long d) {
        float acc = 0.0f;
        for (long long cc = 0; cc < hc; ++cc)
          acc = __fadd_rn(acc, __fmul_rn(mix[cc], bf16ToFloat(__ldcg(hs + cc * D + d))));
        return bf16FromFloat(acc);
      },
      [&](long long d, unsigned short v) { xs[d] = v; });
  __syncthreads();
  dsc_dense_ts::rmsNormRowFast(
      D, (float)np.eps, [&](long long i) { return bf16ToFloat(xs[i]); }, w, y + s * D);
}
