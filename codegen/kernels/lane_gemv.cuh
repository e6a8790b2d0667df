//===- lane_gemv.cuh - Lane-block GEMV tiles: one 32-K scale block per lane -===//
//
// What: the decode GEMV core for block-scaled FP4 and FP8 weights (W [N, K/2]
// E2M1 with UE8M0 scales [N, K/32]; W [N, K] E4M3 with scales [ceil(N/32),
// K/32]) times act_quant activations (E4M3 codes [., K] + fp32 scales
// [., K/32], gemv.cuh quantizeBlocks), built so that a weight byte costs as
// few instructions as possible: gemv.cuh's 16-row tiles read 4 bytes per
// load and spend ~10 instructions per FP4 byte (the MoE kernels ran at 30%
// of bandwidth on them).
// Layout: one warp computes a tile of 8 weight rows n0 .. n0 + 7 by up to 8
// activation rows over K blocks [j0, j1), four blocks per step. Lane
// (g = lane / 4, t = lane % 4) loads block j + t of weight row n0 + g whole
// with 16-byte loads (FP4: one, FP8: two). The weights are the f16 mma's B
// operand (column g, the k slots of lane t); the activations are its A
// operand block-diagonally: A row 4r + b holds activation row r's block
// j + b in the k slots of lane b (lanes whose g % 4 == t feed them) and zeros
// elsewhere, so D[4r + b][n] is exactly block j + b's partial of weight row
// n. Every lane reads whole scale blocks, no byte moves between lanes, and a
// block's partial comes out of the tensor core as the reference's rounding
// point. Each 8 K values of a block are four f16x2 pairs in numerics'
// kLanePairOrder, two m16n8k16 mmas, the block's eight chained in fp32.
//   FP4: numerics e2m1x8ToHalf2Scaled, two logic ops per pair (value *
//   2^-14, exact); the activation scale carries the 2^14 back.
//   FP8: a byte permute gathers the pairs, cvt.rn.f16x2.e4m3x2 widens them.
// (Hopper has no FP8 mma.sync: ptxas lowers the E4M3 m16n8k32 to f16 mmas
// after 12 conversions each, so these tiles stay on f16.)
// Activations: in shared memory as f16 in the pair order when the block
// holds them (laneStage, the host decides by size), else converted from the
// codes at each step: the same values, so the same bytes.
// Numerics: per block, acc += (partial * a_s) * w_s in fp32 as the CPU
// reference; the order of the sum over blocks differs (each lane sums the
// blocks of its residue j % 4 in K order, then a fixed xor tree over the
// four residues): deterministic, and a row's result never depends on the
// other rows of the call (A rows of other activation rows are zero in its k
// slots) nor on where its activations were read from.
// Invariants: K % 32 == 0; 16-byte aligned weight rows and codes.
// Bound: the weight bytes at memory bandwidth.
// Include after common.cuh and gemv.cuh.
//===----------------------------------------------------------------------===//
#ifndef DSC_CODEGEN_KERNELS_LANE_GEMV_CUH
#define DSC_CODEGEN_KERNELS_LANE_GEMV_CUH

#include "codegen/kernels/common.cuh"
#include "codegen/kernels/gemv.cuh"

