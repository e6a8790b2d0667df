//===- slot_gemv.cuh - Block-slot GEMV tiles: weights as the mma's A -------===//
//
// What: the decode GEMV core for block-scaled FP4 and FP8 weights (W [N, K/2]
// E2M1 with UE8M0 scales [N, K/32]; W [N, K] E4M3 with scales [ceil(N/32),
// K/32]) times act_quant activations (E4M3 codes [., K] + fp32 scales
// [., K/32], gemv.cuh quantizeBlocks), built for the fewest instructions per
// weight byte. lane_gemv.cuh put the weights in the mma's B operand and the
// activations block-diagonally in A, so every mma widened 16 activation
// codes for 8 weight values and the kernels were issue-bound (~144 warp
// instructions per 16 FP4 bytes, docs/perf.md session 7). Here the weights
// are the A operand (16 rows, 8 values per lane per mma) and the
// activations the B operand with one column per (activation row, block
// slot): each mma widens the lane's weights once and two activation codes.
// Layout: one warp computes a tile of 16 weight rows n0 .. n0 + 15 by up to
// 8 activation rows over K blocks [j0, j1), four blocks per step. Lane
// (g = lane / 4, t = lane % 4) loads block j + t of weight rows n0 + g and
// n0 + g + 8 whole (FP4: one 16-byte load per row, FP8: two), so the mma's
// k slots of lane t (2t, 2t + 1, 2t + 8, 2t + 9) always hold block j + t.
// B column c = 4q + s belongs to activation row 2p + q of pass p and block
// slot s: it holds that row's codes of block j + s in lane s's k slots and
// zeros elsewhere (lane (g, t) feeds column g when g % 4 == t), so C[r][c]
// after the step's eight chained m16n8k16 f16 mmas is exactly block j + s's
// partial of weight row r for that activation row: a block's partial comes
// out of the tensor core as the reference's rounding point, and no byte
// moves between lanes.
//   FP8: E4M3 -> f16x2 by cvt.rn.f16x2.e4m3x2 (exact), word i of the lane's
//   32-byte block feeds mma i (k slots 2t, 2t + 1: bytes 4i, 4i + 1; 2t + 8,
//   2t + 9: bytes 4i + 2, 4i + 3), the activation's word i the same slots.
//   FP4: a nibble word becomes E4M3 bytes of value * 2^-6 (numerics
//   e2m1x8ToE4m3Scaled: even elements, odd elements; exact), then f16x2 as
//   FP8; word u feeds mmas 2u (even) and 2u + 1 (odd), the activation codes
//   permuted alike (__byte_perm); the activation scale carries the 2^6 back
//   (exact: powers of two). E2M1 * 2^-6 and E4M3 are normal f16 values.
// Numerics: per block, acc += (partial * a_s) * w_s in fp32 as the CPU
// reference; the order of the sum over blocks differs (lane (g, t) sums the
// blocks j + 2(t & 1) and j + 2(t & 1) + 1 of every step in K order, then
// lanes t and t ^ 1 are added): deterministic, and a row's result never
// depends on the other rows of the call or on the pass count (a column's
// dot meets only its own B column; every instantiation computes it alike).
// NaN weights poison only their own weight row, NaN codes their own row.
// Invariants: K % 32 == 0; weight rows and codes rows 16-byte aligned (the
// adapters check); tiles of 16 rows start at multiples of 16 (FP8: rows
// n0 + g and n0 + g + 8 share a 32-row scale group).
// Bound: the weight bytes at memory bandwidth (~90 warp instructions per
// 1 KiB of FP4 a warp loads per step; docs/perf.md session 9 measures it).
// Include after common.cuh and gemv.cuh.
//===----------------------------------------------------------------------===//
#ifndef DSC_CODEGEN_KERNELS_SLOT_GEMV_CUH
#define DSC_CODEGEN_KERNELS_SLOT_GEMV_CUH

#include "codegen/kernels/common.cuh"
#include "codegen/kernels/gemv.cuh"

