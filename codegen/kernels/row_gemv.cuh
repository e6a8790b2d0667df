//===- row_gemv.cuh - Row-lane GEMV tiles: each lane streams its own row ---===//
//
// What: the decode GEMV core for block-scaled FP4 and FP8 weights (W [N, K/2]
// E2M1 with UE8M0 scales [N, K/32]; W [N, K] E4M3 with scales [ceil(N/32),
// K/32]) times act_quant activations, one activation row at a time (the MoE
// steps: one token per item), built so that a weight byte costs as few
// instructions as possible. lane_gemv.cuh spends ~144 warp instructions per
// 16 FP4 bytes a lane loads, most of them widening its block-diagonal
// activation operand (E4M3 -> f16) once per mma and per weight tile: it is
// issue-bound at ~54% of the copy bandwidth. Here the activation is widened
// once per block (staged as f16 in shared memory) and only the weights are
// converted, once.
// Layout: a warp computes 8 weight rows n0 .. n0 + 7 (lane g = lane / 4 holds
// row n0 + g) over K blocks [j0, j1), eight blocks per step: lane group t =
// lane % 4 takes blocks jt = j0 + 8s + 2t and jt + 1 of its row whole (FP4:
// two 16-byte loads, FP8: four; the four groups read 128 contiguous bytes of
// a row per step). The lane's weights are the A operand of eight f16 mma
// m16n8k16 (A row g: block jt, A row g + 8: block jt + 1, the lane's four k
// slots 2t, 2t + 1, 2t + 8, 2t + 9 holding four elements of each); the
// activations are the B operand, lane-diagonal: column 2t + x holds
// activation block jt + x in group t's k slots and zeros elsewhere, so
// D[g][2t] is exactly block jt's partial of lane (g, t)'s row and D[g + 8][2t
// + 1] block jt + 1's, both in the lane's own accumulator (c0 and c3; c1 and
// c2 mix a block with the other block's activations and are dropped). Only
// lanes (g = 2t + x, t) hold B columns (the "providers": lanes 0, 4, 9, 13,
// 18, 22, 27, 31); they load activation block jt + x, 64 bytes of f16, per
// step. Every lane thus reads whole rows, no byte moves between lanes, and a
// block's partial comes out of the tensor core as the reference's rounding
// point.
//   FP4: a nibble becomes an E4M3 byte of value * 2^-6 (numerics
//   e2m1x8ToE4m3Scaled, exact), then f16 (cvt.rn.f16x2.e4m3x2, exact); the
//   pairs come out as elements (0, 2), (4, 6), (1, 3), (5, 7) of a word, so
//   the providers permute their f16 pairs the same way; the activation scale
//   carries the 2^6 back (exact: powers of two).
//   FP8: E4M3 -> f16 (exact), pairs in element order.
// Numerics: per block, acc += (partial * a_s) * w_s in fp32 as the CPU
// reference (the block partial is the tensor core's fp32 sum of exact
// products over the block's eight chained mma); each lane sums its blocks in
// K order, then a fixed xor tree over the four groups: deterministic, and a
// row's result never depends on the other rows of the call or on the call's
// row count (the MoE steps take one token per item; a token's bytes are the
// same at T = 1 and T > 1).
// Invariants: K % 32 == 0; weight rows 16-byte aligned; the staged f16 rows
// (or the global codes rows) 16-byte aligned.
// Bound: the weight bytes at memory bandwidth (FP4: ~60 warp instructions per
// 16 bytes a lane loads, less than half of lane_gemv's).
// Include after common.cuh and gemv.cuh.
//===----------------------------------------------------------------------===//
#ifndef DSC_CODEGEN_KERNELS_ROW_GEMV_CUH
#define DSC_CODEGEN_KERNELS_ROW_GEMV_CUH

#include "codegen/kernels/common.cuh"
#include "codegen/kernels/gemv.cuh"

