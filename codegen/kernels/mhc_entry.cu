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
// dsc_mhc_entry_decode_fast: the whole group [hc_post] hc_pre rms_norm of a
// few rows (decode, M-row steps) in ONE launch, where the steps take three
// dependent ones. One block per row s (grid-strided), dsc::abi::
// kMhcDecodeThreads threads, dynamic shared memory 2·D bytes; thread q owns
// 8 channels d = 8q .. 8q + 7 of every copy (16-byte loads and stores):
//   1. with hc_post (x given): h[s, j, d] = dsc_hc_post's value, written out
//      (the group yields the stream); else the copies are read from h;
//   2. x[d] = dsc_hc_pre's collapse of those bf16 copies with pre[s] (the
//      PREVIOUS sublayer's mix: single-pass mHC, reference-spec 8.3) into
//      shared memory;
//   3. rmsNormRowFast over it -> y (dsc_rms_norm_fast's row).
// Every value comes from the same operations in the same order as the
// steps' fast kernels, so the outputs are their bytes (MhcEntryGpuTest and
// the device gates compare them). Invariants: D % 8 == 0, every row pointer
// 16-byte aligned (the host checks; else it runs the steps), hc ==
// dsc::abi::kMhcDecodeCopies, h (written) does not alias res. Bound: the
// stream's bytes (read, and written with hc_post) at one SM's share of the
// bandwidth: a row is 2 (2 hc + 1) D bytes with hc_post, 2 hc D without.
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

namespace dsc_mhc_entry {
/// Eight bf16 lanes of a uint4 as floats.
__device__ __forceinline__ void unpack8(const uint4 &v, float (&f)[8]) {
  const unsigned u[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    f[2 * i] = bf16ToFloat((unsigned short)(u[i] & 0xffffu));
    f[2 * i + 1] = bf16ToFloat((unsigned short)(u[i] >> 16));
  }
}
/// Element e (0..7) of a uint4 of bf16 as a float.
__device__ __forceinline__ float lane8(const uint4 &v, int e) {
  const unsigned u = e < 2 ? v.x : e < 4 ? v.y : e < 6 ? v.z : v.w;
  return bf16ToFloat((unsigned short)((e & 1) ? u >> 16 : u & 0xffffu));
}
__device__ __forceinline__ uint4 pack8(const unsigned short (&b)[8]) {
  return make_uint4(b[0] | (unsigned(b[1]) << 16), b[2] | (unsigned(b[3]) << 16),
                    b[4] | (unsigned(b[5]) << 16), b[6] | (unsigned(b[7]) << 16));
}

/// Channels d0 .. d0 + 7 of row s for kCopies copies: [hc_post into hs],
/// the collapse -> 8 bf16 (dsc_hc_post's and dsc_hc_pre's operations in
/// their order; the collapse's copies are added as they are made, in copy
/// order, so no copy is kept). Registers: the copies' raw inputs (4 per
/// copy) and a few per channel.
template <int kCopies>
__device__ __forceinline__ uint4 entryChannels(const unsigned short *x, const unsigned short *res,
                                               const float *postIn, const float *combIn,
                                               unsigned short *hs, long long s, long long D,
                                               long long d0, const float *mix) {
  float acc[8];
#pragma unroll
  for (int e = 0; e < 8; ++e)
    acc[e] = 0.0f;
  if (x) {
    uint4 r[kCopies];
#pragma unroll
    for (int i = 0; i < kCopies; ++i)
      r[i] = *reinterpret_cast<const uint4 *>(res + (s * kCopies + i) * D + d0);
    const uint4 xv = *reinterpret_cast<const uint4 *>(x + s * D + d0);
    const float *cb = combIn + s * kCopies * kCopies;
#pragma unroll
    for (int j = 0; j < kCopies; ++j) {
      float cj[kCopies];
#pragma unroll
      for (int i = 0; i < kCopies; ++i)
        cj[i] = __ldg(cb + i * kCopies + j);
      const float pj = __ldg(postIn + s * kCopies + j);
      unsigned short o[8];
#pragma unroll
      for (int e = 0; e < 8; ++e) {
        float sum = 0.0f; // dsc_hc_post's order
#pragma unroll
        for (int i = 0; i < kCopies; ++i)
          sum = __fadd_rn(sum, __fmul_rn(cj[i], lane8(r[i], e)));
        o[e] = bf16FromFloat(__fadd_rn(__fmul_rn(pj, lane8(xv, e)), sum));
        acc[e] = __fadd_rn(acc[e], __fmul_rn(mix[j], bf16ToFloat(o[e]))); // dsc_hc_pre's
      }
      *reinterpret_cast<uint4 *>(hs + j * D + d0) = pack8(o);
    }
  } else {
    uint4 v[kCopies];
#pragma unroll
    for (int j = 0; j < kCopies; ++j)
      v[j] = *reinterpret_cast<const uint4 *>(hs + j * D + d0);
#pragma unroll
    for (int j = 0; j < kCopies; ++j)
#pragma unroll
      for (int e = 0; e < 8; ++e)
        acc[e] = __fadd_rn(acc[e], __fmul_rn(mix[j], lane8(v[j], e)));
  }
  unsigned short c[8];
#pragma unroll
  for (int e = 0; e < 8; ++e)
    c[e] = bf16FromFloat(acc[e]);
  return pack8(c);
}
} // namespace dsc_mhc_entry

DSC_KERNEL void __launch_bounds__(dsc::abi::kMhcDecodeThreads)
    dsc_mhc_entry_decode_fast(const __grid_constant__ dsc::abi::RmsNormParams np,
                              const unsigned short *x, const unsigned short *res,
                              const float *postIn, const float *combIn, unsigned short *h,
                              long long S, long long hc, long long D, const float *pre,
                              const unsigned short *w, unsigned short *y) {
  DSC_KERNEL_PROLOGUE();
  constexpr int kCopies = dsc::abi::kMhcDecodeCopies;
  if (hc != kCopies)
    __trap(); // the host launches it for kMhcDecodeCopies copies only
  extern __shared__ __align__(16) unsigned short mhcDecodeRow[];
  for (long long s = blockIdx.x; s < S; s += gridDim.x) {
    const float *mix = pre + s * kCopies;
    unsigned short *hs = h + s * kCopies * D;
    for (long long q = threadIdx.x; q < D / 8; q += blockDim.x)
      *reinterpret_cast<uint4 *>(mhcDecodeRow + 8 * q) = dsc_mhc_entry::entryChannels<kCopies>(
          x, res, postIn, combIn, hs, s, D, 8 * q, mix);
    __syncthreads();
    dsc_dense_ts::rmsNormRowFast(
        D, (float)np.eps, [&](long long i) { return bf16ToFloat(mhcDecodeRow[i]); }, w,
        y + s * D);
  }
}