namespace dsc_slots {

/// Weight rows of one warp tile (the mma's 16 A rows).
constexpr int kTileRows = dsc::abi::kSlotTileRows;
/// Activation rows of one tile (four passes of two B column groups).
constexpr int kTileActRows = dsc::abi::kSlotTileActRows;
/// The FP4 decode's 2^-6, carried back by the activation scale.
constexpr float kFp4Unscale = kE2m1ToE4m3ScaledUnscale;

__device__ __forceinline__ unsigned word(const uint4 &v, int i) {
  return i == 0 ? v.x : i == 1 ? v.y : i == 2 ? v.z : v.w;
}
__device__ __forceinline__ unsigned word8(const uint4 *v, int i) {
  return i < 4 ? word(v[0], i) : word(v[1], i - 4);
}
/// A compile-time flag as a type (slotDots' guarded and unguarded loads).
template <bool kValue> struct Bool {
  static constexpr bool value = kValue;
};

/// The operands of one matrix's tile: weight rows n0 + g (w) and n0 + g + 8
/// (w8), FP4: K/2 bytes, FP8: K bytes; their scale rows (FP4: [N, K/32]
/// rows n0 + g, n0 + g + 8; FP8: the tile's 32-row group row, both).
struct Rows {
  const unsigned char *w, *w8, *s, *s8;
};

/// One warp's tile for each of kMats matrices sharing the activations:
/// activation rows m0 .. m0 + rows - 1 (rows <= 2 * kPairs <= 8) of
/// codes [., K] / scales [., K/32], K blocks [j0, j1). Adds to
/// acc[x][p][0] (weight row n0 + g) and acc[x][p][1] (n0 + g + 8) the
/// partial sums of activation row m0 + 2p + (t >> 1) over the blocks of lane
/// parity t & 1; sumSlots then completes them in the lanes with t even.
template <bool kFp4, int kMats, int kPairs>
__device__ __forceinline__ void slotDots(const Rows *mats, const unsigned char *codes,
                                         const float *scales, long long K, long long m0, int rows,
                                         long long j0, long long j1, float (*acc)[kPairs][2]) {
  constexpr int kWLoads = kFp4 ? 1 : 2;
  constexpr long long kBlockBytes = kFp4 ? 16 : 32;
  const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3, hb = 2 * (t & 1);
  const long long kb = K / 32;
  // This lane's B column: activation row 2p + (g >> 2) of pass p, fed when
  // its block slot g % 4 is this lane's block; its C columns 2t, 2t + 1:
  // activation row 2p + (t >> 1), blocks j + hb, j + hb + 1.
  const bool slotLane = (g & 3) == t;
  const unsigned char *arow[kPairs];
  const float *srow[kPairs];
  bool feeds[kPairs], owns[kPairs];
#pragma unroll
  for (int p = 0; p < kPairs; ++p) {
    const int fr = 2 * p + (g >> 2), cr = 2 * p + (t >> 1);
    feeds[p] = slotLane && fr < rows;
    owns[p] = cr < rows;
    arow[p] = codes + (m0 + (feeds[p] ? fr : 0)) * K;
    srow[p] = scales + (m0 + (owns[p] ? cr : 0)) * kb;
  }
  struct Step {
    uint4 w[kMats][2][kWLoads];    // rows g, g + 8: block jq + t
    uint4 a[kPairs][2];            // the fed column's codes of block jq + t
    unsigned char ws[kMats][2][2]; // rows g, g + 8 x blocks jq + hb, + 1
    float as[kPairs][2];           // activation row of the C columns x blocks
  };
  // kGuard: the step may reach past j1 (the range's last, partial step);
  // full steps load without conditions.
  auto load = [&](auto guard, long long jq, Step &st) {
    constexpr bool kGuard = decltype(guard)::value;
    const long long jl = jq + t;
    const bool in = !kGuard || jl < j1;
#pragma unroll
    for (int x = 0; x < kMats; ++x) {
#pragma unroll
      for (int u = 0; u < kWLoads; ++u) {
        st.w[x][0][u] = in ? dsc_gemv::load16(mats[x].w + jl * kBlockBytes + 16 * u)
                           : dsc_gemv::zero16();
        st.w[x][1][u] = in ? dsc_gemv::load16(mats[x].w8 + jl * kBlockBytes + 16 * u)
                           : dsc_gemv::zero16();
      }
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const long long jd = jq + hb + h;
        const bool on = !kGuard || jd < j1;
        st.ws[x][0][h] = on ? __ldg(mats[x].s + jd) : (unsigned char)0;
        st.ws[x][1][h] = on ? __ldg(mats[x].s8 + jd) : (unsigned char)0;
      }
    }
#pragma unroll
    for (int p = 0; p < kPairs; ++p) {
      const bool on = feeds[p] && in;
      const uint4 *src = reinterpret_cast<const uint4 *>(arow[p] + jl * 32);
      st.a[p][0] = on ? src[0] : dsc_gemv::zero16();
      st.a[p][1] = on ? src[1] : dsc_gemv::zero16();
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const long long jd = jq + hb + h;
        st.as[p][h] = owns[p] && (!kGuard || jd < j1) ? srow[p][jd] : 0.0f;
      }
    }
  };
  auto compute = [&](const Step &cur) {
    float c[kMats][kPairs][4] = {}; // the step's block partials start at zero
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      unsigned b0[kPairs], b1[kPairs];
#pragma unroll
      for (int p = 0; p < kPairs; ++p) {
        unsigned aw;
        if (kFp4) { // word i / 2's elements, even (i even) or odd
          const unsigned c0 = word8(cur.a[p], i & ~1), c1 = word8(cur.a[p], (i & ~1) + 1);
          aw = __byte_perm(c0, c1, (i & 1) ? 0x7531 : 0x6420);
        } else {
          aw = word8(cur.a[p], i);
        }
        dsc_gemv::e4m3x4ToHalf2x2(aw, b0[p], b1[p]);
      }
#pragma unroll
      for (int x = 0; x < kMats; ++x) {
        unsigned wg, wg8;
        if (kFp4) {
          const E4m3Pair e = e2m1x8ToE4m3Scaled(word(cur.w[x][0][0], i >> 1));
          const E4m3Pair e8 = e2m1x8ToE4m3Scaled(word(cur.w[x][1][0], i >> 1));
          wg = (i & 1) ? e.odd : e.even;
          wg8 = (i & 1) ? e8.odd : e8.even;
        } else {
          wg = word8(cur.w[x][0], i);
          wg8 = word8(cur.w[x][1], i);
        }
        unsigned a0, a1, a2, a3;
        dsc_gemv::e4m3x4ToHalf2x2(wg, a0, a2);
        dsc_gemv::e4m3x4ToHalf2x2(wg8, a1, a3);
#pragma unroll
        for (int p = 0; p < kPairs; ++p)
          dsc_gemv::mmaF16(c[x][p], a0, a1, a2, a3, b0[p], b1[p], c[x][p]);
      }
    }
    // C[g][2t + h] / C[g + 8][2t + h]: block jq + hb + h of rows g, g + 8.
