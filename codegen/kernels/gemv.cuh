//===- gemv.cuh - The GEMV/GEMM core of the fast CUDA kernels --------------===//
//
// What: the building blocks of the `_fast` entries (CudaOptions::
// no kernel family on cpuOrderFamilies, the default), built so that a decode step streams
// every weight once at memory bandwidth:
//   - quantizeBlocks / quantizeToShared: act_quant (E4M3 codes + the fp32
//     value of the UE8M0 scale per 32 K, bit for bit numerics::
//     quantizeFp8Block), one warp per 32-element block, into shared memory
//     (decode) or global scratch (large M);
//   - tcGemv / tileDots: block-scaled FP8 (W [N, K] E4M3, UE8M0 scales
//     [ceil(N/32), K/32]) and FP4 (W [N, K/2] E2M1, even k in the low
//     nibble, scales [N, K/32]) on the tensor cores: per 32-K scale block the
//     E4M3 codes are widened exactly to f16 (cvt.rn.f16x2.e4m3x2, sm_89+)
//     and summed by two chained mma.sync m16n8k16 f16 (fp32 accumulation)
//     over 16 weight rows x up to 8 activation rows, then acc += (partial *
//     a_s) * w_s in fp32 as the reference; E2M1 nibbles become E4M3 bytes in registers
//     by a byte permute (every E2M1 value is an E4M3 value). The 8 warps of
//     a block split K and are combined in warp order;
//   - bf16RowDots / bf16Gemv: bf16 W [N, K] with bf16 x, one warp per output
//     row, 16-byte loads, fp32 FMA and a fixed xor-tree lane sum.
// Numerics: the CPU reference's rounding points are kept (per-block fp32
// partials of exact products, the scales, one bf16 rounding of the output),
// the summation ORDER differs (the mma's internal order, which aligns and
// truncates rather than rounding each add, warp and lane
// trees); every order is fixed, so results are deterministic (same input,
// same bytes) and a row's result never depends on the other rows of the
// call (CED exact == full, chunked == one call). They stay inside the GPU
// gates of golden/README.md.
// Invariants: K % 32 == 0; weight rows, activation codes and x 16-byte
// aligned (the adapters, runtime/cuda/GemvLaunch.h, check and fall back to
// the CPU-order entries otherwise).
// Bound: the weight bytes at memory bandwidth (the M <= 8 rows of one mma
// column tile read each weight once).
// Include after common.cuh:
//
//   #include "codegen/kernels/common.cuh"
//   #include "codegen/kernels/gemv.cuh"
//===----------------------------------------------------------------------===//
#ifndef DSC_CODEGEN_KERNELS_GEMV_CUH
#define DSC_CODEGEN_KERNELS_GEMV_CUH

#include "codegen/kernels/common.cuh"

