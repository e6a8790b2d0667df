//===- lane_gemv.cuh - Lane-block GEMV tiles: one 32-K scale block per lane -===//
//
// What: the decode GEMV core for block-scaled FP4 and FP8 weights (W [N, K/2]
// E2M1 with UE8M0 scales [N, K/32]; W [N, K] E4M3 with scales [ceil(N/32),
// K/32]) times act_quant activations (E4M3 codes [., K] + fp32 scales
// [., K/32], gemv.cuh quantizeBlocks), built so that a weight byte costs as
// few instructions as possible (gemv.cuh's tiles spend ~10 per FP4 byte and
// read 4 bytes per load; the MoE kernels ran at 30% of bandwidth on them).
// Layout: one warp computes a tile of 8 weight rows n0 .. n0 + 7 by up to 8
// activation rows over K blocks [j0, j1), four blocks per step. Lane
// (g = lane / 4, t = lane % 4) loads block j + t of weight row n0 + g whole
// with 16-byte loads (FP4: one, FP8: two). The weights are the mma's B operand
// (column g, the k slots of lane t); the activations are its A operand
// block-diagonally: A row 4r + b holds activation row r's block j + b in the
// k slots of lane b (lanes whose g % 4 == t feed them) and zeros elsewhere, so
// D[4r + b][n] is exactly block j + b's partial of weight row n. Every lane
// thus reads whole scale blocks, no byte moves between lanes, and a block's
// partial comes out of the tensor core as the reference's rounding point.
//   FP4: the m16n8k32 E4M3 mma. A nibble becomes an E4M3 byte of value *
//   2^-6 in two logic ops per four values (numerics e2m1x8ToE4m3Scaled:
//   magnitude bits to bits 2-4, sign to bit 7, exact); the activation scale
//   carries the 2^6 back (exact: powers of two). Each step's mma starts from
//   a zero accumulator and the four steps of a block are summed in fp32.
//   (Hopper has no FP8 mma.sync: ptxas lowers each E4M3 m16n8k32 to two f16
//   m16n8k16 after widening the operands, so the products are exact and the
//   accumulation is the f16 path's; measured
//   in session 7, that lowering costs fewer instructions than decoding the
//   nibbles to f16 pairs by hand.)
//   FP8: the m16n8k16 f16 mma after widening (cvt.rn.f16x2.e4m3x2, exact),
//   the eight steps of a block chained in the fp32 accumulator as gemv.cuh.
// Numerics: per block, acc += (partial * a_s) * w_s in fp32 as the CPU
// reference; the order of the sum over blocks differs (each lane sums the
// blocks of its residue j % 4 in K order, then a fixed xor tree over the four
// residues): deterministic, and a row's result never depends on the other
// rows of the call (A rows of other activation rows are zero in its k slots).
// Invariants: K % 32 == 0; weight rows, codes and scale rows as the callers
// pass them (16-byte aligned weight rows and codes rows).
// Bound: the weight bytes at memory bandwidth. Measured (ncu, rw6 decode):
// ~144 warp instructions per 16 FP4 bytes a lane loads, 62% issue-active at
// 14 warps per SM: issue-bound, not memory-bound (docs/perf.md, session 7).
// Include after common.cuh and gemv.cuh.
//===----------------------------------------------------------------------===//
#ifndef DSC_CODEGEN_KERNELS_LANE_GEMV_CUH
#define DSC_CODEGEN_KERNELS_LANE_GEMV_CUH

#include "codegen/kernels/common.cuh"
#include "codegen/kernels/gemv.cuh"

namespace dsc_lanes {

/// Weight rows of one warp tile.
constexpr int kTileRows = dsc::abi::kLaneTileRows;
/// The FP4 decode's 2^-6 (numerics e2m1x8ToE4m3Scaled), carried back by
/// the activation scale.
constexpr float kFp4Unscale = kE2m1ToE4m3ScaledUnscale;

/// d = A x B for one 16 x 8 x 32 E4M3 tile, zero accumulator.
__device__ __forceinline__ void mmaE4m3(float *d, unsigned a0, unsigned a1, unsigned a2,
                                        unsigned a3, unsigned b0, unsigned b1) {
  asm("mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
      "{%8,%9}, {%10,%11,%12,%13};"
      : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1), "f"(0.0f), "f"(0.0f), "f"(0.0f),
        "f"(0.0f));
}

__device__ __forceinline__ unsigned word(const uint4 &v, int i) {
  return i == 0 ? v.x : i == 1 ? v.y : i == 2 ? v.z : v.w;
}

/// Words of one 32-byte block of a lane (codes or FP8 weights).
struct Block32 {
  uint4 lo, hi;
  __device__ __forceinline__ unsigned at(int i) const { return i < 4 ? word(lo, i) : word(hi, i - 4); }
};

