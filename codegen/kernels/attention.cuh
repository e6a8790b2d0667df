//===- attention.cuh - Device helpers shared by the CSA2 attention kernels -===//
//
// Included by codegen/kernels/{rope,window_kv,compressor,compress_kv,
// index_keys,index_queries,indexer_score,candidate_blocks,indexer_topk,
// sparse_attention}.cu after common.cuh. Mirrors the CPU reference
// (runtime/cpu/kernels/attention, dense/Linear.cpp, dense/Norm.cpp,
// dense/TorchReduce.h) at every rounding point; the torch-order sum and the
// double dot are reduce.cuh's (one copy for dense and attention kernels):
//   - every fp32 product/sum whose contraction into an FMA could change the
//     result uses __fmul_rn / __fadd_rn / __fsub_rn / __fdiv_rn (NVRTC
//     contracts a*b+c by default);
//   - record layouts come as six ints (pageLayout below, passed field by
//     field: the only struct an entry takes by value is its kernel's params,
//     common.cuh) and are rebuilt as numerics::KvPageLayout, whose
//     encode/decode is the CPU's (one definition of every number).
//===----------------------------------------------------------------------===//
#ifndef DSC_CODEGEN_KERNELS_ATTENTION_CUH
#define DSC_CODEGEN_KERNELS_ATTENTION_CUH

#include "codegen/kernels/common.cuh"
#include "codegen/kernels/reduce.cuh"
#include "codegen/kernels/select.cuh"