namespace dsc_gemv {

/// Warps per block of the GEMV entries (dsc/abi/LaunchShapes.h; the adapters
/// launch 32 * kWarps threads).
constexpr int kWarps = dsc::abi::kGemvWarps;
/// Activation rows one pass over a weight row serves (registers per lane).
constexpr int kRowsPerPass = dsc::abi::kGemvRowsPerPass;

/// Eight E2M1 nibbles (nibble i = element i) as eight E4M3 bytes: `lo`
/// holds elements 0-3, `hi` 4-7. |code| 0..7 = 0, .5, 1, 1.5, 2, 3, 4, 6.
__device__ __forceinline__ void e2m1x8ToE4m3(unsigned int w, unsigned int &lo, unsigned int &hi) {
  constexpr unsigned int kLow = 0x3C383000u, kHigh = 0x4C484440u; // E4M3 of |E2M1| 0..7
  const unsigned int mag = w & 0x77777777u, sign = w & 0x88888888u;
  lo = __byte_perm(kLow, kHigh, mag & 0xffffu);
  hi = __byte_perm(kLow, kHigh, mag >> 16);
  lo |= ((sign & 0x8u) << 4) | ((sign & 0x80u) << 8) | ((sign & 0x800u) << 12) |
        ((sign & 0x8000u) << 16);
  const unsigned int s2 = sign >> 16;
  hi |= ((s2 & 0x8u) << 4) | ((s2 & 0x80u) << 8) | ((s2 & 0x800u) << 12) | ((s2 & 0x8000u) << 16);
}

/// bf16 pair (bits 0-15 first) as fp32, exact.
__device__ __forceinline__ float bf16Lo(unsigned int v) { return __uint_as_float(v << 16); }
__device__ __forceinline__ float bf16Hi(unsigned int v) { return __uint_as_float(v & 0xffff0000u); }

/// sum over 8 bf16 pairs (16 bytes each side) in fp32 FMA, index order.
__device__ __forceinline__ float dotBf16x8(uint4 w, uint4 x, float s) {
  s = fmaf(bf16Lo(w.x), bf16Lo(x.x), s);
  s = fmaf(bf16Hi(w.x), bf16Hi(x.x), s);
  s = fmaf(bf16Lo(w.y), bf16Lo(x.y), s);
  s = fmaf(bf16Hi(w.y), bf16Hi(x.y), s);
  s = fmaf(bf16Lo(w.z), bf16Lo(x.z), s);
  s = fmaf(bf16Hi(w.z), bf16Hi(x.z), s);
  s = fmaf(bf16Lo(w.w), bf16Lo(x.w), s);
  return fmaf(bf16Hi(w.w), bf16Hi(x.w), s);
}

__device__ __forceinline__ uint4 load16(const void *p) {
  return __ldg(reinterpret_cast<const uint4 *>(p));
}
__device__ __forceinline__ uint4 zero16() { return make_uint4(0u, 0u, 0u, 0u); }
/// A 16-byte load of streamed weights: read-only, not kept in L1, and an L2
/// miss fetches the whole 256-byte block around it, so that the next steps
/// of a weight row (which the same lanes load next) are already on the way
/// (the values are load16's; measured in docs/perf.md, session 11).
__device__ __forceinline__ uint4 loadStream16(const void *p) {
  uint4 v;
  asm("ld.global.nc.L1::no_allocate.L2::256B.v4.u32 {%0, %1, %2, %3}, [%4];"
      : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
      : "l"(p));
  return v;
}

/// Asks L2 for the line holding p (no register, no result: a hint).
__device__ __forceinline__ void prefetchL2(const void *p) {
  asm volatile("prefetch.global.L2 [%0];" ::"l"(p));
}

/// act_quant of the 32-element blocks first, first + stride, ... < blocks of
/// x (bf16, row-major [M, K] with K % 32 == 0, so block b is x[32b, 32b+32)),
/// one warp per block (lane = element), warps numbered by the caller: E4M3
/// codes and the fp32 value of the UE8M0 scale, bit for bit
/// numerics::quantizeFp8Block (amax is exact in any order; NaN propagates).
/// codes/scales may be shared or global memory. Every lane must call it.
/// The codes go to *code(b, lane) and the scale to *scale(b) (callers that
/// stage them in a kernel's own layout pass their own addressing).
template <class CodeAt, class ScaleAt>
__device__ void quantizeBlocksTo(const unsigned short *x, long long blocks, long long first,
                                 long long stride, CodeAt code, ScaleAt scale) {
  const int lane = threadIdx.x & 31;
  for (long long b = first; b < blocks; b += stride) {
    const float v = bf16ToFloat(x[b * 32 + lane]);
    const float a = absF(v);
    const bool nan = __any_sync(0xffffffffu, isNaN(a));
    const float amax = nan ? kQuietNaN : warpMax(a);
    const float s = fp8ActScale(amax);
    *code(b, lane) = e4m3FromFloat(clampSym(v / s, kE4M3Max));
    if (lane == 0)
      *scale(b) = ue8m0ToFloat(ue8m0FromScale(s));
  }
}
__device__ void quantizeBlocks(const unsigned short *x, long long blocks, long long first,
                               long long stride, unsigned char *codes, float *scales) {
  quantizeBlocksTo(
      x, blocks, first, stride, [&](long long b, int lane) { return codes + b * 32 + lane; },
      [&](long long b) { return scales + b; });
}

/// quantizeBlocks of all of x [M, K] by this block into `smem` (codes, then
/// scales at smem + M*K; quantBytes(M, K) bytes), ending with a barrier.
/// All threads of the block must call it.
__device__ void quantizeToShared(const unsigned short *x, long long M, long long K,
                                 unsigned char *smem) {
  quantizeBlocks(x, M * (K / 32), threadIdx.x >> 5, blockDim.x >> 5, smem,
                 reinterpret_cast<float *>(smem + M * K));
  __syncthreads();
}

/// Bytes of quantizeToShared: codes (M*K, a multiple of 32) then scales
/// (M*K/32 floats).
__device__ __forceinline__ long long quantBytes(long long M, long long K) {
  return M * K + M * (K / 32) * 4;
}

/// bf16 row dots: weight row wRow (K bf16) with x rows m0.. (x [M, K] at
/// row stride ldx elements); fp32 FMA per lane over its 16-byte chunks
/// lane, lane + 32, ... in that order, xor-tree lane sum. kChunkLoads
/// weight chunks per lane are loaded before they are used: 2 where many
/// warps run (registers, occupancy), kFewRowLoads for GEMVs of few rows
/// (a warp's latency is the kernel's: more loads in flight per warp); the
/// FMA order, hence the result, does not depend on it.
template <int kChunkLoads = 2>
__device__ __forceinline__ void bf16RowDots(const unsigned short *wRow, const unsigned short *x,
                                            long long ldx, long long K, long long m0, int rows,
                                            float *acc) {
  const int lane = threadIdx.x & 31;
  const long long chunks = K / 8;
  for (int r = 0; r < kRowsPerPass; ++r)
    acc[r] = 0.0f;
  for (long long c0 = 0; c0 < chunks; c0 += 32 * kChunkLoads) {
    uint4 wv[kChunkLoads];
#pragma unroll
    for (int u = 0; u < kChunkLoads; ++u) {
      const long long ch = c0 + 32 * u + lane;
      wv[u] = ch < chunks ? load16(wRow + ch * 8) : zero16();
    }
    if (rows == 1) { // decode: the row's chunks loaded with the weights', not one per FMA
      uint4 xv[kChunkLoads];
#pragma unroll
      for (int u = 0; u < kChunkLoads; ++u) {
        const long long ch = c0 + 32 * u + lane;
        xv[u] = ch < chunks ? load16(x + m0 * ldx + ch * 8) : zero16();
      }
#pragma unroll
      for (int u = 0; u < kChunkLoads; ++u)
        if (c0 + 32 * u + lane < chunks)
          acc[0] = dotBf16x8(wv[u], xv[u], acc[0]);
      continue;
    }
#pragma unroll
    for (int u = 0; u < kChunkLoads; ++u) {
      const long long ch = c0 + 32 * u + lane;
      if (ch >= chunks)
        break;
#pragma unroll
      for (int r = 0; r < kRowsPerPass; ++r) {
        if (r >= rows)
          break;
        acc[r] = dotBf16x8(wv[u], load16(x + (m0 + r) * ldx + ch * 8), acc[r]);
      }
    }
  }
  for (int r = 0; r < kRowsPerPass; ++r)
    acc[r] = warpSum(acc[r]);
}

/// The act_quant operands of a quantised GEMV call: x != null: the block
/// act_quants x [M, K] into `smem` (quantizeToShared; all threads must call
/// it) and reads them there, else the global codes / scales.
struct Codes {
  const unsigned char *codes;
  const float *scales;
};
__device__ __forceinline__ Codes stageCodes(const unsigned short *x, const unsigned char *gCodes,
                                            const float *gScales, long long M, long long K,
                                            unsigned char *smem) {
  if (!x)
    return Codes{gCodes, gScales};
  quantizeToShared(x, M, K, smem);
  return Codes{smem, reinterpret_cast<const float *>(smem + M * K)};
}

/// The warp's first output row and stride over all blocks' warps.
__device__ __forceinline__ long long firstRow() {
  return (long long)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
}
__device__ __forceinline__ long long rowStride() {
  return (long long)gridDim.x * (blockDim.x >> 5);
}

/// Work item `item` of the warp GEMVs' items (tileRows weight rows x 8
/// activation rows x one of `splits` K ranges, lane_gemv.cuh and
/// row_gemv.cuh): its split, K blocks [k0, k1) of kb, first weight row n0,
/// first activation row m0 and row count (<= 8) of M.
struct WarpItem {
  long long split, k0, k1, n0, m0;
  int rows;
};
__device__ __forceinline__ WarpItem warpItem(long long item, long long splits, long long kb,
                                             long long M, long long tileRows) {
  const long long mTiles = (M + 7) / 8, perSplit = (kb + splits - 1) / splits;
  const long long tile = item / splits;
  WarpItem it;
  it.split = item - tile * splits;
  it.k0 = it.split * perSplit < kb ? it.split * perSplit : kb;
  it.k1 = it.k0 + perSplit < kb ? it.k0 + perSplit : kb;
  it.n0 = (tile / mTiles) * tileRows;
  it.m0 = (tile % mTiles) * 8;
  it.rows = (int)(M - it.m0 < 8 ? M - it.m0 : 8);
  return it;
}
/// Items of those GEMVs over W [N, .] and x [M, .].
__device__ __forceinline__ long long warpItems(long long N, long long M, long long splits,
                                               long long tileRows) {
  return (N + tileRows - 1) / tileRows * ((M + 7) / 8) * splits;
}
/// Output (m, n) of split `split`: the fp32 partial [splits, M, N] (splits > 1)
/// or y [M, N] as bf16.
__device__ __forceinline__ void storeOutput(unsigned short *y, float *partial, long long splits,
                                            long long split, long long M, long long N,
                                            long long m, long long n, float v) {
  if (splits > 1)
    partial[(split * M + m) * N + n] = v;
  else
    y[m * N + n] = bf16FromFloat(v);
}

//===----------------------------------------------------------------------===//
// Tensor-core tiles (blockMma: two f16 mma.sync m16n8k16 per 32-K block):
// 16 weight rows x up to 8 activation rows, one 32-K scale block per fresh
// fp32 accumulator, the scales applied per block in fp32 as above.
// Lane (g = lane / 4, t = lane % 4) feeds weight rows g and g + 8 and
// activation row g with the block's bytes [8t, 8t + 8): any assignment of a
// block's k to the mma's k slots is the same dot, so each lane reads 8
// contiguous bytes (4 for FP4) instead of the fragment's strided ones. The
// mma's internal summation order is the hardware's (fixed: deterministic).
//===----------------------------------------------------------------------===//

/// Two E4M3 codes (a 16-bit pair) as an f16x2 (exact: every E4M3 value is
/// an f16 value).
__device__ __forceinline__ unsigned e4m3x2ToHalf2(unsigned pair) {
  unsigned h2;
  asm("{\n\t.reg .b16 t;\n\tcvt.u16.u32 t, %1;\n\tcvt.rn.f16x2.e4m3x2 %0, t;\n\t}"
      : "=r"(h2)
      : "r"(pair));
  return h2;
}

/// Four E4M3 codes (a word) as two f16x2: lo from bytes 0-1, hi from bytes
/// 2-3 (exact). One conversion each: the halves are read in place (SASS
/// F2FP ... R.H1), where e4m3x2ToHalf2(w >> 16) costs a shift first.
__device__ __forceinline__ void e4m3x4ToHalf2x2(unsigned w, unsigned &lo, unsigned &hi) {
  asm("{\n\t.reg .b16 l, h;\n\tmov.b32 {l, h}, %2;\n\tcvt.rn.f16x2.e4m3x2 %0, l;\n\t"
      "cvt.rn.f16x2.e4m3x2 %1, h;\n\t}"
      : "=r"(lo), "=r"(hi)
      : "r"(w));
}

/// d = A x B + c for one 16 x 8 x 16 f16 tile with fp32 accumulation.
__device__ __forceinline__ void mmaF16(float *d, unsigned a0, unsigned a1, unsigned a2,
                                       unsigned a3, unsigned b0, unsigned b1, const float *c) {
  asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
      "{%8,%9}, {%10,%11,%12,%13};"
      : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1), "f"(c[0]), "f"(c[1]), "f"(c[2]),
        "f"(c[3]));
}

