//===- attention.cuh - Device helpers shared by the CSA2 attention kernels -===//
//
// Included by codegen/kernels/{rope,window_kv,compressor,compress_kv,
// index_keys,index_queries,indexer_score,candidate_blocks,indexer_topk,
// sparse_attention}.cu after common.cuh. Mirrors the CPU reference
// (runtime/cpu/kernels/attention, dense/Linear.cpp, dense/Norm.cpp,
// dense/TorchReduce.h) at every rounding point:
//   - every fp32 product/sum whose contraction into an FMA could change the
//     result uses __fmul_rn / __fadd_rn / __fsub_rn / __fdiv_rn (NVRTC
//     contracts a*b+c by default);
//   - record layouts come as six ints (AttnPool below, passed field by field:
//     no structs by value) and are rebuilt as numerics::KvPageLayout, whose
//     encode/decode is the CPU's (one definition of every number).
//===----------------------------------------------------------------------===//
#ifndef DSC_CODEGEN_KERNELS_ATTENTION_CUH
#define DSC_CODEGEN_KERNELS_ATTENTION_CUH

#include "codegen/kernels/common.cuh"

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

/// Value i of `token`'s record: the exact code*scale product, then rounded
/// to bf16 (KvRecordPool::read).
__device__ __forceinline__ float readValue(const KvPageLayout &l, const unsigned char *pool,
                                           long long token, int i) {
  const unsigned char *data = pool + l.tokenDataOffset(token);
  const unsigned char *scales = pool + l.tokenScaleOffset(token);
  const unsigned char sc = scales[i / l.format.valuesPerTile];
  const float s = l.format.scaleType == KvScaleType::UE8M0 ? ue8m0ToFloat(sc) : e4m3ToFloat(sc);
  float v;
  if (l.format.valueType == KvValueType::E4M3)
    v = e4m3ToFloat(data[i]) * ue8m0ToFloat(sc);
  else
    v = e2m1ToFloat(fp4CodeAt(data, i)) * s;
  return roundToBf16(v);
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

/// dotF64 (dense/DenseUtil.h): four interleaved double partial sums of exact
/// products, combined as (s0 + s1) + (s2 + s3). x fp32 or bf16 widened.
__device__ __forceinline__ double dotF64Bf16(const unsigned short *x, const unsigned short *w,
                                             long long n) {
  double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  long long k = 0;
  for (; k + 4 <= n; k += 4) {
    s0 = __dadd_rn(s0, __dmul_rn(double(bf16ToFloat(x[k])), double(bf16ToFloat(w[k]))));
    s1 = __dadd_rn(s1, __dmul_rn(double(bf16ToFloat(x[k + 1])), double(bf16ToFloat(w[k + 1]))));
    s2 = __dadd_rn(s2, __dmul_rn(double(bf16ToFloat(x[k + 2])), double(bf16ToFloat(w[k + 2]))));
    s3 = __dadd_rn(s3, __dmul_rn(double(bf16ToFloat(x[k + 3])), double(bf16ToFloat(w[k + 3]))));
  }
  for (; k < n; ++k)
    s0 = __dadd_rn(s0, __dmul_rn(double(bf16ToFloat(x[k])), double(bf16ToFloat(w[k]))));
  return __dadd_rn(__dadd_rn(s0, s1), __dadd_rn(s2, s3));
}

/// torch's CPU fp32 cascade sum (dense/TorchReduce.h cascadeRows), for
/// nr <= 4 accumulators of lanes <= 8 values; out[nr*lanes].
template <typename Item>
__device__ void cascadeRows(long long size, int nr, int lanes, Item item, float *out) {
  constexpr int kLevels = 4;
  float acc[kLevels * 4 * 8];
  for (int i = 0; i < kLevels * nr * lanes; ++i)
    acc[i] = 0.0f;
  const long long ceilLog2 =
      size <= 2 ? 1 : 64 - __clzll(static_cast<long long>(size - 1));
  const long long power = ceilLog2 / kLevels > 4 ? ceilLog2 / kLevels : 4;
  const long long step = 1LL << power, mask = step - 1;
#define DSC_AT(j, k, l) acc[((j) * nr + (k)) * lanes + (l)]
  long long i = 0;
  while (i + step <= size) {
    for (long long j = 0; j < step; ++j, ++i)
      for (int k = 0; k < nr; ++k)
        for (int l = 0; l < lanes; ++l)
          DSC_AT(0, k, l) = __fadd_rn(DSC_AT(0, k, l), item(i, k, l));
    for (int j = 1; j < kLevels; ++j) {
      for (int k = 0; k < nr; ++k)
        for (int l = 0; l < lanes; ++l) {
          DSC_AT(j, k, l) = __fadd_rn(DSC_AT(j, k, l), DSC_AT(j - 1, k, l));
          DSC_AT(j - 1, k, l) = 0.0f;
        }
      if ((i & (mask << (j * power))) != 0)
        break;
    }
  }
  for (; i < size; ++i)
    for (int k = 0; k < nr; ++k)
      for (int l = 0; l < lanes; ++l)
        DSC_AT(0, k, l) = __fadd_rn(DSC_AT(0, k, l), item(i, k, l));
  for (int j = 1; j < kLevels; ++j)
    for (int k = 0; k < nr; ++k)
      for (int l = 0; l < lanes; ++l)
        DSC_AT(0, k, l) = __fadd_rn(DSC_AT(0, k, l), DSC_AT(j, k, l));
#undef DSC_AT
  for (int q = 0; q < nr * lanes; ++q)
    out[q] = acc[q];
}

/// ilpRowSum: items over 4 accumulators, remainder into the first; out[lanes].
template <typename Item>
__device__ void ilpRowSum(long long size, int lanes, Item item, float *out) {
  const long long ilp = size / 4;
  float part[4 * 8];
  cascadeRows(
      ilp, 4, lanes, [&](long long i, int k, int l) { return item(i * 4 + k, l); }, part);
  for (long long i = ilp * 4; i < size; ++i)
    for (int l = 0; l < lanes; ++l)
      part[l] = __fadd_rn(part[l], item(i, l));
  for (int k = 1; k < 4; ++k)
    for (int l = 0; l < lanes; ++l)
      part[l] = __fadd_rn(part[l], part[k * lanes + l]);
  for (int l = 0; l < lanes; ++l)
    out[l] = part[l];
}

/// torchSumF32 (8 lanes) of the squares of n bf16 values x[0..n) (squares
/// of bf16 values are exact in fp32).
__device__ __forceinline__ float torchSumSquaresBf16(const unsigned short *x, long long n) {
  auto sq = [&](long long i) {
    const float v = bf16ToFloat(x[i]);
    return __fmul_rn(v, v);
  };
  constexpr int kLanes = 8;
  if (n < kLanes) {
    float r[1];
    ilpRowSum(n, 1, [&](long long i, int) { return sq(i); }, r);
    return r[0];
  }
  const long long vecs = n / kLanes;
  float v[kLanes];
  ilpRowSum(vecs, kLanes, [&](long long i, int l) { return sq(i * kLanes + l); }, v);
  float total = 0.0f;
  for (long long k = vecs * kLanes; k < n; ++k)
    total = __fadd_rn(total, sq(k));
  for (int l = 0; l < kLanes; ++l)
    total = __fadd_rn(total, v[l]);
  return total;
}

/// dense rmsNorm of one bf16 row x[0..n) into y (may alias x):
/// rs = 1 / sqrt(torchSum(x^2) / n + eps); y = bf16(w * bf16... (x * rs)).
__device__ __forceinline__ void rmsNormRow(const unsigned short *x, long long n,
                                           const unsigned short *w, float eps,
                                           unsigned short *y) {
  const float sum = torchSumSquaresBf16(x, n);
  const float mean = __fdiv_rn(sum, static_cast<float>(n));
  const float rs = __fdiv_rn(1.0f, __fsqrt_rn(__fadd_rn(mean, eps)));
  for (long long i = 0; i < n; ++i) {
    const float normed = __fmul_rn(bf16ToFloat(x[i]), rs);
    y[i] = bf16FromFloat(__fmul_rn(bf16ToFloat(w[i]), normed));
  }
}

/// numerics' top-k order: NaN first, then larger value, then lower index.
__device__ __forceinline__ bool ranksBefore(float a, long long ia, float b, long long ib) {
  const bool na = isNaN(a), nb = isNaN(b);
  if (na != nb)
    return na;
  if (!na && a != b)
    return a > b;
  return ia < ib;
}

/// compress_len of query row s (Indexer.cpp indexCompressLen).
__device__ __forceinline__ long long compressLen(long long startPos, long long s, long long ratio) {
  return (startPos + s + 1) / ratio;
}

} // namespace dsc::kernels::attn

using namespace dsc::kernels::attn;

#endif // DSC_CODEGEN_KERNELS_ATTENTION_CUH