#pragma unroll
    for (int p = 0; p < kPairs; ++p) {
      float as[2];
#pragma unroll
      for (int h = 0; h < 2; ++h)
        as[h] = kFp4 ? __fmul_rn(cur.as[p][h], kFp4Unscale) : cur.as[p][h];
#pragma unroll
      for (int x = 0; x < kMats; ++x)
#pragma unroll
        for (int r = 0; r < 2; ++r)
#pragma unroll
          for (int h = 0; h < 2; ++h)
            acc[x][p][r] =
                __fadd_rn(acc[x][p][r], __fmul_rn(__fmul_rn(c[x][p][2 * r + h], as[h]),
                                                  ue8m0ToFloat(cur.ws[x][r][h])));
    }
  };
  using Full = dsc_slots::Bool<false>;
  using Tail = dsc_slots::Bool<true>;
  // Full steps [j0, full), then at most one partial step. Up to two passes
  // the next step's operands load while this one computes (two buffers in
  // turn, no copies); more passes would spill at 16 warps per SM.
  const long long full = j0 + ((j1 - j0) / 4) * 4;
  long long jq = j0;
  Step s0, s1;
  constexpr int kAheadRegs = kMats * 2 * kWLoads * 4 + kPairs * 8;
  if (kAheadRegs <= 24) {
    if (jq < full)
      load(Full(), jq, s0);
    while (jq < full) {
      if (jq + 4 < full)
        load(Full(), jq + 4, s1);
      compute(s0);
      jq += 4;
      if (jq >= full)
        break;
      if (jq + 4 < full)
        load(Full(), jq + 4, s0);
      compute(s1);
      jq += 4;
    }
  } else {
    for (; jq < full; jq += 4) {
      load(Full(), jq, s0);
      compute(s0);
    }
  }
  if (jq < j1) {
    load(Tail(), jq, s0);
    compute(s0);
  }
}

/// Completes slotDots' sums: lanes t and t ^ 1 hold the two block parities
/// of the same (weight row, activation row); afterwards both hold the total.
template <int kN> __device__ __forceinline__ void sumSlots(float *v) {
#pragma unroll
  for (int i = 0; i < kN; ++i)
    v[i] = __fadd_rn(v[i], __shfl_xor_sync(0xffffffffu, v[i], 1));
}

