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
//   - record layouts come as six ints (AttnPool below, passed field by field:
//     no structs by value) and are rebuilt as numerics::KvPageLayout, whose
//     encode/decode is the CPU's (one definition of every number).
//===----------------------------------------------------------------------===//
#ifndef DSC_CODEGEN_KERNELS_ATTENTION_CUH
#define DSC_CODEGEN_KERNELS_ATTENTION_CUH

#include "codegen/kernels/common.cuh"
#include "codegen/kernels/reduce.cuh"

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

/// torchSumF32 (8 lanes) of the squares of n bf16 values x[0..n) (squares
/// of bf16 values are exact in fp32): reduce.cuh's dsc_dense_ts::torchSum.
__device__ __forceinline__ float torchSumSquaresBf16(const unsigned short *x, long long n) {
  return dsc_dense_ts::torchSum(n, [&](long long i) {
    const float v = bf16ToFloat(x[i]);
    return __fmul_rn(v, v);
  });
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

/// The 64-bit selection key of (value v, index j): larger ranks before under
/// ranksBefore (NaN highest, then the float's order-preserving bits with -0
/// as +0, then the lower index via its complement). Keys are distinct.
__device__ __forceinline__ unsigned long long rankKey(float v, long long j) {
  unsigned int key;
  if (isNaN(v)) {
    key = 0xffffffffu;
  } else {
    const unsigned int u = __float_as_uint(v == 0.0f ? 0.0f : v);
    key = (u & 0x80000000u) ? ~u : (u | 0x80000000u);
  }
  return (static_cast<unsigned long long>(key) << 32) |
         static_cast<unsigned long long>(0xffffffffu - static_cast<unsigned int>(j));
}

/// Block-wide radix select (all threads of the block call it): the `rank`-th
/// largest (1-based) of the distinct keys keyOf(0 .. n-1), 8 passes of 8
/// bits with a shared histogram. `rank` must be in [1, n].
template <typename KeyOf>
__device__ unsigned long long radixSelectKey(long long n, long long rank, KeyOf keyOf) {
  __shared__ unsigned int hist[256];
  __shared__ unsigned long long prefixShared;
  __shared__ long long rankShared;
  unsigned long long prefix = 0, mask = 0;
  for (int shift = 56; shift >= 0; shift -= 8) {
    for (int b = threadIdx.x; b < 256; b += blockDim.x)
      hist[b] = 0;
    __syncthreads();
    for (long long j = threadIdx.x; j < n; j += blockDim.x) {
      const unsigned long long key = keyOf(j);
      if ((key & mask) == prefix)
        atomicAdd(&hist[(key >> shift) & 0xff], 1u);
    }
    __syncthreads();
    if (threadIdx.x == 0) {
      long long r = rank;
      int digit = 255;
      for (; digit > 0; --digit) {
        if (r <= (long long)hist[digit])
          break;
        r -= hist[digit];
      }
      prefixShared = prefix | (static_cast<unsigned long long>(digit) << shift);
      rankShared = r;
    }
    __syncthreads();
    prefix = prefixShared;
    rank = rankShared;
    mask |= 0xffull << shift;
    __syncthreads();
  }
  return prefix;
}

/// Block-wide ascending compaction: calls emit(j, slot) for every j in
/// [0, n) with keep(j), slot = the number of kept positions before j. Uses
/// blockDim.x <= 1024 entries of shared scratch.
template <typename Keep, typename Emit>
__device__ void compactAscending(long long n, Keep keep, Emit emit) {
  __shared__ long long scan[1024];
  long long base = 0;
  for (long long j0 = 0; j0 < n; j0 += blockDim.x) {
    const long long j = j0 + threadIdx.x;
    const long long flag = j < n && keep(j) ? 1 : 0;
    scan[threadIdx.x] = flag;
    __syncthreads();
    for (unsigned int step = 1; step < blockDim.x; step <<= 1) { // inclusive scan
      const long long add = threadIdx.x >= step ? scan[threadIdx.x - step] : 0;
      __syncthreads();
      scan[threadIdx.x] += add;
      __syncthreads();
    }
    if (flag)
      emit(j, base + scan[threadIdx.x] - 1);
    base += scan[blockDim.x - 1];
    __syncthreads();
  }
}

/// compress_len of query row s (Indexer.cpp indexCompressLen).
__device__ __forceinline__ long long compressLen(long long startPos, long long s, long long ratio) {
  return (startPos + s + 1) / ratio;
}

} // namespace dsc::kernels::attn

using namespace dsc::kernels::attn;

#endif // DSC_CODEGEN_KERNELS_ATTENTION_CUH