/// The exact products of one 32-K block, summed on the tensor cores: lane
/// (g, t) holds the block's bytes [8t, 8t + 8) of weight rows g (wg) and
/// g + 8 (wg8) and of activation row g (act), as E4M3 codes in two words
/// each (bytes 0-3, 4-7). Word 0 feeds one m16n8k16 f16 mma, word 1 a second
/// one chained on its fp32 result, so the 32 k are each used once (any
/// assignment of a block's k to mma k slots is the same dot). FP8 MMA is not
/// used: Hopper's E4M3 tensor-core accumulation keeps fewer bits than fp32,
/// which moved near-tied indexer selections out of the golden gates.
__device__ __forceinline__ void blockMma(float *d, const unsigned *wg, const unsigned *wg8,
                                         const unsigned *act) {
  const float zero[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  float d0[4];
  mmaF16(d0, e4m3x2ToHalf2(wg[0] & 0xffffu), e4m3x2ToHalf2(wg8[0] & 0xffffu),
         e4m3x2ToHalf2(wg[0] >> 16), e4m3x2ToHalf2(wg8[0] >> 16), e4m3x2ToHalf2(act[0] & 0xffffu),
         e4m3x2ToHalf2(act[0] >> 16), zero);
  mmaF16(d, e4m3x2ToHalf2(wg[1] & 0xffffu), e4m3x2ToHalf2(wg8[1] & 0xffffu),
         e4m3x2ToHalf2(wg[1] >> 16), e4m3x2ToHalf2(wg8[1] >> 16), e4m3x2ToHalf2(act[1] & 0xffffu),
         e4m3x2ToHalf2(act[1] >> 16), d0);
}

/// blockMma on the FP8 tensor cores: one m16n8k32 E4M3 mma (sm_89+) of the
/// same bytes (A words: rows g, g + 8 x bytes [8t, 8t + 4), then [8t + 4,
/// 8t + 8); B: the activation's, so every k meets its own activation). Fewer
/// instructions than the f16 pair, but Hopper's FP8 accumulation keeps fewer
/// bits than fp32: only where a caller opts in (CudaOptions::moeE4m3Mma).
__device__ __forceinline__ void blockMmaE4m3(float *d, const unsigned *wg, const unsigned *wg8,
                                             const unsigned *act) {
  asm("mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
      "{%8,%9}, {%10,%11,%12,%13};"
      : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
      : "r"(wg[0]), "r"(wg8[0]), "r"(wg[1]), "r"(wg8[1]), "r"(act[0]), "r"(act[1]), "f"(0.0f),
        "f"(0.0f), "f"(0.0f), "f"(0.0f));
}

/// One warp's share of kMats tiles that share their activations: for each
/// matrix x, weight rows wG[x] (the lane's row g) and wG8[x] (row g + 8),
/// their scale rows sG[x] / sG8[x], activation rows m0 .. m0 + rows - 1
/// (rows <= 8) of codes [., K] / scales [., K/32], K blocks [j0, j1). Adds
/// to acc[x]: [0], [1] = (row g; activation rows m0 + 2t, m0 + 2t + 1), [2],
/// [3] = the same for row g + 8. kFp4: rows hold K/2 bytes of E2M1. Several
/// matrices in one loop (MoE w1 and w3) keep more loads in flight.
template <bool kFp4, int kMats, bool kE4m3Mma = false>
__device__ __forceinline__ void tileDotsN(const unsigned char *const *wG,
                                          const unsigned char *const *wG8,
                                          const unsigned char *const *sG,
                                          const unsigned char *const *sG8,
                                          const unsigned char *codes, const float *scales,
                                          long long K, long long m0, int rows, long long j0,
                                          long long j1, float (*acc)[4]) {
  const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  const long long kb = K / 32;
  const bool feeds = g < rows, c0 = 2 * t < rows, c1 = 2 * t + 1 < rows;
  const unsigned char *arow = codes + (m0 + (feeds ? g : 0)) * K + 8 * t;
  const float *as0 = scales + (m0 + (c0 ? 2 * t : 0)) * kb;
  const float *as1 = scales + (m0 + (c1 ? 2 * t + 1 : 0)) * kb;
#pragma unroll 4
  for (long long j = j0; j < j1; ++j) {
    unsigned wg[kMats][2], wg8[kMats][2]; // E4M3 bytes [8t, 8t + 8) of rows g, g + 8
#pragma unroll
    for (int x = 0; x < kMats; ++x) {
      if (kFp4) {
        const unsigned w0 = __ldg(reinterpret_cast<const unsigned *>(wG[x] + j * 16 + 4 * t));
        const unsigned w1 = __ldg(reinterpret_cast<const unsigned *>(wG8[x] + j * 16 + 4 * t));
        e2m1x8ToE4m3(w0, wg[x][0], wg[x][1]);
        e2m1x8ToE4m3(w1, wg8[x][0], wg8[x][1]);
      } else {
        const uint2 w0 = __ldg(reinterpret_cast<const uint2 *>(wG[x] + j * 32 + 8 * t));
        const uint2 w1 = __ldg(reinterpret_cast<const uint2 *>(wG8[x] + j * 32 + 8 * t));
        wg[x][0] = w0.x;
        wg[x][1] = w0.y;
        wg8[x][0] = w1.x;
        wg8[x][1] = w1.y;
      }
    }
    unsigned act[2] = {0u, 0u};
    if (feeds) {
      const uint2 b = *reinterpret_cast<const uint2 *>(arow + j * 32);
      act[0] = b.x;
      act[1] = b.y;
    }
    const float a0s = c0 ? as0[j] : 0.0f, a1s = c1 ? as1[j] : 0.0f;
#pragma unroll
    for (int x = 0; x < kMats; ++x) {
      float d[4];
      if (kE4m3Mma)
        blockMmaE4m3(d, wg[x], wg8[x], act);
      else
        blockMma(d, wg[x], wg8[x], act);
      const float ws0 = ue8m0ToFloat(sG[x][j]), ws1 = ue8m0ToFloat(sG8[x][j]);
      if (c0) {
        acc[x][0] = __fadd_rn(acc[x][0], __fmul_rn(__fmul_rn(d[0], a0s), ws0));
        acc[x][2] = __fadd_rn(acc[x][2], __fmul_rn(__fmul_rn(d[2], a0s), ws1));
      }
      if (c1) {
        acc[x][1] = __fadd_rn(acc[x][1], __fmul_rn(__fmul_rn(d[1], a1s), ws0));
        acc[x][3] = __fadd_rn(acc[x][3], __fmul_rn(__fmul_rn(d[3], a1s), ws1));
      }
    }
  }
}

/// tileDotsN for one matrix.
template <bool kFp4, bool kE4m3Mma = false>
__device__ __forceinline__ void tileDots(const unsigned char *wG, const unsigned char *wG8,
                                         const unsigned char *sG, const unsigned char *sG8,
                                         const unsigned char *codes, const float *scales,
                                         long long K, long long m0, int rows, long long j0,
                                         long long j1, float *acc) {
  tileDotsN<kFp4, 1, kE4m3Mma>(&wG, &wG8, &sG, &sG8, codes, scales, K, m0, rows, j0, j1,
                               reinterpret_cast<float(*)[4]>(acc));
}

/// This warp's contiguous share [j0, j1) of kb K blocks split over the
/// block's warps.
__device__ __forceinline__ void warpBlocks(long long kb, long long &j0, long long &j1) {
  const long long warps = blockDim.x >> 5, per = (kb + warps - 1) / warps;
  j0 = (threadIdx.x >> 5) * per;
  j0 = j0 < kb ? j0 : kb;
  j1 = j0 + per < kb ? j0 + per : kb;
}

/// Sums the warps' acc[4] in warp order (deterministic) through `comb`
/// (shared, float[warps * 32 * 4]); warp 0's lanes get the totals. All
/// threads of the block must call it; it ends with a barrier.
__device__ __forceinline__ void combineWarps(float *acc, float *comb) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  for (int i = 0; i < 4; ++i)
    comb[(warp * 32 + lane) * 4 + i] = acc[i];
  __syncthreads();
  if (warp == 0)
    for (int i = 0; i < 4; ++i) {
      float v = comb[lane * 4 + i];
      for (int w = 1; w < warps; ++w)
        v = __fadd_rn(v, comb[(w * 32 + lane) * 4 + i]);
      acc[i] = v;
    }
  __syncthreads();
}