/// One warp's tile: for each of kMats matrices x sharing the activations,
/// weight row wRow[x] (this lane's row n0 + g; K/2 bytes FP4, K bytes FP8),
/// the scale rows of weight rows n0 + 2t (sRow0[x]) and n0 + 2t + 1 (sRow1[x])
/// (FP4: [N, K/32] rows; FP8: the 32-row group's row), activation rows m0 ..
/// m0 + rows - 1 (rows <= kMaxRows <= 8) of codes/scales, K blocks [j0, j1).
/// Adds to acc[x][4p + i] the block-residue sums of pass p: i = 0, 1 ->
/// (activation row 4p + r, weight rows n0 + 2t, n0 + 2t + 1), i = 2, 3 ->
/// (4p + r + 2, the same weight rows), r = (lane / 16); reduceResidues then
/// leaves the totals in the lanes with (lane / 4) % 4 == 0.
template <bool kFp4, int kMats, int kMaxRows>
__device__ __forceinline__ void laneDots(const unsigned char *const *wRow,
                                         const unsigned char *const *sRow0,
                                         const unsigned char *const *sRow1,
                                         const unsigned char *codes, const float *scales,
                                         long long K, long long m0, int rows, long long j0,
                                         long long j1, float (*acc)[4 * ((kMaxRows + 3) / 4)]) {
  constexpr int kPasses = (kMaxRows + 3) / 4;
  constexpr int kHalves = kMaxRows > 2 ? 2 : 1; // activation rows 4p + r + 2 in use
  constexpr int kWLoads = kFp4 ? 1 : 2;
  constexpr long long kBlockBytes = kFp4 ? 16 : 32;
  const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3, b = g & 3, r = g >> 2;
  const long long kb = K / 32;
  const bool feeds = b == t;
  const unsigned char *arow[kPasses][kHalves];
  const float *srow[kPasses][kHalves];
  bool av[kPasses][kHalves];
#pragma unroll
  for (int p = 0; p < kPasses; ++p)
#pragma unroll
    for (int h = 0; h < kHalves; ++h) {
      const int ar = 4 * p + r + 2 * h;
      av[p][h] = ar < rows;
      arow[p][h] = codes + (m0 + (av[p][h] ? ar : 0)) * K;
      srow[p][h] = scales + (m0 + (av[p][h] ? ar : 0)) * kb;
    }
  // One step's operands: this lane's weight block jq + t (and, feeding, its
  // activation block), and for the D role the scales of block jq + b. The
  // next step's are loaded while this one computes.
  struct Step {
    uint4 w[kMats][kWLoads];
    Block32 a[kPasses][kHalves];
    unsigned char ws0[kMats], ws1[kMats];
    float as[kPasses][kHalves];
  };
  auto load = [&](long long jq, Step &st) {
    const long long jl = jq + t, jd = jq + b;
#pragma unroll
    for (int x = 0; x < kMats; ++x) {
#pragma unroll
      for (int u = 0; u < kWLoads; ++u)
        st.w[x][u] = jl < j1 ? dsc_gemv::loadStream16(wRow[x] + jl * kBlockBytes + 16 * u)
                             : dsc_gemv::zero16();
      st.ws0[x] = jd < j1 ? __ldg(sRow0[x] + jd) : (unsigned char)0;
      st.ws1[x] = jd < j1 ? __ldg(sRow1[x] + jd) : (unsigned char)0;
    }
#pragma unroll
    for (int p = 0; p < kPasses; ++p)
#pragma unroll
      for (int h = 0; h < kHalves; ++h) {
        const bool on = feeds && jl < j1 && av[p][h];
        const uint4 *src = reinterpret_cast<const uint4 *>(arow[p][h] + (on ? jl : 0) * 32);
        st.a[p][h].lo = on ? src[0] : dsc_gemv::zero16();
        st.a[p][h].hi = on ? src[1] : dsc_gemv::zero16();
        st.as[p][h] = jd < j1 && av[p][h] ? srow[p][h][jd] : 0.0f;
      }
  };
  // Up to 4 activation rows the next step's operands load while this one
  // computes; 8 rows would spill at two blocks per SM (prefill's shapes).
  constexpr bool kAhead = kMaxRows <= 4;
  Step cur, nxt;
  if (kAhead)
    load(j0, cur);
  for (long long jq = j0; jq < j1; jq += 4) {
    if (kAhead)
      load(jq + 4, nxt);
    else
      load(jq, cur);
    float part[kMats][kPasses][4];
#pragma unroll
    for (int x = 0; x < kMats; ++x)
#pragma unroll
      for (int p = 0; p < kPasses; ++p)
#pragma unroll
        for (int i = 0; i < 4; ++i)
          part[x][p][i] = 0.0f;
    if (kFp4) {
#pragma unroll
      for (int s = 0; s < 4; ++s) { // word s: elements 8s .. 8s + 7 of the block
        unsigned ae[kPasses][2], ao[kPasses][2];
#pragma unroll
        for (int p = 0; p < kPasses; ++p)
#pragma unroll
          for (int h = 0; h < 2; ++h) {
            const int hh = h < kHalves ? h : 0;
            const unsigned c0 = h < kHalves ? cur.a[p][hh].at(2 * s) : 0u;
            const unsigned c1 = h < kHalves ? cur.a[p][hh].at(2 * s + 1) : 0u;
            ae[p][h] = __byte_perm(c0, c1, 0x6420);
            ao[p][h] = __byte_perm(c0, c1, 0x7531);
          }
#pragma unroll
        for (int x = 0; x < kMats; ++x) {
          const E4m3Pair wp = e2m1x8ToE4m3Scaled(word(cur.w[x][0], s));
#pragma unroll
          for (int p = 0; p < kPasses; ++p) {
            float d[4];
            mmaE4m3(d, ae[p][0], ae[p][1], ao[p][0], ao[p][1], wp.even, wp.odd);
            part[x][p][0] = __fadd_rn(part[x][p][0], d[0]);
            part[x][p][1] = __fadd_rn(part[x][p][1], d[1]);
            if (kHalves == 2) {
              part[x][p][2] = __fadd_rn(part[x][p][2], d[2]);
              part[x][p][3] = __fadd_rn(part[x][p][3], d[3]);
            }
          }
        }
      }
    } else {
#pragma unroll
      for (int s = 0; s < 8; ++s) { // word s: elements 4s .. 4s + 3 of the block
        unsigned a[kPasses][4];
#pragma unroll
        for (int p = 0; p < kPasses; ++p) {
          const unsigned c0 = cur.a[p][0].at(s);
          const unsigned c1 = kHalves == 2 ? cur.a[p][kHalves - 1].at(s) : 0u;
          a[p][0] = dsc_gemv::e4m3x2ToHalf2(c0 & 0xffffu);
          a[p][2] = dsc_gemv::e4m3x2ToHalf2(c0 >> 16);
          a[p][1] = kHalves == 2 ? dsc_gemv::e4m3x2ToHalf2(c1 & 0xffffu) : 0u;
          a[p][3] = kHalves == 2 ? dsc_gemv::e4m3x2ToHalf2(c1 >> 16) : 0u;
        }
#pragma unroll
        for (int x = 0; x < kMats; ++x) {
          const unsigned wsw = word(cur.w[x][s / 4], s % 4);
          const unsigned b0 = dsc_gemv::e4m3x2ToHalf2(wsw & 0xffffu);
          const unsigned b1 = dsc_gemv::e4m3x2ToHalf2(wsw >> 16);
#pragma unroll
          for (int p = 0; p < kPasses; ++p)
            dsc_gemv::mmaF16(part[x][p], a[p][0], a[p][1], a[p][2], a[p][3], b0, b1,
                             part[x][p]);
        }
      }
    }
    // This lane's D role: block jq + b of activation rows (4p + r, 4p + r + 2).
    if (jq + b < j1) {
#pragma unroll
      for (int p = 0; p < kPasses; ++p) {
        float as[2];
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          as[h] = h < kHalves ? cur.as[p][h < kHalves ? h : 0] : 0.0f;
          if (kFp4)
            as[h] *= kFp4Unscale;
        }
#pragma unroll
        for (int x = 0; x < kMats; ++x) {
          const float ws0 = ue8m0ToFloat(cur.ws0[x]), ws1 = ue8m0ToFloat(cur.ws1[x]);
          float *o = acc[x] + 4 * p;
          o[0] = __fadd_rn(o[0], __fmul_rn(__fmul_rn(part[x][p][0], as[0]), ws0));
          o[1] = __fadd_rn(o[1], __fmul_rn(__fmul_rn(part[x][p][1], as[0]), ws1));
          if (kHalves == 2) {
            o[2] = __fadd_rn(o[2], __fmul_rn(__fmul_rn(part[x][p][2], as[1]), ws0));
            o[3] = __fadd_rn(o[3], __fmul_rn(__fmul_rn(part[x][p][3], as[1]), ws1));
          }
        }
      }
    }
    if (kAhead)
      cur = nxt;
  }
}

