//===- indexer_score.cu - Indexer scores (kernel `indexer_score`) ---------===//
//
// CPU: indexScores + indexMaskInvisible (runtime/cpu/kernels/attention/
// Indexer.cpp) and the head-weight scaling of CpuAdaptersAttention.cpp.
// dsc_indexer_score: one thread per (query row s, key t):
//   t >= compress_len(s) -> -inf; else the key record t is decoded into
//   registers/local memory (bf16 values), then for each head h in order:
//   e = bf16(sum_d q*k) (fp32, d order; exact for FP4-QDQ q and k),
//   v = bf16(relu(e) * w_h) with w_h = bf16(bf16(hw[s,h]) * weightScale),
//   acc += v (fp32, head order); score = bf16(acc).
// weightScale = (float)p.weight_scale (dsc::abi::IndexerScoreParams, the
// first argument); ratio is the index-key state's (not a parameter here).
// dsc_indexer_score_fast (the default; the entry above is the CPU-order
// kernel of CudaOptions::cpuOrderFamilies): grid (key blocks, S); the block
// stages the row's queries [H, dk] in shared memory as fp32, one warp per
// key t decodes the record into shared memory and its lanes take heads h =
// lane, lane + 32, ... with the same d-order dot, relu, weight and bf16
// roundings; lane 0 adds the heads in head order. Bit-identical to the
// entry above (every sum is in the same order), without its per-thread
// serial chains. Dynamic shared memory: (H * (dk + 1) + warps * dk) floats.
//===----------------------------------------------------------------------===//
#include "codegen/kernels/common.cuh"
#include "codegen/kernels/attention.cuh"

#ifndef DSC_INDEXER_MAX_DK
#define DSC_INDEXER_MAX_DK 256
#endif

namespace dsc_indexer {
/// One head's term of a key's score: bf16(relu(bf16(dot)) * w_h), w_h =
/// bf16(bf16(headWeight) * weightScale) (both entries, so one rule).
__device__ __forceinline__ float headTerm(float dot, unsigned short headWeight, float weightScale) {
  float e = roundToBf16(dot);
  e = e > 0.0f ? e : 0.0f;
  const float wh = roundToBf16(__fmul_rn(bf16ToFloat(headWeight), weightScale));
  return roundToBf16(__fmul_rn(e, wh));
}
} // namespace dsc_indexer

DSC_KERNEL void dsc_indexer_score(const __grid_constant__ dsc::abi::IndexerScoreParams p,
                                  const unsigned short *q, const unsigned short *headWeights,
                                  const unsigned char *keys, int values, int tile,
                                  int valueType, int scaleType, int tokensPerPage, int order,
                                  long long S, long long H, long long dk,
                                  const long long *callState, long long ratio,
                                  unsigned short *scores) {
  DSC_KERNEL_PROLOGUE();
  const float weightScale = (float)p.weight_scale;
  const long long startPos = DSC_CALL_START(callState);
  const long long width = DSC_CALL_COMPRESSED_LENGTH(callState, ratio); // row stride T
  const KvPageLayout l = pageLayout(values, tile, valueType, scaleType, tokensPerPage, order);
  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= S * width)
    return;
  const long long s = i / width, t = i % width;
  if (t >= compressLen(startPos, s, ratio)) {
    scores[i] = bf16FromFloat(negInf());
    return;
  }
  float k[DSC_INDEXER_MAX_DK];
  for (long long d = 0; d < dk; ++d)
    k[d] = readValue(l, keys, t, static_cast<int>(d));
  float acc = 0.0f;
  for (long long h = 0; h < H; ++h) {
    const unsigned short *qh = q + (s * H + h) * dk;
    float dot = 0.0f;
    for (long long d = 0; d < dk; ++d)
      dot = __fadd_rn(dot, __fmul_rn(bf16ToFloat(qh[d]), k[d]));
    acc = __fadd_rn(acc, dsc_indexer::headTerm(dot, headWeights[s * H + h], weightScale));
  }
  scores[i] = bf16FromFloat(acc);
}

DSC_KERNEL void dsc_indexer_score_fast(const __grid_constant__ dsc::abi::IndexerScoreParams p,
                                       const unsigned short *q, const unsigned short *headWeights,
                                       const unsigned char *keys, int values, int tile,
                                       int valueType, int scaleType, int tokensPerPage, int order,
                                       long long S, long long H, long long dk,
                                       const long long *callState, long long ratio,
                                       unsigned short *scores) {
  DSC_KERNEL_PROLOGUE();
  const float weightScale = (float)p.weight_scale;
  const long long startPos = DSC_CALL_START(callState);
  const long long width = DSC_CALL_COMPRESSED_LENGTH(callState, ratio); // row stride T
  const KvPageLayout l = pageLayout(values, tile, valueType, scaleType, tokensPerPage, order);
  extern __shared__ float smem[];
  const long long ld = dk + 1; // padded query rows: lanes read different heads, same d
  float *qs = smem, *kbuf = smem + H * ld + (threadIdx.x >> 5) * dk;
  const int lane = threadIdx.x & 31, warps = blockDim.x >> 5;
  const long long s = blockIdx.y;
  if (s >= S)
    return;
  blockCopy(
      H * dk, [&](long long i) { return q[s * H * dk + i]; },
      [&](long long i, unsigned short v) { qs[(i / dk) * ld + i % dk] = bf16ToFloat(v); });
  __syncthreads();
  const long long visible = compressLen(startPos, s, ratio);
  for (long long t = (long long)blockIdx.x * warps + (threadIdx.x >> 5); t < width;
       t += (long long)gridDim.x * warps) {
    if (t >= visible) {
      if (lane == 0)
        scores[s * width + t] = bf16FromFloat(negInf());
      continue;
    }
    for (long long d = lane; d < dk; d += 32)
      kbuf[d] = readValue(l, keys, t, static_cast<int>(d));
    __syncwarp();
    float acc = 0.0f;
    for (long long h0 = 0; h0 < H; h0 += 32) {
      const long long h = h0 + lane;
      float v = 0.0f;
      if (h < H) {
        const float *qh = qs + h * ld;
        float dot = 0.0f;
        for (long long d = 0; d < dk; ++d)
          dot = __fadd_rn(dot, __fmul_rn(qh[d], kbuf[d]));
        v = dsc_indexer::headTerm(dot, headWeights[s * H + h], weightScale);
      }
      for (int src = 0; src < 32 && h0 + src < H; ++src) // head order
        acc = __fadd_rn(acc, __shfl_sync(0xffffffffu, v, src));
    }
    if (lane == 0)
      scores[s * width + t] = bf16FromFloat(acc);
    __syncwarp();
  }
}