/// Bytes of combineWarps' buffer for kWarps warps.
constexpr int kCombineBytes = dsc::abi::kGemvCombineBytes;

/// The tensor-core block-scaled GEMV/GEMM: y[m, n] = bf16(sum) for x [M, K]
/// and W [N, K] (FP8, scales [ceil(N/32), K/32]) or [N, K/2] (kFp4, scales
/// [N, K/32]). One block per tile of 16 weight rows x 8 activation rows,
/// grid-strided; its warps split K and are combined in warp order (splits >
/// 1: `splits` blocks share a tile's K and write fp32 partials). x !=
/// null: the block act_quants x into dynamic shared memory first
/// (quantBytes(M, K) + kCombineBytes); else codes/scales are global and the
/// dynamic shared memory is kCombineBytes. All threads must call it.
template <bool kFp4>
__device__ void tcGemv(const unsigned short *x, const unsigned char *gCodes, const float *gScales,
                       long long M, long long K, const unsigned char *w,
                       const unsigned char *wScale, long long N, unsigned short *y,
                       long long splits, float *partial) {
  extern __shared__ __align__(16) unsigned char gemvSmem[];
  const unsigned char *codes = gCodes;
  const float *scales = gScales;
  float *comb = reinterpret_cast<float *>(gemvSmem);
  if (x) {
    comb = reinterpret_cast<float *>(gemvSmem + quantBytes(M, K));
    quantizeToShared(x, M, K, gemvSmem);
    codes = gemvSmem;
    scales = reinterpret_cast<const float *>(gemvSmem + M * K);
  }
  const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  const long long kb = K / 32, rowBytes = kFp4 ? K / 2 : K;
  const long long nTiles = (N + 15) / 16, mTiles = (M + 7) / 8;
  // Split K over `splits` blocks per tile (small N): K blocks [k0, k1) of
  // this split, then this warp's share of them.
  const long long perSplit = (kb + splits - 1) / splits;
  for (long long item = blockIdx.x; item < nTiles * mTiles * splits; item += gridDim.x) {
    const long long tile = item / splits, split = item - tile * splits;
    const long long k0 = split * perSplit < kb ? split * perSplit : kb;
    const long long k1 = k0 + perSplit < kb ? k0 + perSplit : kb;
    long long j0, j1;
    warpBlocks(k1 - k0, j0, j1);
    j0 += k0;
    j1 += k0;
    const long long n0 = (tile / mTiles) * 16, m0 = (tile % mTiles) * 8;
    const int rows = (int)(M - m0 < 8 ? M - m0 : 8);
    const long long rG = n0 + g < N ? n0 + g : N - 1, rG8 = n0 + g + 8 < N ? n0 + g + 8 : N - 1;
    const unsigned char *sG = wScale + (kFp4 ? rG : rG / 32) * kb;
    const unsigned char *sG8 = wScale + (kFp4 ? rG8 : rG8 / 32) * kb;
    float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    tileDots<kFp4>(w + rG * rowBytes, w + rG8 * rowBytes, sG, sG8, codes, scales, K, m0, rows, j0,
                   j1, acc);
    combineWarps(acc, comb);
    if ((threadIdx.x >> 5) == 0)
      for (int i = 0; i < 4; ++i) {
        const long long n = n0 + g + (i >= 2 ? 8 : 0), m = m0 + 2 * t + (i & 1);
        if (n < N && m < M) {
          if (splits > 1)
            partial[(split * M + m) * N + n] = acc[i];
          else
            y[m * N + n] = bf16FromFloat(acc[i]);
        }
      }
  }
}