/// slotDots with the pass count picked from `rows` at run time (every
/// instantiation computes a row alike); acc [kMats][4][2].
template <bool kFp4, int kMats>
__device__ __forceinline__ void slotDotsRows(const Rows *mats, const unsigned char *codes,
                                             const float *scales, long long K, long long m0,
                                             int rows, long long j0, long long j1,
                                             float (*acc)[4][2]) {
  if (rows <= 2)
    slotDots<kFp4, kMats, 1>(mats, codes, scales, K, m0, rows, j0, j1,
                             reinterpret_cast<float(*)[1][2]>(acc));
  else if (rows <= 4)
    slotDots<kFp4, kMats, 2>(mats, codes, scales, K, m0, rows, j0, j1,
                             reinterpret_cast<float(*)[2][2]>(acc));
  else
    slotDots<kFp4, kMats, 4>(mats, codes, scales, K, m0, rows, j0, j1, acc);
}

/// The tile's operand rows for weight rows from n0 of W (rows clamped to
/// N - 1: their sums are computed and not stored).
template <bool kFp4>
__device__ __forceinline__ Rows tileRows(const unsigned char *w, const unsigned char *wScale,
                                         long long N, long long K, long long n0) {
  const int g = (threadIdx.x & 31) >> 2;
  const long long kb = K / 32, rowBytes = kFp4 ? K / 2 : K;
  const long long r = n0 + g < N ? n0 + g : N - 1, r8 = n0 + g + 8 < N ? n0 + g + 8 : N - 1;
  return Rows{w + r * rowBytes, w + r8 * rowBytes, wScale + (kFp4 ? r : r / 32) * kb,
              wScale + (kFp4 ? r8 : r / 32) * kb};
}

/// The block-slot GEMV/GEMM: y[m, n] = bf16(sum) for x [M, K] and W [N, K]
/// (FP8, scales [ceil(N/32), K/32]) or [N, K/2] (kFp4, scales [N, K/32]);
/// one warp per item (16 weight rows x 8 activation rows x one of `splits`
/// K ranges), grid-strided; splits > 1: fp32 partials [splits, M, N] for
/// dsc_gemv::splitKReduce. x != null: the block act_quants x into dynamic
/// shared memory first (dsc_gemv::quantBytes(M, K)), else codes/scales are
/// global. All threads must call it (the staging barrier).
template <bool kFp4>
__device__ void slotGemv(const unsigned short *x, const unsigned char *gCodes,
                         const float *gScales, long long M, long long K, const unsigned char *w,
                         const unsigned char *wScale, long long N, unsigned short *y,
                         long long splits, float *partial) {
  extern __shared__ __align__(16) unsigned char slotSmem[];
  const dsc_gemv::Codes act = dsc_gemv::stageCodes(x, gCodes, gScales, M, K, slotSmem);
  const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  const long long kb = K / 32;
  const long long nTiles = (N + kTileRows - 1) / kTileRows,
                  mTiles = (M + kTileActRows - 1) / kTileActRows;
  // Whole steps of four blocks per split (only the last may end short).
  const long long perSplit = ((kb + splits - 1) / splits + 3) / 4 * 4;
  for (long long item = dsc_gemv::firstRow(); item < nTiles * mTiles * splits;
       item += dsc_gemv::rowStride()) {
    const long long tile = item / splits, split = item - tile * splits;
    const long long k0 = split * perSplit < kb ? split * perSplit : kb;
    const long long k1 = k0 + perSplit < kb ? k0 + perSplit : kb;
    const long long n0 = (tile / mTiles) * kTileRows, m0 = (tile % mTiles) * kTileActRows;
    const int rows = (int)(M - m0 < kTileActRows ? M - m0 : kTileActRows);
    const Rows mat = tileRows<kFp4>(w, wScale, N, K, n0);
    float acc[1][4][2] = {};
    slotDotsRows<kFp4, 1>(&mat, act.codes, act.scales, K, m0, rows, k0, k1, acc);
    sumSlots<8>(&acc[0][0][0]);
    if ((t & 1) == 0) {
#pragma unroll
      for (int p = 0; p < 4; ++p)
#pragma unroll
        for (int r = 0; r < 2; ++r) {
          const long long m = m0 + 2 * p + (t >> 1), n = n0 + g + 8 * r;
          if (m < m0 + rows && n < N) {
            if (splits > 1)
              partial[(split * M + m) * N + n] = acc[0][p][r];
            else
              y[m * N + n] = bf16FromFloat(acc[0][p][r]);
          }
        }
    }
  }
}

} // namespace dsc_slots

/// A block-slot GEMV entry with the signature of DSC_GEMV_QUANTIZED_ENTRY
/// (the adapters' quantizedGemv launches `<name>` for `<prefix>_fast`'s
/// `_slots` twin); kFp4: the weight format.
#define DSC_SLOT_GEMV_ENTRY(name, kFp4) DSC_GEMV_WARP_ENTRY(name, dsc_slots::slotGemv<kFp4>)

#endif // DSC_CODEGEN_KERNELS_SLOT_GEMV_CUH