namespace dsc_lanes {

/// Weight rows of one warp tile.
constexpr int kTileRows = dsc::abi::kLaneTileRows;

/// cvt.rn.f16x2.e4m3x2 of the low / high 16 bits of v (exact).
__device__ __forceinline__ unsigned e4m3LoToHalf2(unsigned v) {
  return dsc_gemv::e4m3x2ToHalf2(v & 0xffffu);
}
__device__ __forceinline__ unsigned e4m3HiToHalf2(unsigned v) {
  return dsc_gemv::e4m3x2ToHalf2(v >> 16);
}
/// Eight E4M3 codes (lo: elements 0-3, hi: 4-7) as f16x2 pairs in
/// kLanePairOrder.
__device__ __forceinline__ void e4m3x8ToHalf2Pairs(unsigned lo, unsigned hi, unsigned *p) {
  const unsigned a = __byte_perm(lo, hi, kLanePairSelect0);
  const unsigned b = __byte_perm(lo, hi, kLanePairSelect1);
  p[0] = e4m3LoToHalf2(a);
  p[1] = e4m3HiToHalf2(a);
  p[2] = e4m3LoToHalf2(b);
  p[3] = e4m3HiToHalf2(b);
}

__device__ __forceinline__ unsigned word(const uint4 &v, int i) {
  return i == 0 ? v.x : i == 1 ? v.y : i == 2 ? v.z : v.w;
}

/// The activations of a lane-block kernel: codes/scales (shared or global)
/// and, when the block holds them, the f16 pair-order copy `half` [M, K].
struct Activations {
  const unsigned char *codes;
  const float *scales;
  const uint4 *half; ///< null: convert from the codes at each step
};

/// Prepares the activations in dynamic shared memory: act_quant of x by the
/// block (x != null: codes + scales at smem) or the global codes, then, when
/// `stage`, their f16 pair-order copy after them. All threads must call it.
/// Bytes: laneSmemBytes (runtime/cuda/GemvLaunch.h mirrors it).
__device__ __forceinline__ Activations stageActivations(const unsigned short *x,
                                                        const unsigned char *gCodes,
                                                        const float *gScales, long long M,
                                                        long long K, long long stage,
                                                        unsigned char *smem) {
  Activations a{gCodes, gScales, nullptr};
  long long offset = 0;
  if (x) {
    dsc_gemv::quantizeToShared(x, M, K, smem);
    a.codes = smem;
    a.scales = reinterpret_cast<const float *>(smem + M * K);
    offset = (dsc_gemv::quantBytes(M, K) + 15) / 16 * 16;
  }
  if (stage) {
    uint4 *half = reinterpret_cast<uint4 *>(smem + offset);
    const uint2 *src = reinterpret_cast<const uint2 *>(a.codes);
    for (long long i = threadIdx.x; i < M * K / 8; i += blockDim.x) {
      const uint2 c = src[i];
      unsigned p[4];
      e4m3x8ToHalf2Pairs(c.x, c.y, p);
      half[i] = make_uint4(p[0], p[1], p[2], p[3]);
    }
    __syncthreads();
    a.half = half;
  }
  return a;
}

/// One step's prefetched operands of a lane: its weight block jq + t of each
/// matrix and, for its D role (block jq + b), the weight scale bytes of rows
/// n0 + 2t / + 1 and the activation scales.
template <bool kFp4, int kMats, int kPasses, int kHalves> struct Step {
  static constexpr int kWLoads = kFp4 ? 1 : 2;
  uint4 w[kMats][kWLoads];
  unsigned char ws0[kMats], ws1[kMats];
  float as[kPasses][kHalves];
};

/// One warp's tile: for each of kMats matrices x sharing the activations,
/// weight row wRow[x] (this lane's row n0 + g; K/2 bytes FP4, K bytes FP8),
/// the scale rows of weight rows n0 + 2t (sRow0[x]) and n0 + 2t + 1
/// (sRow1[x]) (FP4: [N, K/32] rows; FP8: the 32-row group's row), activation
/// rows m0 .. m0 + rows - 1 (rows <= kMaxRows <= 8), K blocks [j0, j1).
/// Adds to acc[x][4p + i] the block-residue sums of pass p: i = 0, 1 ->
/// (activation row 4p + r, weight rows n0 + 2t, n0 + 2t + 1), i = 2, 3 ->
/// (4p + r + 2, the same weight rows), r = lane / 16; reduceResidues then
/// leaves the totals in the lanes with (lane / 4) % 4 == 0. The next step's
/// weights and scales load while one computes (up to 4 activation rows;
/// prefill's 8-row tiles load and compute in turn: registers).
template <bool kFp4, int kMats, int kMaxRows>
__device__ __forceinline__ void laneDots(const Activations &act, const unsigned char *const *wRow,
                                         const unsigned char *const *sRow0,
                                         const unsigned char *const *sRow1, long long K,
                                         long long m0, int rows, long long j0, long long j1,
                                         float (*acc)[4 * ((kMaxRows + 3) / 4)]) {
  constexpr int kPasses = (kMaxRows + 3) / 4, kHalves = kMaxRows > 2 ? 2 : 1;
  constexpr long long kBlockBytes = kFp4 ? 16 : 32;
  using Ops = Step<kFp4, kMats, kPasses, kHalves>;
  const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3, b = g & 3, r = g >> 2;
  const long long kb = K / 32;
  const bool feeds = b == t;
  // This lane's activation rows (pass p, half h: row 4p + r + 2h), clamped.
  long long arow[kPasses][kHalves];
  bool av[kPasses][kHalves];
#pragma unroll
  for (int p = 0; p < kPasses; ++p)
#pragma unroll
    for (int h = 0; h < kHalves; ++h) {
      av[p][h] = 4 * p + r + 2 * h < rows;
      arow[p][h] = m0 + (av[p][h] ? 4 * p + r + 2 * h : 0);
    }
  const int n = (int)(j1 - j0), steps = (n + 3) / 4; // only the last step can be partial
  auto load = [=](int i, Ops &st) {
    const long long jl = j0 + 4 * i + t, jd = j0 + 4 * i + b;
    const bool lv = jl < j1, dv = jd < j1;
#pragma unroll
    for (int x = 0; x < kMats; ++x) {
#pragma unroll
      for (int u = 0; u < Ops::kWLoads; ++u)
        st.w[x][u] = lv ? dsc_gemv::load16(wRow[x] + jl * kBlockBytes + 16 * u)
                        : dsc_gemv::zero16();
      st.ws0[x] = dv ? __ldg(sRow0[x] + jd) : (unsigned char)0;
      st.ws1[x] = dv ? __ldg(sRow1[x] + jd) : (unsigned char)0;
    }
#pragma unroll
    for (int p = 0; p < kPasses; ++p)
#pragma unroll
      for (int h = 0; h < kHalves; ++h)
        st.as[p][h] = dv && av[p][h] ? act.scales[arow[p][h] * kb + jd] : 0.0f;
  };
  // The activation pairs of group s (8 values) of this lane's block jl.
  auto pairs = [&](long long jl, bool lv, int p, int h, int s, unsigned *q) {
    const bool on = feeds && lv && av[p][h];
    if (act.half) {
      const uint4 v = on ? act.half[(arow[p][h] * K + jl * 32) / 8 + s] : dsc_gemv::zero16();
      q[0] = v.x;
      q[1] = v.y;
      q[2] = v.z;
      q[3] = v.w;
    } else {
      const uint2 c = on ? *reinterpret_cast<const uint2 *>(act.codes + arow[p][h] * K +
                                                            jl * 32 + 8 * s)
                         : make_uint2(0u, 0u);
      e4m3x8ToHalf2Pairs(c.x, c.y, q);
    }
  };
  auto compute = [&](int i, const Ops &st) {
    const long long jl = j0 + 4 * i + t;
    const bool lv = jl < j1;
    float part[kMats][kPasses][4];
#pragma unroll
    for (int x = 0; x < kMats; ++x)
#pragma unroll
      for (int p = 0; p < kPasses; ++p)
#pragma unroll
        for (int e = 0; e < 4; ++e)
          part[x][p][e] = 0.0f;
#pragma unroll
    for (int s = 0; s < 4; ++s) { // K values 8s .. 8s + 7 of the block
      unsigned xa[kPasses][2][4];
#pragma unroll
      for (int p = 0; p < kPasses; ++p)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          if (h < kHalves)
            pairs(jl, lv, p, h, s, xa[p][h]);
          else
            xa[p][h][0] = xa[p][h][1] = xa[p][h][2] = xa[p][h][3] = 0u;
        }
#pragma unroll
      for (int x = 0; x < kMats; ++x) {
        unsigned wp[4];
        if (kFp4) {
          const Half2x4 hw = e2m1x8ToHalf2Scaled(word(st.w[x][0], s));
          wp[0] = hw.p[0];
          wp[1] = hw.p[1];
          wp[2] = hw.p[2];
          wp[3] = hw.p[3];
        } else {
          const uint4 &v = st.w[x][s / 2];
          e4m3x8ToHalf2Pairs(word(v, 2 * (s % 2)), word(v, 2 * (s % 2) + 1), wp);
        }
#pragma unroll
        for (int p = 0; p < kPasses; ++p) {
          dsc_gemv::mmaF16(part[x][p], xa[p][0][0], xa[p][1][0], xa[p][0][1], xa[p][1][1], wp[0],
                           wp[1], part[x][p]);
          dsc_gemv::mmaF16(part[x][p], xa[p][0][2], xa[p][1][2], xa[p][0][3], xa[p][1][3], wp[2],
                           wp[3], part[x][p]);
        }
      }
    }
    if (j0 + 4 * i + b >= j1)
      return;
#pragma unroll
    for (int p = 0; p < kPasses; ++p) {
      float as[2];
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        as[h] = h < kHalves ? st.as[p][h < kHalves ? h : 0] : 0.0f;
        if (kFp4)
          as[h] *= kE2m1ToHalf2ScaledUnscale; // exact: powers of two
      }
#pragma unroll
      for (int x = 0; x < kMats; ++x) {
        const float ws0 = ue8m0ToFloat(st.ws0[x]), ws1 = ue8m0ToFloat(st.ws1[x]);
        float *o = acc[x] + 4 * p;
        o[0] = __fadd_rn(o[0], __fmul_rn(__fmul_rn(part[x][p][0], as[0]), ws0));
        o[1] = __fadd_rn(o[1], __fmul_rn(__fmul_rn(part[x][p][1], as[0]), ws1));
        if (kHalves == 2) {
          o[2] = __fadd_rn(o[2], __fmul_rn(__fmul_rn(part[x][p][2], as[1]), ws0));
          o[3] = __fadd_rn(o[3], __fmul_rn(__fmul_rn(part[x][p][3], as[1]), ws1));
        }
      }
    }
  };
  if (kMaxRows > 4) {
    for (int i = 0; i < steps; ++i) {
      Ops cur;
      load(i, cur);
      compute(i, cur);
    }
    return;
  }
  Ops cur, nxt;
  if (steps > 0)
    load(0, cur);
  for (int i = 0; i < steps; ++i) {
    if (i + 1 < steps)
      load(i + 1, nxt);
    compute(i, cur);
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
template <bool kFp4>
__device__ __forceinline__ void laneDotsRows(const Activations &act, const unsigned char *wRow,
                                             const unsigned char *sRow0,
                                             const unsigned char *sRow1, long long K,
                                             long long m0, int rows, long long j0, long long j1,
                                             float (*acc)[8]) {
  if (rows <= 2)
    laneDots<kFp4, 1, 2>(act, &wRow, &sRow0, &sRow1, K, m0, rows, j0, j1,
                         reinterpret_cast<float(*)[4]>(acc));
  else if (rows <= 4)
    laneDots<kFp4, 1, 4>(act, &wRow, &sRow0, &sRow1, K, m0, rows, j0, j1,
                         reinterpret_cast<float(*)[4]>(acc));
  else
    laneDots<kFp4, 1, 8>(act, &wRow, &sRow0, &sRow1, K, m0, rows, j0, j1, acc);
}

/// The lane-block GEMV/GEMM: y[m, n] = bf16(sum) for x [M, K] and W [N, K]
/// (FP8, scales [ceil(N/32), K/32]) or [N, K/2] (kFp4, scales [N, K/32]);
/// one warp per item (8 weight rows x 8 activation rows x one of `splits`
/// K ranges), grid-strided; splits > 1: fp32 partials [splits, M, N] for
/// dsc_gemv::splitKReduce. The activations as stageActivations (x != null:
/// act_quant in the block; `stage`: the f16 copy in shared memory). All
/// threads must call it.
template <bool kFp4>
__device__ void laneGemv(const unsigned short *x, const unsigned char *gCodes,
                         const float *gScales, long long M, long long K, const unsigned char *w,
                         const unsigned char *wScale, long long N, unsigned short *y,
                         long long splits, float *partial, long long stage) {
  extern __shared__ __align__(16) unsigned char laneSmem[];
  const Activations act = stageActivations(x, gCodes, gScales, M, K, stage, laneSmem);
  const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  const long long kb = K / 32, rowBytes = kFp4 ? K / 2 : K;
  const long long nTiles = (N + kTileRows - 1) / kTileRows, mTiles = (M + 7) / 8;
  const long long perSplit = (kb + splits - 1) / splits;
  for (long long item = dsc_gemv::firstRow(); item < nTiles * mTiles * splits;
       item += dsc_gemv::rowStride()) {
    const long long tile = item / splits, split = item - tile * splits;
    const long long k0 = split * perSplit < kb ? split * perSplit : kb;
    const long long k1 = k0 + perSplit < kb ? k0 + perSplit : kb;
    const long long n0 = (tile / mTiles) * kTileRows, m0 = (tile % mTiles) * 8;
    const int rows = (int)(M - m0 < 8 ? M - m0 : 8);
    auto clamp = [&](long long row) { return row < N ? row : N - 1; };
    const long long rg = clamp(n0 + g), ra = clamp(n0 + 2 * t), rb = clamp(n0 + 2 * t + 1);
    float acc[1][8] = {{0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f}};
    laneDotsRows<kFp4>(act, w + rg * rowBytes, wScale + (kFp4 ? ra : ra / 32) * kb,
                       wScale + (kFp4 ? rb : rb / 32) * kb, K, m0, rows, k0, k1, acc);
    reduceResidues<8>(acc[0]);
    if (((lane >> 2) & 3) == 0) {
      const int r = lane >> 4;
#pragma unroll
      for (int i = 0; i < 8; ++i) {
        const long long m = m0 + 4 * (i / 4) + r + ((i & 2) ? 2 : 0), n = n0 + 2 * t + (i & 1);
        if (m < m0 + rows && n < N) {
          if (splits > 1)
            partial[(split * M + m) * N + n] = acc[0][i];
          else
            y[m * N + n] = bf16FromFloat(acc[0][i]);
        }
      }
    }
  }
}

} // namespace dsc_lanes

/// A lane-block GEMV entry: DSC_GEMV_QUANTIZED_ENTRY's arguments and
/// `stage` (laneGemv; the adapters' quantizedGemv launches `<name>` as the
/// `_lanes` twin of `<prefix>_fast`); kFp4: the weight format.
#define DSC_LANE_GEMV_ENTRY(name, kFp4)                                                       \
  DSC_KERNEL void __launch_bounds__(32 * dsc::abi::kGemvWarps, 2)                             \
      name(const unsigned short *x, const unsigned char *codes, const float *scales,          \
           long long M, long long K, const unsigned char *w, const unsigned char *wScale,     \
           long long N, unsigned short *y, long long splits, float *partial, long long stage) { \
    dsc_lanes::laneGemv<kFp4>(x, codes, scales, M, K, w, wScale, N, y, splits, partial, stage); \
  }

#endif // DSC_CODEGEN_KERNELS_LANE_GEMV_CUH