/// The split-K tail of tcGemv: y[i] = bf16(sum over splits of partial[s][i]),
/// splits in order (deterministic). One thread per output, grid-strided.
__device__ void splitKReduce(const float *partial, long long splits, long long MN,
                             unsigned short *y) {
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < MN;
       i += (long long)gridDim.x * blockDim.x) {
    float v = partial[i];
    for (long long s = 1; s < splits; ++s)
      v = __fadd_rn(v, partial[s * MN + i]);
    y[i] = bf16FromFloat(v);
  }
}

/// Rows of the pass starting at m0 of M.
__device__ __forceinline__ int passRows(long long M, long long m0) {
  return (int)(M - m0 < kRowsPerPass ? M - m0 : kRowsPerPass);
}

/// The FP8 block-scaled GEMV: W [N, K] E4M3, scales [ceil(N/32), K/32].
/// splits > 1: fp32 partials [splits, M, N] for splitKReduce instead of y.
__device__ void fp8Gemv(const unsigned short *x, const unsigned char *codes, const float *scales,
                        long long M, long long K, const unsigned char *w,
                        const unsigned char *wScale, long long N, unsigned short *y,
                        long long splits, float *partial) {
  tcGemv<false>(x, codes, scales, M, K, w, wScale, N, y, splits, partial);
}