/// Sums the four block residues of laneDots (lanes differing in lane bits 2
/// and 3) by a fixed xor tree: afterwards every lane of a residue group holds
/// the same totals (fp32 addition commutes), read from the lanes with
/// (lane / 4) % 4 == 0.
template <int kN> __device__ __forceinline__ void reduceResidues(float *v) {
#pragma unroll
  for (int i = 0; i < kN; ++i) {
    v[i] = __fadd_rn(v[i], __shfl_xor_sync(0xffffffffu, v[i], 4));
    v[i] = __fadd_rn(v[i], __shfl_xor_sync(0xffffffffu, v[i], 8));
  }
}

/// laneDots of one tile with its activation rows' count picked at run time
/// (the instantiations compute a row identically: rows never meet).
template <bool kFp4, int kMats>
__device__ __forceinline__ void laneDotsRows(const unsigned char *const *wRow,
                                             const unsigned char *const *sRow0,
                                             const unsigned char *const *sRow1,
                                             const unsigned char *codes, const float *scales,
                                             long long K, long long m0, int rows, long long j0,
                                             long long j1, float (*acc)[8]) {
  if (rows <= 2)
    laneDots<kFp4, kMats, 2>(wRow, sRow0, sRow1, codes, scales, K, m0, rows, j0, j1,
                             reinterpret_cast<float(*)[4]>(acc));
  else if (rows <= 4)
    laneDots<kFp4, kMats, 4>(wRow, sRow0, sRow1, codes, scales, K, m0, rows, j0, j1,
                             reinterpret_cast<float(*)[4]>(acc));
  else
    laneDots<kFp4, kMats, 8>(wRow, sRow0, sRow1, codes, scales, K, m0, rows, j0, j1, acc);
}