namespace dsc_rows {

/// Weight rows of one warp (the lane tiles' 8: the same items and splits).
constexpr int kTileRows = dsc::abi::kLaneTileRows;
/// K blocks of one warp step (four lane groups x two blocks).
constexpr int kStepBlocks = 8;
/// Steps ahead of its loads that each lane asks L2 for its row's bytes
/// (prefetch.global.L2, no register or shared memory held): more bytes in
/// flight per warp than the one step its registers hold. 0: none. A
/// compile-time knob (dsc-kernel-bench --define DSC_ROW_PREFETCH_STEPS=D);
/// it changes no result bit (a prefetch only moves bytes into L2). Measured
/// slower (H100, session 21, docs/perf.md): D = 4 / 8 cost the MoE up 4 / 11
/// us of 55.6 and rw6 3-6% per step, so it stays off.
#ifndef DSC_ROW_PREFETCH_STEPS
#define DSC_ROW_PREFETCH_STEPS 0
#endif
constexpr int kPrefetchSteps = DSC_ROW_PREFETCH_STEPS;
/// The FP4 decode's 2^-6 (numerics e2m1x8ToE4m3Scaled), carried back by
/// the activation scale.
constexpr float kFp4Unscale = kE2m1ToE4m3ScaledUnscale;

/// The activation operand: rows of f16 values of the act_quant codes
/// (staged in shared memory by stageHalf) or, when half is null, the E4M3
/// codes themselves (global: the providers widen them per step); the fp32
/// block scales either way. Both give the same f16 values (the widening is
/// exact), so a row's bytes do not depend on which one a launch used.
struct Acts {
  const unsigned short *half;
  const unsigned char *codes;
  const float *scales;
};

/// Bytes stageHalf takes for [M, K]: f16 values (M*K*2), then the scales
/// (GemvLaunch.h rowHalfBytes).
__device__ __forceinline__ long long halfBytes(long long M, long long K) {
  return M * K * 2 + M * (K / 32) * 4;
}

/// The f16 of one E4M3 code (exact).
__device__ __forceinline__ unsigned short e4m3ToHalf(unsigned char c) {
  return (unsigned short)(dsc_gemv::e4m3x2ToHalf2(c) & 0xffffu);
}

/// The launch's dynamic shared memory in bytes.
__device__ __forceinline__ unsigned dynamicSmemBytes() {
  unsigned n;
  asm("mov.u32 %0, %%dynamic_smem_size;" : "=r"(n));
  return n;
}

/// The activation operand of a launch, staged in `smem` as f16 values of
/// the codes and then the scales (at smem + M*K*2) when the launch has
/// halfBytes(M, K) of dynamic shared memory: x non-null: act_quant of x [M,
/// K] (bit for bit gemv.cuh quantizeBlocks); else the global codes/scales
/// widened. Without that memory: the global codes/scales as they are (x must
/// then be null: a launch that breaks this traps rather than read null codes). Ends with a barrier when it staged; all threads of the
/// block must call it.
__device__ Acts stageHalf(const unsigned short *x, const unsigned char *gCodes,
                          const float *gScales, long long M, long long K, unsigned char *smem) {
  if ((long long)dynamicSmemBytes() < halfBytes(M, K)) {
    if (x)
      __trap(); // the host quantises in blocks only when the staging fits (GemvLaunch.h)
    return Acts{nullptr, gCodes, gScales};
  }
  unsigned short *half = reinterpret_cast<unsigned short *>(smem);
  float *scales = reinterpret_cast<float *>(smem + M * K * 2);
  if (!x) {
    for (long long i = threadIdx.x; i < M * K / 4; i += blockDim.x) {
      const unsigned w = reinterpret_cast<const unsigned *>(gCodes)[i];
      unsigned lo, hi;
      dsc_gemv::e4m3x4ToHalf2x2(w, lo, hi);
      reinterpret_cast<uint2 *>(half)[i] = make_uint2(lo, hi);
    }
    for (long long i = threadIdx.x; i < M * (K / 32); i += blockDim.x)
      scales[i] = gScales[i];
    __syncthreads();
    return Acts{half, nullptr, scales};
  }
  // quantizeBlocksTo stores a code byte through *code(b, lane): this
  // reference stores its f16 instead.
  struct HalfRef {
    unsigned short *p;
    __device__ void operator=(unsigned char c) const { *p = e4m3ToHalf(c); }
  };
  struct HalfPtr {
    unsigned short *p;
    __device__ HalfRef operator*() const { return HalfRef{p}; }
  };
  dsc_gemv::quantizeBlocksTo(
      x, M * (K / 32), threadIdx.x >> 5, blockDim.x >> 5,
      [&](long long b, int lane) { return HalfPtr{half + b * 32 + lane}; },
      [&](long long b) { return scales + b; });
  __syncthreads();
  return Acts{half, nullptr, scales};
}

/// Activation block j of row m as 16 f16 pairs in element order (r[2i] =
/// elements 4i, 4i + 1; r[2i + 1] = 4i + 2, 4i + 3).
__device__ __forceinline__ void loadActBlock(const Acts &a, long long K, long long m, long long j,
                                             unsigned (&r)[16]) {
  if (a.half) {
    const uint4 *p = reinterpret_cast<const uint4 *>(a.half + m * K + j * 32);
#pragma unroll
    for (int u = 0; u < 4; ++u) {
      const uint4 v = p[u];
      r[4 * u] = v.x;
      r[4 * u + 1] = v.y;
      r[4 * u + 2] = v.z;
      r[4 * u + 3] = v.w;
    }
  } else {
    const uint4 *p = reinterpret_cast<const uint4 *>(a.codes + m * K + j * 32);
    const uint4 c0 = __ldg(p), c1 = __ldg(p + 1);
    const unsigned w[8] = {c0.x, c0.y, c0.z, c0.w, c1.x, c1.y, c1.z, c1.w};
#pragma unroll
    for (int i = 0; i < 8; ++i)
      dsc_gemv::e4m3x4ToHalf2x2(w[i], r[2 * i], r[2 * i + 1]);
  }
}

__device__ __forceinline__ unsigned word(const uint4 &v, int i) {
  return i == 0 ? v.x : i == 1 ? v.y : i == 2 ? v.z : v.w;
}

/// One step's weights of a lane: blocks jt and jt + 1 of its row (FP4: one
/// 16-byte load each, FP8: two).
template <bool kFp4> struct StepWeights {
  static constexpr int kLoads = kFp4 ? 1 : 2;
  uint4 w[2][kLoads];
  unsigned char s[2];
};

/// The A operand of mma i (0..7) of one block's weights: the f16 pairs of
/// slots (2t, 2t + 1) and (2t + 8, 2t + 9). FP4 (word i / 2, half i % 2):
/// elements 4i + (0, 2) and 4i + (1, 3); FP8 (word i): 4i + (0, 1), (2, 3).
template <bool kFp4>
__device__ __forceinline__ void blockPairs(const uint4 (&w)[kFp4 ? 1 : 2], int i, unsigned &p0,
                                           unsigned &p1) {
  if (kFp4) {
    const E4m3Pair e = e2m1x8ToE4m3Scaled(word(w[0], i >> 1));
    unsigned e0, e1, o0, o1;
    dsc_gemv::e4m3x4ToHalf2x2(e.even, e0, e1);
    dsc_gemv::e4m3x4ToHalf2x2(e.odd, o0, o1);
    p0 = (i & 1) ? e1 : e0;
    p1 = (i & 1) ? o1 : o0;
  } else {
    dsc_gemv::e4m3x4ToHalf2x2(word(w[i >> 2], i & 3), p0, p1);
  }
}

/// One warp's rows: for each of kMats matrices x sharing the activation,
/// weight row wRow[x] (this lane's row n0 + g; K/2 bytes FP4, K bytes FP8)
/// and its scale row sRow[x] (FP4: [N, K/32] row n0 + g; FP8: the 32-row
/// group's row), activation rows m0 .. m0 + rows - 1 of `a` (rows <=
/// kMaxRows), K blocks [j0, j1). Adds to acc[x][r] the lane's blocks (its
/// group's) of activation row m0 + r; rowTotals then sums the groups. One
/// row (the MoE items, decode) converts each weight word right before its
/// mma; more rows convert a step's weights once into registers and run the
/// eight mma per row (the same operands, hence the same bytes per row).
/// kAhead: the next step's weights load while this one computes (registers).
template <bool kFp4, int kMats, bool kAhead = true, int kMaxRows = 1>
__device__ __forceinline__ void rowDots(const unsigned char *const *wRow,
                                        const unsigned char *const *sRow, const Acts &a,
                                        long long K, long long m0, int rows, long long j0,
                                        long long j1, float (*acc)[kMaxRows]) {
  constexpr long long kBlockBytes = kFp4 ? 16 : 32;
  constexpr int kLoads = StepWeights<kFp4>::kLoads;
  const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3, x = g - 2 * t;
  const bool provider = x == 0 || x == 1;
  const long long kb = K / 32;
  auto load = [&](long long jq, StepWeights<kFp4> (&st)[kMats]) {
#pragma unroll
    for (int mat = 0; mat < kMats; ++mat)
#pragma unroll
      for (int b = 0; b < 2; ++b) {
        const long long j = jq + 2 * t + b;
        const bool on = j < j1;
#pragma unroll
        for (int u = 0; u < kLoads; ++u)
          st[mat].w[b][u] = on ? dsc_gemv::loadStream16(wRow[mat] + j * kBlockBytes + 16 * u)
                               : dsc_gemv::zero16();
        st[mat].s[b] = on ? __ldg(sRow[mat] + j) : (unsigned char)0;
      }
  };
  // Lane (g, t) asks L2 for its own 16 or 32 bytes of step jq's row
  // segment (the warp's four groups cover the segment's lines).
  auto prefetch = [&](long long jq) {
    const long long j = jq + 2 * t;
    if (j < j1)
#pragma unroll
      for (int mat = 0; mat < kMats; ++mat)
        dsc_gemv::prefetchL2(wRow[mat] + j * kBlockBytes);
  };
  if (kPrefetchSteps > 0)
#pragma unroll
    for (int d = 1; d < kPrefetchSteps; ++d)
      prefetch(j0 + d * kStepBlocks);
  StepWeights<kFp4> cur[kMats], nxt[kMats];
  if (kAhead)
    load(j0, cur);
  unsigned act[16];
#pragma unroll
  for (int i = 0; i < 16; ++i)
    act[i] = 0u;
  for (long long jq = j0; jq < j1; jq += kStepBlocks) {
    if (kPrefetchSteps > 0)
      prefetch(jq + kPrefetchSteps * kStepBlocks);
    if (kAhead)
      load(jq + kStepBlocks, nxt);
    else
      load(jq, cur);
    const long long jt = jq + 2 * t;
    // This row's B operand (providers) and block scales (x 2^6 for FP4).
    auto rowOperand = [&](long long m, float (&as)[2]) {
      if (provider && jt + x < j1)
        loadActBlock(a, K, m, jt + x, act);
      else if (provider)
#pragma unroll
        for (int i = 0; i < 16; ++i)
          act[i] = 0u;
#pragma unroll
      for (int b = 0; b < 2; ++b)
        as[b] = jt + b < j1 ? a.scales[m * kb + jt + b] * (kFp4 ? kFp4Unscale : 1.0f) : 0.0f;
    };
    // c0: block jt's partial, c3: block jt + 1's.
    auto fold = [&](float &o, const float (&d)[4], const float (&as)[2], const unsigned char (&ws)[2]) {
      if (jt < j1)
        o = __fadd_rn(o, __fmul_rn(__fmul_rn(d[0], as[0]), ue8m0ToFloat(ws[0])));
      if (jt + 1 < j1)
        o = __fadd_rn(o, __fmul_rn(__fmul_rn(d[3], as[1]), ue8m0ToFloat(ws[1])));
    };
    auto mma = [&](float (&d)[4], unsigned a0, unsigned a1, unsigned a2, unsigned a3, int i) {
      const unsigned r0 = act[2 * i], r1 = act[2 * i + 1];
      const unsigned b0 = kFp4 ? __byte_perm(r0, r1, 0x5410) : r0;
      const unsigned b1 = kFp4 ? __byte_perm(r0, r1, 0x7632) : r1;
      dsc_gemv::mmaF16(d, a0, a1, a2, a3, b0, b1, d);
    };
    if (kMaxRows == 1) {
      float as[2];
      rowOperand(m0, as);
#pragma unroll
      for (int mat = 0; mat < kMats; ++mat) {
        float d[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
        for (int i = 0; i < 8; ++i) {
          unsigned a0, a2, a1, a3;
          blockPairs<kFp4>(cur[mat].w[0], i, a0, a2);
          blockPairs<kFp4>(cur[mat].w[1], i, a1, a3);
          mma(d, a0, a1, a2, a3, i);
        }
        fold(acc[mat][0], d, as, cur[mat].s);
      }
    } else {
#pragma unroll
      for (int mat = 0; mat < kMats; ++mat) {
        unsigned A[8][4];
#pragma unroll
        for (int i = 0; i < 8; ++i) {
          blockPairs<kFp4>(cur[mat].w[0], i, A[i][0], A[i][2]);
          blockPairs<kFp4>(cur[mat].w[1], i, A[i][1], A[i][3]);
        }
#pragma unroll
        for (int r = 0; r < kMaxRows; ++r) {
          if (r >= rows)
            break;
          float as[2], d[4] = {0.0f, 0.0f, 0.0f, 0.0f};
          rowOperand(m0 + r, as);
#pragma unroll
          for (int i = 0; i < 8; ++i)
            mma(d, A[i][0], A[i][1], A[i][2], A[i][3], i);
          fold(acc[mat][r], d, as, cur[mat].s);
        }
      }
    }
    if (kAhead)
#pragma unroll
      for (int mat = 0; mat < kMats; ++mat)
        cur[mat] = nxt[mat];
  }
}

/// Sums the four lane groups' blocks of rowDots (lanes differing in lane
/// bits 0 and 1) by a fixed xor tree: afterwards the four lanes of a row
/// hold the same totals (fp32 addition commutes).
template <int kN> __device__ __forceinline__ void rowTotals(float *v) {
#pragma unroll
  for (int i = 0; i < kN; ++i) {
    v[i] = __fadd_rn(v[i], __shfl_xor_sync(0xffffffffu, v[i], 1));
    v[i] = __fadd_rn(v[i], __shfl_xor_sync(0xffffffffu, v[i], 2));
  }
}

/// The row-lane GEMV: y[m, n] = bf16(sum) for x [M, K] and W [N, K] (FP8,
/// scales [ceil(N/32), K/32]) or [N, K/2] (kFp4, scales [N, K/32]); one warp
/// per item (8 weight rows x up to 8 activation rows x one of `splits` K
/// ranges: lane_gemv.cuh's items and splits), grid-strided; splits > 1: fp32
/// partials [splits, M, N] for dsc_gemv::splitKReduce. The activations:
/// stageHalf (x non-null: act_quant in the block; needs the launch's
/// staging memory). All threads must call it (the staging barrier).
template <bool kFp4>
__device__ void rowGemv(const unsigned short *x, const unsigned char *gCodes, const float *gScales,
                        long long M, long long K, const unsigned char *w,
                        const unsigned char *wScale, long long N, unsigned short *y,
                        long long splits, float *partial) {
  extern __shared__ __align__(16) unsigned char rowSmem[];
  const Acts a = stageHalf(x, gCodes, gScales, M, K, rowSmem);
  const int lane = threadIdx.x & 31, g = lane >> 2;
  const long long kb = K / 32, rowBytes = kFp4 ? K / 2 : K;
  for (long long item = dsc_gemv::firstRow(); item < dsc_gemv::warpItems(N, M, splits, kTileRows);
       item += dsc_gemv::rowStride()) {
    const dsc_gemv::WarpItem wi = dsc_gemv::warpItem(item, splits, kb, M, kTileRows);
    const long long k0 = wi.k0, k1 = wi.k1, m0 = wi.m0;
    const int rows = wi.rows;
    const long long n = wi.n0 + g, r = n < N ? n : N - 1;
    const unsigned char *wr = w + r * rowBytes, *sr = wScale + (kFp4 ? r : r / 32) * kb;
    float acc[1][8] = {{0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f}};
    if (rows == 1)
      rowDots<kFp4, 1, true, 1>(&wr, &sr, a, K, m0, 1, k0, k1,
                                reinterpret_cast<float(*)[1]>(acc[0]));
    else
      rowDots<kFp4, 1, false, 8>(&wr, &sr, a, K, m0, rows, k0, k1, acc);
    rowTotals<8>(acc[0]);
    if ((lane & 3) == 0 && n < N)
#pragma unroll
      for (int i = 0; i < 8; ++i) {
        if (i >= rows)
          break;
        dsc_gemv::storeOutput(y, partial, splits, wi.split, M, N, m0 + i, n, acc[0][i]);
      }
  }
}

} // namespace dsc_rows

/// A row-lane GEMV entry with the signature of DSC_GEMV_QUANTIZED_ENTRY
/// (the adapters' quantizedGemv launches `<name>` for `<prefix>_fast`'s
/// `_rows` twin); kFp4: the weight format.
#define DSC_ROW_GEMV_ENTRY(name, kFp4) DSC_GEMV_WARP_ENTRY(name, dsc_rows::rowGemv<kFp4>)

#endif // DSC_CODEGEN_KERNELS_ROW_GEMV_CUH
