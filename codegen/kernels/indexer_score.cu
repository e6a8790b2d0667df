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
//===----------------------------------------------------------------------===//
#include "codegen/kernels/common.cuh"
#include "codegen/kernels/attention.cuh"

#ifndef DSC_INDEXER_MAX_DK
#define DSC_INDEXER_MAX_DK 256
#endif

DSC_KERNEL void dsc_indexer_score(const __grid_constant__ dsc::abi::IndexerScoreParams p,
                                  const unsigned short *q, const unsigned short *headWeights,
                                  const unsigned char *keys, int values, int tile,
                                  int valueType, int scaleType, int tokensPerPage, int order,
                                  long long S, long long H, long long dk,
                                  const long long *callState, long long ratio,
                                  unsigned short *scores) {
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
    float e = roundToBf16(dot);
    e = e > 0.0f ? e : 0.0f;
    const float wh = roundToBf16(__fmul_rn(bf16ToFloat(headWeights[s * H + h]), weightScale));
    acc = __fadd_rn(acc, roundToBf16(__fmul_rn(e, wh)));
  }
  scores[i] = bf16FromFloat(acc);
}