/// The FP4 block-scaled GEMV: W [N, K/2] E2M1, scales [N, K/32].
__device__ void fp4Gemv(const unsigned short *x, const unsigned char *codes, const float *scales,
                        long long M, long long K, const unsigned char *w,
                        const unsigned char *wScale, long long N, unsigned short *y,
                        long long splits, float *partial) {
  tcGemv<true>(x, codes, scales, M, K, w, wScale, N, y, splits, partial);
}

/// Weight chunks (16 bytes) per lane in flight for bf16 GEMVs of few output
/// rows (a warp per row, the rows fewer than the GPU's warps). Session 16:
/// the MoE gate's scores took 12 us for 3.9 MB with 8 and with 20 (one
/// round for K = 5120): the activation chunk of each FMA was loaded after
/// the one before, so a single-row pass now loads them with the weights.
constexpr int kFewRowLoads = 8;

/// The bf16 GEMV loop every warp-per-row entry shares: one warp per output
/// row n < N (grid-strided), activation rows in passes of kRowsPerPass;
/// bf16RowDots<kChunkLoads> of weight row wRow(n) (K bf16) with the rows of
/// xBase(n) (row stride ldx), then lane 0 calls emit(m, n, dot) per row m.
template <int kChunkLoads = 2, typename WRow, typename XBase, typename Emit>
__device__ void bf16RowGemv(long long N, long long M, long long K, long long ldx, WRow wRow,
                            XBase xBase, Emit emit) {
  const int lane = threadIdx.x & 31;
  for (long long n = firstRow(); n < N; n += rowStride())
    for (long long m0 = 0; m0 < M; m0 += kRowsPerPass) {
      const int rows = passRows(M, m0);
      float acc[kRowsPerPass];
      bf16RowDots<kChunkLoads>(wRow(n), xBase(n), ldx, K, m0, rows, acc);
      if (lane == 0)
        for (int r = 0; r < rows; ++r)
          emit(m0 + r, n, acc[r]);
    }
}