/// The lane-block GEMV/GEMM: y[m, n] = bf16(sum) for x [M, K] and W [N, K]
/// (FP8, scales [ceil(N/32), K/32]) or [N, K/2] (kFp4, scales [N, K/32]);
/// one warp per item (8 weight rows x 8 activation rows x one of `splits`
/// K ranges), grid-strided; splits > 1: fp32 partials [splits, M, N] for
/// dsc_gemv::splitKReduce. x != null: the block act_quants x into dynamic
/// shared memory first (dsc_gemv::quantBytes(M, K)), else codes/scales are
/// global. All threads must call it (the staging barrier).
template <bool kFp4>
__device__ void laneGemv(const unsigned short *x, const unsigned char *gCodes,
                         const float *gScales, long long M, long long K, const unsigned char *w,
                         const unsigned char *wScale, long long N, unsigned short *y,
                         long long splits, float *partial) {
  extern __shared__ __align__(16) unsigned char laneSmem[];
  const dsc_gemv::Codes act = dsc_gemv::stageCodes(x, gCodes, gScales, M, K, laneSmem);
  const unsigned char *codes = act.codes;
  const float *scales = act.scales;
  const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  const long long kb = K / 32, rowBytes = kFp4 ? K / 2 : K;
  for (long long item = dsc_gemv::firstRow(); item < dsc_gemv::warpItems(N, M, splits, kTileRows);
       item += dsc_gemv::rowStride()) {
    const dsc_gemv::WarpItem wi = dsc_gemv::warpItem(item, splits, kb, M, kTileRows);
    const long long n0 = wi.n0, m0 = wi.m0;
    const int rows = wi.rows;
    auto clamp = [&](long long row) { return row < N ? row : N - 1; };
    const long long rg = clamp(n0 + g), ra = clamp(n0 + 2 * t), rb = clamp(n0 + 2 * t + 1);
    const unsigned char *wr = w + rg * rowBytes;
    const unsigned char *sa = wScale + (kFp4 ? ra : ra / 32) * kb;
    const unsigned char *sb = wScale + (kFp4 ? rb : rb / 32) * kb;
    float acc[1][8] = {{0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f}};
    laneDotsRows<kFp4, 1>(&wr, &sa, &sb, codes, scales, K, m0, rows, wi.k0, wi.k1, acc);
    reduceResidues<8>(acc[0]);
    if (((lane >> 2) & 3) == 0) {
      const int r = lane >> 4;
#pragma unroll
      for (int i = 0; i < 8; ++i) {
        const long long m = m0 + 4 * (i / 4) + r + ((i & 2) ? 2 : 0), n = n0 + 2 * t + (i & 1);
        if (m < m0 + rows && n < N)
          dsc_gemv::storeOutput(y, partial, splits, wi.split, M, N, m, n, acc[0][i]);
      }
    }
  }
}

} // namespace dsc_lanes

/// A lane-block GEMV entry with the signature of DSC_GEMV_QUANTIZED_ENTRY
/// (the adapters' quantizedGemv launches `<name>` for `<prefix>_fast`'s
/// `_lanes` twin); kFp4: the weight format.
#define DSC_LANE_GEMV_ENTRY(name, kFp4) DSC_GEMV_WARP_ENTRY(name, dsc_lanes::laneGemv<kFp4>)

#endif // DSC_CODEGEN_KERNELS_LANE_GEMV_CUH
