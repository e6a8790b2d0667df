//===- index_queries.cu - Indexer queries (kernel `index_queries`) --------===//
//
// CPU: indexQueries (runtime/cpu/kernels/attention/Indexer.cpp) with
// linearFp8 (runtime/cpu/kernels/dense/Linear.cpp).
//   dsc_index_queries_act: one thread per (row s, 32-block j) of qr bf16
//     [S, K]: act_quant (E4M3 codes, UE8M0 scale), codes and scale as fp32.
//   dsc_index_queries_gemm: one thread per (row s, output n): the block-scaled
//     dot of spec §3.4 (numerics::blockScaledDot's order: per 32-block fp32
//     partial sum, times aScale, times bScale, added in K order) with the FP8
//     weight [N, K] and its UE8M0 32x32 scales; bf16 result.
//   dsc_index_queries_rope_qdq: one warp per (row s, head h, 32-block b),
//     lane k value k (the same operations per value):
//     RoPE at position startPos + s on the channels of the block in the rope
//     tail (ropeDim = p.rope.dim of p, dsc::abi::IndexQueriesParams, its
//     first argument; invFreq from the adapter) (bf16), then fp4_act_quant
//     QDQ (E2M1, UE8M0 per 32); bf16 out (the QDQ values are bf16-exact).
//   The act and gemm steps use no parameter.
//   dsc_index_queries_act_quant_fast + dsc_index_queries_gemm_fast (the
//   default;
//     the two above are the CPU-order kernels of CudaOptions::
//     cpuOrderFamilies): act_quant to E4M3 bytes, then gemv.cuh's tensor-core
//     FP8 GEMV (x != null: quantised in shared memory; else from the act
//     step's global codes); the same qb. Bound: the N*K weight bytes.
//===----------------------------------------------------------------------===//
#include "codegen/kernels/attention.cuh"
#include "codegen/kernels/common.cuh"
#include "codegen/kernels/gemv.cuh"
#include "codegen/kernels/lane_gemv.cuh"
#include "codegen/kernels/row_gemv.cuh"
#include "codegen/kernels/slot_gemv.cuh"
#include "codegen/kernels/wg_gemv.cuh"

DSC_KERNEL void dsc_index_queries_act(const unsigned short *x, long long S,
                                      long long K, float *codes,
                                      float *scales) {
  DSC_KERNEL_PROLOGUE();
  const long long kb = K / kFp8ActBlock;
  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= S * kb)
    return;
  const long long m = i / kb, j = i % kb;
  float blk[kFp8ActBlock];
  unsigned char q[kFp8ActBlock];
  for (int k = 0; k < kFp8ActBlock; ++k)
    blk[k] = bf16ToFloat(x[m * K + j * kFp8ActBlock + k]);
  const unsigned char s = quantizeFp8Block(blk, kFp8ActBlock, q);
  for (int k = 0; k < kFp8ActBlock; ++k)
    codes[m * K + j * kFp8ActBlock + k] = e4m3ToFloat(q[k]);
  scales[i] = ue8m0ToFloat(s);
}

DSC_KERNEL void dsc_index_queries_gemm(const float *codes, const float *aScales,
                                       const unsigned char *w,
                                       const unsigned char *wScale, long long S,
                                       long long K, long long N,
                                       unsigned short *y) {
  DSC_KERNEL_PROLOGUE();
  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= S * N)
    return;
  const long long m = i / N, n = i % N;
  const long long kb = K / 32;
  const float *a = codes + m * K;
  const unsigned char *row = w + n * K;
  const unsigned char *srow = wScale + (n / kFp8WeightBlock) * kb;
  float acc = 0.0f;
  for (long long b = 0; b < kb; ++b) {
    float partial = 0.0f;
    for (long long k = b * 32; k < b * 32 + 32; ++k)
      partial = __fadd_rn(partial, __fmul_rn(a[k], e4m3ToFloat(row[k])));
    acc = __fadd_rn(acc, __fmul_rn(__fmul_rn(partial, aScales[m * kb + b]),
                                   ue8m0ToFloat(srow[b])));
  }
  y[i] = bf16FromFloat(acc);
}

DSC_KERNEL void dsc_index_queries_rope_qdq(
    const __grid_constant__ dsc::abi::IndexQueriesParams p,
    const unsigned short *qb, long long S, long long H, long long dk,
    const float *invFreq, const long long *callState, unsigned short *q) {
  DSC_KERNEL_PROLOGUE();
  const long long ropeDim = p.rope.dim;
  const long long startPos = DSC_CALL_START(callState);
  const long long blocks = dk / kFp4E8M0Block, tail = dk - ropeDim;
  const int lane = threadIdx.x & 31;
  const long long warps = ((long long)gridDim.x * blockDim.x) >> 5;
  // One warp per (row s, head h, block b), lane k holding value k (the
  // block is 32 values): ropeSlice's pair rotation by both lanes of a pair
  // (each keeps its own half), then qdqFp4E8M0Block with the abs max by a
  // warp max (absMax's value in any order: a max, NaN if any lane has one).
  for (long long i = ((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
       i < S * H * blocks; i += warps) { // warp-uniform
    const long long v = i / blocks;    // (s, h)
    const long long b = i % blocks;
    const long long s = v / H;
    const long long c = b * kFp4E8M0Block + lane; // this lane's channel
    float x = bf16ToFloat(qb[v * dk + c]);
    const float partner = __shfl_xor_sync(0xffffffffu, x, 1);
    if (c >= tail) { // the pair (c & ~1, c | 1) rotates (tail is even)
      float re, im;
      const bool even = (lane & 1) == 0;
      ropePair(even ? x : partner, even ? partner : x, invFreq[(c - tail) / 2], startPos + s,
               false, re, im);
      x = even ? re : im;
    }
    const float a = absF(x);
    const bool nan = __any_sync(0xffffffffu, isNaN(a));
    const float amax = nan ? kQuietNaN : warpMax(isNaN(a) ? 0.0f : a);
    const float sc = fp4E8M0Scale(amax);
    const float out = roundToBf16(e2m1ToFloat(e2m1FromFloat(clampSym(x / sc, kE2M1Max))) * sc);
    q[v * dk + c] = bf16FromFloat(out);
  }
}

DSC_GEMV_ACT_QUANT_ENTRY(dsc_index_queries_act_quant_fast)

DSC_GEMV_QUANTIZED_ENTRY(dsc_index_queries_gemm_fast, fp8Gemv)
DSC_LANE_GEMV_ENTRY(dsc_index_queries_gemm_lanes, false)
DSC_SLOT_GEMV_ENTRY(dsc_index_queries_gemm_slots, false)
DSC_WG_GEMV_ENTRY(dsc_index_queries_gemm_wg, false)
DSC_ROW_GEMV_ENTRY(dsc_index_queries_gemm_rows, false)

DSC_GEMV_SPLITK_REDUCE_ENTRY(dsc_index_queries_splitk_reduce_fast)