/// y[m, n] = bf16(x[m] . W[n]) for bf16 x (row stride ldx) and W [N, K].
template <int kChunkLoads = 2>
__device__ void bf16Gemv(const unsigned short *x, long long ldx, long long M, long long K,
                         const unsigned short *w, long long N, unsigned short *y) {
  bf16RowGemv<kChunkLoads>(
      N, M, K, ldx, [&](long long n) { return w + n * K; }, [&](long long) { return x; },
      [&](long long m, long long n, float v) { y[m * N + n] = bf16FromFloat(v); });
}

} // namespace dsc_gemv

// The entry points every module that launches the quantised GEMV defines
// (a module is compiled on its own, so each names its own copies; the
// adapters' quantizedGemv launches <prefix>_act_quant_fast and
// <prefix>_splitk_reduce_fast next to the GEMV entry):
/// A warp-item GEMV entry (lane_gemv.cuh, slot_gemv.cuh) with the signature
/// of DSC_GEMV_QUANTIZED_ENTRY: `fn` (x, codes, scales, M, K, w, wScale, N,
/// y, splits, partial), two blocks of kGemvWarps warps per SM.
#define DSC_GEMV_WARP_ENTRY(name, fn)                                                         \
  DSC_KERNEL void __launch_bounds__(32 * dsc::abi::kGemvWarps, 2)                             \
      name(const unsigned short *x, const unsigned char *codes, const float *scales,          \
           long long M, long long K, const unsigned char *w, const unsigned char *wScale,     \
           long long N, unsigned short *y, long long splits, float *partial) {                \
    DSC_KERNEL_PROLOGUE();                                                                    \
    fn(x, codes, scales, M, K, w, wScale, N, y, splits, partial);                             \
  }