namespace dsc::kernels::attn {

/// A page layout from its plan fields (values, tile, value type, scale type,
/// tokens per page, page order); derived byte sizes as numerics computes them.
__device__ __forceinline__ KvPageLayout pageLayout(int values, int tile, int valueType,
                                                   int scaleType, int tokensPerPage,
                                                   int order) {
  KvPageLayout l;
  l.format = makeKvRecordFormat(values, tile, KvValueType(valueType), KvScaleType(scaleType));
  l.tokensPerPage = tokensPerPage;
  l.order = KvPageOrder(order);
  return l;
}

/// Largest tile the kernels quantise in registers (the released formats use
/// 16 and 32).
constexpr int kMaxTile = 32;

/// Quantises tile `t` (vals[0..tile)) of `token`'s record, exactly as
/// numerics::encodeKvRecord does for that tile. Tiles touch disjoint bytes.
__device__ __forceinline__ void writeTile(const KvPageLayout &l, unsigned char *pool,
                                          long long token, int t, const float *vals) {
  unsigned char *data = pool + l.tokenDataOffset(token);
  unsigned char *scales = pool + l.tokenScaleOffset(token);
  const int tile = l.format.valuesPerTile;
  if (l.format.valueType == KvValueType::E4M3)
    scales[t] = quantizeFp8Block(vals, tile, data + t * tile);
  else if (l.format.scaleType == KvScaleType::UE8M0)
    scales[t] = quantizeFp4E8M0Block(vals, tile, data + t * tile / 2);
  else
    scales[t] = quantizeFp4E4M3Block(vals, tile, data + t * tile / 2);
}

/// A record value from its code (an E4M3 byte, or an E2M1 nibble in the low
/// bits) and its tile's scale byte `sc`: the exact code*scale product,
/// rounded to bf16 (KvRecordPool::read). E4M3 values take a UE8M0 scale.
__device__ __forceinline__ float decodeValue(const KvRecordFormat &f, unsigned char code,
                                             unsigned char sc) {
  float v;
  if (f.valueType == KvValueType::E4M3)
    v = e4m3ToFloat(code) * ue8m0ToFloat(sc);
  else
    v = e2m1ToFloat(code) *
        (f.scaleType == KvScaleType::UE8M0 ? ue8m0ToFloat(sc) : e4m3ToFloat(sc));
  return roundToBf16(v);
}

/// Value i of a record whose packed values start at `data`, given the scale
/// byte `sc` of its tile (decodeValue of its code).
__device__ __forceinline__ float readValueAt(const KvRecordFormat &f, const unsigned char *data,
                                             unsigned char sc, int i) {
  return decodeValue(f, f.valueType == KvValueType::E4M3 ? data[i] : fp4CodeAt(data, i), sc);
}

/// Value i of `token`'s record (readValueAt at the token's offsets).
__device__ __forceinline__ float readValue(const KvPageLayout &l, const unsigned char *pool,
                                           long long token, int i) {
  const unsigned char *scales = pool + l.tokenScaleOffset(token);
  return readValueAt(l.format, pool + l.tokenDataOffset(token), scales[i / l.format.valuesPerTile],
                     i);
}

/// One interleaved RoPE pair (a, b) at angle theta = fp32(pos) * invFreq:
/// c = cosf, s = sinf (negated for the inverse); re = a*c - b*s,
/// im = a*s + b*c, each product one fp32 rounding, no FMA; bf16 results.
__device__ __forceinline__ void ropePair(float a, float b, float invFreq, long long pos,
                                         bool inverse, float &re, float &im) {
  const float theta = __fmul_rn(static_cast<float>(pos), invFreq);
  const float c = cosf(theta);
  float s = sinf(theta);
  if (inverse)
    s = -s;
  re = roundToBf16(__fsub_rn(__fmul_rn(a, c), __fmul_rn(b, s)));
  im = roundToBf16(__fadd_rn(__fmul_rn(a, s), __fmul_rn(b, c)));
}

/// Applies RoPE in place to vals[0..n), the channels [c0, c0+n) of a
/// headDim vector whose last ropeDim channels rotate (c0 and n even, so pairs
/// never straddle the slice). vals hold bf16 values.
__device__ __forceinline__ void ropeSlice(float *vals, int c0, int n, int headDim, int ropeDim,
                                          const float *invFreq, long long pos, bool inverse) {
  const int tail = headDim - ropeDim;
  for (int i = 0; i < n; i += 2) {
    const int c = c0 + i;
    if (c < tail)
      continue;
    const int k = (c - tail) / 2;
    float re, im;
    ropePair(vals[i], vals[i + 1], invFreq[k], pos, inverse, re, im);
    vals[i] = re;
    vals[i + 1] = im;
  }
}

/// One tile of compressed-entry rows into their records (compress_kv,
/// index_keys write step): thread i takes tile i % tiles of row i / tiles of
/// the call's emitted rows (bf16 [n, width]), rotates its RoPE channels at the
/// entry's position (j0 + row) * ratio and quantises it into record j0 + row.
__device__ __forceinline__ void ropeQuantizeTile(const unsigned short *rows, long long width,
                                                 long long ratio, long long ropeDim,
                                                 const float *invFreq, const KvPageLayout &l,
                                                 unsigned char *pool, const long long *callState,
                                                 long long i) {
  const int tile = l.format.valuesPerTile;
  const long long n = DSC_CALL_COMPRESSED_TOKENS(callState, ratio);
  const long long j0 = DSC_CALL_START(callState) / ratio;
  const long long tiles = width / tile;
  if (i >= n * tiles)
    return;
  const long long r = i / tiles;
  const int b = static_cast<int>(i % tiles);
  float vals[kMaxTile];
  for (int k = 0; k < tile; ++k)
    vals[k] = bf16ToFloat(rows[r * width + b * tile + k]);
  ropeSlice(vals, b * tile, tile, static_cast<int>(width), static_cast<int>(ropeDim), invFreq,
            (j0 + r) * ratio, false);
  writeTile(l, pool, j0 + r, b, vals);
}

/// dotF64 (dense/DenseUtil.h) of two bf16 rows widened to fp32: reduce.cuh's
/// dsc_dense_d64::dotF64 (four interleaved double partial sums of exact
/// products, combined as (s0 + s1) + (s2 + s3)).
__device__ __forceinline__ double dotF64Bf16(const unsigned short *x, const unsigned short *w,
                                             long long n) {
  return dsc_dense_d64::dotF64(
      n, [&](long long k) { return bf16ToFloat(x[k]); },
      [&](long long k) { return bf16ToFloat(w[k]); });
}

/// compress_len of query row s (Indexer.cpp indexCompressLen).
__device__ __forceinline__ long long compressLen(long long startPos, long long s, long long ratio) {
  return (startPos + s + 1) / ratio;
}

} // namespace dsc::kernels::attn

using namespace dsc::kernels::attn;

#endif // DSC_CODEGEN_KERNELS_ATTENTION_CUH