#define DSC_GEMV_ACT_QUANT_ENTRY(name)                                                         \
  DSC_KERNEL void name(const unsigned short *x, long long M, long long K, unsigned char *codes, \
                       float *scales) {                                                        \
    DSC_KERNEL_PROLOGUE();                                                                    \
    dsc_gemv::quantizeBlocks(x, M * (K / 32), dsc_gemv::firstRow(), dsc_gemv::rowStride(),     \
                             codes, scales);                                                   \
  }
#define DSC_GEMV_SPLITK_REDUCE_ENTRY(name)                                                     \
  DSC_KERNEL void name(const float *partial, long long splits, long long MN, unsigned short *y) { \
    DSC_KERNEL_PROLOGUE();                                                                    \
    dsc_gemv::splitKReduce(partial, splits, MN, y);                                            \
  }
/// `fn` is fp8Gemv or fp4Gemv.
#define DSC_GEMV_QUANTIZED_ENTRY(name, fn)                                                     \
  DSC_KERNEL void name(const unsigned short *x, const unsigned char *codes, const float *scales, \
                       long long M, long long K, const unsigned char *w,                        \
                       const unsigned char *wScale, long long N, unsigned short *y,             \
                       long long splits, float *partial) {                                      \
    DSC_KERNEL_PROLOGUE();                                                                    \
    dsc_gemv::fn(x, codes, scales, M, K, w, wScale, N, y, splits, partial);                     \
  }

#endif // DSC_CODEGEN_KERNELS_GEMV_CUH
